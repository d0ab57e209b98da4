"""What model selection decided for a run, as plain data: :class:`Selection` and its parts.

Made by :mod:`nmt.training.select_model` (``nmt select``, ``train.select``) and returned by
``nmt.select``; torch-free, so that ``import nmt.api`` stays light.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Optional

from nmt.run.paths import RunPaths

BEST = "best"
"""The name of best.pt among the candidates."""


@dataclass(frozen=True)
class Candidate:
    """One checkpoint the choice is made between, with its validation scores (None: not scored)."""

    name: str  # "best" or "avg_lastN"
    checkpoint: Path
    step: int
    bleu: Optional[float] = None
    chrf: Optional[float] = None
    length_ratio: Optional[float] = None


@dataclass(frozen=True)
class TestRead:
    """One reading of a test split with the chosen checkpoint; ``read`` counts the readings of that split."""

    split: str
    read: int
    name: str
    checkpoint: Path
    beam: int
    bleu: float
    chrf: float
    length_ratio: Optional[float]
    time: str


@dataclass(frozen=True)
class Selection:
    """What model selection decided for a run: its candidates, the chosen one, and a test read if asked."""

    run: Path
    rule: str  # "on_valid" (higher validation BLEU) or "average" (the average, unscored)
    last: int
    beam: Optional[int]  # beam of the validation (and test) translations; None for "average"
    valid: Optional[str]
    candidates: tuple[Candidate, ...]
    chosen: str
    checkpoint: Path
    test: Optional[TestRead]
    time: str

    def to_dict(self) -> dict[str, Any]:
        """Plain data for JSON: paths as strings."""
        return {
            "run": str(self.run),
            "rule": self.rule,
            "settings": {"last": self.last, "beam": self.beam, "valid": self.valid},
            "candidates": [{**vars(c), "checkpoint": str(c.checkpoint)} for c in self.candidates],
            "chosen": self.chosen,
            "checkpoint": str(self.checkpoint),
            "test": None if self.test is None else {**vars(self.test), "checkpoint": str(self.test.checkpoint)},
            "time": self.time,
        }

    @property
    def summary(self) -> str:
        """What ``nmt select`` prints: the candidates' scores, the choice, the test read."""
        lines = []
        if self.rule == "on_valid":
            scored = ", ".join(f"{c.name} {c.bleu:.2f} (chrF {c.chrf:.2f})" for c in self.candidates)
            lines.append(f"{self.valid} BLEU, beam {self.beam}: {scored}")
            why = f"higher {self.valid} BLEU; best.pt on a tie"
        else:
            why = f"the average of the last {self.last} validated checkpoints, unscored"
        lines.append(f"chose {self.chosen}: {self.checkpoint} ({why})")
        if self.test is not None:
            times = "1st reading" if self.test.read == 1 else f"reading number {self.test.read}"
            lines.append(
                f"{self.test.split} ({times}), beam {self.test.beam}: BLEU {self.test.bleu:.2f}, chrF {self.test.chrf:.2f}"
            )
        lines.append(f"wrote {RunPaths(self.run).selection}")
        return "\n".join(lines)
