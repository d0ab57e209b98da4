"""A cosine-similarity energy with a learned temperature: nmt's worked example of an attention of your own.

    e_{t,i} = g_h * cos(q_t, k_i),   g_h = exp(s_h), one s_h per head, learned from g = 10

Cosine similarity bounds each score to [-g, g], so no query or key can grow its way into a
one-hot softmax; the temperature g decides how sharp the attention may get, and is learned
(the logit scale of Swin Transformer v2, Liu et al. 2022, starts at 10 too).

Use it from a config (this folder holds the module, so a config beside it finds it):

    model:
      attention:
        type: cosine:CosineEnergy

or, once imported (``nmt ... --module examples/attention/cosine.py``), by its registered name
``cosine``: ``nmt compare --module examples/attention/cosine.py --variants bahdanau,cosine``.
docs/adding_an_attention.md walks through it.
"""

from __future__ import annotations

import math
from typing import ClassVar

import torch
import torch.nn.functional as F
from torch import Tensor, nn

import nmt

START_TEMPERATURE = 10.0


@nmt.register_attention("cosine")
class CosineEnergy(nmt.Energy):
    """g_h cos(q, k): queries (B, h, T, D) and keys (B, h, S, D) to scores (B, h, T, S)."""

    # A type: cosine config gets linear query and key maps (like Bahdanau's W s and U h), so the
    # angle is measured in a learned space; the other axes are custom's (identity values, 1 head).
    defaults: ClassVar[dict[str, str]] = {"query_map": "linear", "key_map": "linear"}

    def __init__(self, query_size: int, key_size: int, heads: int = 1) -> None:
        super().__init__(query_size, key_size, heads)
        self.log_temperature = nn.Parameter(torch.full((heads,), math.log(START_TEMPERATURE)))  # s_h

    def forward(self, q: Tensor, k: Tensor) -> Tensor:
        cosine = F.normalize(q, dim=-1) @ F.normalize(k, dim=-1).transpose(-1, -2)  # (B, h, T, S)
        return cosine * self.log_temperature.exp().view(1, -1, 1, 1)
