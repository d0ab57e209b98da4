"""What ``nmt diagnose`` measures, as plain data: :class:`FitGap` and :class:`AttentionHealth`.

Torch-free, so that ``import nmt.api`` stays light; each row's ``to_dict()`` is the JSON line the
command prints, with null where a measure is not a finite number (a diverged model's NaN loss): JSON
has no NaN, and a bare ``NaN`` makes the line unreadable to strict parsers.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Optional


def finite_or_null(value: Any) -> Any:
    """``value`` with every float that is not finite (NaN, an infinity) replaced by None, in dicts and lists too."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {key: finite_or_null(item) for key, item in value.items()}
    if isinstance(value, list):
        return [finite_or_null(item) for item in value]
    return value


@dataclass(frozen=True)
class FitGap:
    """One checkpoint's cross-entropy per target token on training pairs and on validation."""

    checkpoint: Path
    step: int
    train_pairs: int  # the pairs sampled (all of the training split where it has fewer)
    train_loss: float
    train_ppl: float
    valid_loss: float
    valid_ppl: float
    gap: float  # valid_loss - train_loss: near 0 under-fits, wide over-fits

    def to_dict(self) -> dict[str, Any]:
        """Plain data for JSON (the checkpoint as a string), one line of ``nmt diagnose fit-gap``."""
        return finite_or_null({**asdict(self), "checkpoint": str(self.checkpoint)})


@dataclass(frozen=True)
class AttentionHealth:
    """One variant's attention after ``steps`` updates, measured on ``batches`` held-out training batches."""

    variant: str
    steps: int
    batches: int
    loss: float  # mean cross-entropy per target token of the measured batches (train.label_smoothing applied)
    energy_std: float
    entropy: float
    max_weight: float
    context_rms: float
    readout_saturation: float
    attention_weight_norm: float
    grad_norm: dict[str, float]  # per part of the model (nmt.diagnosis.probes.PARTS)
    config: Optional[str]  # the base config file (None: the defaults)
    overrides: list[str]  # the --set overrides every variant took

    def to_dict(self) -> dict[str, Any]:
        """Plain data for JSON, one line of ``nmt diagnose attention``."""
        return finite_or_null(asdict(self))
