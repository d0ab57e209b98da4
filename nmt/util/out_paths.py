"""Whether nmt can create an output where the user asked, checked before any work, and the one line
that says why not: a name longer than a file system allows, a path under a regular file or through a
dangling symbolic link, a folder nmt cannot write in (a read-only file system, no permission), and an
output that is itself a symbolic link (:func:`check_not_link`, the rule of every output file and
folder).  An output that is a character device or a FIFO is written into, never replaced
(:func:`nmt.util.fileio.stream_kind`): ``-o /dev/null`` needs no write permission in ``/dev``.

:func:`os_error_line` words the same failures when they happen anyway (a file system made
read-only mid-run), so the CLI reports them in one line instead of an internal error.  Paths are
shown cut to :data:`SHOWN_PATH_CHARS`, so a path of any length makes a short line.
"""

from __future__ import annotations

import errno
import os
from pathlib import Path
from typing import Optional

from nmt.util.errors import UserError
from nmt.util.fileio import check_writable_kind, stream_kind

NAME_MAX = 255
"""The most bytes in one file or folder name on the usual file systems (ext4, xfs, btrfs, APFS)."""

SHOWN_PATH_CHARS = 120
"""An error shows at most this many characters of a path: its start and its end."""

WORDED = {
    errno.EROFS: "read-only file system",
    errno.EACCES: "no write permission",
    errno.EPERM: "no write permission",
    errno.ENAMETOOLONG: f"a name longer than {NAME_MAX} bytes",
    errno.ENOTDIR: "a part of the path is not a folder",
    errno.EEXIST: "a file is in the way",
    errno.ELOOP: "too many symbolic links",
}
"""The errors of creating or writing a file that are the user's to fix, in words."""


def shown(path: object) -> str:
    """``path`` as text, its middle cut out past :data:`SHOWN_PATH_CHARS` characters."""
    text = os.fsdecode(path) if isinstance(path, (bytes, os.PathLike)) else str(path)
    if len(text) <= SHOWN_PATH_CHARS:
        return text
    keep = (SHOWN_PATH_CHARS - 3) // 2
    return f"{text[:keep]}...{text[-keep:]}"


def _cannot_write(folder: Path) -> Optional[str]:
    """Why nothing can be created in the existing ``folder``, or None when something can."""
    if os.access(folder, os.W_OK | os.X_OK):
        return None
    try:
        read_only = bool(os.statvfs(folder).f_flag & os.ST_RDONLY)
    except OSError:
        read_only = False
    return WORDED[errno.EROFS] if read_only else WORDED[errno.EACCES]


def check_can_create(path: Path, option: str, kind: str = "folder") -> None:
    """Refuse, in one line, an output ``path`` (a ``kind``: "folder" or "file") that nmt could not
    create or write: checked before any work, so a bad path costs nothing and writes nothing."""
    path = Path(path)
    long = next((part for part in path.parts if len(os.fsencode(part)) > NAME_MAX), None)
    if long is not None:
        raise UserError(
            f"{option} {shown(path)}: the name {shown(long)} is {len(os.fsencode(long))} bytes, more than the "
            f"{NAME_MAX} a file system allows"
        )
    existing = next((p for p in (path, *path.parents) if p.exists() or p.is_symlink()), None)
    if existing is None:
        return
    if existing == path and kind == "file" and stream_kind(path) is not None:  # written into, not replaced
        if not os.access(path, os.W_OK):
            raise UserError(f"{option} {shown(path)}: cannot write into {stream_kind(path)} ({WORDED[errno.EACCES]})")
        return
    check_writable_kind(path, option)
    if existing.is_symlink() and not existing.exists():
        raise UserError(f"{option} {shown(path)}: {shown(existing)} is a symbolic link to nothing")
    if existing != path and not existing.is_dir():
        raise UserError(f"{option} {shown(path)}: {shown(existing)} is not a folder")
    if existing == path and (kind == "folder") != existing.is_dir():
        raise UserError(f"{option} {shown(path)}: exists and is not a {kind}")
    folder = existing if existing.is_dir() else existing.parent
    why = _cannot_write(folder)
    if why is not None:
        raise UserError(f"{option} {shown(path)}: cannot create files in {shown(folder)} ({why})")


def check_not_link(path: Path, option: str, kind: str = "file") -> None:
    """Refuse, in one line, an output (a ``kind``: "file" or "folder") that is a symbolic link, to a
    file, to a folder or to nothing.

    nmt writes a file under a temporary name and renames it over the output, which would replace
    the link with a regular file and leave its target as it was (or, for a link to nothing, not
    create the file the link names); a folder would be replaced by one (``nmt export``) or written
    through into the link's target (``nmt eval --out``): none of that is what a user who made the
    link meant, so no output goes through a link.  A link to a character device or a FIFO
    (``/dev/stdout``, ``/dev/fd/3``) is the one exception: the output is written into the device,
    which stays as it was, as for the device itself.  A folder on the way to the output may be a link.
    """
    path = Path(path)
    if not path.is_symlink() or (kind == "file" and stream_kind(path) is not None):
        return
    to = "" if path.exists() else " to nothing"
    raise UserError(
        f"{option} {shown(path)}: is a symbolic link{to}; nmt replaces no link and writes through none: "
        f"give the path of a {'regular file' if kind == 'file' else 'folder'}, or a new name"
    )


def os_error_line(exc: OSError) -> Optional[str]:
    """One line for an OSError the user can fix (:data:`WORDED`), naming its path; None for others."""
    words = WORDED.get(exc.errno or 0)
    if words is None:
        return None
    where = f": {shown(exc.filename)}" if exc.filename is not None else ""
    return f"cannot write{where} ({words})"
