"""Bad corpus input is refused early, in one line that names the file and line or the split.

Covers non-UTF-8 JSONL, empty files, TSV rows without exactly one tab, splits without pairs
(at prepare time and again when training loads an older prepared corpus), and the progress
bars and log chatter of ``datasets`` under ``--no-progress``.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from conftest import NMT, PROC_TIMEOUT, REPO, TOY_TRAIN, run_cli
from nmt import config as config_mod
from nmt.data import prepare as prepare_module
from nmt.data.pipeline import load_corpus
from nmt.data.prepare import prepare
from nmt.data.sources import load_local, load_synthetic
from nmt.util.errors import DataError

SMALL_SPM = {"vocab_size": 60, "num_threads": 1}


def write(path: Path, data: str | bytes) -> Path:
    path.write_bytes(data.encode("utf-8") if isinstance(data, str) else data)
    return path


def toy_jsonl(path: Path) -> Path:
    return write(path, "".join(json.dumps({"de": de, "en": en}) + "\n" for de, en in TOY_TRAIN))


def prepare_local_argv(tmp_path: Path, files: dict[str, list[str]]) -> list[str]:
    return [
        "data",
        "prepare",
        "local",
        "--pair",
        "de-en",
        "--no-progress",
        "--set",
        f"data.root={tmp_path / 'data'}",
        "--set",
        f"data.local_files={json.dumps(files)}",
        "--set",
        "data.vocab_size=60",
    ]


# --- 4: JSONL that is not UTF-8 ------------------------------------------------------------------


def test_latin1_jsonl_names_file_and_line(tmp_path: Path) -> None:
    path = write(
        tmp_path / "train.jsonl", b'{"de": "gut", "en": "good"}\n' + '{"de": "schön", "en": "nice"}\n'.encode("latin-1")
    )
    with pytest.raises(DataError, match=r"train\.jsonl: line 2 is not valid UTF-8") as err:
        load_local({"train": path}, "de", "en", hf_cache_dir=tmp_path / "hf")
    assert "\n" not in str(err.value)


def test_latin1_jsonl_through_the_cli_exits_2_with_one_line(tmp_path: Path, capsys) -> None:
    bad = write(tmp_path / "train.jsonl", '{"de": "Grüße", "en": "greetings"}\n'.encode("latin-1"))
    code, _, err = run_cli(prepare_local_argv(tmp_path, {"train": [str(bad)]}), capsys)
    assert code == 2 and err.strip().count("\n") == 0
    assert err.startswith("nmt: error: ") and f"{bad}: line 1 is not valid UTF-8" in err


def test_invalid_json_names_the_line_counted_from_one(tmp_path: Path) -> None:
    path = write(tmp_path / "train.jsonl", '{"de": "a", "en": "b"}\n\n{"de": oops}\n')
    with pytest.raises(DataError, match=r"train\.jsonl: line 3 is not valid JSON"):
        load_local({"train": path}, "de", "en", hf_cache_dir=tmp_path / "hf")


# --- 5: empty files --------------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["train.tsv", "train.jsonl"])
def test_empty_table_file_says_so(tmp_path: Path, name: str) -> None:
    path = write(tmp_path / name, b"")
    with pytest.raises(DataError) as err:
        load_local({"train": path}, "de", "en", hf_cache_dir=tmp_path / "hf")
    assert str(err.value) == f"{path}: the file is empty"


def test_empty_text_file_says_so_in_the_same_words(tmp_path: Path) -> None:
    src, tgt = write(tmp_path / "valid.de", b""), write(tmp_path / "valid.en", b"")
    with pytest.raises(DataError) as err:
        load_local({"valid": (src, tgt)}, "de", "en")
    assert str(err.value) == f"{src}: the file is empty"


# --- 6: TSV rows need exactly one tab --------------------------------------------------------------


@pytest.mark.parametrize(
    "text,line,found",
    [
        ("a\tb\nno tab here\nc\td\n", 2, "no tab"),
        ("a\tb\nc\td\te\n", 2, "2 tabs"),
        ("a\tb\n\nc\td\n", 2, "no tab"),  # a blank line is not an empty pair (that is a lone tab)
        ("a\tb\nc\td\n\n", 3, "no tab"),  # nor is a blank last line
    ],
)
def test_tsv_line_without_exactly_one_tab_is_named(tmp_path: Path, text: str, line: int, found: str) -> None:
    path = write(tmp_path / "test.tsv", text)
    with pytest.raises(DataError) as err:
        load_local({"test": path}, "de", "en")
    assert str(err.value).startswith(f"{path}: line {line} has {found};")


def test_tsv_splits_lines_like_the_text_files(tmp_path: Path) -> None:
    """A TSV and two text files with the same lines give the same pairs: a lone CR or a U+2028
    inside a sentence stays there, and a CRLF ending is removed."""
    de = ["eins\rhalb", "zwei\u2028drei", "", "vier"]
    en = ["one", "two", "empty source", "four\u0085"]
    tsv = write(tmp_path / "valid.tsv", "".join(f"{s}\t{t}\r\n" for s, t in zip(de, en)))
    src = write(tmp_path / "valid.de", "".join(s + "\n" for s in de))
    tgt = write(tmp_path / "valid.en", "".join(t + "\n" for t in en))
    assert load_local({"valid": tsv}, "de", "en") == load_local({"valid": (src, tgt)}, "de", "en")
    assert load_local({"valid": tsv}, "de", "en")["valid"] == (de, en)


# --- 7: every split needs a pair -------------------------------------------------------------------


@pytest.mark.parametrize("split", ["valid", "test"])
def test_prepare_refuses_a_split_without_pairs(toy_raw: dict, tmp_path: Path, split: str) -> None:
    raw = {**toy_raw, split: ([], [])}
    with pytest.raises(DataError, match=f"split '{split}' of corpus 'toy' has no sentence pairs"):
        prepare("toy", raw, tmp_path / "de-en", "de", "en", filters={}, spm=SMALL_SPM, source_info={})
    assert not (tmp_path / "de-en").exists(), "refused before anything is written"


def test_synthetic_size_zero_leaves_the_split_out() -> None:
    raw = load_synthetic("en", "de", {"train": 20, "valid": 5, "test": 0}, seed=1)
    assert list(raw) == ["train", "valid"]


def test_training_refuses_a_prepared_corpus_with_an_empty_valid_split(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A corpus prepared before the check existed is refused by load_corpus, which the trainer
    calls first, instead of at the first validation."""
    train = toy_jsonl(tmp_path / "train.jsonl")
    valid = [str(write(tmp_path / "valid.de", b"")), str(write(tmp_path / "valid.en", b""))]
    cfg = config_mod.load(
        None,
        [
            "data.corpus=local",
            "data.src=de",
            "data.tgt=en",
            f"data.root={tmp_path / 'data'}",
            f"data.local_files={json.dumps({'train': [str(train)], 'valid': valid})}",
            "data.vocab_size=60",
        ],
    ).data
    raw = {"train": load_local({"train": train}, "de", "en", hf_cache_dir=tmp_path / "hf")["train"], "valid": ([], [])}
    from nmt.data.pipeline import source_info
    from nmt.data.prepare import filter_settings, spm_settings

    with monkeypatch.context() as old_version:  # what an older version wrote without complaint
        old_version.setattr(prepare_module, "_check_not_empty", lambda corpus, raw: None)
        prepare(
            "local",
            raw,
            cfg.prepared_dir,
            "de",
            "en",
            filters=filter_settings(cfg),
            spm=spm_settings(cfg),
            source_info=source_info(cfg),
        )
    with pytest.raises(DataError, match=r"split 'valid' in .* has no sentence pairs"):
        load_corpus(cfg, splits=("train", "valid"))


# --- 15a: datasets stays quiet without --progress --------------------------------------------------


def test_jsonl_loader_without_progress_prints_nothing(tmp_path: Path, capfd: pytest.CaptureFixture) -> None:
    import datasets

    before = (datasets.is_progress_bar_enabled(), datasets.logging.get_verbosity())
    bad = write(tmp_path / "bad.jsonl", '{"de": "a", "en": "b"}\n{"de": oops}\n')
    raw = load_local(
        {"train": toy_jsonl(tmp_path / "train.jsonl")}, "de", "en", hf_cache_dir=tmp_path / "hf", progress=False
    )
    with pytest.raises(DataError):
        load_local({"train": bad}, "de", "en", hf_cache_dir=tmp_path / "hf", progress=False)
    err = capfd.readouterr().err
    assert len(raw["train"][0]) == len(TOY_TRAIN)
    assert "Generating" not in err and "Failed to load JSON" not in err, err
    assert (datasets.is_progress_bar_enabled(), datasets.logging.get_verbosity()) == before


def test_prepare_no_progress_shows_no_datasets_bars(tmp_path: Path) -> None:
    """`nmt data prepare local ... --no-progress` as a real process, with a fresh datasets cache."""
    train = toy_jsonl(tmp_path / "train.jsonl")
    valid = write(tmp_path / "valid.tsv", "Ein Hund.\tA dog.\n")
    env = {**os.environ, "HF_DATASETS_CACHE": str(tmp_path / "hf"), "HF_HUB_OFFLINE": "1"}
    proc = subprocess.run(
        NMT + prepare_local_argv(tmp_path, {"train": [str(train)], "valid": [str(valid)]}),
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=PROC_TIMEOUT,
    )
    assert proc.returncode == 0, proc.stderr
    assert "Generating" not in proc.stderr and "examples/s" not in proc.stderr, proc.stderr
