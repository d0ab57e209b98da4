"""Encoded splits and their on-disk id cache."""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import pytest

from nmt.data.dataset import EncodedSplit, load_split
from nmt.data.prepare import load_prepared
from nmt.data.tokenizer import Tokenizer
from nmt.util.errors import DataError
from nmt.util.fileio import read_lines


@pytest.fixture()
def prepared_copy(toy_prepared: Path, tmp_path: Path) -> Path:
    """A private copy of the toy folder, so cache files and edits do not leak between tests."""
    return Path(shutil.copytree(toy_prepared, tmp_path / "de-en", ignore=shutil.ignore_patterns("cache")))


def no_encoding(self: Tokenizer, lines: list[str]) -> list[list[int]]:
    raise AssertionError("encode() was called although the cache should have been used")


def test_ids_match_the_tokenizer(prepared_copy: Path) -> None:
    _, src_tok, tgt_tok = load_prepared(prepared_copy)
    split = load_split(prepared_copy, "valid", "de", "en", src_tok, tgt_tok)
    src_lines, tgt_lines = read_lines(prepared_copy / "valid.de"), read_lines(prepared_copy / "valid.en")
    assert len(split) == len(src_lines) == 3
    for i in range(len(split)):
        assert split.src(i).tolist() == src_tok.encode([src_lines[i]])[0]
        assert split.tgt(i).tolist() == tgt_tok.encode([tgt_lines[i]])[0]
    assert split.src_lengths[1] == 0, "the empty source line stays, with no tokens"
    assert split.src_ids.dtype == np.int32 and split.src_offsets.dtype == np.int64
    assert split.tgt_lengths.tolist() == [len(split.tgt(i)) for i in range(3)]


def test_second_load_uses_the_cache(prepared_copy: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _, src_tok, tgt_tok = load_prepared(prepared_copy)
    first = load_split(prepared_copy, "train", "de", "en", src_tok, tgt_tok)
    cache_files = sorted(p.name for p in (prepared_copy / "cache").iterdir())
    assert len(cache_files) == 4 and not any(name.startswith(".") for name in cache_files)

    monkeypatch.setattr(Tokenizer, "encode", no_encoding)
    second = load_split(prepared_copy, "train", "de", "en", src_tok, tgt_tok)
    assert isinstance(second.src_ids, np.memmap)
    assert np.array_equal(first.src_ids, second.src_ids) and np.array_equal(first.tgt_offsets, second.tgt_offsets)


def test_edited_text_is_encoded_again(prepared_copy: Path) -> None:
    _, src_tok, tgt_tok = load_prepared(prepared_copy)
    before = load_split(prepared_copy, "valid", "de", "en", src_tok, tgt_tok)
    (prepared_copy / "valid.de").write_text("Hund\nKatze\nMaus\n", encoding="utf-8")
    after = load_split(prepared_copy, "valid", "de", "en", src_tok, tgt_tok)
    assert after.src(0).tolist() == src_tok.encode(["Hund"])[0] != before.src(0).tolist()
    assert len(list((prepared_copy / "cache").glob("valid.de.*.npy"))) == 2, "stale cache files are removed"


def test_custom_cache_dir(prepared_copy: Path, tmp_path: Path) -> None:
    _, src_tok, tgt_tok = load_prepared(prepared_copy)
    load_split(prepared_copy, "valid", "de", "en", src_tok, tgt_tok, cache_dir=tmp_path / "elsewhere")
    assert len(list((tmp_path / "elsewhere").glob("*.npy"))) == 4
    assert not (prepared_copy / "cache").exists()


def test_misaligned_prepared_files(prepared_copy: Path) -> None:
    _, src_tok, tgt_tok = load_prepared(prepared_copy)
    (prepared_copy / "valid.en").write_text("only one line\n", encoding="utf-8")
    with pytest.raises(DataError, match=r"valid\.de has 3 lines but .*valid\.en has 1"):
        load_split(prepared_copy, "valid", "de", "en", src_tok, tgt_tok)


def test_missing_split_file(prepared_copy: Path) -> None:
    _, src_tok, tgt_tok = load_prepared(prepared_copy)
    with pytest.raises(DataError, match=r"test\.de is missing"):
        load_split(prepared_copy, "test", "de", "en", src_tok, tgt_tok)


def test_from_sequences_round_trip() -> None:
    split = EncodedSplit.from_sequences([[5, 6], [], [7]], [[8], [9, 10, 11], []])
    assert len(split) == 3
    assert [split.src(i).tolist() for i in range(3)] == [[5, 6], [], [7]]
    assert split.tgt_lengths.tolist() == [1, 3, 0]


# --- encoding a large file: a chunk at a time --------------------------------------------------


def write_long_split(folder: Path, n: int) -> None:
    """``n`` aligned lines on each side of the train split (long enough to dwarf one chunk)."""
    de = [f"Ein Hund läuft {i % 7} mal über die Straße und sieht eine Katze." for i in range(n)]
    en = [f"A dog runs {i % 7} times across the street and sees a cat." for i in range(n)]
    (folder / "train.de").write_text("".join(line + "\n" for line in de), encoding="utf-8")
    (folder / "train.en").write_text("".join(line + "\n" for line in en), encoding="utf-8")


def test_encoding_in_chunks_equals_encoding_the_whole_file(
    prepared_copy: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import nmt.data.dataset as dataset

    write_long_split(prepared_copy, 25)
    _, src_tok, tgt_tok = load_prepared(prepared_copy)
    monkeypatch.setattr(dataset, "ENCODE_CHUNK", 4)  # 25 lines: six full chunks and one of a single line
    split = load_split(prepared_copy, "train", "de", "en", src_tok, tgt_tok)
    whole = EncodedSplit.from_sequences(
        src_tok.encode(read_lines(prepared_copy / "train.de")), tgt_tok.encode(read_lines(prepared_copy / "train.en"))
    )
    assert len(split) == 25
    assert np.array_equal(split.src_ids, whole.src_ids) and np.array_equal(split.src_offsets, whole.src_offsets)
    assert np.array_equal(split.tgt_ids, whole.tgt_ids) and np.array_equal(split.tgt_offsets, whole.tgt_offsets)


def test_encoding_memory_is_the_arrays_not_python_lists(prepared_copy: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Encoding holds the ids as int32 arrays (twice, while they are joined) plus one chunk of
    Python objects; a list and a pointer per token of the whole file would take over three
    times the arrays' size (the 3M-pair corpus of bench_scale.py: gigabytes)."""
    import tracemalloc

    import nmt.data.dataset as dataset

    write_long_split(prepared_copy, 20_000)
    _, src_tok, _ = load_prepared(prepared_copy)
    monkeypatch.setattr(dataset, "ENCODE_CHUNK", 500)
    tracemalloc.start()
    try:
        ids, offsets = dataset._encode_file(prepared_copy / "train.de", src_tok, prepared_copy / "cache")
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    arrays = ids.nbytes + offsets.nbytes
    assert len(offsets) == 20_001 and ids.nbytes > 20_000 * 4 * 10  # long lines: over ten tokens each
    assert peak < 3 * arrays, f"peak {peak} bytes for {arrays} bytes of arrays"
