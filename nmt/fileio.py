"""Atomic file writes: readers see the old file or the complete new one, never a part.

Every file the tool writes (prepared corpora, manifests, checkpoints, reports,
translations, plots) goes through :func:`atomic_write`: a temporary sibling is
written, flushed, fsynced and renamed over the target, and removed on failure.
"""

from __future__ import annotations

import errno
import os
import secrets
from contextlib import contextmanager
from pathlib import Path
from typing import IO, Iterator

from nmt.errors import UserError


class DiskFullError(UserError):
    """The disk filled up while writing; the previous file is untouched."""


@contextmanager
def atomic_write(path: Path) -> Iterator[IO[bytes]]:
    """Yield a binary file that replaces ``path`` only when the block completes."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.{secrets.token_hex(4)}.tmp")
    try:
        with open(tmp, "xb") as handle:  # "x": never clobber another writer's temporary
            yield handle
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, path)
    except BaseException as exc:
        tmp.unlink(missing_ok=True)
        if isinstance(exc, OSError) and exc.errno in (errno.ENOSPC, errno.EDQUOT):
            raise DiskFullError(f"{path}: disk full while writing; the previous file is intact") from None
        raise
    dir_fd = os.open(path.parent, os.O_RDONLY)
    try:
        os.fsync(dir_fd)  # make the rename itself durable
    finally:
        os.close(dir_fd)


def atomic_write_bytes(path: Path, data: bytes) -> None:
    with atomic_write(path) as handle:
        handle.write(data)
