"""A low-rank bilinear energy with an option of its own: how an attention declares its settings.

    e_{t,i} = (U q_t)^T (V k_i) / sqrt(r),   U, V: r x d,   r = params.rank

Luong's general energy q^T W k learns a full d x d matrix W; here W = U^T V has rank r, so r sets
how many directions of the query and key the score can compare (and r x 2d parameters per head
instead of d x d).  ``rank`` is the energy's own option, declared as a pydantic model
(``Params``), so a config sets it, ``nmt config`` shows it, a checkpoint keeps it and ``nmt
compare --sweep model.attention.params.rank=4,8,16`` sweeps it:

    model:
      attention:
        type: lowrank:LowRankBilinear
        params:
          rank: 8

docs/adding_an_attention.md ("Options of its own") walks through it.
"""

from __future__ import annotations

from typing import ClassVar, Optional

import torch
from pydantic import BaseModel, ConfigDict, Field
from torch import Tensor, nn

import nmt


class LowRankParams(BaseModel):
    """The energy's own options: unknown keys are errors, as in every nmt config section."""

    model_config = ConfigDict(extra="forbid")

    rank: int = Field(8, ge=1, le=1024, description="r: the rank of W = U^T V.")


@nmt.register_attention("lowrank")
class LowRankBilinear(nmt.Energy):
    """(U q)^T (V k) / sqrt(r) per head: a bilinear energy of rank r (model.attention.params.rank)."""

    Params: ClassVar[Optional[type[BaseModel]]] = LowRankParams
    same_size = False  # U and V map queries and keys of any sizes to r

    def __init__(self, query_size: int, key_size: int, heads: int = 1, params: Optional[LowRankParams] = None) -> None:
        super().__init__(query_size, key_size, heads)
        self.rank = (params or LowRankParams()).rank
        self.u = nn.Parameter(torch.randn(heads, query_size // heads, self.rank) / (query_size // heads) ** 0.5)
        self.v = nn.Parameter(torch.randn(heads, key_size // heads, self.rank) / (key_size // heads) ** 0.5)

    def forward(self, q: Tensor, k: Tensor) -> Tensor:
        """Queries (B, h, T, D_q) and keys (B, h, S, D_k) -> scores (B, h, T, S)."""
        return (q @ self.u) @ (k @ self.v).transpose(-1, -2) / self.rank**0.5
