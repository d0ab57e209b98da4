"""Writing an export folder: which output folders an export may take, and how it replaces one whole.

An export is written into a hidden sibling of the output folder (``.NAME.PID.HEX.tmp``) and
renamed into place when complete (:func:`new_folder`), so a crash half-way leaves either no
folder or the previous complete one, never a part that reads as an export.  The hidden folder
is removed on an error, on Ctrl-C and on SIGTERM or SIGHUP; one left by a process that was killed
outright (SIGKILL, a power cut) is removed by the next export to the same folder.

nmt deletes only what it wrote (:func:`check_new_folder`): an output folder is replaced only
when its export.json is one this nmt wrote, and only when the folder holds nothing but the
files an export of its format writes (:data:`~nmt.engine.manifest.EXPORT_FILES`: fixed names,
never the names export.json lists, which a user may have edited).  Anything else there (notes, a
report of ``nmt eval --out``, a project with an export.json of its own) is refused by name, with
``--force`` too; and the replaced folder is emptied name by name, of those names only.
"""

from __future__ import annotations

import logging
import os
import re
import secrets
import shutil
import signal
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from nmt.engine.manifest import EXPORT_FILES, MANIFEST, ExportError, parse_manifest
from nmt.util.errors import short_repr
from nmt.util.fileio import DiskFullError, is_disk_full, process_running
from nmt.util.out_paths import check_not_link
from nmt.util.signal_trap import STOP_SIGNALS, SignalTrap  # they end an export once its hidden folder is removed

log = logging.getLogger(__name__)

SHOWN_NAMES = 5
"""A refusal names at most this many of the files that are not the export's, and counts the rest."""
SHOWN_NAME_CHARS = 60
"""... and at most this many characters of each name."""


def check_new_folder(out: Path, force: bool) -> frozenset[str]:
    """Refuse, before any work, an output folder an export may not take; return the names that
    replacing it deletes (none for an absent or empty folder).

    Absent or empty: fine.  An earlier export of this nmt (a valid export.json, which lists only
    names of its format) that holds only files an export of its format writes
    (:data:`~nmt.engine.manifest.EXPORT_FILES`, never names read from export.json): replaced with
    ``force``.  Anything else is refused even with ``force``, since those files are not ours to
    delete (a typo such as ``-o runs`` must not remove a user's runs, nor ``-o .`` a project that
    has an export.json of its own).  A symbolic link is refused, to a folder or to nothing, as for every
    output (:func:`nmt.util.out_paths.check_not_link`).
    """
    out = Path(out)
    check_not_link(out, "-o", "folder")  # renamed aside and replaced by a folder, the user's link would be gone
    if out.exists() and not out.is_dir():
        raise ExportError(f"{out} exists and is not a folder; choose another output folder")
    try:
        entries = list(os.scandir(out)) if out.is_dir() else []
    except OSError as exc:
        raise ExportError(f"cannot read {out}: {exc.strerror or exc}") from None
    if not entries:
        return frozenset()
    if not (out / MANIFEST).is_file():
        raise ExportError(
            f"{out} holds files that nmt export did not write (no {MANIFEST}); not touching them: "
            "choose another output folder"
        )
    try:
        manifest = parse_manifest(out)
    except ExportError as exc:
        raise ExportError(
            f"{out} holds an {MANIFEST} that is not an export this nmt wrote ({exc}); not touching the folder: "
            "choose another output folder"
        ) from None
    ours = frozenset({MANIFEST, *EXPORT_FILES[manifest.format].values()})
    others = sorted(
        _shown(entry.name) + ("/" if entry.is_dir(follow_symlinks=False) else "")
        for entry in entries
        if entry.name not in ours or not entry.is_file(follow_symlinks=False)
    )
    if others:
        shown = ", ".join(others[:SHOWN_NAMES])
        more = f" and {len(others) - SHOWN_NAMES} more" if len(others) > SHOWN_NAMES else ""
        raise ExportError(
            f"{out} holds an nmt {manifest.format} export and files that nmt export did not write ({shown}{more}); "
            "not touching them: move them out of the folder, or choose another output folder"
        )
    if not force:
        raise ExportError(
            f"{out} already holds an nmt {manifest.format} export; give --force to replace it, "
            "or choose another output folder"
        )
    return ours


def _shown(name: str) -> str:
    """A file name as a message quotes it: as is, or escaped and cut when it holds a control character
    (a newline would break the one-line message) or is long."""
    return name if name.isprintable() and len(name) <= SHOWN_NAME_CHARS else short_repr(name, SHOWN_NAME_CHARS)


@contextmanager
def new_folder(out: Path, force: bool) -> Iterator[Path]:
    """Yield an empty hidden folder beside ``out`` to write an export into; on success it becomes ``out``.

    The block must write export.json (best last), and the folder must hold exactly the files it
    lists.  Then the files are synced to disk and the folder renamed over ``out`` (an earlier
    export is renamed aside first and deleted after), so a crash leaves the previous export or
    none, never a partial one that :func:`~nmt.engine.manifest.read_manifest` accepts.  On any
    error, Ctrl-C or a stop signal the hidden folder is removed; a full disk is one line
    (:class:`~nmt.util.fileio.DiskFullError`).
    """
    out = Path(os.path.abspath(out))  # a name to put the sibling beside, also for "." or "x/.."
    if not out.name:
        raise ExportError(f"{out} cannot be an export folder; choose another output folder")
    check_new_folder(out, force)
    out.parent.mkdir(parents=True, exist_ok=True)
    remove_stale_folders(out)
    tag = f"{os.getpid()}.{secrets.token_hex(4)}"
    staging = out.with_name(f".{out.name}.{tag}.tmp")
    with SignalTrap(STOP_SIGNALS, raises=_Stopped) as stopped:  # the hidden folder is removed, as on Ctrl-C
        staging.mkdir()
        try:
            yield staging
            stopped.check()
            _check_staged(staging)
            _sync_tree(staging)
            stopped.check()
            ours = check_new_folder(out, force)  # again: another process may have written there meanwhile
            old = out.with_name(f".{out.name}.{tag}.old")
            with _signals_blocked():  # the two renames happen both or neither: never an export aside and none in place
                if out.exists():
                    os.rename(out, old)
                os.rename(staging, out)
            _sync_dir(out.parent)
            _remove_replaced(old, ours)
        except BaseException as exc:
            shutil.rmtree(staging, ignore_errors=True)
            if is_disk_full(exc, out.parent):
                raise DiskFullError(
                    f"disk full: no space left on device while writing {out} (nothing was replaced)"
                ) from None
            if isinstance(exc, _Stopped):
                stopped.resignal()  # exit status 128 + signal, under the handler found on entry
                raise KeyboardInterrupt from None  # an earlier Python handler returned: stop as Ctrl-C does
            raise


def _remove_replaced(old: Path, ours: frozenset[str]) -> None:
    """Delete the export renamed aside to ``old``: the files of ``ours`` (its format's names, checked
    just before), then the folder if nothing else is in it; something that appeared there since (a
    file written meanwhile) is kept, and so is the folder holding it."""
    if not os.path.lexists(old):  # there was no earlier export
        return
    if old.is_symlink():  # ``out`` was a link to a folder: the link is replaced, its target kept
        old.unlink()
        return
    for name in ours:
        path = old / name
        if path.is_symlink() or path.is_file():  # a folder of that name is not the export's
            path.unlink(missing_ok=True)
    try:
        old.rmdir()
    except OSError:
        log.warning("kept %s: it holds files that nmt export did not write", old)


def _check_staged(staging: Path) -> None:
    """The written folder must be an export that a later ``--force`` may replace: its export.json
    reads back and lists every file beside it (anything else is a bug in the exporter)."""
    if not (staging / MANIFEST).is_file():
        raise RuntimeError(f"the exporter wrote no {MANIFEST}")
    manifest = parse_manifest(staging)
    unlisted = {p.name for p in staging.iterdir()} - {MANIFEST, *manifest.files.values()}
    lacking = [name for name in manifest.files.values() if not (staging / name).is_file()]
    if unlisted or lacking:
        raise RuntimeError(f"the exporter wrote {sorted(unlisted)} without listing them, listed {lacking} unwritten")


STALE = re.compile(r"\.(?P<name>.+)\.(?P<pid>\d+)\.[0-9a-f]{8}\.tmp")
"""The hidden folder :func:`new_folder` writes in: ``.NAME.PID.HEX.tmp``."""


def remove_stale_folders(out: Path) -> list[Path]:
    """Remove the hidden folders that exports to ``out`` left when their process was killed outright
    (its PID is no longer running); returns them.  A running export's folder is left alone."""
    removed = []
    for entry in out.parent.iterdir():
        match = STALE.fullmatch(entry.name)
        if match is None or match["name"] != out.name or entry.is_symlink() or not entry.is_dir():
            continue
        if not process_running(int(match["pid"])):
            shutil.rmtree(entry, ignore_errors=True)
            removed.append(entry)
    return removed


class _Stopped(BaseException):
    """A stop signal arrived while an export was written (raised in the main thread by its handler)."""

    def __init__(self, signum: int) -> None:
        super().__init__(signum)
        self.signum = signum


@contextmanager
def _signals_blocked() -> Iterator[None]:
    """Hold back Ctrl-C and the stop signals (delivered when the block ends); in the main thread only."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    held = {signal.SIGINT, *STOP_SIGNALS}
    previous = signal.pthread_sigmask(signal.SIG_BLOCK, held)
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, previous)


def _sync_tree(folder: Path) -> None:
    """fsync every file in ``folder`` and the folder itself, so a renamed folder holds whole files."""
    for path in folder.iterdir():
        if path.is_file():
            with open(path, "rb") as handle:
                os.fsync(handle.fileno())
    _sync_dir(folder)


def _sync_dir(folder: Path) -> None:
    fd = os.open(folder, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
