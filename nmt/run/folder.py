"""The run directory ``runs/<name>/``: who may write it, and what ``--overwrite`` may delete.

Two guarantees, both about not losing work:

* One writer.  A process that trains into a run holds an exclusive ``fcntl.flock`` on
  ``<run>/.lock`` from before it touches anything until it exits.  A second ``nmt train``
  on the same run (fresh, ``--overwrite`` or ``--resume``) is refused with the holder's PID.
  The kernel drops the lock when its holder dies, however it dies, so a ``kill -9`` leaves
  a stale file but never a stale lock.
* ``--overwrite`` only replaces a run that ``nmt train`` wrote: a folder holding ``config.yaml``
  and ``metrics.jsonl`` or ``checkpoints/``, and nothing but the files training writes
  (:func:`nmt.run.paths.written_by_trainer`).  A run folder that also holds a user's
  ``notes.txt``, an ``nmt eval`` report or an averaged checkpoint is refused, naming them, and
  anything else (a user's folder, the checkout itself) is never deleted.  Run names are single path components (see
  :data:`nmt.config.RUN_NAME_PATTERN`), so a run directory is always inside ``runs_dir``.
  The records of test reads (``test_reads.jsonl``, and ``selection.json`` with its choice retired)
  survive it (:data:`KEPT`): a model trained again after its test split was read is chosen after
  those reads, and the count must say so.  A temporary of an atomic write is deleted only when
  its name is exactly one nmt gives and its writer is gone (:func:`nmt.run.paths.written_by_trainer`).
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import IO, Optional

from nmt.run import selection
from nmt.run.paths import LOCK, SELECTION, TEST_READS, RunPaths, written_by_trainer
from nmt.util.errors import UserError

LOCK_NAME = LOCK
KEPT = frozenset({LOCK, TEST_READS, SELECTION})
"""What clearing a run keeps: the lock its caller holds, and the records of test reads."""


class RunBusyError(UserError):
    """Another process is training into this run directory."""


def is_run(run_dir: Path) -> bool:
    """Whether ``run_dir`` looks like a run written by ``nmt train``."""
    paths = RunPaths(run_dir)
    return paths.config.is_file() and (paths.metrics.is_file() or paths.checkpoints.is_dir())


def _contents(run_dir: Path) -> list[Path]:
    """Entries of ``run_dir`` other than the lock file (empty when it does not exist)."""
    if not run_dir.is_dir():
        return []
    return [p for p in run_dir.iterdir() if p.name != LOCK_NAME]


def check_replaceable(run_dir: Path, overwrite: bool, also_ours: Callable[[Path], bool] = lambda _entry: False) -> bool:
    """Whether a fresh run must first clear ``run_dir``; raise if it may not.

    Empty or absent: nothing to clear.  A run: cleared only with ``overwrite``, and only when it
    holds nothing but what training wrote.  Anything else: refused even with ``overwrite``,
    since those files are not ours to delete.  ``also_ours`` accepts entries the caller wrote and
    removes itself before training (the score caches of ``nmt compare`` and the labs).
    """
    if run_dir.exists() and not run_dir.is_dir():
        raise UserError(f"{run_dir} exists and is not a folder; choose another run name or runs_dir")
    if not _contents(run_dir):
        return False
    if not is_run(run_dir):
        raise UserError(
            f"{run_dir} holds files that nmt did not write (no config.yaml with metrics.jsonl "
            f"or checkpoints/); not touching them: choose another run name or runs_dir"
        )
    if not overwrite and not never_started(run_dir):
        raise UserError(
            f"{run_dir} already holds a run; use --resume {run_dir} to continue it or --overwrite to start over"
        )
    _refuse_others(run_dir, also_ours)
    selection.read(RunPaths(run_dir).selection)  # kept by clear(): one of ours, else refused now
    return True


def never_started(run_dir: Path) -> bool:
    """Whether ``run_dir`` holds only what a run leaves when it fails before its first update (a
    bad corpus, a read-only ``data.root``): config.yaml and an empty ``checkpoints/``, no
    metrics.jsonl.  Such a folder is started afresh without ``--overwrite``: there is nothing
    in it to lose, and ``--resume`` could not continue it."""
    paths = RunPaths(run_dir)
    ours, others = written_by_trainer(run_dir)
    if others or paths.metrics.exists():
        return False
    return all(entry.is_file() or not any(entry.iterdir()) for entry in ours)


def _refuse_others(run_dir: Path, also_ours: Callable[[Path], bool] = lambda _entry: False) -> None:
    """Raise, naming them, if ``run_dir`` holds entries that training (or ``also_ours``) did not write."""
    others = [entry for entry in written_by_trainer(run_dir)[1] if not also_ours(entry)]
    if others:
        shown = ", ".join(str(p.relative_to(run_dir)) + ("/" if p.is_dir() else "") for p in others[:4])
        more = f" and {len(others) - 4} more" if len(others) > 4 else ""
        raise UserError(
            f"{run_dir} also holds {shown}{more}, which nmt train did not write; --overwrite deletes "
            f"only a run's own files: move those out of the run folder first, or choose another run name"
        )


def clear(run_dir: Path) -> None:
    """Delete a run's files, keeping the lock file that the caller holds and the records of test
    reads (:data:`KEPT`); the choice selection.json made is retired, as on resume, since its
    checkpoint goes.  A selection.json nmt did not write is refused before anything is deleted."""
    if not is_run(run_dir):  # re-checked here: this is the one place that deletes
        raise UserError(f"{run_dir} is not an nmt run; not deleting it")
    _refuse_others(run_dir)
    _retire_choice(RunPaths(run_dir).selection)
    for entry in written_by_trainer(run_dir)[0]:
        if entry.name in KEPT:
            continue
        if entry.is_dir() and not entry.is_symlink():
            shutil.rmtree(entry)
        else:
            entry.unlink()


def _retire_choice(path: Path) -> None:
    """Move the record's choice to ``earlier``, keeping its test reads; no record: nothing to do."""
    record = selection.read(path)  # one of ours, or a one-line UserError
    if record is None or record["chosen"] is None:
        return
    record["earlier"].append({**record["chosen"], "retired": "the run was trained again from the start (--overwrite)"})
    record["chosen"] = None
    selection.write(path, record)


def _holder(handle: IO[str]) -> str:
    handle.seek(0)
    pid = handle.read().strip()
    return f"PID {pid}" if pid.isdigit() else "another process"


class RunLock:
    """An exclusive, non-blocking lock on a run directory for as long as it is held.

    Usage: ``with RunLock(run_dir): ...``; raises :class:`RunBusyError` naming the holder.
    """

    def __init__(self, run_dir: Path) -> None:
        self.path = RunPaths(run_dir).lock
        self._handle: Optional[IO[str]] = None

    def acquire(self) -> RunLock:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with contextlib.ExitStack() as on_failure:  # the file is closed unless the lock is taken
            handle = on_failure.enter_context(open(self.path, "a+", encoding="ascii"))
            try:
                fcntl.flock(handle.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                raise RunBusyError(
                    f"{self.path.parent} is in use by another nmt train ({_holder(handle)}); "
                    f"wait for it to finish or stop it first"
                ) from None
            handle.seek(0)
            handle.truncate()
            handle.write(f"{os.getpid()}\n")
            handle.flush()
            on_failure.pop_all()  # taken: the open file holds the lock until release()
        self._handle = handle
        return self

    def release(self) -> None:
        if self._handle is not None:
            fcntl.flock(self._handle.fileno(), fcntl.LOCK_UN)
            self._handle.close()
            self._handle = None

    def __enter__(self) -> RunLock:
        return self.acquire()

    def __exit__(self, *exc: object) -> None:
        self.release()


def probe(run_dir: Path) -> None:
    """Raise :class:`RunBusyError` if a process holds ``run_dir``'s lock (creates nothing new)."""
    if RunPaths(run_dir).lock.is_file():
        RunLock(run_dir).acquire().release()
