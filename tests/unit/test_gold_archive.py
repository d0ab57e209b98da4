"""``nmt data fetch-alignments``: the RWTH archive copied from a mirror only when its checksum is the
archive's, kept when intact, and found by ``nmt data prepare europarl`` without --gold."""

from __future__ import annotations

from pathlib import Path

import pytest

from conftest import run_cli
from nmt.data.gold_archive import GOLD_NAME, fetch_gold_archive, gold_path
from nmt.util.errors import DataError

SHARED = Path(__file__).resolve().parents[3] / "shared" / "data"


def test_a_file_that_is_not_the_archive_is_refused_and_a_missing_one_named(tmp_path: Path) -> None:
    (tmp_path / "mirror").mkdir()
    (tmp_path / "mirror" / GOLD_NAME).write_bytes(b"not the archive")
    with pytest.raises(DataError, match="is not the RWTH archive"):
        fetch_gold_archive(tmp_path / "data", tmp_path / "mirror")
    assert not gold_path(tmp_path / "data").exists()
    with pytest.raises(DataError, match=f"has no {GOLD_NAME}"):
        fetch_gold_archive(tmp_path / "data", tmp_path)


def test_the_real_archive_is_copied_kept_and_read_by_the_europarl_preparation(
    tmp_path: Path, capsys, monkeypatch
) -> None:
    gold, europarl = SHARED / "alignments", SHARED / "europarl_comtrans"
    if not (gold / GOLD_NAME).is_file() or not (europarl / "comtrans.g.gz").is_file():
        pytest.skip(f"the RWTH archive or the Europarl sample is not in {SHARED}")
    monkeypatch.chdir(tmp_path)
    code, out, err = run_cli(["data", "fetch-alignments", "--mirror", str(gold)], capsys)
    assert code == 0 and "sha256 verified" in out, err
    assert fetch_gold_archive("data") == gold_path("data")  # intact: kept, nothing needed
    sets = ["--set", "data.vocab_size=200", "--set", "data.input_sentence_size=2000"]
    code, out, err = run_cli(
        ["data", "prepare", "europarl", "--pair", "en-de", "--mirror", str(europarl), *sets], capsys
    )
    assert code == 0 and "77 pairs removed before the split" in out, err
