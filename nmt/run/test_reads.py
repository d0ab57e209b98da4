"""How many times each test split was read with a run's models: the count a reader of a result needs.

Each score of a test split is one more look at the holdout; a configuration changed after a look
is selected on test, however slightly (Dwork et al. 2015).  ``nmt eval`` and ``nmt compare`` append
one line per read to ``RUN/test_reads.jsonl`` (a score reused from a cache is no new read);
``nmt select`` keeps its own in ``selection.json``.  :func:`read_counts` sums both, and ``nmt report``
and the comparison's record show the counts.  A split counts as a test split when its name starts
with ``test`` (``test``, ``test2016``, ``test2017``...).
"""

from __future__ import annotations

import datetime
import json
from collections import Counter
from collections.abc import Sequence
from pathlib import Path

from nmt.run import selection
from nmt.run.paths import RunPaths


def is_test_split(split: str) -> bool:
    return split.startswith("test")


def log_read(run_dir: Path, split: str, reader: str, checkpoints: Sequence[Path]) -> None:
    """Append one read of ``split`` by ``reader`` (``nmt eval``, ``nmt compare``) to the run's log."""
    if not is_test_split(split):
        return
    line = {
        "time": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "split": split,
        "reader": reader,
        "checkpoints": [str(c) for c in checkpoints],
    }
    with RunPaths(run_dir).test_reads.open("a", encoding="utf-8") as handle:
        handle.write(json.dumps(line) + "\n")


def read_counts(run_dir: Path) -> dict[str, int]:
    """Reads per test split of the run: its test_reads.jsonl and the tests of its selection.json."""
    counts: Counter[str] = Counter()
    path = RunPaths(run_dir).test_reads
    if path.is_file():
        for line in path.read_text(encoding="utf-8").splitlines():
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
