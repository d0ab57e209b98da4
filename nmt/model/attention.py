"""Attention as a point in a design space: energy x parametrization (x direction, by the caller).

One :class:`Attention` covers every variant, chosen by independent axes:

1. **parametrization**: the query, key and value maps, each ``identity`` or ``linear``;
   ``heads`` >= 1 splits the mapped vectors; an optional output projection W_o brings the
   pooled heads back to the value size.  Sizes follow :func:`nmt.config.attention_space.attention_sizes`.
2. **energy**: a registered :class:`~nmt.model.energies.Energy` module, held as ``score``:
   nmt's ``uniform`` (no attention: the mean of the real positions), ``dot``, ``scaled_dot``,
   ``bilinear`` q^T W k, ``mlp`` v^T tanh(W q + U k + b), ``gaussian`` -||q - k||^2 / 2 and
   ``location`` softmax(W_a q) (the query alone, absolute positions 0..max_len-1, Luong et al.
   2015), or a user's (``nmt.register_attention``), built and called the same way.
3. **normalize**: the scores of each query made into weights over S, masked keys at exactly 0: a
   registered normalization (:mod:`nmt.model.normalize`: ``softmax``, ``sparsemax``,
   ``entmax15``, or a user's, ``nmt.register_normalization``);
4. pooling: the weighted sum of the (mapped) values.

*Direction* is the caller's choice of queries and keys: the decoder attends over the
encoder (cross-attention, :mod:`nmt.model.decoder`) or a sequence over itself
(:mod:`nmt.model.self_attention`).

``project_keys`` and ``project_values`` depend only on what is attended over, so callers
run them once per batch (the encoder outputs) or once per new state (a decoder cache) and
pass the results in; nothing is cached on the module.

Shapes: B batch, S keys (source length), T queries, h heads, A mapped size.
"""

from __future__ import annotations

from typing import Any, Optional

import torch
from torch import Tensor, nn

from nmt.config.attention_space import (
    ATTENTION_MAPS,
    ATTENTIONS,
    attention_problem,
    attention_sizes,
    scores_unscalable,
)
from nmt.config.normalizations import NORMALIZATIONS

# nmt's energies beyond nmt.model.energies register themselves on import, as a user's module does
from nmt.model import coverage as coverage
from nmt.model import local_attention as local_attention
from nmt.model.dropout import Dropout
from nmt.model.energies import Energy, ScoreContext, energy_class, merge_heads, split_heads
from nmt.model.normalize import masked_softmax as masked_softmax  # the default normalize step


class Attention(nn.Module):
    """One point of the attention design space; see the module docstring for the axes."""

    def __init__(
        self,
        query_size: int,
        key_size: int,
        *,
        energy: str,
        query_map: str = "identity",
        key_map: str = "identity",
        value_map: str = "identity",
        out_proj: bool = False,
        heads: int = 1,
        dim: Optional[int] = None,
        max_len: int = 256,
        scale_bilinear: bool = False,
        scale_out_proj: bool = False,
        out_proj_start: str = "xavier",
        bilinear_start: str = "xavier",
        scale_gaussian: bool = False,
        learn_scale: bool = False,
        dropout: float = 0.0,
        normalize: str = "softmax",
        params: Optional[dict[str, Any]] = None,
    ) -> None:
        super().__init__()
        if energy not in ATTENTIONS:
            raise ValueError(ATTENTIONS.unknown(energy))
        if normalize not in NORMALIZATIONS:
            raise ValueError(NORMALIZATIONS.unknown(normalize))
        for name, value in (("query_map", query_map), ("key_map", key_map), ("value_map", value_map)):
            if value not in ATTENTION_MAPS:
                raise ValueError(f"unknown {name} {value!r}; valid options: {', '.join(ATTENTION_MAPS)}")
        axes = dict(
            energy=energy, query_map=query_map, key_map=key_map, value_map=value_map, out_proj=out_proj, heads=heads
        )
        problem = attention_problem(axes, query_size, key_size, dim)
        if problem:
            raise ValueError(problem)
        kind = energy_class(energy)
        a_q, a_k, a_v = attention_sizes(query_size, key_size, query_map, key_map, value_map, dim)
        self.query_size, self.key_size = query_size, key_size
        self.kind, self.heads = energy, heads
        self.normalization = normalize  # the normalize step: scores (B, h, T, S) and mask -> weights
        self.normalize = NORMALIZATIONS.get(normalize).target
        # Attention dropout: zeroes some weights before pooling, in training only; the weights returned
        # (for maps and tests) are the softmax's own.
        self.weight_dropout = Dropout(dropout) if dropout > 0 else None
        self.context_size = key_size if out_proj else a_v  # C
        linear = "linear"
        self.query_proj = nn.Linear(query_size, a_q, bias=False) if query_map == linear else None  # W
        # The key map runs once per batch, so an energy's bias on the keys lives there: U h + b (mlp).
        self.key_proj = nn.Linear(key_size, a_k, bias=kind.key_bias) if key_map == linear else None  # U
        self.value_proj = nn.Linear(key_size, a_v) if value_map == linear else None  # W_v
        # Dot energies over identity maps have no parameter of their own: the scores' size is the states'.
        # A learned log-scale s per head (scores x e^s, from s = 0) lets the softmax sharpen without
        # pushing the RNN states into tanh saturation (docs/attention_diagnosis.md).  A linear query or
        # key map can scale the scores itself, so there it is not added.
        offered = dict(
            learn_scale=learn_scale and scores_unscalable(energy, query_map, key_map),
            scale_bilinear=scale_bilinear,
            bilinear_start=bilinear_start,
            max_len=max_len,
        )
        offered = {k: v for k, v in offered.items() if k in kind.options}
        if kind.Params is not None:  # the energy's own options, validated by its pydantic model
            offered["params"] = kind.Params.model_validate(params or {})
        elif params:
            raise ValueError(f"energy {energy} takes no params (its class declares no Params), not {sorted(params)}")
        self.score: Energy = kind(a_q, a_k, heads, **offered)
        if not any(True for _ in self.score.children()):
            # v and s were the attention's own parameters before the energy became a module (2026-11-28), so
            # they came first in parameters(): kept first, a resumed older run's optimizer state still fits.
            self._modules = {"score": self._modules.pop("score"), **self._modules}
        self.out_proj = nn.Linear(a_v, key_size) if out_proj else None  # W_o
        # W_o = W_o' / sqrt(A_v): stacked on the value map, W_o W_v grows as a product under Adam
        # and the context outgrows the tanh it feeds (docs/attention_diagnosis.md).
        self.out_gain = a_v**-0.5 if scale_out_proj and out_proj else 1.0
        # How W_o' starts, as a multiple of its Xavier init (applied by nmt.model.build.init_weights):
        # 1/gain makes W_o itself start as a Xavier map, so only Adam's steps on it are scaled.
        if out_proj_start not in ("xavier", "scaled"):
            raise ValueError(f"unknown out_proj_start {out_proj_start!r}; valid options: xavier, scaled")
        self.out_init_gain = 1.0 / self.out_gain if out_proj_start == "xavier" else 1.0
        # Gaussian: W_q = W_q' g and W_k = W_k' g with g = (A/h)^(-1/4), so the squared distance, quadratic in
        # the maps, moves sqrt(A/h) times slower; W_q', W_k' start at Xavier / g (plain Xavier maps).
        self.qk_gain = (a_q // heads) ** -0.25 if scale_gaussian and energy == "gaussian" else 1.0
        self._register_load_state_dict_pre_hook(_legacy_names)

    # ------------------------------------------------------------ parametrization

    def project_keys(self, memory: Tensor) -> Tensor:
        """Attended states (B, S, K) -> keys (B, S, A); the energy's own work on keys too (bilinear W k)."""
        keys = memory if self.key_proj is None else self.key_proj(memory) * self.qk_gain
        return self.score.prepare_keys(keys)

    def project_values(self, memory: Tensor) -> Tensor:
        """Attended states (B, S, K) -> values (B, S, A_v)."""
        return memory if self.value_proj is None else self.value_proj(memory)

    def project_query(self, query: Tensor) -> Tensor:
        """Queries (B, T, H_q) -> (B, T, A)."""
        return query if self.query_proj is None else self.query_proj(query) * self.qk_gain

    # ------------------------------------------------------------ energy

    def energy(
        self, query: Tensor, keys: Tensor, mask: Optional[Tensor] = None, state: Optional[Tensor] = None
    ) -> Tensor:
        """Mapped queries (B, T, A) and keys (B, S, A) -> scores (B, h, T, S), by the registered energy."""
        q, k = split_heads(query, self.heads), split_heads(keys, self.heads)
        if not self.score.reads_context:
            return self.score(q, k)
        return self.score(q, k, self.score_context(keys, mask, state))

    def score_context(self, keys: Tensor, mask: Optional[Tensor], state: Optional[Tensor]) -> ScoreContext:
        """What an energy with ``reads_context`` reads besides queries and keys: the mask, the lengths, its state."""
        if mask is None:
            mask = torch.ones(keys.shape[:2], dtype=torch.bool, device=keys.device)
        lengths = (mask if mask.dim() == 2 else mask.any(1)).sum(-1).to(keys.dtype)  # per query: any may see
        if self.score.stateful and state is None:  # the first step of every sentence
            state = self.init_state(mask if mask.dim() == 2 else mask.any(1))
        return ScoreContext(mask, lengths, state)

    # ------------------------------------------------------------ state across decoder steps

    @property
    def stateful(self) -> bool:
        """Whether the energy carries a state across decoder steps (then it runs one query per step)."""
        return self.score.stateful

    def init_state(self, mask: Tensor) -> Optional[Tensor]:
        """The energy's state before the first step for sources with real keys ``mask`` (B, S); None if stateless."""
        return self.score.init_state(mask) if self.score.stateful else None

    def next_state(
        self, state: Optional[Tensor], weights: Tensor, keys: Tensor, mask: Optional[Tensor]
    ) -> Optional[Tensor]:
        """The state after a step that gave ``weights`` (B, S) over ``keys`` (B, S, A); None stays None."""
        if state is None:
            return None
        return self.score.next_state(state, weights, self.score_context(keys, mask, state))

    # ------------------------------------------------------------ pooling

    def forward(
        self,
        query: Tensor,
        keys: Tensor,
        values: Tensor,
        mask: Optional[Tensor],
        per_head: bool = False,
        state: Optional[Tensor] = None,
    ) -> tuple[Tensor, Tensor]:
        """Query (B, H_q) or (B, T, H_q) -> context (B, [T,] C) and weights (B, [T,] S).

        ``keys``/``values`` come from :meth:`project_keys`/:meth:`project_values`; ``mask``
        is True where a key may be attended, (B, S) or (B, T, S), None for all.  Weights
        sum to 1 over the allowed positions and are exactly 0 elsewhere; with heads > 1
        the returned weights are the mean over heads (still a distribution), or with
        ``per_head`` every head's own, (B, h, [T,] S).  ``state``: a stateful energy's state
        (:meth:`init_state`, :meth:`next_state`; None: the first step's).
        """
        single = query.dim() == 2
        if single:
            query = query.unsqueeze(1)  # (B, 1, H_q)
        S = keys.size(1)
        reach = self.score.reach(S, keys.device)  # (S,): positions the energy can score (location's table)
        if reach is not None:
            mask = reach.expand(keys.size(0), S) if mask is None else mask & reach
        mapped = self.project_query(query)  # (B, T, A)
        scores = self.energy(mapped, keys, mask, state)  # (B, h, T, S)
        if self.score.reads_context:  # a local attention's window narrows the mask, per query
            window = self.score.window(split_heads(mapped, self.heads), self.score_context(keys, mask, state))
            if window is not None:
                mask = window if mask is None else window & (mask.unsqueeze(1) if mask.dim() == 2 else mask)
        weights = self.normalize(scores, mask)  # (B, h, T, S)
        pooled = weights if self.weight_dropout is None else self.weight_dropout(weights)
        heads = pooled.to(values.dtype) @ split_heads(values, self.heads)  # (B, h, T, A_v/h)
        context = merge_heads(heads)  # (B, T, A_v)
        if self.out_proj is not None:
            context = self.out_proj(context) * self.out_gain  # (B, T, K)
        weights = (weights if per_head else weights.mean(1)).to(context.dtype)  # (B, [h,] T, S)
        if single:
            return context.squeeze(1), weights.squeeze(-2)
        return context, weights

    def extra_repr(self) -> str:
        scaled = (self.out_gain, self.qk_gain) != (1.0, 1.0)
        gains = f", out_gain={self.out_gain:.3g}, qk_gain={self.qk_gain:.3g}" if scaled else ""
        normalize = "" if self.normalization == "softmax" else f", normalize={self.normalization}"
        return f"energy={self.kind}{normalize}, heads={self.heads}, context_size={self.context_size}{gains}"


_MOVED = ("v", "bilinear.weight", "location.weight", "log_scale")
"""Parameters an attention held itself before its energy became a module (``score``)."""


def _legacy_names(state: dict[str, Any], prefix: str, *args: Any) -> None:
    """Read a checkpoint written before 2026-11-28: ``attention.v`` is now ``attention.score.v``."""
    for name in _MOVED:
        if prefix + name in state:
            state[prefix + "score." + name] = state.pop(prefix + name)
