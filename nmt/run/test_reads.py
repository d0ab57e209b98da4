"""How many times each test split was read with a run's models: the count a reader of a result needs.

Each score of a test split is one more look at the holdout; a configuration changed after a look
is selected on test, however slightly (Dwork et al. 2015).  ``nmt eval`` and ``nmt compare`` append
one line per read to ``RUN/test_reads.jsonl`` (a score reused from a cache is no new read);
``nmt select`` keeps its own in ``selection.json``.  :func:`read_counts` sums both, and ``nmt report``
and the comparison's record show the counts.  A split counts as a test split when its name starts
with ``test`` (``test``, ``test2016``, ``test2017``...).  The log is appended to only as a plain file
of the run's own (:func:`check_log`): never through a symbolic link into another file, and it is kept
when ``nmt train --overwrite`` starts the run over (:func:`nmt.run.folder.clear`), since the models
trained again were chosen after those reads.
"""

from __future__ import annotations

import datetime
import json
import os
import stat
from collections import Counter
from collections.abc import Sequence
from pathlib import Path

from nmt.run import selection
from nmt.run.paths import RunPaths
from nmt.util.errors import UserError


def is_test_split(split: str) -> bool:
    return split.startswith("test")


def _not_a_log(path: Path, why: str) -> UserError:
    return UserError(
        f"{path}: {why}, so nmt does not append its count of test reads to it; move it out of the run "
        "folder (nmt eval and nmt compare write that name)"
    )


def check_log(run_dir: Path) -> None:
    """Refuse, in one line, a run whose log is not a plain file: a symbolic link (appending would write
    into its target), a folder, a device.  Called before a test split is translated, so the refusal
    costs nothing; :func:`log_read` refuses the same again when it appends."""
    path = RunPaths(run_dir).test_reads
    if path.is_symlink():
        raise _not_a_log(path, "is a symbolic link")
    if path.exists() and not path.is_file():
        raise _not_a_log(path, "is not a plain file")


def log_read(run_dir: Path, split: str, reader: str, checkpoints: Sequence[Path]) -> None:
    """Append one read of ``split`` by ``reader`` (``nmt eval``, ``nmt compare``) to the run's log,
    a plain file: opened without following a link, and refused in one line if it is anything else."""
    if not is_test_split(split):
        return
    check_log(run_dir)
    line = {
        "time": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "split": split,
        "reader": reader,
        "checkpoints": [str(c) for c in checkpoints],
    }
    path = RunPaths(run_dir).test_reads
    flags = os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NOFOLLOW | os.O_NONBLOCK  # a FIFO: no wait
    try:
        fd = os.open(path, flags, 0o666)  # a link made since check_log: ELOOP, never its target
    except OSError as exc:
        raise _not_a_log(path, f"cannot be appended to ({exc.strerror or exc})") from None
    with os.fdopen(fd, "a", encoding="utf-8") as handle:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise _not_a_log(path, "is not a plain file")
        handle.write(json.dumps(line) + "\n")


def read_counts(run_dir: Path) -> dict[str, int]:
    """Reads per test split of the run: its test_reads.jsonl and the tests of its selection.json."""
    counts: Counter[str] = Counter()
    path = RunPaths(run_dir).test_reads
    if path.is_file():
        for number, raw in enumerate(path.read_bytes().splitlines(), 1):
            try:
                line = raw.decode("utf-8")
            except UnicodeDecodeError:
                raise UserError(
                    f"{path}: line {number} is not UTF-8, so its test read cannot be counted (an altered file?); "
                    "restore the file, or remove that line if you know which read it was"
                ) from None
            try:
                split = json.loads(line).get("split")
            except (ValueError, AttributeError):
                continue  # a line cut by a crash is no read we can name
            if isinstance(split, str):
                counts[split] += 1
    record = selection.read(RunPaths(run_dir).selection)  # one of ours, or a one-line UserError
    if record is not None:
        for split in {entry.get("split") for entry in record["tests"] if isinstance(entry, dict)}:
            if isinstance(split, str):
                counts[split] += selection.test_reads(record, split)
    return dict(sorted(counts.items()))


def counts_line(counts: dict[str, int]) -> str:
    """``test2016 read 2 times`` style text; "no test split read" for none."""
    if not counts:
        return "no test split read"
    return ", ".join(f"{split} read {n} time{'s' * (n != 1)}" for split, n in counts.items())
