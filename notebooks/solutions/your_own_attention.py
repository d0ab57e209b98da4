"""Notebook 07's exercise, solved: ``ScaledCosineEnergy.forward`` with its one line written.

notebooks/07_your_own_attention.ipynb leaves the scores line of its energy to the student. With
``NMT_SOLUTIONS=1`` set before the kernel starts, the cell after the exercise makes this function
the class's ``forward`` (the class itself, its temperature and its defaults, stay the notebook's),
so that the tests (tests/integration/test_notebooks.py) and the site's copy run the notebook solved.

    e_{t,i} = g cos(q_t, k_i) = g q_t . k_i / (|q_t| |k_i|),   g = e^s, one per head
"""

from __future__ import annotations

from typing import Any

import torch.nn.functional as F
from torch import Tensor


def forward(self: Any, q: Tensor, k: Tensor) -> Tensor:
    """Queries (B, h, T, D) and keys (B, h, S, D) -> scores (B, h, T, S)."""
    g = self.log_temperature.exp().view(1, -1, 1, 1)  # (1, h, 1, 1): broadcasts over B, T and S
    scores = g * (F.normalize(q, dim=-1) @ F.normalize(k, dim=-1).transpose(-1, -2))  # (B, h, T, S)
    return scores
