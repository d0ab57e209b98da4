"""Which files in an output folder nmt wrote, so that a command replaces only those.

``nmt eval --out``, ``nmt report --out``, ``nmt compare --out`` and ``nmt lab --out`` write a few
files of fixed names into a folder the user names, which may already hold the user's own files of
those names (a hand-written ``report.md``, a lab's page in ``docs/labs``).  Before writing, a
command lists the names it will write in the folder's manifest, :data:`MANIFEST` (one name a
line); a file of one of those names that is already there may be replaced only when the manifest
lists it, or, in a folder written before manifests existed, when the caller's ``legacy`` test says
that nmt wrote the folder (e.g. its ``report.json`` has the shape of nmt's).  Any other file is
refused in one line that names it, before any work; so is a folder that is itself a symbolic link
(:func:`nmt.util.out_paths.check_not_link`: no output is written through a link).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Optional

from nmt.util.errors import UserError
from nmt.util.fileio import atomic_write_bytes
from nmt.util.out_paths import check_not_link

MANIFEST = ".nmt-outputs"
"""The manifest of the files nmt wrote in a folder: their names, one a line."""


def listed(folder: Path) -> set[str]:
    """The names the folder's manifest lists (none without a readable one)."""
    try:
        text = (Path(folder) / MANIFEST).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return set()
    return {line for line in text.splitlines() if line}


def check_ours(
    folder: Path, names: Iterable[str], option: str, legacy: Optional[Callable[[Path], bool]] = None
) -> None:
    """Refuse (one line naming the file) to write ``names`` into ``folder`` where one of them is a
    file nmt did not write there, or anything but a plain file, or where ``folder`` is a symbolic link.
    Writes nothing."""
    folder = Path(folder)
    check_not_link(folder, option, "folder")
    there = [folder / name for name in (*names, MANIFEST) if (folder / name).exists() or (folder / name).is_symlink()]
    for path in there:  # the manifest too: read below, and replaced by claim()
        if path.is_symlink() or not path.is_file():
            raise UserError(
                f"{option} {folder}: {path} is not a plain file nmt wrote; move it or give another {option}"
            )
    present = [path for path in there if path.name != MANIFEST]
    if not present:
        return
    ours = listed(folder)
    old = not (folder / MANIFEST).is_file() and legacy is not None and legacy(folder)
    for path in present:
        if path.name not in ours and not old:
            raise UserError(
                f"{option} {folder}: {path} was not written by nmt and would be replaced; "
                f"move it or give another {option}"
            )


def claim(folder: Path, names: Iterable[str]) -> None:
    """Add ``names`` to the folder's manifest (made with the folder if need be), before they are written,
    so that a later run may replace them."""
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    ours = listed(folder)
    wanted = ours | set(names)
    if wanted != ours:
        atomic_write_bytes(folder / MANIFEST, "".join(f"{name}\n" for name in sorted(wanted)).encode("utf-8"))
