"""Optimizers, learning-rate schedules and the teacher-forcing schedule."""

from __future__ import annotations

import math
from typing import Optional

import torch
from torch import nn

from nmt.config import TrainConfig
from nmt.run.state import metric_mode


def build_optimizer(cfg: TrainConfig, model: nn.Module) -> torch.optim.Optimizer:
    """Adam, AdamW or SGD over the trainable parameters, at the peak learning rate."""
    params = [p for p in model.parameters() if p.requires_grad]
    if cfg.optimizer == "adam":
        return torch.optim.Adam(params, lr=cfg.lr, weight_decay=cfg.weight_decay)
    if cfg.optimizer == "adamw":
        return torch.optim.AdamW(params, lr=cfg.lr, weight_decay=cfg.weight_decay)
    if cfg.optimizer == "sgd":
        return torch.optim.SGD(params, lr=cfg.lr, momentum=cfg.momentum, weight_decay=cfg.weight_decay)
    raise ValueError(f"unknown optimizer {cfg.optimizer!r}; expected adam, adamw or sgd")


def lr_factor(cfg: TrainConfig, step: int, total_steps: int, elapsed: float = 0.0, warm_end: float = 0.0) -> float:
    """Multiplier of ``cfg.lr`` after ``step`` updates, for every schedule but plateau.

    inverse_sqrt: linear warm-up, then ``sqrt(warmup / step)`` (Vaswani et al. 2017);
    cosine: linear warm-up, then half a cosine down to ``min_lr`` at ``total_steps``, or with
    ``schedule_clock: time`` at the time budget: ``elapsed`` seconds of training, of which the
    warm-up ended at ``warm_end`` (Li et al. 2020's budget-aware schedule).
    """
    warm = cfg.warmup_steps
    if warm and step < warm:
        return (step + 1) / warm
    floor = cfg.min_lr / cfg.lr
    if cfg.schedule == "inverse_sqrt":
        return max(floor, math.sqrt(max(warm, 1) / max(step, 1)))
    if cfg.schedule == "cosine":
        if cfg.schedule_clock == "time" and cfg.time_budget_min is not None:
            span_s = max(60 * cfg.time_budget_min - warm_end, 1e-9)
            progress = min(max(elapsed - warm_end, 0.0) / span_s, 1.0)
        else:
            progress = min(max(step - warm, 0) / max(total_steps - warm, 1), 1.0)
        return floor + (1 - floor) * 0.5 * (1 + math.cos(math.pi * progress))
    return 1.0


class Schedule:
    """One object for every schedule: ``step()`` after each update, ``validated(metric)`` after validation."""

    def __init__(self, cfg: TrainConfig, optimizer: torch.optim.Optimizer, total_steps: int) -> None:
        self.cfg, self.optimizer, self.total_steps = cfg, optimizer, total_steps
        self.plateau = None
        if cfg.schedule == "plateau":
            self.plateau = torch.optim.lr_scheduler.ReduceLROnPlateau(
                optimizer,
                mode=metric_mode(cfg.metric),
                factor=cfg.plateau_factor,
                patience=cfg.plateau_patience,
                min_lr=cfg.min_lr,
            )
        self.steps = 0
        self.elapsed = 0.0  # seconds of training when the last update began (schedule_clock: time)
        self.warm_end = 0.0  # seconds of training when the warm-up ended
        self._apply()

    def _apply(self) -> None:
        if self.plateau is None:
            factor = lr_factor(self.cfg, self.steps, self.total_steps, self.elapsed, self.warm_end)
            for group in self.optimizer.param_groups:
                group["lr"] = self.cfg.lr * factor

    def step(self, elapsed: Optional[float] = None) -> None:
        """One update made; ``elapsed``: the run's seconds of training so far, the same on every rank,
        which ``schedule_clock: time`` needs (the step clock takes it or not)."""
        if elapsed is None and self.cfg.schedule_clock == "time":
            raise ValueError("train.schedule_clock=time: Schedule.step needs the run's elapsed seconds")
        self.steps += 1
        self.elapsed = self.elapsed if elapsed is None else elapsed
        if self.steps == self.cfg.warmup_steps:
            self.warm_end = self.elapsed
        self._apply()

    def validated(self, metric: float) -> None:
        if self.plateau is not None:
            self.plateau.step(metric)

    @property
    def lr(self) -> float:
        return self.optimizer.param_groups[0]["lr"]

    def state_dict(self) -> dict:
        return {
            "steps": self.steps,
            "elapsed": self.elapsed,
            "warm_end": self.warm_end,
            "plateau": self.plateau.state_dict() if self.plateau else None,
        }

    def load_state_dict(self, state: dict) -> None:
        self.steps = state["steps"]
        self.elapsed, self.warm_end = state.get("elapsed", 0.0), state.get("warm_end", 0.0)  # older runs: 0
        if self.plateau is not None and state["plateau"] is not None:
            self.plateau.load_state_dict(state["plateau"])
        self._apply()


def apply_gradients(
    model: nn.Module, optimizer: torch.optim.Optimizer, scaler: torch.amp.GradScaler, clip_grad_norm: float
) -> torch.Tensor:
    """Unscale the gradients, clip their norm (0 = no clipping), step, then clear them.

    Returns the gradient's L2 norm before clipping, as a tensor (no device sync until read).
    """
    scaler.unscale_(optimizer)
    limit = clip_grad_norm if clip_grad_norm > 0 else float("inf")  # inf: measure, scale by exactly 1
    norm = torch.nn.utils.clip_grad_norm_(model.parameters(), limit)
    scaler.step(optimizer)
    scaler.update()
    optimizer.zero_grad(set_to_none=True)
    return norm
