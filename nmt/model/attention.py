"""Attention as a point in a design space: energy x parametrization (x direction, by the caller).

One :class:`Attention` covers every variant, chosen by independent axes:

1. **parametrization**: the query, key and value maps, each ``identity`` or ``linear``;
   ``heads`` >= 1 splits the mapped vectors; an optional output projection W_o brings the
   pooled heads back to the value size.  Sizes follow :func:`nmt.config.attention_space.attention_sizes`.
2. **energy** (:mod:`nmt.model.energies`): ``uniform`` (no attention: the mean of the real
   positions), ``dot``, ``scaled_dot``, ``bilinear`` q^T W k, ``mlp`` v^T tanh(W q + U k + b),
   ``gaussian`` -||q - k||^2 / 2, and ``location`` softmax(W_a q), which reads the query
   alone and scores absolute positions 0..max_len-1 (Luong et al. 2015).
3. pooling: a masked softmax over S and the weighted sum of the (mapped) values.

*Direction* is the caller's choice of queries and keys: the decoder attends over the
encoder (cross-attention, :mod:`nmt.model.decoder`) or a sequence over itself
(:mod:`nmt.model.self_attention`).

``project_keys`` and ``project_values`` depend only on what is attended over, so callers
run them once per batch (the encoder outputs) or once per new state (a decoder cache) and
pass the results in; nothing is cached on the module.

Shapes: B batch, S keys (source length), T queries, h heads, A mapped size.
"""

from __future__ import annotations

from typing import Optional

import torch
from torch import Tensor, nn

from nmt.config.attention_space import ATTENTION_MAPS, attention_problem, attention_sizes, scores_unscalable
from nmt.model.dropout import Dropout
from nmt.model.energies import (
    ENERGIES,
    additive_energy,
    dot_energy,
    gaussian_energy,
    merge_heads,
    scaled_dot_energy,
    split_heads,
)


def masked_softmax(energy: Tensor, mask: Optional[Tensor]) -> Tensor:
    """Softmax over the last axis (S) with masked positions at exactly zero weight.

    ``energy`` is (B, ..., S); ``mask`` is True where a key may be attended: (B, S) for
    padding, (B, T, S) for a mask per query (causal) with energy (B, h, T, S), or None.
    The softmax runs in float32 whatever the autocast dtype, and masked scores become
    float32's most negative value rather than -inf: exp() of it underflows to exactly 0
    next to any real score, and a row without any real position yields uniform weights
    instead of NaN.
    """
    energy = energy.float()
    if mask is not None:
        if mask.dim() == 2:
            mask = mask.view(mask.size(0), *([1] * (energy.dim() - 2)), mask.size(-1))
        elif mask.dim() == energy.dim() - 1:
            mask = mask.unsqueeze(1)  # (B, T, S) -> (B, 1, T, S): the same for every head
        energy = energy.masked_fill(~mask, torch.finfo(torch.float32).min)
    return torch.softmax(energy, dim=-1)


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
    ) -> None:
        super().__init__()
        if energy not in ENERGIES:
            raise ValueError(f"unknown energy {energy!r}; valid options: {', '.join(ENERGIES)}")
        for name, value in (("query_map", query_map), ("key_map", key_map), ("value_map", value_map)):
            if value not in ATTENTION_MAPS:
                raise ValueError(f"unknown {name} {value!r}; valid options: {', '.join(ATTENTION_MAPS)}")
        axes = dict(
            energy=energy, query_map=query_map, key_map=key_map, value_map=value_map, out_proj=out_proj, heads=heads
        )
        problem = attention_problem(axes, query_size, key_size, dim)
        if problem:
            raise ValueError(problem)
        a_q, a_k, a_v = attention_sizes(query_size, key_size, query_map, key_map, value_map, dim)
        self.query_size, self.key_size = query_size, key_size
        self.kind, self.heads, self.max_len = energy, heads, max_len
        # Attention dropout: zeroes some weights before pooling, in training only; the weights returned
        # (for maps and tests) are the softmax's own.
        self.weight_dropout = Dropout(dropout) if dropout > 0 else None
        self.context_size = key_size if out_proj else a_v  # C
        linear = "linear"
        self.query_proj = nn.Linear(query_size, a_q, bias=False) if query_map == linear else None  # W
        # The key map runs once per batch, so the mlp's hidden-layer bias b lives there: U h + b.
        self.key_proj = nn.Linear(key_size, a_k, bias=energy == "mlp") if key_map == linear else None  # U
        self.value_proj = nn.Linear(key_size, a_v) if value_map == linear else None  # W_v
        self.bilinear = nn.Linear(a_k, a_q, bias=False) if energy == "bilinear" else None  # q^T W k
        # W = W' / sqrt(A/h): the same q^T W k, but Adam moves W sqrt(A/h) times slower, so the scores
        # do not outgrow the softmax; bilinear_start says where W starts (docs/attention_diagnosis.md).
        self.bilinear_gain = (a_q // heads) ** -0.5 if scale_bilinear and energy == "bilinear" else 1.0
        self.v = nn.Parameter(torch.empty(a_q).uniform_(-(a_q**-0.5), a_q**-0.5)) if energy == "mlp" else None
        self.location = nn.Linear(a_q, heads * max_len, bias=False) if energy == "location" else None  # W_a
        self.out_proj = nn.Linear(a_v, key_size) if out_proj else None  # W_o
        # W_o = W_o' / sqrt(A_v): stacked on the value map, W_o W_v grows as a product under Adam
        # and the context outgrows the tanh it feeds (docs/attention_diagnosis.md).
        self.out_gain = a_v**-0.5 if scale_out_proj and out_proj else 1.0
        # How W_o' and W' start, as multiples of their Xavier init (applied by nmt.model.build.init_weights):
        # 1/gain makes W_o (W) itself start as a Xavier map, so only Adam's steps on it are scaled.
        for name, start in (("out_proj_start", out_proj_start), ("bilinear_start", bilinear_start)):
            if start not in ("xavier", "scaled"):
                raise ValueError(f"unknown {name} {start!r}; valid options: xavier, scaled")
        self.out_init_gain = 1.0 / self.out_gain if out_proj_start == "xavier" else 1.0
        self.bilinear_init_gain = 1.0 / self.bilinear_gain if bilinear_start == "xavier" else 1.0
        # Gaussian: W_q = W_q' g and W_k = W_k' g with g = (A/h)^(-1/4), so the squared distance, quadratic in
        # the maps, moves sqrt(A/h) times slower; W_q', W_k' start at Xavier / g (plain Xavier maps).
        self.qk_gain = (a_q // heads) ** -0.25 if scale_gaussian and energy == "gaussian" else 1.0
        # Dot energies over identity maps have no parameter of their own: the scores' size is the states'.
        # A learned log-scale s per head (scores x e^s, from s = 0) lets the softmax sharpen without
        # pushing the RNN states into tanh saturation (docs/attention_diagnosis.md).  A linear query or
        # key map can scale the scores itself, so there it is not added.
        learned = learn_scale and scores_unscalable(energy, query_map, key_map)
        self.log_scale = nn.Parameter(torch.zeros(heads)) if learned else None  # s, (h,)

    # ------------------------------------------------------------ parametrization

    def project_keys(self, memory: Tensor) -> Tensor:
        """Attended states (B, S, K) -> keys (B, S, A); a bilinear W is applied here too."""
        keys = memory if self.key_proj is None else self.key_proj(memory) * self.qk_gain
        return keys if self.bilinear is None else self.bilinear(keys) * self.bilinear_gain

    def project_values(self, memory: Tensor) -> Tensor:
        """Attended states (B, S, K) -> values (B, S, A_v)."""
        return memory if self.value_proj is None else self.value_proj(memory)

    def project_query(self, query: Tensor) -> Tensor:
        """Queries (B, T, H_q) -> (B, T, A)."""
        return query if self.query_proj is None else self.query_proj(query) * self.qk_gain

    # ------------------------------------------------------------ energy and pooling

    def energy(self, query: Tensor, keys: Tensor) -> Tensor:
        """Mapped queries (B, T, A) and keys (B, S, A) -> scores (B, h, T, S)."""
        B, T, S, h = query.size(0), query.size(1), keys.size(1), self.heads
        if self.kind == "uniform":
            return query.new_zeros(B, h, T, S)
        if self.location is not None:  # energy=location: scores from the query alone
            scores = self.location(query).view(B, T, h, self.max_len).transpose(1, 2)  # (B, h, T, L)
            if self.max_len >= S:
                return scores[..., :S]
            return torch.cat([scores, scores.new_zeros(B, h, T, S - self.max_len)], -1)  # masked in forward
        q, k = split_heads(query, h), split_heads(keys, h)  # (B, h, T, A/h), (B, h, S, A/h)
        if self.kind == "bilinear":
            return dot_energy(q, k)
        if self.kind in ("dot", "scaled_dot"):
            scores = dot_energy(q, k) if self.kind == "dot" else scaled_dot_energy(q, k)
            if self.log_scale is None:
                return scores
            return scores.float() * self.log_scale.exp().view(1, h, 1, 1)  # float32, as the softmax runs
        if self.v is not None:  # energy=mlp
            return additive_energy(q, k, (self.v if h == 1 else self.v.view(h, -1)).to(q.dtype))
        return gaussian_energy(q, k)

    def forward(
        self, query: Tensor, keys: Tensor, values: Tensor, mask: Optional[Tensor], per_head: bool = False
    ) -> tuple[Tensor, Tensor]:
        """Query (B, H_q) or (B, T, H_q) -> context (B, [T,] C) and weights (B, [T,] S).

        ``keys``/``values`` come from :meth:`project_keys`/:meth:`project_values`; ``mask``
        is True where a key may be attended, (B, S) or (B, T, S), None for all.  Weights
        sum to 1 over the allowed positions and are exactly 0 elsewhere; with heads > 1
        the returned weights are the mean over heads (still a distribution), or with
        ``per_head`` every head's own, (B, h, [T,] S).
        """
        single = query.dim() == 2
        if single:
            query = query.unsqueeze(1)  # (B, 1, H_q)
        S = keys.size(1)
        if self.location is not None and self.max_len < S:  # positions W_a has no score for
            reach = torch.arange(S, device=keys.device) < self.max_len  # (S,)
            mask = reach.expand(keys.size(0), S) if mask is None else mask & reach
        weights = masked_softmax(self.energy(self.project_query(query), keys), mask)  # (B, h, T, S)
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
        scaled = (self.bilinear_gain, self.out_gain, self.qk_gain) != (1.0, 1.0, 1.0)
        gains = (
            f", bilinear_gain={self.bilinear_gain:.3g}, out_gain={self.out_gain:.3g}, qk_gain={self.qk_gain:.3g}"
            if scaled
            else ""
        )
        learned = ", learned scale" if self.log_scale is not None else ""
        return f"energy={self.kind}, heads={self.heads}, context_size={self.context_size}{gains}{learned}"
