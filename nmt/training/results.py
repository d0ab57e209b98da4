"""What training reports: one update (:class:`Update`, logged as a train event) and a finished run (:class:`RunOutcome`).

Typed results, so the trainer builds metrics.jsonl events from them (:meth:`Update.event`;
a validation's :meth:`nmt.training.validate.Validation.event`) instead of copying fields one by one.
"""

from __future__ import annotations

import signal
from dataclasses import dataclass
from pathlib import Path
from typing import Optional

import torch

from nmt.run import events
from nmt.run.state import TrainState


@dataclass(frozen=True)
class Update:
    """What one optimizer update did: the fields of a metrics.jsonl ``train`` event (:meth:`event`)."""

    loss: Optional[float]  # per target token; None: non-finite, the update was skipped
    tgt_tokens: int  # scored target tokens of the whole global group
    tf: float  # teacher-forcing probability it trained with
    tok_s: float  # target tokens per second of wall clock
    grad_norm: Optional[torch.Tensor] = None  # before clipping; a tensor, read (a device sync) only when logged

    def event(self, *, step: int, epoch: int, lr: float, elapsed_s: float, world_size: int) -> events.Train:
        """The ``train`` event of this update (a skipped one has none to log)."""
        assert self.loss is not None, "a skipped update is not logged"
        return events.Train(
            step=step,
            epoch=epoch,
            loss=self.loss,
            lr=lr,
            tf=self.tf,
            tok_s=round(self.tok_s, 1),
            tgt_tokens=self.tgt_tokens,
            elapsed_s=elapsed_s,
            world_size=world_size,
            grad_norm=None if self.grad_norm is None else round(float(self.grad_norm), 4),
        )


@dataclass(frozen=True)
class RunOutcome:
    """How ``nmt train`` ended: a one-line summary, if a signal stopped it that signal, and the run folder."""

    summary: str
    signal: int = 0
    run_dir: Optional[Path] = None

    @property
    def exit_code(self) -> int:
        """0 for a finished run; 128 + the signal number for one stopped by a signal (shell convention)."""
        return 128 + self.signal if self.signal else 0

    @classmethod
    def finished(cls, reason: str, state: TrainState, metric: str, run_dir: Path) -> RunOutcome:
        """A run that stopped by one of its rules (or a caller's): where, after how long, how good."""
        return cls(
            f"stopped ({reason}) at {state.position()}, after {state.elapsed / 60:.1f} min; "
            f"best {metric} {_score(metric, state.best)}; run in {run_dir}",
            run_dir=run_dir,
        )

    @classmethod
    def interrupted(cls, signum: int, state: TrainState, run_dir: Path) -> RunOutcome:
        """A run stopped by a signal: last.pt is saved, and the command that continues it."""
        return cls(
            f"interrupted by {signal.Signals(signum).name} at {state.position()}; checkpoints/last.pt "
            f"saved; continue with: nmt train --resume {run_dir}",
            signum,
            run_dir,
        )


def _score(metric: str, value: Optional[float]) -> str:
    """A validation score as the rest of nmt prints it: BLEU and chrF to two decimals, a loss to four."""
    if value is None:
        return "none (no validation ran)"
    return f"{value:.4f}" if metric == "loss" else f"{value:.2f}"
