"""Notebook 09's exercise, solved: ``threshold``, the lines of sparsemax left to the student.

notebooks/09_write_sparsemax.ipynb writes sparsemax as p_i = [z_i - tau]_+ and leaves the threshold
tau to the student. With ``NMT_SOLUTIONS=1`` set before the kernel starts, the cell after the
exercise makes this function the notebook's ``threshold`` (its ``sparsemax``, which calls it, and the
masking before it stay the notebook's), so that the tests (tests/integration/test_notebooks.py) and
the site's copy run the notebook solved.

With the scores of one row sorted, z_(1) >= z_(2) >= ... >= z_(S), the support holds the top k(z):

    k(z) = max { k : 1 + k z_(k) > z_(1) + ... + z_(k) },   tau = (z_(1) + ... + z_(k(z)) - 1) / k(z)

(Martins & Astudillo 2016, Algorithm 1). The gradient through sort, cumsum and gather is autograd's:
d tau / d z_j = 1 / k(z) for j in the support, 0 outside it, the closed form.
"""

from __future__ import annotations

import torch
from torch import Tensor


def threshold(z: Tensor) -> Tensor:
    """tau (B, h, T, 1): the number that makes [z_i - tau]_+ sum to 1 over each row of z (B, h, T, S)."""
    ranked = z.sort(dim=-1, descending=True).values  # z_(1) >= z_(2) >= ... in each row
    k = torch.arange(1, z.size(-1) + 1, device=z.device, dtype=z.dtype)  # 1, 2, ..., S
    cumulative = ranked.cumsum(dim=-1)  # z_(1) + ... + z_(k)
    support = (1 + k * ranked > cumulative).sum(dim=-1, keepdim=True)  # k(z): z_(1) is always in
    tau = (cumulative.gather(-1, support - 1) - 1) / support  # (B, h, T, 1)
    return tau
