"""Reading a large UTF-8 text file a chunk of lines at a time.

:func:`nmt.util.fileio.read_lines` holds a whole file three times over while it splits it (the
bytes, the decoded text, the list of lines); for a corpus of millions of lines that is
gigabytes before any work is done.  :func:`line_chunks` splits and decodes the same way (at
``"\\n"`` only, strict UTF-8, a ``"\\r"`` before the ``"\\n"`` dropped, a byte-order mark
opening the file dropped, a bad byte named by file and line) but never holds more than one
chunk of the file, so readers that turn lines into something smaller (token ids, pairs of
sentences) stay within a bounded overhead.
"""

from __future__ import annotations

import gzip
import itertools
from collections.abc import Iterator
from pathlib import Path

from nmt.util.errors import DataError
from nmt.util.fileio import decode_lines

CHUNK_LINES = 10_000
"""Lines per chunk: large enough that per-chunk costs vanish, small enough to be a few MB."""


def read_text_lines(path: Path) -> list[str]:
    """Every line of ``path`` (as ``read_lines`` gives them), without holding the file whole."""
    return [line for lines, _ in line_chunks(path) for line in lines]


def line_chunks(path: Path, size: int | None = None) -> Iterator[tuple[list[str], int]]:
    """Yield ``(lines, n_bytes)`` for each run of up to ``size`` (default :data:`CHUNK_LINES`)
    lines of ``path``, in order.

    ``n_bytes`` is the chunk's size in the file, for a progress bar over the file's bytes.
    A name ending in ``.gz`` is decompressed on the way. A missing or unreadable file is a
    :class:`DataError` (as with ``read_lines``).
    """
    size = size or CHUNK_LINES
    opener = gzip.open if Path(path).suffix == ".gz" else open
    try:
        with opener(path, "rb") as f:
            first = 1
            while chunk := list(itertools.islice(f, size)):
                data = b"".join(chunk)
                yield decode_lines(data, str(path), first), len(data)
                first += len(chunk)
    except FileNotFoundError:
        raise DataError(f"file not found: {path}") from None
    except (OSError, EOFError) as e:  # unreadable, a directory, a corrupt or truncated gzip stream
        raise DataError(f"cannot read {path}: {e}") from None
