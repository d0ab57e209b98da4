"""``selection.json``: the record of which checkpoint a run stands for, and of every test read.

``nmt select`` (and ``nmt train`` with ``train.select``; :mod:`nmt.training.select_model`) write
it at the top of the run folder; a run folder given to ``nmt.load`` or ``nmt.evaluate`` then
means the checkpoint it names (:attr:`nmt.run.paths.RunPaths.chosen`), else best.pt::

    {"format": 1,
     "chosen": {"name": "avg_last5", "checkpoint": "checkpoints/avg_last5.pt", "rule": "...",
                "settings": {...}, "candidates": [{"name": "best", "bleu": ...}, ...], "time": "..."},
     "earlier": [the choices made before this one, oldest first],
     "tests": [{"split": "test2016", "read": 1, "name": "avg_last5", "bleu": ..., "time": "..."}, ...]}

``tests`` is only ever appended to: each entry is one reading of a test split, numbered per split
(``read``), so a run whose test split was read more than once says so, however often the choice
was made again.  ``chosen`` is None after training resumed (the choice was made on checkpoints the
run has since moved past; :func:`retire`).  Reads and writes JSON; no torch.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any, Optional

from nmt.util.errors import UserError
from nmt.util.fileio import atomic_write_bytes

FORMAT = 1
"""The record's layout; a file of another (or no) ``format`` was not written by this nmt."""


def _refused(path: Path, why: str) -> UserError:
    return UserError(
        f"{path}: {why}, so it is not a record nmt select wrote; move it out of the run folder "
        "(nmt select and nmt train write that name)"
    )


def read(path: Path) -> Optional[dict[str, Any]]:
    """The record in ``path``; None when there is none; a UserError when the file is not one of ours
    (a link, a folder, not JSON, another layout), so that nothing of the user's is replaced."""
    path = Path(path)
    if path.is_symlink() or (path.exists() and not path.is_file()):
        raise _refused(path, "not a plain file")
    if not path.exists():
        return None
    try:
        record = json.loads(path.read_text(encoding="utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError, RecursionError):
        raise _refused(path, "not JSON") from None
    except OSError as exc:
        raise UserError(f"{path}: cannot read it ({exc.strerror or exc})") from None
    form = record.get("format") if isinstance(record, dict) else None
    if type(form) is not int or form != FORMAT:  # Python reads true as 1; the record's layout does not
        raise _refused(path, f'no "format": {FORMAT}')
    if not isinstance(record.get("tests"), list) or not isinstance(record.get("earlier"), list):
        raise _refused(path, 'no "tests" and "earlier" lists')
    chosen = record.get("chosen")
    if chosen is not None and not (isinstance(chosen, dict) and isinstance(chosen.get("checkpoint"), str)):
        raise _refused(path, 'its "chosen" names no checkpoint')
    for index, entry in enumerate(record["tests"]):
        if not (isinstance(entry, dict) and isinstance(entry.get("split"), str)):
            raise _refused(path, f'its "tests"[{index}] is no test read naming its "split"')
    if not all(isinstance(entry, dict) for entry in record["earlier"]):
        raise _refused(path, 'its "earlier" holds something other than choices')
    return record


def empty() -> dict[str, Any]:
    """A record before any choice or test read."""
    return {"format": FORMAT, "chosen": None, "earlier": [], "tests": []}


def write(path: Path, record: dict[str, Any]) -> None:
    """Replace ``path`` with ``record`` at once (a reader sees the old record or the new one)."""
    atomic_write_bytes(Path(path), (json.dumps(record, indent=2) + "\n").encode("utf-8"))


def now() -> str:
    """The time an entry is made, as the record writes it (local time with its UTC offset)."""
    return time.strftime("%Y-%m-%dT%H:%M:%S%z")


def chosen_checkpoint(root: Path, path: Path) -> Optional[Path]:
    """The checkpoint the record in ``path`` chose for the run in ``root``; None without a choice.

    A choice whose file is gone is a UserError: the run must not silently stand for another model.
    """
    record = read(path)
    if record is None or record["chosen"] is None:
        return None
    relative = Path(record["chosen"]["checkpoint"])
    if relative.is_absolute() or ".." in relative.parts:
        raise _refused(path, f"its chosen checkpoint {relative} is outside the run")
    checkpoint = Path(root) / relative
    if not checkpoint.is_file():
        raise UserError(
            f"{path} chose {relative}, which is not there; run nmt select {root} again "
            f"(or delete {path.name} to use best.pt)"
        )
    return checkpoint


def test_reads(record: dict[str, Any], split: str) -> int:
    """How many times ``split`` has been read as a test split by this run's choices."""
    return sum(1 for entry in record["tests"] if entry.get("split") == split)


def retire(path: Path, step: int) -> None:
    """Training resumed at update ``step``: the choice moves to ``earlier`` (its test reads stay),
    so the run stands for best.pt until a choice is made again.  No record: nothing to do."""
    record = read(path)
    if record is None or record["chosen"] is None:
        return
    record["earlier"].append({**record["chosen"], "retired": f"training resumed at update {step}"})
    record["chosen"] = None
    write(path, record)
