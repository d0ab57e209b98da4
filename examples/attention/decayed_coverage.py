"""A coverage attention of one's own: a state across decoder steps, and an option that shapes it.

    e_{t,i} = q_t^T k_i / sqrt(d) - softplus(w) c_{t,i},   c_{t+1,i} = gamma c_{t,i} + alpha_{t,i},   c_{1,i} = 0

The scaled dot product, minus a learned penalty (softplus(w) >= 0, one w per head) on how much each
source position has been attended so far.  Unlike Tu et al.'s (2016) coverage (nmt's built-in
``coverage``), earlier attention fades by gamma = ``params.decay`` at every step, so a position
attended long ago may be attended again: gamma = 1 is plain coverage, gamma = 0 remembers only the
last step.

The coverage vector c is the energy's *state*: ``stateful = True`` makes nmt call
:meth:`init_state` for every sentence and :meth:`next_state` after every step, and carry the state
in the decoder state, so beam search reorders it with its hypotheses and an ONNX export passes it
between steps.  Nothing is kept on the module (``nmt.check_attention`` decodes twice and reorders
rows mid-sentence to catch that).  The state comes to :meth:`forward` in its third argument, an
``nmt.ScoreContext`` (``reads_context = True``).

    model:
      attention:
        type: decayed_coverage:DecayedCoverage
        params:
          decay: 0.9

docs/adding_an_attention.md ("A state across steps") walks through it.
"""

from __future__ import annotations

from typing import ClassVar, Optional

import torch
import torch.nn.functional as F
from pydantic import BaseModel, ConfigDict, Field
from torch import Tensor, nn

import nmt


class DecayParams(BaseModel):
    """The energy's own options."""

    model_config = ConfigDict(extra="forbid")

    decay: float = Field(0.9, ge=0.0, le=1.0, description="gamma: how much of the coverage a step keeps.")


@nmt.register_attention("decayed_coverage")
class DecayedCoverage(nmt.Energy):
    """q.k / sqrt(d) - softplus(w) c, with the coverage c decaying by params.decay each step."""

    Params: ClassVar[Optional[type[BaseModel]]] = DecayParams
    reads_context = True  # forward(q, k, context): context.state is the coverage
    stateful = True  # init_state / next_state
    defaults: ClassVar[dict] = {"query_map": "linear", "key_map": "linear"}

    def __init__(self, query_size: int, key_size: int, heads: int = 1, params: Optional[DecayParams] = None) -> None:
        super().__init__(query_size, key_size, heads)
        self.decay = (params or DecayParams()).decay
        self.w = nn.Parameter(torch.zeros(heads))  # softplus(0) = 0.69: a mild penalty at the start

    def forward(self, q: Tensor, k: Tensor, context: nmt.ScoreContext) -> Tensor:
        """Queries (B, h, T, D) and keys (B, h, S, D) -> scores (B, h, T, S); context.state is c, (B, S)."""
        scores = q @ k.transpose(-1, -2) / q.size(-1) ** 0.5
        penalty = F.softplus(self.w).view(1, -1, 1, 1) * context.state.view(q.size(0), 1, 1, -1)
        return scores - penalty

    def init_state(self, mask: Tensor) -> Tensor:
        """c_1 = 0 for every source position: (B, S)."""
        return torch.zeros(mask.shape, device=mask.device)

    def next_state(self, state: Tensor, weights: Tensor, context: nmt.ScoreContext) -> Tensor:
        """c_{t+1} = gamma c_t + alpha_t; ``weights`` (B, S) are this step's, averaged over heads."""
        return self.decay * state + weights
