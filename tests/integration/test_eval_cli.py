"""``nmt eval --hyp ...``: TER, paired tests, a readable report.md, and misaligned files refused."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import sacrebleu

from conftest import run_cli as run

WORDS = ["red", "green", "blue", "small", "large", "old", "young", "happy", "quiet", "fast"]
# Small numbers of resamples and trials keep each command well under a second of testing.
FAST = ["--bootstrap-samples", "50", "--ar-trials", "100", "--seed", "3"]


def _write(path: Path, lines: list[str]) -> Path:
    path.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    return path


@pytest.fixture
def files(tmp_path: Path) -> dict[str, Path]:
    """A reference, its source, a garbled baseline, a perfect system and a copy of the baseline."""
    refs = [f"the {WORDS[i % 10]} {WORDS[(i * 3) % 10]} dog number {i} runs across the wide field" for i in range(24)]
    garbled = [" ".join(reversed(r.split())) for r in refs]
    return {
        "ref": _write(tmp_path / "ref.txt", refs),
        "src": _write(tmp_path / "src.txt", [" ".join(r.split()[: 3 + i]) for i, r in enumerate(refs)]),
        "base": _write(tmp_path / "base.txt", garbled),
        "perfect": _write(tmp_path / "perfect.txt", refs),
        "copy": _write(tmp_path / "copy.txt", garbled),
    }


def _eval(files: dict[str, Path], out: Path, *extra: str) -> list[str]:
    return [
        "eval",
        "--hyp",
        str(files["base"]),
        "--hyp",
        str(files["perfect"]),
        "--hyp",
        str(files["copy"]),
        "--ref",
        str(files["ref"]),
        "--src",
        str(files["src"]),
        "--out",
        str(out),
        *FAST,
        *extra,
    ]


def test_compare_hyp_files_by_both_tests(files: dict[str, Path], tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    out = tmp_path / "report"
    code, printed, err = run(_eval(files, out), capsys)
    assert code == 0, err
    report = json.loads((out / "report.json").read_text(encoding="utf-8"))
    refs = files["ref"].read_text(encoding="utf-8").splitlines()
    base_lines = files["base"].read_text(encoding="utf-8").splitlines()

    # TER beside BLEU and chrF, as sacreBLEU computes it, with its signature.
    base = report["systems"]["base.txt"]
    assert base["ter"] == pytest.approx(sacrebleu.corpus_ter(base_lines, [refs]).score)
    assert report["systems"]["perfect.txt"]["ter"] == 0.0
    assert "tok:tercom" in base["ter_signature"]

    # Both paired tests against the first file: a copy never differs, a perfect system does.
    baseline, perfect, copy = report["comparison"]
    assert baseline["name"] == "base.txt" and baseline["bleu_p_value"] is None and baseline["bleu_ar_p_value"] is None
    assert copy["bleu_p_value"] == 1.0 and copy["bleu_ar_p_value"] == 1.0
    assert not copy["significant"] and not copy["ar_significant"]
    assert perfect["bleu_p_value"] < 0.05 and perfect["bleu_ar_p_value"] < 0.05
    assert report["significance"] == {
        "tests": ["bootstrap", "ar"],
        "bootstrap_samples": 50,
        "ar_trials": 100,
        "seed": 3,
    }

    # report.md: what was scored, every metric, every p-value, every signature, the plot.
    md = (out / "report.md").read_text(encoding="utf-8")
    assert md.startswith("# nmt eval: 3 hypothesis files against `ref.txt`")
    assert "| system | BLEU ↑ | chrF ↑ | TER ↓ | length ratio | segments |" in md
    assert "| perfect.txt | 100.00 | 100.00 | 0.00 | 1.000 | 24 |" in md
    assert "bootstrap 95% CI | p (bootstrap) | p (AR) | significant (p < 0.05) |" in md
    assert "| copy.txt | BLEU | " in md and "| 1.0000 | 1.0000 | no |" in md
    signatures = {row[key] for row in report["comparison"] for key in row if key.endswith("signature")}
    signatures |= {s[key] for s in report["systems"].values() for key in s if key.endswith("signature")}
    assert len(signatures) == 9  # 3 metrics x (scoring, bootstrap, AR)
    assert all(f"`{signature}`" in md for signature in signatures)
    assert "![BLEU by source length](bleu_by_length.png)" in md and (out / "bleu_by_length.png").is_file()

    # The printed summary: scores with TER and the comparison, not the signatures.
    assert "TER ↓" in printed and "p (AR)" in printed and f"wrote {out / 'report.json'}" in printed


def test_one_test_only(files: dict[str, Path], tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    out = tmp_path / "ar"
    code, _, err = run(_eval(files, out, "--test", "ar"), capsys)
    assert code == 0, err
    report = json.loads((out / "report.json").read_text(encoding="utf-8"))
    assert "bleu_ar_p_value" in report["comparison"][1] and "bleu_p_value" not in report["comparison"][1]
    md = (out / "report.md").read_text(encoding="utf-8")
    assert "p (AR)" in md and "p (bootstrap)" not in md and "bs:50" not in md


def test_line_count_mismatch_exits_2_naming_the_file(
    files: dict[str, Path], tmp_path: Path, capsys: pytest.CaptureFixture
) -> None:
    short = _write(tmp_path / "short.txt", files["perfect"].read_text(encoding="utf-8").splitlines()[:-1])
    out = tmp_path / "never"
    code, _, err = run(
        ["eval", "--hyp", str(files["base"]), "--hyp", str(short), "--ref", str(files["ref"]), "--out", str(out)],
        capsys,
    )
    assert code == 2 and err.strip().count("\n") == 0
    assert str(short) in err and "23 lines" in err and "has 24" in err
    assert not out.exists()  # refused before anything was written


@pytest.mark.parametrize(
    "extra,needle",
    [
        (["--test", "permutation"], "--test must be one of both, bootstrap, ar"),
        (["--ar-trials", "0"], "ar_trials=0: give a whole number of at least 1"),
        (["--seed", "0"], "seed=0: give a whole number from 1 to 4294967295"),
    ],
)
def test_bad_options_exit_2(
    files: dict[str, Path], tmp_path: Path, capsys: pytest.CaptureFixture, extra: list[str], needle: str
) -> None:
    code, _, err = run(_eval(files, tmp_path / "out") + extra, capsys)
    assert code == 2 and needle in err and err.strip().count("\n") == 0


@pytest.mark.parametrize("inside", [False, True])
@pytest.mark.parametrize("mode", ["hyp", "checkpoint"])
def test_out_that_is_a_file_is_refused_before_any_work(
    files: dict[str, Path],
    tmp_path: Path,
    capsys: pytest.CaptureFixture,
    monkeypatch: pytest.MonkeyPatch,
    mode: str,
    inside: bool,
) -> None:
    """--out FILE (or a folder under a file): one line, exit 2, the file untouched, no model loaded."""
    taken = _write(tmp_path / "notes.txt", ["keep me"])
    out = taken / "report" if inside else taken

    def no_loading(*args: object, **kwargs: object) -> None:
        raise AssertionError("a model was loaded before --out was checked")

    monkeypatch.setattr("nmt.decode.inference.load_models", no_loading)
    argv = (
        _eval(files, out) if mode == "hyp" else ["eval", "--checkpoint", str(tmp_path / "model.pt"), "--out", str(out)]
    )
    code, printed, err = run(argv, capsys)
    assert code == 2 and printed == "" and err.strip().count("\n") == 0, err
    assert f"--out {out}" in err and "is not a folder" in err
    assert taken.read_text(encoding="utf-8") == "keep me\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(["notes.txt", *(p.name for p in files.values())])


def test_a_checkpoint_is_not_scored_on_a_folder_prepared_since_from_other_text(
    tmp_path: Path, capsys: pytest.CaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A run trained on synthetic seed 1, its data folder then prepared from seed 2 (another config's
    nmt data prepare): nmt eval stops with one line instead of scoring another test set."""
    from nmt.labs.base import TINY_OVERRIDES
    from nmt.training.entry import run_training

    monkeypatch.chdir(tmp_path)
    overrides = [*TINY_OVERRIDES, "data.root=data", "runs_dir=runs", "name=seed1", "train.max_steps=2"]
    run_training(None, overrides, progress=False)
    checkpoint = tmp_path / "runs" / "seed1" / "checkpoints" / "last.pt"
    code, _out, err = run(["eval", "--checkpoint", str(checkpoint), "--out", "eval-before", *FAST], capsys)
    assert code == 0, err

    code, _out, err = run(
        ["data", "prepare", "synthetic", *[f"--set={o}" for o in overrides], "--set=data.synthetic_seed=2"], capsys
    )
    assert code == 0, err
    code, _out, err = run(["eval", "--checkpoint", str(checkpoint), "--out", "eval-after", *FAST], capsys)
    assert code == 2 and len(err.strip().splitlines()) == 1, err
    assert "not the text this run trained on" in err
    assert f"nmt data prepare synthetic --config {tmp_path / 'runs' / 'seed1' / 'config.yaml'}" in err
    assert not (tmp_path / "eval-after").exists()  # refused before anything was written


@pytest.mark.parametrize("name", ["report.md", "report.json", "bleu_by_length.png"])
def test_a_users_file_in_out_is_refused_and_nmts_own_are_replaced(
    files: dict[str, Path], tmp_path: Path, capsys: pytest.CaptureFixture, name: str
) -> None:
    """Only files nmt wrote in --out are replaced: a user's is named in one line, before any work, and kept."""
    out = tmp_path / "mine"
    out.mkdir()
    taken = _write(out / name, ["my own notes"])
    code, printed, err = run(_eval(files, out), capsys)
    assert code == 2 and printed == "" and err.strip().count("\n") == 0, err
    assert f"{taken} was not written by nmt" in err
    assert taken.read_text(encoding="utf-8") == "my own notes\n" and sorted(p.name for p in out.iterdir()) == [name]

    again = tmp_path / "ours"
    for _ in range(2):  # the second run replaces what the first wrote
        code, _, err = run(_eval(files, again), capsys)
        assert code == 0, err


def test_a_users_hypotheses_in_out_are_refused_before_the_model_loads(
    tmp_path: Path, capsys: pytest.CaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    out = tmp_path / "eval"
    out.mkdir()
    taken = _write(out / "test.hyp.en", ["my own translation"])

    def no_loading(*args: object, **kwargs: object) -> None:
        raise AssertionError("a model was loaded before --out was checked")

    monkeypatch.setattr("nmt.decode.inference.load_models", no_loading)
    code, _, err = run(["eval", "--checkpoint", str(tmp_path / "model.pt"), "--out", str(out)], capsys)
    assert code == 2 and f"{taken} was not written by nmt" in err and err.strip().count("\n") == 0, err
    assert taken.read_text(encoding="utf-8") == "my own translation\n"


@pytest.mark.parametrize("hyp", [["a few words", "more"], ["", ""]], ids=["output", "empty output"])
def test_a_length_ratio_against_references_without_words_is_reported_as_undefined(
    tmp_path: Path, capsys: pytest.CaptureFixture, hyp: list[str]
) -> None:
    """It was printed and written as 0.000, which reads as "no output"; there is no ratio to no words."""
    ref, out = _write(tmp_path / "ref.txt", ["", ""]), tmp_path / "out"
    code, printed, err = run(
        ["eval", "--hyp", str(_write(tmp_path / "hyp.txt", hyp)), "--ref", str(ref), "--out", str(out)], capsys
    )
    assert code == 0, err
    assert json.loads((out / "report.json").read_text(encoding="utf-8"))["systems"]["hyp.txt"]["length_ratio"] is None
    page = (out / "report.md").read_text(encoding="utf-8")
    for text in (printed, page):
        (row,) = [line for line in text.splitlines() if line.startswith("| hyp.txt")]
        assert "| n/a |" in row and "0.000" not in row, row
        assert "n/a: the references hold no words" in text, text


def test_a_split_the_corpus_lacks_lists_the_splits_it_has_and_upstream_names_are_accepted(
    tmp_path: Path, capsys: pytest.CaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    """--split test2017 on a corpus without it said "run nmt data prepare first", which cannot add it."""
    from nmt.labs.base import TINY_OVERRIDES
    from nmt.training.entry import run_training

    monkeypatch.chdir(tmp_path)
    run_training(
        None, [*TINY_OVERRIDES, "data.root=data", "runs_dir=runs", "name=tiny", "train.max_steps=2"], progress=False
    )
    checkpoint = str(tmp_path / "runs" / "tiny" / "checkpoints" / "last.pt")
    code, _out, err = run(
        ["eval", "--checkpoint", checkpoint, "--split", "test2017", "--out", "missing", *FAST], capsys
    )
    assert code == 2 and len(err.strip().splitlines()) == 1, err
    assert "--split test2017: the corpus prepared in data/synthetic/" in err, err
    assert "has no split 'test2017'" in err and err.rstrip().endswith("choose from test, train, valid"), err
    assert "prepare first" not in err and not (tmp_path / "missing").exists()

    code, _out, err = run(
        ["eval", "--checkpoint", checkpoint, "--split", "val", "--beam", "1", "--out", "v", *FAST], capsys
    )
    assert code == 0, err  # Multi30k's file name for the validation split
    assert [p.name.split(".")[0] for p in (tmp_path / "v").glob("*.hyp.*")] == ["valid"]
    assert json.loads((tmp_path / "v" / "report.json").read_text(encoding="utf-8"))["info"]["split"] == "valid"
