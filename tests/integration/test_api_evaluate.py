"""``nmt.evaluate`` and ``nmt.compare`` from Python: the tables the commands write, as records."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import nmt
from conftest import run_cli, toy_overrides
from nmt.util.errors import UserError


@pytest.fixture()
def hyp_files(toy_files, tmp_path) -> dict[str, Path]:
    """A reference, its sources, itself as a perfect system and a system with every line cut short."""
    _, files = toy_files
    src = Path(files["test"][0]).read_text(encoding="utf-8").splitlines()[:40]
    ref = Path(files["test"][1]).read_text(encoding="utf-8").splitlines()[:40]
    paths = {name: tmp_path / f"{name}.txt" for name in ("src", "ref", "same", "short")}
    for name, lines in (("src", src), ("ref", ref), ("same", ref), ("short", [r.rsplit(" ", 1)[0] for r in ref])):
        paths[name].write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    return paths


def test_evaluate_returns_the_reports_tables_as_records(hyp_files, tmp_path):
    result = nmt.evaluate(
        hyps=[hyp_files["same"], hyp_files["short"]],
        ref=hyp_files["ref"],
        src=hyp_files["src"],
        out=tmp_path / "eval",
        bootstrap_samples=50,
        ar_trials=50,
    )
    report = json.loads((tmp_path / "eval" / "report.json").read_text(encoding="utf-8"))
    assert result.report == report
    assert [r["system"] for r in result.records] == ["same.txt", "short.txt"]
    assert result.records[0]["bleu"] == pytest.approx(100.0) and result.records[1]["bleu"] < 100
    assert all(isinstance(r, dict) for r in result.records)
    assert len(result.comparison) == 2 and {r["system"] for r in result.bleu_by_length} == {"same.txt", "short.txt"}
    frame = result.to_pandas()
    assert list(frame["system"]) == ["same.txt", "short.txt"]
    assert "wrote" in result.summary


def test_evaluate_a_run_folder_translates_with_its_best_checkpoint(trained_toy, tmp_path):
    result = nmt.evaluate(trained_toy, out=tmp_path / "eval", beam=1)
    assert result.report["info"]["checkpoints"] == [str(trained_toy / "checkpoints" / "best.pt")]
    assert len(result.records) == 1 and result.records[0]["system"] == "beam1"
    assert nmt.evaluate.__module__ == "nmt.api.evaluation"  # the function; the stage is nmt.evaluation


def test_compare_returns_one_record_per_arm(toy_files, tmp_path):
    _, files = toy_files
    sets = [s for s in toy_overrides(tmp_path, files) if not s.startswith(("name=", "runs_dir="))]
    result = nmt.compare(
        variants=["bahdanau", "luong_dot"],
        seeds=[1],
        steps=4,
        runs_dir=tmp_path / "cmp",
        overrides=[*sets, "train.valid_every=2", "train.valid_max_sentences=20"],
        progress=False,
    )
    assert [r["variant"] for r in result.records] == ["bahdanau", "luong_dot"]
    assert all(r["updates"] == 4 and r["seeds"] == [1] for r in result.records)
    report = json.loads((tmp_path / "cmp" / "report" / "report.json").read_text(encoding="utf-8"))
    assert list(result.records) == report["variants"]
    assert list(result.to_pandas()["variant"]) == ["bahdanau", "luong_dot"]


def test_compare_dry_run_plans_the_lines_of_the_command_and_trains_nothing(toy_files, tmp_path, capsys):
    _, files = toy_files
    sets = [s for s in toy_overrides(tmp_path, files) if not s.startswith(("name=", "runs_dir="))]
    runs = tmp_path / "cmp"
    result = nmt.compare(
        variants=["bahdanau", "luong_dot"], seeds=[1, 2], steps=4, runs_dir=runs, overrides=sets, dry_run=True
    )
    planned = result.planned
    assert result.records == [] and result.text.splitlines() == planned
    assert isinstance(planned, list) and len(planned) == 4 and all(isinstance(line, str) for line in planned)
    assert planned[0] == f"train    bahdanau seed 1: {runs / 'bahdanau_s1'}"
    assert not runs.exists() and not any(p.name == "report.json" for p in tmp_path.rglob("*"))
    argv = ["compare", "--variants", "bahdanau,luong_dot", "--seeds", "1,2", "--steps", "4", "--runs-dir", str(runs)]
    code, out, err = run_cli([*argv, *(a for s in sets for a in ("--set", s)), "--dry-run"], capsys)
    assert code == 0, err
    assert out.splitlines() == planned


def test_records_print_as_a_short_aligned_table():
    rows = nmt.Records({"step": 10 * i, "loss": 1 / (i + 1), "note": "x" * 40, "samples": [{}]} for i in range(30))
    text = str(rows)
    lines = text.splitlines()
    assert repr(rows) == text and lines[0].split() == ["step", "loss", "note", "samples"]
    assert len(lines) == 1 + 20 + 1 + 1  # the header, 20 rows around one "..." row, the size
    assert lines[11].split() == ["..."] * 4 and lines[-1] == "[30 rows x 4 columns]"
    assert lines[1].split()[0] == "0" and lines[-2].split()[0] == "290"  # the first and last rows
    rows_shown = [line for line in lines[1:-1] if line.split()[0] != "..."]
    assert {line.index("[1 items]") for line in rows_shown} == {lines[0].index("samples")}  # aligned left
    assert "[1 items]" in lines[1] and "x" * 40 not in text and "…" in lines[1]
    assert lines[0].index("loss") + len("loss") == lines[1].index("1") + 1  # numbers aligned right
    html = rows._repr_html_()
    assert html.startswith("<table>") and html.count("<tr>") == 1 + 21 and "30 rows" in html
    assert str(nmt.Records()) == "Records([]): no rows"
    assert rows == list(rows) and rows[0]["step"] == 0  # still a list of dicts


def test_bad_input_raises_one_line(hyp_files, tmp_path):
    for call, needle in (
        (lambda: nmt.evaluate(hyps=[hyp_files["same"]]), "--hyp needs --ref"),
        (lambda: nmt.evaluate(tmp_path / "missing.pt"), "missing.pt"),
        (lambda: nmt.compare(variants="bahdanau,nope", steps=5, runs_dir=tmp_path / "c"), "unknown variant 'nope'"),
        (lambda: nmt.compare(variants=["bahdanau"], seeds=[], steps=5, runs_dir=tmp_path / "c"), "give at least one"),
    ):
        with pytest.raises(UserError, match=needle) as info:
            call()
        assert "\n" not in str(info.value)
    assert not (tmp_path / "c").exists()


def test_to_pandas_without_pandas_says_how_to_get_it(monkeypatch):
    import builtins

    real_import = builtins.__import__

    def no_pandas(name, *args, **kwargs):
        if name == "pandas":
            raise ImportError("no pandas here")
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_pandas)
    with pytest.raises(UserError, match="pip install pandas"):
        nmt.Records([{"a": 1}]).to_pandas()


def test_a_dry_run_says_what_its_design_can_detect(tmp_path, capsys):
    """Power, said before the runs: from a stated spread, the smallest difference three seeds detect at
    80% power, and the seeds a target difference needs (issue 61, item 4)."""
    plan = {"variants": ["bahdanau", "luong_dot"], "seeds": [1, 2, 3], "steps": 4, "runs_dir": tmp_path / "c"}
    result = nmt.compare(**plan, dry_run=True, spread=0.72, target=1.22)
    last = result.text.splitlines()[-1]
    assert last.startswith("power: with 3 seeds") and "2.35 BLEU or more with 80% power" in last
    assert last.endswith("a difference of 1.22 needs 5 seeds") and len(result.planned) == 6
    for extra, needle in (({"target": 1.0}, "^target: give spread too"), ({"spread": -1.0}, "^spread=-1.0")):
        with pytest.raises(UserError, match=needle):
            nmt.compare(**plan, dry_run=True, **extra)
    code, out, _err = run_cli(
        [
            "compare",
            "--variants",
            "bahdanau,luong_dot",
            "--seeds",
            "1,2,3",
            "--steps",
            "4",
            "--runs-dir",
            str(tmp_path / "c"),
            "--dry-run",
            "--spread",
            "0.72",
        ],
        capsys,
    )
    assert code == 0 and out.splitlines()[-1].startswith("power: with 3 seeds")
    assert not (tmp_path / "c").exists()
    # the spread of an earlier comparison: its per-seed differences from its baseline, here 1.0 exactly
    earlier = tmp_path / "earlier"
    earlier.mkdir()
    rows = [
        {"variant": "bahdanau", "per_seed_bleu": {"1": 30.0, "2": 31.0, "3": 32.0}},
        {"variant": "luong_dot", "per_seed_bleu": {"1": 30.0, "2": 32.0, "3": 34.0}},
    ]
    (earlier / "report.json").write_text(json.dumps({"plan": {"baseline": "bahdanau"}, "variants": rows}))
    from_report = nmt.compare(**plan, dry_run=True, spread=earlier).text.splitlines()[-1]
    assert from_report == nmt.compare(**plan, dry_run=True, spread=1.0).text.splitlines()[-1]
    with pytest.raises(UserError, match=r"not the report\.json of an nmt compare"):
        nmt.compare(**plan, dry_run=True, spread=tmp_path / "c")
    args = ["compare", "--variants", "bahdanau,luong_dot", "--steps", "4", "--runs-dir", str(tmp_path / "c")]
    code, out, err = run_cli([*args, "--dry-run", "--spread-from", str(earlier)], capsys)
    stated = nmt.compare(**{**plan, "seeds": [1, 2]}, dry_run=True, spread=1.0).text.splitlines()[-1]
    assert code == 0 and out.splitlines()[-1] == stated, err  # nmt compare's default seeds: 1,2
    code, _out, err = run_cli([*args, "--dry-run", "--spread", "1", "--spread-from", str(earlier)], capsys)
    assert code == 2 and "not both" in err
