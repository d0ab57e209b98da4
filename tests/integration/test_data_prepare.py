"""Prepared corpus folders: files, manifest, reuse, and loading them back."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest

from nmt import config as C
from nmt.data import prepare as prepare_module
from nmt.data.clean import clean_pairs
from nmt.data.pipeline import check_same_text, prepare_corpus
from nmt.data.prepare import MANIFEST, filter_settings, load_prepared, prepare, spm_settings
from nmt.data.sources import load_multi30k
from nmt.util.errors import ConfigError, DataError
from nmt.util.fileio import read_lines

SMALL_SPM = {"vocab_size": 60, "num_threads": 1}


def sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_eval_splits_are_normalized_but_never_filtered(toy_raw: dict, tmp_path: Path) -> None:
    manifest = prepare("toy", toy_raw, tmp_path, "de", "en", filters={}, spm=SMALL_SPM, source_info={})
    assert read_lines(tmp_path / "valid.de") == ["Ein Hund läuft.", "", "Zwei Kinder spielen."]
    assert read_lines(tmp_path / "valid.en") == ["A dog runs.", "An empty line above.", "Two children play."]
    assert manifest["splits"]["valid"]["pairs"] == manifest["splits"]["valid"]["raw_pairs"] == 3
    # train lost its empty-source pairs, and only those
    n_empty = toy_raw["train"][0].count("")
    assert manifest["cleaning"]["removed"] == {"empty": n_empty, "too_short": 0, "too_long": 0, "ratio": 0}
    assert len(read_lines(tmp_path / "train.de")) == len(toy_raw["train"][0]) - n_empty


def test_manifest_hashes_match_the_files(toy_prepared: Path) -> None:
    manifest = json.loads((toy_prepared / MANIFEST).read_text(encoding="utf-8"))
    assert manifest["corpus"] == "toy" and manifest["pair"] == {"src": "de", "tgt": "en"}
    for split, info in manifest["splits"].items():
        for lang, entry in info["files"].items():
            assert entry["path"] == f"{split}.{lang}"
            assert entry["sha256"] == sha(toy_prepared / entry["path"])
            assert len(read_lines(toy_prepared / entry["path"])) == info["pairs"]
    assert manifest["tokenizers"]["src"] == manifest["tokenizers"]["tgt"]  # joint vocabulary
    assert manifest["tokenizers"]["src"]["sha256"] == sha(toy_prepared / "spm.model")
    assert manifest["spm"]["joint"] is True and manifest["spm"]["vocab_size"] == 60


def test_same_inputs_reuse_the_folder(toy_raw: dict, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    first = prepare("toy", toy_raw, tmp_path, "de", "en", filters={}, spm=SMALL_SPM, source_info={"v": 1})

    def must_not_train(*args, **kwargs):
        raise AssertionError("SentencePiece was retrained although nothing changed")

    monkeypatch.setattr(prepare_module, "train_sentencepiece", must_not_train)
    assert prepare("toy", toy_raw, tmp_path, "de", "en", filters={}, spm=SMALL_SPM, source_info={"v": 1}) == first
    for changed in ({"source_info": {"v": 2}}, {"force": True}):
        kwargs = {"filters": {}, "spm": SMALL_SPM, "source_info": {"v": 1}, **changed}
        with pytest.raises(AssertionError, match="retrained"):
            prepare("toy", toy_raw, tmp_path, "de", "en", **kwargs)
        assert not (tmp_path / MANIFEST).exists(), "a half-rebuilt folder must not keep a manifest"


def test_separate_vocabularies(toy_raw: dict, tmp_path: Path) -> None:
    manifest = prepare(
        "toy", toy_raw, tmp_path, "de", "en", filters={}, spm={**SMALL_SPM, "joint": False}, source_info={}
    )
    assert manifest["tokenizers"]["src"]["path"] == "spm.de.model"
    assert manifest["tokenizers"]["tgt"]["path"] == "spm.en.model"
    _, src_tok, tgt_tok = load_prepared(tmp_path)
    assert src_tok is not tgt_tok and src_tok.sha256 != tgt_tok.sha256


def test_joint_vocabulary_loads_one_tokenizer(toy_prepared: Path) -> None:
    manifest, src_tok, tgt_tok = load_prepared(toy_prepared)
    assert src_tok is tgt_tok and src_tok.sha256 == manifest["tokenizers"]["src"]["sha256"]


def test_load_prepared_without_manifest_says_what_to_run(tmp_path: Path) -> None:
    with pytest.raises(DataError, match=r"run `nmt data prepare multi30k --pair de-en`"):
        load_prepared(tmp_path / "multi30k" / "de-en")


def test_unknown_setting_is_rejected(toy_raw: dict, tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="vocab_sise"):
        prepare("toy", toy_raw, tmp_path, "de", "en", filters={}, spm={"vocab_sise": 10}, source_info={})


def test_multi30k_line_counts(multi30k_prepared: Path) -> None:
    manifest, src_tok, _ = load_prepared(multi30k_prepared)
    counts = {
        split: len(read_lines(multi30k_prepared / f"{split}.{lang}"))
        for split in manifest["splits"]
        for lang in ("de", "en")
    }
    assert counts == {"train": 29000, "valid": 1014, "test2016": 1000}
    assert src_tok.vocab_size == 2000


def test_settings_left_out_take_the_config_defaults(toy_raw: dict, tmp_path: Path) -> None:
    """A caller that omits a setting gets what ``nmt data prepare`` would use: the config's default."""
    manifest = prepare("toy", toy_raw, tmp_path, "de", "en", filters={}, spm=SMALL_SPM, source_info={})
    defaults = C.load(None).data
    filters = filter_settings(defaults)
    assert manifest["cleaning"]["normalization"] == filters.pop("normalization")
    assert manifest["cleaning"]["filters"] == filters
    assert manifest["spm"] == {**spm_settings(defaults), **SMALL_SPM}


def test_the_cli_path_applies_every_data_setting(tmp_path: Path) -> None:
    """What ``nmt data prepare`` runs, with every cleaning and SentencePiece option changed
    from its default, records exactly those values: none is lost or replaced on the way."""
    cfg = C.load(
        None,
        [
            f"data.root={tmp_path}",
            "data.synthetic_sizes={train: 300, valid: 5, test: 5}",
            "data.min_len=2",
            "data.max_len=30",
            "data.max_ratio=2.5",
            "data.normalization=nfkc",
            "data.vocab_size=200",
            "data.spm_type=bpe",
            "data.joint_vocab=false",
            "data.character_coverage=0.9995",
            "data.input_sentence_size=250",
        ],
    ).data
    defaults = C.load(None).data
    changed = (
        "min_len",
        "max_len",
        "max_ratio",
        "normalization",
        "vocab_size",
        "spm_type",
        "joint_vocab",
        "character_coverage",
        "input_sentence_size",
    )
    assert all(getattr(cfg, key) != getattr(defaults, key) for key in changed)
    manifest = prepare_corpus(cfg)
    filters = filter_settings(cfg)
    assert manifest["cleaning"]["normalization"] == filters.pop("normalization")
    assert manifest["cleaning"]["filters"] == filters
    assert manifest["spm"] == spm_settings(cfg)
    assert manifest["tokenizers"]["src"]["path"] == "spm.en.model"  # joint_vocab=false


def test_scoring_refuses_a_folder_prepared_from_other_text_since(tmp_path: Path) -> None:
    """A run trained on synthetic seed 1; the folder then prepared again from seed 2 (another
    config's nmt data prepare): its test split is another test set, so scoring the run refuses."""
    settings = [f"data.root={tmp_path}", "data.synthetic_sizes={train: 200, valid: 5, test: 5}", "data.vocab_size=100"]
    run_data = C.load(None, settings).data
    prepare_corpus(run_data)
    check_same_text(run_data, "runs/x/config.yaml")  # the run's own text: scored
    check_same_text(C.load(None, [*settings, "data.vocab_size=120"]).data, "c.yaml")  # vocabulary: same text

    prepare_corpus(C.load(None, [*settings, "data.synthetic_seed=2"]).data)
    with pytest.raises(DataError, match="not the text this run trained on") as refused:
        check_same_text(run_data, "runs/x/config.yaml")
    assert str(run_data.prepared_dir) in str(refused.value)
    assert "nmt data prepare synthetic --config runs/x/config.yaml" in str(refused.value)
    normalized = C.load(None, [*settings, "data.synthetic_seed=2", "data.normalization=nfkc"]).data
    with pytest.raises(DataError, match="not the text"):
        check_same_text(normalized, "c.yaml")  # same source, other normalization


def test_multi30k_default_filters_account_for_every_pair(multi30k_dir: Path, tmp_path: Path) -> None:
    """The filters of ``nmt data prepare multi30k --pair de-en`` drop almost nothing from Multi30k."""
    cfg = C.load(None, ["data.corpus=multi30k", "data.src=de", "data.tgt=en"]).data
    src, tgt = load_multi30k("de", "en", mirror=multi30k_dir, download_dir=tmp_path)["train"]
    kept, _, removed = clean_pairs(src, tgt, **filter_settings(cfg))
    assert len(kept) + sum(removed.values()) == 29000 and len(kept) > 28900


def test_two_local_corpora_of_one_pair_prepare_into_folders_of_their_own(tmp_path: Path, monkeypatch) -> None:
    """Before, both prepared into data/local/en-de/ and the second replaced the first."""
    from nmt.util.errors import DataError

    monkeypatch.chdir(tmp_path)
    for name, words in (("a", "cat"), ("b", "dog")):
        (tmp_path / f"{name}.tsv").write_text(
            "".join(f"the {words} {i}\tdie {words} {i}\n" for i in range(60)), encoding="utf-8"
        )
    folders = []
    for name in ("a", "b"):
        files = json.dumps({"train": [f"{name}.tsv"], "valid": [f"{name}.tsv"]})
        cfg = C.load(None, ["data.corpus=local", "data.root=data", f"data.local_files={files}", "data.vocab_size=40"])
        prepare_corpus(cfg.data)
        folders.append(cfg.data.prepared_dir)
    assert folders[0] != folders[1] and folders[0].parent == folders[1].parent == Path("data/local/en-de")
    assert "cat" in (folders[0] / "train.en").read_text() and "dog" in (folders[1] / "train.en").read_text()
    files = json.dumps({"train": ["missing.tsv"]})
    cfg = C.load(None, ["data.corpus=local", f"data.local_files={files}"])
    with pytest.raises(DataError, match=r"relative paths are read from the current folder .* not from the config"):
        prepare_corpus(cfg.data)


@pytest.mark.parametrize(("flag", "drawn"), [("--progress", True), ("--no-progress", False), (None, False)])
def test_prepare_bars_follow_the_progress_flag_off_a_terminal(
    flag: str | None, drawn: bool, tmp_path: Path, capsys: pytest.CaptureFixture
) -> None:
    """`nmt data prepare` with stderr captured (not a terminal): a forced --progress draws the cleaning
    bar as it draws the training bars, --no-progress and the default (no terminal) draw none."""
    from conftest import run_cli

    argv = ["data", "prepare", "synthetic", "--set", f"data.root={tmp_path}"]
    argv += ["--set", "data.synthetic_sizes={train: 200, valid: 10, test: 10}", "--set", "data.vocab_size=100"]
    code, _out, err = run_cli([*argv, *([flag] if flag else [])], capsys)
    assert code == 0, err
    assert ("cleaning" in err) is drawn, err
