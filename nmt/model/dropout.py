"""Dropout (Srivastava et al. 2014) whose CPU mask costs a fraction of torch's.

In training each element is zeroed with probability p and the others are scaled by 1 / (1 - p),
so the expected activation is unchanged; in evaluation the module is the identity.  On a GPU
this is torch's own fused dropout.  On a CPU torch draws the mask with ``bernoulli_``, slow
enough to matter in a Transformer's many dropout sites (the CHANGELOG gives the bench_train
figures); here the mask compares uniform 31-bit integers with ``round(p * 2^31)``, from the same
global generator, so a seeded run is still reproducible and p is kept to within 2^-31.  The
backward pass keeps only the boolean mask.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import Tensor, nn

_RANGE = 2**31  # int32 random_() draws uniformly from [0, 2^31)


def check_probability(p: float) -> None:
    if not 0.0 <= p <= 1.0:
        raise ValueError(f"dropout probability must be in [0, 1] (got {p})")


def dropout(x: Tensor, p: float, training: bool) -> Tensor:
    """``x`` with each element zeroed with probability ``p`` and the rest scaled, when ``training``."""
    check_probability(p)
    if not training or p == 0.0:
        return x
    if x.device.type != "cpu" or p == 1.0:
        return F.dropout(x, p, True)
    keep = torch.empty(x.shape, dtype=torch.int32).random_() >= round(p * _RANGE)  # P(keep) = 1 - p
    return x * keep * (1.0 / (1.0 - p))  # the product with a bool mask saves only the mask for backward


class Dropout(nn.Module):
    """The module form of :func:`dropout`, a drop-in for ``nn.Dropout(p)`` (no parameters, no state)."""

    def __init__(self, p: float) -> None:
        super().__init__()
        check_probability(p)
        self.p = p

    def forward(self, x: Tensor) -> Tensor:
        return dropout(x, self.p, self.training)

    def extra_repr(self) -> str:
        return f"p={self.p}"
