"""The run's progress as one object, and the rules that read it.

:class:`TrainState` is everything a resumed run needs besides the model, optimizer and
random streams: where it is in the data, what it has seen on validation, how long it ran.
The rules (is a score better, should the run stop, which step checkpoints to keep) are
pure functions of the state and the config, so they are tested without a model.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any, Literal, Optional

from nmt.config import TrainConfig


def is_better(metric: str, value: float, best: Optional[float]) -> bool:
    """Whether ``value`` beats ``best`` (None: nothing yet); loss falls, BLEU and chrF rise.

    A tie is not better, so the first checkpoint with a score stays the best one.
    """
    if best is None:
        return True
    return value < best if metric == "loss" else value > best


def metric_mode(metric: str) -> Literal["min", "max"]:
    """``"min"`` for a metric that should fall (loss), else ``"max"``: ReduceLROnPlateau's ``mode``."""
    return "min" if metric == "loss" else "max"


@dataclass
class TrainState:
    """Counters of one run, saved in every checkpoint (see :mod:`nmt.run.checkpoint`)."""

    step: int = 0  # optimizer updates done
    epoch: int = 0  # full passes over the training data done
    pos: int = 0  # global batches of the current epoch consumed
    best: Optional[float] = None  # best validation score so far (train.metric)
    history: list[tuple[float, int]] = field(
        default_factory=list
    )  # (score, step) of kept best step checkpoints, best first
    recent: list[int] = field(
        default_factory=list
    )  # steps of the latest step checkpoints kept (keep_last), oldest first
    bad_validations: int = 0  # validations in a row without a new best
    last_valid: Optional[int] = None  # the step of the latest validation (None: none yet)
    nonfinite: int = 0  # non-finite losses in a row (updates skipped)
    elapsed: float = 0.0  # seconds of training, validation included

    def state_dict(self) -> dict[str, Any]:
        return {**asdict(self), "history": [list(pair) for pair in self.history]}

    @classmethod
    def from_state_dict(cls, state: dict[str, Any]) -> TrainState:
        fields = {
            **state,
            "history": [(float(v), int(s)) for v, s in state.get("history", [])],
            "recent": [int(s) for s in state.get("recent", [])],
        }
        return cls(**fields)

    def position(self) -> str:
        """Where the run stands, as every message says it (the stop line, the resume log), with
        epochs counted from 1 as the progress bar and metrics.jsonl's train events count them:
        ``step 120 (end of epoch 2)``, ``step 57 (epoch 2, after batch 17)``, ``step 0 (start)``."""
        if self.pos:
            return f"step {self.step} (epoch {self.epoch + 1}, after batch {self.pos})"
        return f"step {self.step} ({f'end of epoch {self.epoch}' if self.epoch else 'start'})"

    def validated(self, metric: str, value: float) -> bool:
        """Count one validation with score ``value`` at the current step; returns whether it is a new best."""
        self.last_valid = self.step
        better = is_better(metric, value, self.best)
        if better:
            self.best, self.bad_validations = value, 0
        else:
            self.bad_validations += 1
        return better


def stop_reason(state: TrainState, cfg: TrainConfig, signal: int = 0) -> Optional[str]:
    """Why the run stops now, if it does: a signal, then the update, time, patience and epoch limits."""
    if signal:
        return "interrupted"
    if cfg.max_steps is not None and state.step >= cfg.max_steps:
        return "max_steps"
    if cfg.time_budget_min is not None and state.elapsed >= 60 * cfg.time_budget_min:
        return "time_budget"
    if cfg.patience is not None and state.bad_validations >= cfg.patience:
        return "early_stopping"
    if state.epoch >= cfg.max_epochs:
        return "max_epochs"
    return None


def validates_at_epoch_end(step: int, valid_every: int) -> bool:
    """Whether the end of an epoch at update ``step`` validates the model.

    Without ``valid_every`` every epoch end validates.  With it, validations fall on the
    multiples of ``valid_every``, and an epoch end adds one only where none has happened yet
    or where the last of those is at least as far back as the next one is ahead
    (``step % valid_every >= valid_every / 2``): an epoch that ends at the multiple itself or a few updates
    after it does not validate a second time a model that barely changed (the second score
    would also count twice towards ``patience`` and the plateau schedule).  A pure function
    of the step, so a resumed run validates where an uninterrupted one does.
    """
    if not valid_every:
        return True
    since = step % valid_every  # updates since the last multiple; 0: it validated at this very update
    if since == 0:
        return False
    return step < valid_every or 2 * since >= valid_every


@dataclass(frozen=True)
class KeepDecision:
    """What to do with the step checkpoints after one validation (see :func:`keep_checkpoints`)."""

    history: list[tuple[float, int]]  # the kept best (score, step) pairs, best first
    recent: list[int]  # the kept latest steps, oldest first
    save: bool  # write this step's checkpoint
    drop: list[int]  # steps whose checkpoints to delete, in order


def keep_checkpoints(
    history: list[tuple[float, int]],
    recent: list[int],
    metric: str,
    value: float,
    step: int,
    keep_best: int,
    keep_last: int,
) -> KeepDecision:
    """The step checkpoints to hold after validating ``step`` with score ``value``.

    A step file is kept while it is among the ``keep_best`` best (ranked by score, then by
    step: the earlier of equals first, as best.pt does; ``keep_best <= 1`` keeps none, since
    best.pt holds the best) or among the ``keep_last`` latest validated steps (0: none).
    A file is dropped once it is in neither, so one file serves both lists.
    """
    best = list(history)
    if keep_best > 1:
        sign = 1 if metric_mode(metric) == "min" else -1  # best first: lowest loss, highest BLEU
        best = sorted([*history, (value, step)], key=lambda pair: (sign * pair[0], pair[1]))[:keep_best]
    latest = [*recent, step][-keep_last:] if keep_last > 0 else []
    held = {s for _, s in best} | set(latest)
    before = {s for _, s in history} | set(recent)
    return KeepDecision(best, latest, step in held, sorted(before - held))
