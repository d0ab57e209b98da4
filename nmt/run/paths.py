"""Every path of a run folder ``runs/<name>/``, named in one place.

``nmt train`` writes the folder, ``nmt eval``, ``average``, ``compare``, ``report`` and
``serve`` read it, and the scripts read it too; each asks :class:`RunPaths` where a file is
instead of spelling its name, so the layout can be read (and changed) here alone::

    runs/<name>/
      .lock                      the writer's lock (nmt.run.folder.RunLock)
      config.yaml                the resolved config the run trains with
      spm.src.model, spm.tgt.model   its SentencePiece models
      metrics.jsonl              the event log (nmt.run.events)
      selection.json             the model nmt select chose and the test splits it read (nmt.run.selection)
      checkpoints/               best.pt, last.pt and step files step0000120.pt; avg_last5.pt (nmt select)
      attention/                 one validation heat map per validated step, step0000120.png
      tb/                        TensorBoard's copy of the events
      eval/, eval-ensemble/      nmt eval's default folders (one model, an ensemble)
      eval-greedy/, eval-beam5/  the folders nmt report reads its test scores from
      compare-<split>/           nmt compare's translations and saved score of the run
      lab-beam-<split>/          the beam lab's saved scores of the run's best checkpoint

An evaluation or report folder holds ``report.json`` and ``report.md`` (:func:`report_stem`).
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Optional

from nmt.run import selection
from nmt.util.fileio import TEMPORARY, process_running

CONFIG = "config.yaml"
METRICS = "metrics.jsonl"
LOCK = ".lock"
CHECKPOINTS = "checkpoints"
BEST = "best.pt"
LAST = "last.pt"
TENSORBOARD = "tb"
ATTENTION = "attention"
EVAL = "eval"
EVAL_ENSEMBLE = "eval-ensemble"
REPORT_EVALS = {"greedy": "eval-greedy", "beam5": "eval-beam5"}
"""The evaluation folders ``nmt report`` reads, by the table column each fills."""
REPORT = "report"
"""The stem of a report's two files (report.json, report.md), and the default folder of the
reports that cover several runs (``nmt report``, ``nmt compare``), beside the runs."""
SELECTION = "selection.json"
"""The record of the model ``nmt select`` (or ``train.select``) chose, and of each test split read."""
SCORED = "scored.json"
"""nmt compare's saved score of one run, inside its ``compare-<split>`` folder."""
TEST_READS = "test_reads.jsonl"
"""One line per read of a test split with the run's models (``nmt eval``, ``nmt compare``;
:mod:`nmt.run.test_reads`); kept when ``--overwrite`` starts the run over, as selection.json's reads are."""

TRAINER_CHECKPOINT = re.compile(r"best\.pt|last\.pt|step\d+\.pt")
"""The checkpoint names the trainer writes, and may overwrite or delete, in ``checkpoints/``."""
AVERAGE_CHECKPOINT = re.compile(r"avg_last\d+\.pt")
"""The averages of the last N validated checkpoints that model selection writes in ``checkpoints/``
(``nmt select``, ``train.select``): the last step of training, so a run's own files, which
``--overwrite`` deletes with the run; ``nmt average -o`` may still write them without ``--force``."""

TRAINER_FILES = frozenset({CONFIG, METRICS, LOCK, SELECTION, TEST_READS, "spm.src.model", "spm.tgt.model"})
"""The files ``nmt train`` (with model selection, its last step) writes at the top of a run folder."""
TRAINER_FOLDERS = {
    CHECKPOINTS: re.compile(f"{TRAINER_CHECKPOINT.pattern}|{AVERAGE_CHECKPOINT.pattern}"),
    ATTENTION: re.compile(r"step\d+\.png"),
    TENSORBOARD: re.compile(r"events\.out\.tfevents\.[\w.-]+"),
}
"""The folders ``nmt train`` writes in a run folder, each with the names of the files it writes there."""
ATOMIC_TEMPORARY = TEMPORARY
"""The temporary name :func:`nmt.util.fileio.atomic_write` gives a file while writing it
(``.best.pt.PID.HEX.tmp``: PID its writer's, eight hex digits), which a process killed outright leaves behind."""


def _step_name(step: int, suffix: str) -> str:
    """``step0000120.pt``: zero-padded, so the files of a run sort by update."""
    return f"step{step:07d}{suffix}"


@dataclass(frozen=True)
class RunPaths:
    """Where each file of the run in ``root`` lives; builds paths, touches nothing (but :attr:`chosen`)."""

    root: Path

    def __post_init__(self) -> None:
        object.__setattr__(self, "root", Path(self.root))

    @classmethod
    def of_checkpoint(cls, checkpoint: Path) -> RunPaths:
        """The run a checkpoint file belongs to: the parent of its ``checkpoints/`` folder."""
        return cls(Path(checkpoint).parent.parent)

    @property
    def config(self) -> Path:
        return self.root / CONFIG

    @property
    def metrics(self) -> Path:
        return self.root / METRICS

    @property
    def lock(self) -> Path:
        return self.root / LOCK

    @property
    def checkpoints(self) -> Path:
        return self.root / CHECKPOINTS

    @property
    def best(self) -> Path:
        """The best checkpoint by ``train.metric``."""
        return self.checkpoints / BEST

    @property
    def last(self) -> Path:
        """The latest checkpoint, the one ``--resume`` continues from."""
        return self.checkpoints / LAST

    def average(self, last: int) -> Path:
        """``checkpoints/avg_lastN.pt``: the average of the last ``last`` validated checkpoints that
        model selection writes (and replaces on its next call)."""
        return self.checkpoints / f"avg_last{last}.pt"

    @property
    def selection(self) -> Path:
        """``selection.json``: which checkpoint model selection chose, and every test split it read."""
        return self.root / SELECTION

    @property
    def chosen(self) -> Path:
        """The checkpoint the run folder stands for: the one :attr:`selection` names (``nmt select``,
        ``train.select``), else best.pt.  Reads selection.json (the one property here that reads a
        file); a record that is not nmt's, or names a checkpoint that is gone, is a UserError."""
        return selection.chosen_checkpoint(self.root, self.selection) or self.best

    def step(self, step: int) -> Path:
        """The checkpoint of update ``step`` (``train.keep_best`` / ``keep_last``)."""
        return self.checkpoints / _step_name(step, ".pt")

    @property
    def tensorboard(self) -> Path:
        return self.root / TENSORBOARD

    def attention_map(self, step: int) -> Path:
        """The heat map drawn by the validation at update ``step``."""
        return self.root / ATTENTION / _step_name(step, ".png")

    def tokenizer(self, side: str) -> Path:
        """The SentencePiece model of ``side`` ("src" or "tgt")."""
        return self.root / f"spm.{side}.model"

    def eval_folder(self, ensemble: bool = False) -> Path:
        """Where ``nmt eval`` writes by default: an ensemble never overwrites a member's report."""
        return self.root / (EVAL_ENSEMBLE if ensemble else EVAL)

    def report_eval(self, column: str) -> Path:
        """The evaluation folder ``nmt report`` reads for ``column`` (a key of :data:`REPORT_EVALS`)."""
        return self.root / REPORT_EVALS[column]

    @property
    def test_reads(self) -> Path:
        """One line per read of a test split with the run's models (:mod:`nmt.run.test_reads`)."""
        return self.root / TEST_READS

    def compare_folder(self, split: str, tag: str = "") -> Path:
        """``nmt compare``'s translations of ``split`` with the run's best checkpoint, and their score;
        ``tag`` names decoding options that differ from the run's own (a decoding sweep)."""
        return self.root / (f"compare-{split}-{tag}" if tag else f"compare-{split}")


def report_stem(folder: Path) -> Path:
    """``folder/report``: the stem of the report.json and report.md written into ``folder``."""
    return Path(folder) / REPORT


def report_json(folder: Path) -> Path:
    """The machine-readable report of an evaluation folder."""
    return report_stem(folder).with_suffix(".json")


def _trainer_name(name: str, pattern: re.Pattern[str]) -> bool:
    """Whether ``name`` matches ``pattern``, or is the atomic write's temporary of such a name
    (:data:`ATOMIC_TEMPORARY`, exactly) left by a process that is gone: a writer still running (``nmt
    select`` or ``nmt average`` writing into the run) is someone else's, and so is any other name."""
    temporary = ATOMIC_TEMPORARY.fullmatch(name)
    if temporary is None:
        return pattern.fullmatch(name) is not None
    pid = int(temporary["pid"])
    gone = pid == os.getpid() or not process_running(pid)  # our own PID: a killed run's, reused (a container)
    return gone and pattern.fullmatch(temporary["name"]) is not None


SCORE_CACHES = ("compare-", "lab-beam-")
"""The beginnings of the folders ``nmt compare`` (``compare-<split>/``) and the beam lab
(``lab-beam-<split>/``) keep in a run folder: scores of its best checkpoint, which those commands
drop themselves when they train the run again."""


def is_score_cache(entry: Path) -> bool:
    """Whether ``entry`` of a run folder is one of the score caches of :data:`SCORE_CACHES`."""
    return entry.is_dir() and not entry.is_symlink() and entry.name.startswith(SCORE_CACHES)


def written_by_trainer(run_dir: Path) -> tuple[list[Path], list[Path]]:
    """The entries of ``run_dir`` that ``nmt train`` wrote, and every other one (the user's, or
    another command's such as ``nmt eval``'s ``eval-beam5/``), as two lists of paths.

    A folder of the trainer's counts as its own only with the files it holds; a file in it of
    another name, a folder in it, or a link anywhere is someone else's, and so is a temporary whose
    writer still runs (:func:`_trainer_name`).  Reads, touches nothing.
    """
    ours: list[Path] = []
    others: list[Path] = []
    top = re.compile("|".join(re.escape(name) for name in sorted(TRAINER_FILES)))
    for entry in sorted(Path(run_dir).iterdir()):
        if entry.is_symlink():
            others.append(entry)
        elif entry.name in TRAINER_FOLDERS and entry.is_dir():
            inner = [
                child
                for child in sorted(entry.iterdir())
                if child.is_symlink()
                or not child.is_file()
                or not _trainer_name(child.name, TRAINER_FOLDERS[entry.name])
            ]
            if inner:
                others.extend(inner)
            else:
                ours.append(entry)
        elif entry.is_file() and _trainer_name(entry.name, top):
            ours.append(entry)
        else:
            others.append(entry)
    return ours, others


def is_trainer_checkpoint(path: Path) -> bool:
    """Whether ``path`` is (or would be) one of a run's own checkpoints: best.pt, last.pt or a
    step file inside a ``checkpoints`` folder (which training may overwrite or delete)."""
    path = Path(path)
    return path.parent.resolve().name == CHECKPOINTS and TRAINER_CHECKPOINT.fullmatch(path.name) is not None


def run_of_checkpoint(path: Path) -> Optional[Path]:
    """The run folder of a checkpoint inside a run's ``checkpoints/`` folder; None for any other file."""
    path = Path(path)
    if path.parent.name == CHECKPOINTS and path.parent.parent.name:
        return path.parent.parent
    return None
