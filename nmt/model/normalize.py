"""The *normalize* step of attention: scores (B, h, T, S) and a mask -> weights over S.

Every normalization here maps the scores e of one query onto the probability simplex (weights
p_i >= 0 with sum_i p_i = 1 over the keys the mask allows, exactly 0 on the others); they differ
in how many keys keep a weight (Martins & Astudillo 2016; Peters et al. 2019):

- ``softmax``: p_i = exp(e_i) / sum_j exp(e_j) (Bahdanau et al. 2015).  Every key keeps a weight.
- ``sparsemax``: p = argmin_{p in simplex} ||p - e||^2, the Euclidean projection of e onto the
  simplex, p_i = [e_i - tau]_+ with tau such that sum_i p_i = 1 (Martins & Astudillo 2016): keys
  scored more than about 1 below the best get exactly 0.
- ``entmax15``: 1.5-entmax, p = argmax_{p in simplex} p.e + H_1.5(p) with Tsallis' entropy
  H_1.5(p) = 4/3 (1 - sum_i p_i^1.5), p_i = [e_i/2 - tau]_+^2 (Peters et al. 2019): sparse like
  sparsemax, smoother near the threshold.
- ``epanechnikov``: lecture 003's kernel normalization, p_i = kappa(e_i) / sum_j kappa(e_j) with no
  exponential, kappa the Epanechnikov kernel of how far a score lies below the best one,
  kappa(e_i) = max(0, 1 - ((max_j e_j - e_i) / w)^2), w = :data:`KERNEL_WIDTH`: keys w below the
  best get exactly 0, the best always 1 (so the sum is at least 1).

Both thresholds tau are found exactly by sorting (Held et al. 1974; Peters et al. 2019,
Algorithm 2), with no gradient; the gradient is the closed form through tau (the weights'
Jacobian: the support's mean subtracted for sparsemax, sqrt(p)-weighted for 1.5-entmax), added
as a term of value zero, so the functions are plain tensor operations that trace to ONNX.

Masked keys are moved below the threshold (to the best allowed score minus 4: tau is never below
the best score minus 1 on either function's scale) instead of to -inf, which keeps every
intermediate finite; a row with no allowed key gets uniform weights, as the softmax gives it.
"""

from __future__ import annotations

from typing import Optional

import torch
from torch import Tensor

from nmt.config.normalizations import register_normalization

BELOW = 4.0
"""How far below the best allowed score a masked key's score is put: out of every support."""
KERNEL_WIDTH = 2.0
"""w of the ``epanechnikov`` normalization: how far below the best score a key still gets weight."""


def broadcast_mask(mask: Optional[Tensor], scores: Tensor) -> Optional[Tensor]:
    """``mask`` (B, S) for padding or (B, T, S) per query, made to broadcast over scores (B, ..., T, S)."""
    if mask is None:
        return None
    if mask.dim() == 2:
        return mask.view(mask.size(0), *([1] * (scores.dim() - 2)), mask.size(-1))
    if mask.dim() == scores.dim() - 1:
        return mask.unsqueeze(1)  # (B, T, S) -> (B, 1, T, S): the same for every head
    return mask


@register_normalization("softmax")
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
    allowed = broadcast_mask(mask, energy)
    if allowed is not None:
        energy = energy.masked_fill(~allowed, torch.finfo(torch.float32).min)
    return torch.softmax(energy, dim=-1)


def _below_support(scores: Tensor, mask: Optional[Tensor]) -> tuple[Tensor, Optional[Tensor]]:
    """Scores in float32 with masked keys put :data:`BELOW` under the best allowed one, and the
    rows (B, ..., T, 1) that allow no key (None without a mask)."""
    z = scores.float()
    allowed = broadcast_mask(mask, z)
    if allowed is None:
        return z, None
    best = z.masked_fill(~allowed, float("-inf")).amax(-1, keepdim=True)  # (..., 1)
    empty = torch.isinf(best)
    best = best.masked_fill(empty, 0.0)
    return torch.where(allowed, z, best.detach() - BELOW), empty


def _uniform_where_empty(p: Tensor, empty: Optional[Tensor]) -> Tensor:
    return p if empty is None else torch.where(empty, torch.full_like(p, 1.0 / p.size(-1)), p)


@register_normalization("sparsemax")
def sparsemax(scores: Tensor, mask: Optional[Tensor]) -> Tensor:
    """p_i = [z_i - tau]_+, sum_i p_i = 1 (Martins & Astudillo 2016); masked keys exactly 0."""
    z, empty = _below_support(scores, mask)
    with torch.no_grad():
        top = z.amax(-1, keepdim=True)  # tau is found on z - max(z): sums of small numbers, exact enough
        ranked = (z - top).sort(dim=-1, descending=True).values  # z_(1) >= z_(2) >= ...
        k = torch.arange(1, z.size(-1) + 1, device=z.device, dtype=z.dtype)
        cumulative = ranked.cumsum(-1)
        support = (1 + k * ranked > cumulative).sum(-1, keepdim=True)  # k(z) >= 1: z_(1) is always in
        tau = top + (cumulative.gather(-1, support - 1) - 1) / support.to(z.dtype)
        inside = (z > tau).to(z.dtype)  # the support, as weights of the gradient through tau
    # d tau / d z_j = 1{j in support} / |support|: the term is 0 in value and gives that gradient.
    tau = tau + (inside * (z - z.detach())).sum(-1, keepdim=True) / inside.sum(-1, keepdim=True)
    return _uniform_where_empty((z - tau).clamp(min=0), empty)


@register_normalization("entmax15")
def entmax15(scores: Tensor, mask: Optional[Tensor]) -> Tensor:
    """p_i = [z_i/2 - tau]_+^2, sum_i p_i = 1 (1.5-entmax, Peters et al. 2019); masked keys exactly 0."""
    z, empty = _below_support(scores, mask)
    x = z / 2
    with torch.no_grad():
        top = x.amax(-1, keepdim=True)  # on x - max(x): the variance below cancels far less
        ranked = (x - top).sort(dim=-1, descending=True).values
        rho = torch.arange(1, x.size(-1) + 1, device=x.device, dtype=x.dtype)
        mean = ranked.cumsum(-1) / rho
        mean_sq = (ranked**2).cumsum(-1) / rho
        delta = (1 - rho * (mean_sq - mean**2)) / rho
        candidates = mean - delta.clamp(min=0).sqrt()  # tau if the support were the top rho keys
        support = (candidates <= ranked).sum(-1, keepdim=True)
        tau = top + candidates.gather(-1, support - 1)
        root = (x - tau).clamp(min=0)  # sqrt(p): the weights of the gradient through tau
    # d tau / d x_j = sqrt(p_j) / sum_i sqrt(p_i): the term is 0 in value and gives that gradient.
    tau = tau + (root * (x - x.detach())).sum(-1, keepdim=True) / root.sum(-1, keepdim=True)
    return _uniform_where_empty((x - tau).clamp(min=0) ** 2, empty)


@register_normalization("epanechnikov")
def epanechnikov(scores: Tensor, mask: Optional[Tensor]) -> Tensor:
    """p_i = kappa(e_i) / sum_j kappa(e_j), kappa(e_i) = max(0, 1 - ((max_j e_j - e_i) / w)^2): lecture
    003's normalization of a non-negative kernel, with no softmax; masked keys exactly 0."""
    z, empty = _below_support(scores, mask)  # a masked key: BELOW under the best, beyond the width
    gap = z.amax(-1, keepdim=True) - z  # (..., S) >= 0, 0 at the best key
    kernel = (1 - (gap / KERNEL_WIDTH) ** 2).clamp(min=0)
    return _uniform_where_empty(kernel / kernel.sum(-1, keepdim=True), empty)
