"""Energy functions: small pure functions scoring mapped queries against mapped keys.

Every function maps queries (..., T, D) and keys (..., S, D) to scores (..., T, S); the
leading axes are (B, h) once the vectors are split into heads.  The location energy is
not here: it reads the query alone, through a learned matrix (see ``Attention.energy``).

Shapes: B batch, h heads, T queries, S keys, D size per head.
"""

from __future__ import annotations

import math

import torch
from torch import Tensor

from nmt.config.attention_space import ATTENTION_ENERGIES as ENERGIES

__all__ = [
    "ENERGIES",
    "additive_energy",
    "dot_energy",
    "gaussian_energy",
    "merge_heads",
    "scaled_dot_energy",
    "split_heads",
]


def dot_energy(q: Tensor, k: Tensor) -> Tensor:
    """Dot product q^T k (Luong et al. 2015); also bilinear q^T W k once the keys are W k."""
    return q @ k.transpose(-1, -2)


def scaled_dot_energy(q: Tensor, k: Tensor) -> Tensor:
    """Scaled dot product q^T k / sqrt(D) (Vaswani et al. 2017); keeps the variance near 1."""
    return dot_energy(q, k) / math.sqrt(q.size(-1))


def additive_energy(q: Tensor, k: Tensor, v: Tensor) -> Tensor:
    """Additive ("mlp", "concat") energy v^T tanh(q + k), one v per head.

    q (..., T, D), k (..., S, D), v (D,) or (h, D) when the leading axes are (B, h).
    With q = W s and k = U h + b this is Bahdanau et al. (2015); Luong's concat
    v^T tanh(W [s; h]) is the same function, since W [s; h] = W_s s + W_h h.
    """
    hidden = torch.tanh(q.unsqueeze(-2) + k.unsqueeze(-3))  # (..., T, S, D)
    if v.dim() == 2:  # (h, D) -> (h, 1, D, 1): broadcasts over B and T
        return (hidden @ v.view(v.size(0), 1, -1, 1)).squeeze(-1)
    return hidden @ v


def gaussian_energy(q: Tensor, k: Tensor) -> Tensor:
    """Gaussian kernel score -||q - k||^2 / 2 (Nadaraya-Watson kernel regression).

    Expanded as q.k - |q|^2/2 - |k|^2/2: one matrix product, no (..., T, S, D) tensor.
    """
    qq = q.pow(2).sum(-1, keepdim=True)  # (..., T, 1)
    kk = k.pow(2).sum(-1).unsqueeze(-2)  # (..., 1, S)
    return dot_energy(q, k) - 0.5 * (qq + kk)


def split_heads(x: Tensor, heads: int) -> Tensor:
    """(B, N, h*D) -> (B, h, N, D)."""
    return x.view(x.size(0), x.size(1), heads, -1).transpose(1, 2)


def merge_heads(x: Tensor) -> Tensor:
    """(B, h, N, D) -> (B, N, h*D)."""
    return x.transpose(1, 2).reshape(x.size(0), x.size(2), -1)
