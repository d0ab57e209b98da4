"""Attention: score every source position against a decoder query, pool the values.

Every attention here is three separable pieces:

1. a *parametrization*: how the query and the keys are projected before they are
   compared (``project_query``, ``project_keys``; identity when there is none);
2. an *energy*: a small pure function (``*_energy`` below) mapping projected queries
   (B, T, D) and keys (B, S, D) to scores (B, T, S);
3. pooling: a masked softmax over S and the weighted sum of the values.

``project_keys`` depends only on the encoder outputs, so the model calls it once per
batch and passes the result along (see ``EncoderOutput.keys``); it is never called per
decoder step nor cached on the module.  ``forward`` accepts one query per sentence
(B, H_q), as a decoder step does, or a whole target at once (B, T, H_q).

Shapes: B batch, S source length, T target length, H_q query (decoder state) size,
K value (encoder output) size, A attention size, h heads.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import Tensor, nn

ATTENTION_TYPES = (
    "none", "bahdanau", "luong_dot", "luong_general", "luong_concat",
    "scaled_dot", "qkv", "gaussian",
)

# ------------------------------------------------------------------ energies (pure)


def dot_energy(q: Tensor, k: Tensor) -> Tensor:
    """Dot product q^T k (Luong et al. 2015): (B, T, D), (B, S, D) -> (B, T, S)."""
    return q @ k.transpose(-1, -2)


def scaled_dot_energy(q: Tensor, k: Tensor) -> Tensor:
    """Scaled dot product q^T k / sqrt(D) (Vaswani et al. 2017); keeps the variance near 1."""
    return dot_energy(q, k) / math.sqrt(q.size(-1))


def additive_energy(q: Tensor, k: Tensor, v: Tensor) -> Tensor:
    """Additive energy v^T tanh(q + k) on projected q (B, T, A), k (B, S, A), v (A,).

    With q = W s and k = U h this is Bahdanau et al. (2015); with W split from
    W [s; h] it is Luong's "concat" energy, which is the same function.
    """
    return torch.tanh(q.unsqueeze(2) + k.unsqueeze(1)) @ v  # (B, T, S, A) @ (A,) -> (B, T, S)


def gaussian_energy(q: Tensor, k: Tensor) -> Tensor:
    """Gaussian kernel score -||q - k||^2 / 2 (Nadaraya-Watson kernel regression).

    Expanded as q.k - |q|^2/2 - |k|^2/2 so that it is one matrix product, not a (B, T, S, D) tensor.
    """
    qq = q.pow(2).sum(-1, keepdim=True)  # (B, T, 1)
    kk = k.pow(2).sum(-1).unsqueeze(-2)  # (B, 1, S)
    return dot_energy(q, k) - 0.5 * (qq + kk)


def masked_softmax(energy: Tensor, mask: Tensor) -> Tensor:
    """Softmax over the last axis (S) with padded positions at exactly zero weight.

    ``energy`` is (B, ..., S) and ``mask`` (B, S), True at real tokens.  The softmax runs in
    float32 whatever the autocast dtype, and masked scores become float32's most negative
    value rather than -inf: exp() of it underflows to exactly 0 next to any real score, and
    a row without any real position yields uniform weights instead of NaN.
    """
    mask = mask.view(mask.size(0), *([1] * (energy.dim() - 2)), mask.size(-1))
    energy = energy.float().masked_fill(~mask, torch.finfo(torch.float32).min)
    return torch.softmax(energy, dim=-1)


# ------------------------------------------------------------------ modules


class Attention(nn.Module):
    """Base class: identity parametrization, subclasses supply ``energy``."""

    def __init__(self, query_size: int, key_size: int) -> None:
        super().__init__()
        self.query_size = query_size
        self.key_size = key_size
        self.context_size = key_size  # every attention here returns contexts of the value size K

    def project_keys(self, memory: Tensor) -> Tensor:
        """Encoder outputs (B, S, K) -> keys (B, S, A). Call once per batch."""
        return memory

    def project_query(self, query: Tensor) -> Tensor:
        """Decoder states (B, T, H_q) -> queries (B, T, A)."""
        return query

    def energy(self, query: Tensor, keys: Tensor) -> Tensor:
        """Projected queries (B, T, A) and keys (B, S, A) -> scores (B, T, S)."""
        raise NotImplementedError

    def pool(self, weights: Tensor, values: Tensor) -> Tensor:
        """Weights (B, T, S) and values (B, S, K) -> contexts (B, T, K)."""
        return weights.to(values.dtype) @ values

    def shown_weights(self, weights: Tensor) -> Tensor:
        """The (B, T, S) weights returned to the caller (for plots and search)."""
        return weights

    def forward(self, query: Tensor, keys: Tensor, values: Tensor, mask: Tensor) -> tuple[Tensor, Tensor]:
        """Query (B, H_q) or (B, T, H_q) -> context (B, [T,] K) and weights (B, [T,] S).

        ``keys`` come from :meth:`project_keys`, ``values`` are the encoder outputs and
        ``mask`` (B, S) is True at real source tokens.  Weights sum to 1 over the real
        positions and are exactly 0 on padding.
        """
        single = query.dim() == 2
        if single:
            query = query.unsqueeze(1)  # (B, 1, H_q)
        weights = masked_softmax(self.energy(self.project_query(query), keys), mask)  # (B, [h,] T, S)
        context = self.pool(weights, values)  # (B, T, K)
        weights = self.shown_weights(weights).to(context.dtype)  # (B, T, S)
        if single:
            return context.squeeze(1), weights.squeeze(1)
        return context, weights


class NoAttention(Attention):
    """Plain encoder-decoder (Sutskever et al. 2014; Cho et al. 2014): no attention.

    The context is the same fixed summary of the source at every step: the mean of the
    encoder outputs over the real positions.  It is computed through the common
    interface as uniform weights over the real positions (every score 0), so the
    returned weights are uniform, not None, and sum to 1 like any other attention.
    """

    def energy(self, query: Tensor, keys: Tensor) -> Tensor:
        return query.new_zeros(query.size(0), query.size(1), keys.size(1))


class DotAttention(Attention):
    """Luong et al. (2015) "dot": q^T k; query and key sizes must agree."""

    def __init__(self, query_size: int, key_size: int, scaled: bool = False) -> None:
        if query_size != key_size:
            name = "scaled_dot" if scaled else "luong_dot"
            raise ValueError(f"{name} attention needs query size == key size (got {query_size} and {key_size})")
        super().__init__(query_size, key_size)
        self.scaled = scaled

    def energy(self, query: Tensor, keys: Tensor) -> Tensor:
        return scaled_dot_energy(query, keys) if self.scaled else dot_energy(query, keys)


class BilinearAttention(Attention):
    """Luong et al. (2015) "general": q^T W k, with W k computed once per batch."""

    def __init__(self, query_size: int, key_size: int) -> None:
        super().__init__(query_size, key_size)
        self.key_proj = nn.Linear(key_size, query_size, bias=False)  # W

    def project_keys(self, memory: Tensor) -> Tensor:
        return self.key_proj(memory)  # (B, S, H_q)

    def energy(self, query: Tensor, keys: Tensor) -> Tensor:
        return dot_energy(query, keys)


class AdditiveAttention(Attention):
    """Bahdanau et al. (2015) v^T tanh(W q + U k), also Luong's "concat" v^T tanh(W [q; k]).

    W [q; k] = W_q q + W_k k, so the key half U k (with the bias) is computed once per batch.
    """

    def __init__(self, query_size: int, key_size: int, attn_dim: int) -> None:
        super().__init__(query_size, key_size)
        self.query_proj = nn.Linear(query_size, attn_dim, bias=False)  # W
        self.key_proj = nn.Linear(key_size, attn_dim, bias=True)  # U
        self.v = nn.Parameter(torch.empty(attn_dim).uniform_(-attn_dim ** -0.5, attn_dim ** -0.5))

    def project_keys(self, memory: Tensor) -> Tensor:
        return self.key_proj(memory)

    def project_query(self, query: Tensor) -> Tensor:
        return self.query_proj(query)

    def energy(self, query: Tensor, keys: Tensor) -> Tensor:
        return additive_energy(query, keys, self.v.to(query.dtype))


class GaussianAttention(Attention):
    """Kernel attention pooling: score -||W_q q - W_k k||^2 / 2 on projected vectors."""

    def __init__(self, query_size: int, key_size: int, attn_dim: int) -> None:
        super().__init__(query_size, key_size)
        self.query_proj = nn.Linear(query_size, attn_dim, bias=False)
        self.key_proj = nn.Linear(key_size, attn_dim, bias=False)

    def project_keys(self, memory: Tensor) -> Tensor:
        return self.key_proj(memory)

    def project_query(self, query: Tensor) -> Tensor:
        return self.query_proj(query)

    def energy(self, query: Tensor, keys: Tensor) -> Tensor:
        return gaussian_energy(query, keys)


class MultiHeadAttention(Attention):
    """Learned query/key/value projections, ``heads`` scaled-dot heads, output projection.

    Values are projected after pooling: sum_s a_s (W_v v_s + b) = W_v (sum_s a_s v_s) + b
    since the weights sum to 1, so no (B, S, A) value tensor is needed per step.  The
    returned weights are the mean over heads; they still sum to 1 and are 0 on padding.
    """

    def __init__(self, query_size: int, key_size: int, attn_dim: int, heads: int = 1) -> None:
        if attn_dim % heads:
            raise ValueError(f"qkv attention: {heads} heads do not divide the attention size {attn_dim}")
        super().__init__(query_size, key_size)
        self.heads = heads
        self.query_proj = nn.Linear(query_size, attn_dim)  # W_q
        self.key_proj = nn.Linear(key_size, attn_dim)  # W_k
        self.value_proj = nn.Linear(key_size, attn_dim)  # W_v
        self.out_proj = nn.Linear(attn_dim, key_size)  # W_o: contexts keep the value size K

    def _split(self, x: Tensor) -> Tensor:
        """(B, N, A) -> (B, h, N, A/h)."""
        return x.view(x.size(0), x.size(1), self.heads, -1).transpose(1, 2)

    def project_keys(self, memory: Tensor) -> Tensor:
        return self.key_proj(memory)

    def project_query(self, query: Tensor) -> Tensor:
        return self.query_proj(query)

    def energy(self, query: Tensor, keys: Tensor) -> Tensor:
        return scaled_dot_energy(self._split(query), self._split(keys))  # (B, h, T, S)

    def pool(self, weights: Tensor, values: Tensor) -> Tensor:
        B, h, T, _ = weights.shape
        pooled = weights.to(values.dtype) @ values.unsqueeze(1)  # (B, h, T, K): raw values per head
        w_v = self.value_proj.weight.view(h, -1, values.size(-1))  # (h, A/h, K)
        heads = torch.einsum("bhtk,hdk->bthd", pooled, w_v.to(pooled.dtype))  # (B, T, h, A/h)
        return self.out_proj(heads.reshape(B, T, -1) + self.value_proj.bias)  # (B, T, K)

    def shown_weights(self, weights: Tensor) -> Tensor:
        return weights.mean(1)  # (B, h, T, S) -> (B, T, S)


def build_attention(type: str, query_size: int, key_size: int, attn_dim: int, heads: int = 1) -> Attention:
    """The attention named ``type``; ``attn_dim`` sizes projected queries/keys where there are any.

    ``heads`` applies to ``qkv`` only.  luong_dot and scaled_dot need query_size == key_size.
    """
    if type == "none":
        return NoAttention(query_size, key_size)
    if type in ("bahdanau", "luong_concat"):
        return AdditiveAttention(query_size, key_size, attn_dim)
    if type == "luong_dot":
        return DotAttention(query_size, key_size)
    if type == "scaled_dot":
        return DotAttention(query_size, key_size, scaled=True)
    if type == "luong_general":
        return BilinearAttention(query_size, key_size)
    if type == "qkv":
        return MultiHeadAttention(query_size, key_size, attn_dim, heads)
    if type == "gaussian":
        return GaussianAttention(query_size, key_size, attn_dim)
    raise ValueError(f"unknown attention type {type!r}; valid options: {', '.join(ATTENTION_TYPES)}")
