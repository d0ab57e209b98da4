"""A kernel normalization: weights that are a kernel's values divided by their sum, with no softmax.

Lecture 003 writes attention pooling with any non-negative kernel kappa,

    alpha_{t,i} = kappa(e_{t,i}) / sum_j kappa(e_{t,j}),

of which the softmax is the case kappa = exp.  Here kappa is a triangular (Epanechnikov-like) kernel
of how far a key's score lies below the best one,

    kappa(e_i) = max(0, 1 - (max_j e_j - e_i) / w),   w = 2,

so the best key always has kappa = 1 (the sum is never 0), keys within w of it share the weight in
proportion to their closeness, and keys further down get exactly 0, as with sparsemax.

Use it from a config (this folder holds the module, so a config beside it finds it):

    model:
      attention:
        normalize: kernel_normalization:triangular

or, once imported (``nmt ... --module examples/attention/kernel_normalization.py``), by its
registered name ``triangular``.  docs/adding_an_attention.md ("Normalize it") walks through it.
"""

from __future__ import annotations

from typing import Optional

import torch
from torch import Tensor

import nmt

WIDTH = 2.0
"""w: how far below the best score a key still gets weight."""


@nmt.register_normalization("triangular")
def triangular(scores: Tensor, mask: Optional[Tensor]) -> Tensor:
    """Scores (B, h, T, S) and a mask (True where a key may be attended: (B, S), (B, T, S) or None)
    -> weights (B, h, T, S): kappa(e) / sum kappa(e), masked keys exactly 0, a row with no key uniform."""
    scores = scores.float()
    if mask is not None:
        mask = mask.view(mask.size(0), 1, 1, -1) if mask.dim() == 2 else mask.unsqueeze(1)  # over heads (and T)
        scores = scores.masked_fill(~mask, float("-inf"))
    best = scores.amax(-1, keepdim=True)
    empty = torch.isinf(best)  # a row with no key to attend
    gap = (best.masked_fill(empty, 0.0) - scores).nan_to_num(posinf=WIDTH)  # a masked key: as far as the width
    kernel = (1 - gap / WIDTH).clamp(min=0)
    weights = kernel / kernel.sum(-1, keepdim=True).clamp(min=1.0)  # the best key's kappa is 1: a sum >= 1
    return torch.where(empty, torch.full_like(weights, 1.0 / weights.size(-1)), weights)
