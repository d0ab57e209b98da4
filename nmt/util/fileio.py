"""Atomic file writes, and strict UTF-8 line reading.

Every file the tool writes (prepared corpora, manifests, checkpoints, reports,
translations, plots) goes through :func:`atomic_write`: a temporary sibling is
written, flushed, fsynced and renamed over the target, and removed on failure, so
readers see the old file or the complete new one, never a part.  An output that is a character
device or a FIFO (``-o /dev/null``, a named pipe; :func:`stream_kind`) is written into instead,
never replaced, and one that is a block device or a socket is refused: the one rule of every
output of every command.  A temporary whose process
was killed outright (SIGKILL, a power cut) stays behind; :func:`remove_stale_temporaries`
removes those of one output once their process is gone.  Every text the tool reads line by
line goes through :func:`decode_lines`.
"""

from __future__ import annotations

import errno
import gzip
import hashlib
import json
import os
import re
import secrets
import shutil
import stat
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import IO, Any, Optional

from nmt.util.errors import DataError, UserError

FULL_ERRNOS = (errno.ENOSPC, errno.EDQUOT)
"""The errors a full disk or an exhausted quota gives a write."""

LOW_SPACE = 1 << 20
"""Free bytes below which a write that failed for an unstated reason counts as a full disk."""

TEMPORARY = re.compile(r"\.(?P<name>.+)\.(?P<pid>\d+)\.[0-9a-f]{8}\.tmp")
"""The name of :func:`atomic_write`'s temporary sibling of ``NAME``: ``.NAME.PID.HEX.tmp``, PID its writer's."""


STREAMS = {stat.S_IFCHR: "a character device", stat.S_IFIFO: "a FIFO"}
"""The kinds of file an output is written into rather than replaced (``/dev/null``, a named pipe)."""

NEVER_WRITTEN = {stat.S_IFBLK: "a block device", stat.S_IFSOCK: "a socket"}
"""The kinds of file no output is written into nor replaced by: a disk, a socket."""


class DiskFullError(UserError):
    """The disk filled up while writing; the previous file is untouched."""


def stream_kind(path: Path) -> Optional[str]:
    """What ``path`` (its links followed) is when an output is written into it and never replaces it:
    "a character device" or "a FIFO"; None for anything else (a file, a folder, nothing)."""
    try:
        mode = os.stat(path).st_mode
    except (OSError, ValueError):  # nothing there (a dangling link too), or a name no file can have
        return None
    return STREAMS.get(stat.S_IFMT(mode))


def check_writable_kind(path: Path, option: str) -> None:
    """Refuse, in one line, an output ``path`` that is a block device or a socket (links followed):
    writing into a disk would destroy what it holds, and replacing the node would break the system."""
    try:
        mode = os.stat(path).st_mode
    except (OSError, ValueError):
        return
    kind = NEVER_WRITTEN.get(stat.S_IFMT(mode))
    if kind is not None:
        raise UserError(f"{option} {path}: is {kind}; nmt writes into no such file and replaces none: give a file name")


def free_bytes(folder: Path) -> Optional[int]:
    """Bytes an unprivileged process may still write in ``folder``'s file system (None: unknown)."""
    try:
        return shutil.disk_usage(folder).free  # statvfs: f_bavail * f_frsize
    except OSError:
        return None


def is_disk_full(exc: BaseException, folder: Path, needed: int = 0) -> bool:
    """Whether ``exc``, raised while writing a file of about ``needed`` bytes in ``folder``,
    means the disk (or the user's quota) is full.

    An OSError says so with its errno.  ``torch.save`` reports a failed write as a
    RuntimeError (``[enforce fail at inline_container.cc] unexpected pos``), with the OSError
    chained as its context when Python saw one; without one, the folder's free space decides
    (measured once the partial file is gone): less than ``needed`` or than :data:`LOW_SPACE`.
    An OSError with another errno (permissions, a missing folder) is never a full disk.
    """
    if not isinstance(exc, Exception):  # Ctrl-C, SystemExit: never a full disk
        return False
    link: Optional[BaseException] = exc
    for _ in range(8):  # the chain of causes and contexts, never a cycle
        if link is None:
            break
        if isinstance(link, OSError) and link.errno in FULL_ERRNOS:
            return True
        if "No space left on device" in str(link):
            return True
        link = link.__cause__ or link.__context__
    unstated = isinstance(exc, RuntimeError) or (isinstance(exc, OSError) and exc.errno in (None, errno.EIO))
    free = free_bytes(folder) if unstated else None
    return free is not None and free < max(needed, LOW_SPACE)


@contextmanager
def atomic_write(path: Path, size: int = 0, intact: str = "the previous file is intact") -> Iterator[IO[bytes]]:
    """Yield a binary file that replaces ``path`` only when the block completes.

    A full disk (see :func:`is_disk_full`; ``size`` is about how many bytes the block writes)
    is a :class:`DiskFullError` naming ``path`` and saying what is ``intact``.  A character device or
    a FIFO (:func:`stream_kind`) is opened and written into instead (:func:`write_into`); a block
    device or a socket is refused (:func:`check_writable_kind`).
    """
    path = Path(path)
    check_writable_kind(path, "cannot write")
    if stream_kind(path) is not None:
        with write_into(path) as handle:
            yield handle
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.{secrets.token_hex(4)}.tmp")  # a TEMPORARY
    try:
        with open(tmp, "xb") as handle:  # "x": never clobber another writer's temporary
            yield handle
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, path)
    except BaseException as exc:
        tmp.unlink(missing_ok=True)
        if is_disk_full(exc, path.parent, size):
            raise DiskFullError(f"disk full: no space left on device while writing {path} ({intact})") from None
        raise
    dir_fd = os.open(path.parent, os.O_RDONLY)
    try:
        os.fsync(dir_fd)  # make the rename itself durable
    finally:
        os.close(dir_fd)


@contextmanager
def write_into(path: Path) -> Iterator[IO[bytes]]:
    """Yield ``path``, a character device or a FIFO, opened for writing: the device stays as it was
    (``/dev/null`` stays a device, as root too), and what is written goes where it leads.

    Opening a FIFO waits for its reader, as any program writing into one does.  A reader that goes
    away before the end, and a full device (``/dev/full``), are one line each.
    """
    try:
        with open(path, "wb") as handle:  # O_TRUNC: no effect on a device or a FIFO
            yield handle
            handle.flush()
    except BrokenPipeError:
        raise UserError(f"cannot write {path}: its reader closed it before nmt finished writing") from None
    except OSError as exc:
        if exc.errno in FULL_ERRNOS:
            raise DiskFullError(f"no space left on device while writing {path}") from None
        raise


def open_log(path: Path, mode: str = "ab") -> IO[bytes]:
    """``path`` opened to append (``"ab"``, or ``"a+b"`` to read it too), created if missing, never
    through a symbolic link (O_NOFOLLOW: a link made by anyone is refused, not written into its
    target) and only as a plain file: the rule of every log nmt appends to (a run's metrics.jsonl, a
    comparison's run logs; the test-read log has its own message, :mod:`nmt.run.test_reads`)."""
    flags = (os.O_RDWR if "+" in mode else os.O_WRONLY) | os.O_APPEND | os.O_CREAT | os.O_NOFOLLOW | os.O_NONBLOCK
    try:
        fd = os.open(path, flags, 0o666)
    except OSError as exc:
        why = "is a symbolic link" if exc.errno == errno.ELOOP else (exc.strerror or str(exc))
        raise UserError(f"{path}: {why}; nmt appends its log only to a plain file, never through a link") from None
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise UserError(f"{path}: is not a plain file; nmt appends its log only to a plain file")
    return os.fdopen(fd, mode)


def process_running(pid: int) -> bool:
    """Whether a process ``pid`` exists (it may be another user's: then it exists too)."""
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except (PermissionError, OverflowError, ValueError):
        return pid > 0  # another user's process; an absurd number was never a PID
    return True


def remove_stale_temporaries(path: Path) -> list[Path]:
    """Remove the temporaries (:data:`TEMPORARY`) that writes of ``path`` left when their process was
    killed outright, i.e. whose PID no longer runs; returns them.  Another running writer's temporary
    is left alone, and so is any other file.  A reused PID keeps a stale file until that process ends.

    Called once per output by the commands that write one large file (``nmt translate -o``), not by
    :func:`atomic_write` itself, which would list a folder of thousands of files on every write.
    """
    path = Path(path)
    try:
        entries = list(os.scandir(path.parent))
    except OSError:  # no folder yet, or one nmt cannot list: nothing it left there to remove
        return []
    removed = []
    for entry in entries:
        match = TEMPORARY.fullmatch(entry.name)
        if match is None or match["name"] != path.name or not entry.is_file(follow_symlinks=False):
            continue
        if not process_running(int(match["pid"])):
            try:
                os.unlink(entry.path)
            except OSError:  # gone meanwhile, or not ours to remove (another user's folder)
                continue
            removed.append(Path(entry.path))
    return removed


def atomic_write_bytes(path: Path, data: bytes) -> None:
    """Replace ``path`` with ``data`` atomically."""
    with atomic_write(path) as handle:
        handle.write(data)


def write_lines(path: Path, lines: list[str]) -> None:
    """Write one line per item, UTF-8, ``\\n``-terminated, atomically."""
    atomic_write_bytes(path, "".join(line + "\n" for line in lines).encode("utf-8"))


def sha256_file(path: Path) -> str:
    """Hex SHA-256 of a file's bytes, read in chunks."""
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def decode_lines(data: bytes, name: str, first_line: int = 1) -> list[str]:
    """Strict UTF-8 bytes -> lines; a bad byte is a DataError naming ``name`` and the line.

    The one reader of text lines, for corpora (whole files) and ``nmt translate`` (a chunk of
    a stream at a time): lines end at ``"\\n"`` only (never U+0085 or U+2028, which may sit
    inside a sentence), a ``"\\r"`` before it is dropped, and a byte-order mark opening the
    text is dropped.  ``first_line`` is the number of the first line in ``data``, for
    messages; only a text that starts at line 1 can open with a byte-order mark.
    """
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as e:
        line = first_line + data.count(b"\n", 0, e.start)
        raise DataError(
            f"{name}: line {line} is not valid UTF-8 (byte 0x{data[e.start]:02x}); "
            "convert the file to UTF-8, e.g. with iconv"
        ) from None
    if first_line == 1:
        text = text.removeprefix("\ufeff")
    lines = text.split("\n")
    if lines[-1] == "":  # a final newline ends the last line; it does not start a new one
        lines.pop()
    return [line.removesuffix("\r") for line in lines]


def read_lines(path: Path) -> list[str]:
    """Lines of a UTF-8 text file, gzip-compressed when its name ends in ``.gz``."""
    path = Path(path)
    try:
        data = path.read_bytes()
        if path.suffix == ".gz":
            data = gzip.decompress(data)
    except FileNotFoundError:
        raise DataError(f"file not found: {path}") from None
    except (OSError, EOFError) as e:  # unreadable, or a corrupt/truncated gzip stream
        raise DataError(f"cannot read {path}: {e}") from None
    return decode_lines(data, str(path))


def read_json_lines(paths: Sequence[Path]) -> list[tuple[str, Any]]:
    """(``path:line``, value) of every non-blank line of the files, in order; a file that cannot be
    read or a line that is not JSON is a UserError of one line naming where."""
    found = []
    for path in paths:
        try:
            text = Path(path).read_text(encoding="utf-8")
        except OSError as exc:
            raise UserError(f"{path}: cannot read it ({exc.strerror or exc})") from None
        for number, line in enumerate(text.splitlines(), 1):
            if not line.strip():
                continue
            try:
                found.append((f"{path}:{number}", json.loads(line)))
            except ValueError as exc:
                raise UserError(f"{path}:{number}: not a JSON line ({exc})") from None
    return found
