"""Luong et al.'s (2015) local attention: a window of 2D + 1 source positions around an aligned position p_t.

Both variants score with Luong's *general* energy h_t^T W h_s inside the window [p_t - D, p_t + D]
and favour positions near p_t with a Gaussian of sigma = D / 2:

    a_t(s) = align(h_t, h_s) exp(-(s - p_t)^2 / (2 sigma^2)),

written here as one normalization of the sum of the scores and the log of the Gaussian, so the
weights still sum to 1 over the window (the paper multiplies after the softmax and does not
renormalize).  Positions are 0-based; S_x is the sentence's real source length.

- ``local_m`` (monotonic): p_t = t, the decoder step, kept below S_x.  The step count is the
  energy's state (:meth:`LocalMonotonicEnergy.next_state` adds 1), so beam search and ONNX
  exports carry it with the decoder state.
- ``local_p`` (predictive): p_t = S_x sigmoid(v_p^T tanh(W_p h_t)), learned from the query.

D is ``model.attention.params.window`` (10, as in the paper).

Shapes: B batch, h heads, T queries, S keys, D size per head, A = h D.
"""

from __future__ import annotations

from typing import Any, Optional

import torch
from torch import Tensor, nn

from nmt.config.attention_space import LocalParams
from nmt.model.energies import BilinearEnergy, ScoreContext, dot_energy, merge_heads, register_attention


class LocalEnergy(BilinearEnergy):
    """Luong's general energy inside a window of ``params.window`` around :meth:`position`, plus its Gaussian."""

    reads_context = True
    Params = LocalParams

    def __init__(
        self,
        query_size: int,
        key_size: int,
        heads: int = 1,
        scale_bilinear: bool = False,
        bilinear_start: str = "xavier",
        params: Optional[Any] = None,
    ) -> None:
        super().__init__(query_size, key_size, heads, scale_bilinear, bilinear_start)
        self.half_width = (params or LocalParams()).window  # D

    def position(self, q: Tensor, context: ScoreContext) -> Tensor:  # pragma: no cover - each variant defines it
        """p_t of every query: (B, T)."""
        raise NotImplementedError

    def _offset(self, q: Tensor, context: ScoreContext) -> Tensor:
        """s - p_t for every query and key: (B, T, S)."""
        positions = torch.arange(context.mask.size(-1), device=q.device, dtype=q.dtype)
        return positions - self.position(q, context).unsqueeze(-1)

    def forward(self, q: Tensor, k: Tensor, context: ScoreContext) -> Tensor:  # type: ignore[override]
        sigma = self.half_width / 2
        gaussian = -self._offset(q, context).pow(2) / (2 * sigma**2)  # log exp(-(s - p_t)^2 / 2 sigma^2)
        return dot_energy(q, k) + gaussian.unsqueeze(1)

    def window(self, q: Tensor, context: ScoreContext) -> Optional[Tensor]:
        return self._offset(q, context).abs() <= self.half_width  # (B, T, S)


@register_attention("local_p")
class LocalPredictiveEnergy(LocalEnergy):
    """local-p: p_t = S_x sigmoid(v_p^T tanh(W_p h_t)) (Luong et al. 2015, eq. 9)."""

    def __init__(self, query_size: int, key_size: int, heads: int = 1, **options: Any) -> None:
        super().__init__(query_size, key_size, heads, **options)
        self.predict = nn.Linear(query_size, query_size, bias=False)  # W_p
        self.predict_v = nn.Linear(query_size, 1, bias=False)  # v_p

    def position(self, q: Tensor, context: ScoreContext) -> Tensor:
        ratio = torch.sigmoid(self.predict_v(torch.tanh(self.predict(merge_heads(q))))).squeeze(-1)  # (B, T)
        return context.lengths.to(q.dtype).unsqueeze(-1) * ratio


@register_attention("local_m")
class LocalMonotonicEnergy(LocalEnergy):
    """local-m: p_t = t, the decoder step (Luong et al. 2015), counted in the state."""

    stateful = True

    def position(self, q: Tensor, context: ScoreContext) -> Tensor:
        assert context.state is not None  # the attention gives a stateful energy its state
        last = (context.lengths - 1).clamp(min=0).to(q.dtype)  # (B,)
        return torch.minimum(context.state.to(q.dtype), last).unsqueeze(-1).expand(-1, q.size(2))  # (B, T)

    def init_state(self, mask: Tensor) -> Tensor:
        """t = 0 before the first step; (B,)."""
        return mask.new_zeros(mask.size(0), dtype=self.bilinear.weight.dtype)

    def next_state(self, state: Tensor, weights: Tensor, context: ScoreContext) -> Tensor:
        return state + 1
