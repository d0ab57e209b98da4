"""Reading a text file a chunk of lines at a time gives exactly what reading it whole gives."""

from __future__ import annotations

from pathlib import Path

import pytest

from nmt.data.lines import line_chunks, read_text_lines
from nmt.util.errors import DataError
from nmt.util.fileio import read_lines

AWKWARD = "\ufeffeins\r\nzwei\rhalb\n\ndrei\u2028vier\nfünf\u0085\n\r\nsechs"  # BOM, CRLF, lone CR, no final newline


@pytest.mark.parametrize("size", [1, 2, 3, 100])
def test_chunks_join_to_the_lines_read_lines_gives(tmp_path: Path, size: int) -> None:
    path = tmp_path / "text.de"
    path.write_bytes(AWKWARD.encode("utf-8"))
    chunks = list(line_chunks(path, size))
    assert [line for lines, _ in chunks for line in lines] == read_lines(path)
    assert all(len(lines) <= size for lines, _ in chunks)
    assert sum(n_bytes for _, n_bytes in chunks) == path.stat().st_size


def test_bad_byte_in_a_later_chunk_names_its_line(tmp_path: Path) -> None:
    path = tmp_path / "text.de"
    path.write_bytes(b"a\nb\nc\nd\xff\ne\n")
    with pytest.raises(DataError, match=r"text\.de: line 4 is not valid UTF-8"):
        list(line_chunks(path, 2))


def test_a_byte_order_mark_is_dropped_only_at_the_start(tmp_path: Path) -> None:
    path = tmp_path / "text.de"
    path.write_bytes("\ufeffa\n\ufeffb\n".encode("utf-8"))
    assert [lines for lines, _ in line_chunks(path, 1)] == [["a"], ["\ufeffb"]]


def test_missing_file_is_a_data_error(tmp_path: Path) -> None:
    with pytest.raises(DataError, match="file not found"):
        list(line_chunks(tmp_path / "nothing.de"))


def test_tsv_pairs_are_read_without_holding_the_file_whole(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The TSV reader's peak is its pairs plus one chunk; reading the whole file first (bytes,
    text, list of lines) peaked at about three times the pairs, gigabytes at 3M pairs."""
    import sys
    import tracemalloc

    import nmt.data.lines
    from nmt.data.sources import load_local

    monkeypatch.setattr(nmt.data.lines, "CHUNK_LINES", 500)
    n = 20_000
    path = tmp_path / "train.tsv"
    path.write_text(
        "".join(
            f"Ein Hund läuft {i} mal über die Straße.\tA dog runs {i} times across the street.\n" for i in range(n)
        ),
        encoding="utf-8",
    )
    tracemalloc.start()
    try:
        src, tgt = load_local({"train": path}, "de", "en")["train"]
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    held = sum(sys.getsizeof(line) for line in (*src, *tgt)) + sys.getsizeof(src) + sys.getsizeof(tgt)
    assert len(src) == len(tgt) == n and src[7] == "Ein Hund läuft 7 mal über die Straße."
    assert peak < 1.5 * held, f"peak {peak} bytes for {held} bytes of pairs"


def test_gzip_files_are_read_in_chunks_too(tmp_path: Path) -> None:
    import gzip

    path = tmp_path / "text.de.gz"
    path.write_bytes(gzip.compress(AWKWARD.encode("utf-8")))
    assert read_text_lines(path) == read_lines(path) == [x for lines, _ in line_chunks(path, 2) for x in lines]
    (tmp_path / "cut.de.gz").write_bytes(path.read_bytes()[:-6])
    with pytest.raises(DataError, match="cannot read"):
        read_text_lines(tmp_path / "cut.de.gz")
