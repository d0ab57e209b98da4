"""The data functions draw their bars exactly when ``progress`` is True, terminal or not.

Whether a terminal wants bars is decided once, by the caller (``--progress/--no-progress``
through ``nmt.cli.options.progress_shown``); here stderr is captured, so never a terminal, and
a forced ``progress=True`` must still draw, as the training bar does.
"""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

import pytest

from nmt.config import DataConfig
from nmt.data.clean import clean_pairs
from nmt.data.dataset import load_split
from nmt.data.hub import quiet_datasets
from nmt.data.prepare import filter_settings, load_prepared
from nmt.data.sources import load_local

PAIRS = [("ein Hund", "a dog"), ("zwei Katzen", "two cats"), ("", "nothing")]


@pytest.mark.parametrize("progress", [True, False])
def test_cleaning_bar_follows_the_flag(progress: bool, capsys: pytest.CaptureFixture) -> None:
    assert not sys.stderr.isatty()
    filters = filter_settings(DataConfig())
    clean_pairs([s for s, _ in PAIRS], [t for _, t in PAIRS], **filters, progress=progress)
    err = capsys.readouterr().err
    assert ("cleaning" in err) is progress, err
    assert progress or err == ""


@pytest.mark.parametrize("progress", [True, False])
def test_reading_bar_follows_the_flag(progress: bool, tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    path = tmp_path / "train.tsv"
    path.write_text("".join(f"{s}\t{t}\n" for s, t in PAIRS[:2]), encoding="utf-8")
    assert not sys.stderr.isatty()
    raw = load_local({"train": path}, "de", "en", progress=progress)
    err = capsys.readouterr().err
    assert len(raw["train"][0]) == 2
    assert ("reading train.tsv" in err) is progress, err
    assert progress or err == ""


@pytest.mark.parametrize("progress", [True, False])
def test_encoding_bar_follows_the_flag(
    progress: bool, toy_prepared: Path, tmp_path: Path, capsys: pytest.CaptureFixture
) -> None:
    folder = Path(shutil.copytree(toy_prepared, tmp_path / "de-en", ignore=shutil.ignore_patterns("cache")))
    _, src_tok, tgt_tok = load_prepared(folder)
    capsys.readouterr()
    assert not sys.stderr.isatty()
    load_split(folder, "valid", "de", "en", src_tok, tgt_tok, progress=progress)
    err = capsys.readouterr().err
    assert ("encoding valid.de" in err) is progress, err
    assert progress or err == ""


@pytest.mark.parametrize("progress", [True, False])
def test_datasets_bars_follow_the_flag_and_are_restored(progress: bool, capsys: pytest.CaptureFixture) -> None:
    datasets = pytest.importorskip("datasets")
    before = datasets.is_progress_bar_enabled()
    assert not sys.stderr.isatty()
    with quiet_datasets(progress):
        inside = datasets.is_progress_bar_enabled()
    assert inside is (progress and before)
    assert datasets.is_progress_bar_enabled() is before
