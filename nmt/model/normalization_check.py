"""``nmt.check_normalization``: the properties attention needs of its normalize step, offered to a
user's normalization as nmt's own pass them.

A normalization turns scores (B, h, T, S) and a mask into weights; each check states one property
the rest of nmt relies on, at several numbers of queries and keys, with a padding mask (B, S) and
a causal mask (B, T, S).  The first that fails raises one :class:`~nmt.util.registry.PluginError`
naming the normalization and the property; so does one that raises or returns something other
than floating-point weights of the scores' shape.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Optional, Union

import torch
from torch import Tensor

from nmt.config.normalizations import NORMALIZATIONS
from nmt.model.attention_check import raised
from nmt.model.normalize import broadcast_mask
from nmt.util.registry import PluginError

B, H = 3, 2
SHAPES = ((4, 6), (7, 3), (12, 40))
"""(T queries, S keys) the checks run at, as :mod:`nmt.model.attention_check`."""
TOLERANCE = 1e-5
Normalize = Callable[[Tensor, Optional[Tensor]], Tensor]


def _name(normalization: Union[str, Callable[..., Any]]) -> str:
    """The registered name of ``normalization`` (a function is registered under its import path if it has none)."""
    if isinstance(normalization, str):
        NORMALIZATIONS.get(normalization)
        return normalization
    return NORMALIZATIONS.name_for(normalization)


def check_normalization(normalization: Union[str, Callable[..., Any]], seed: int = 0) -> list[str]:
    """Run the checks on ``normalization`` (a function ``(scores, mask) -> weights`` or a registered
    name); returns the properties checked, raises one PluginError at the first that fails, and then
    unregisters the name."""
    name = _name(normalization)
    try:
        with torch.random.fork_rng():
            torch.manual_seed(seed)
            passed: dict[str, None] = {}
            for T, S in SHAPES:
                passed.update(dict.fromkeys(_check(name, NORMALIZATIONS.get(name).target, T, S)))
        return list(passed)
    except PluginError:
        NORMALIZATIONS.unregister(name)
        raise


def _fail(name: str, what: str) -> PluginError:
    return PluginError(f"normalization {name} fails a check: {what}")


def _weights(name: str, normalize: Normalize, scores: Tensor, mask: Optional[Tensor]) -> Tensor:
    """``normalize(scores, mask)``: floating-point weights of the scores' shape, or one PluginError."""
    try:
        weights = normalize(scores, mask)
    except Exception as exc:
        shape = tuple(scores.shape)
        raise _fail(name, f"with scores of shape {shape} it raised {raised(exc)}") from exc
    if not isinstance(weights, Tensor) or not weights.is_floating_point():
        got = weights.dtype if isinstance(weights, Tensor) else type(weights).__name__
        raise _fail(name, f"it returned {got}, not floating-point weights")
    if weights.shape != scores.shape:
        raise _fail(name, f"weights have shape {tuple(weights.shape)}, expected the scores' {tuple(scores.shape)}")
    return weights


def _check(name: str, normalize: Normalize, T: int, S: int) -> list[str]:
    lengths = torch.tensor([S, max(S - 2, 1), 1])
    padding = torch.arange(S) < lengths.unsqueeze(1)  # (B, S)
    causal = padding.unsqueeze(1) & (torch.arange(S) <= torch.arange(T).unsqueeze(1) % S)  # (B, T, S)
    scores = (torch.randn(B, H, T, S) * 3).requires_grad_(True)
    passed = []
    for mask, what in ((None, "no mask"), (padding, "a padding mask (B, S)"), (causal, "a per-query mask (B, T, S)")):
        weights = _weights(name, normalize, scores, mask)
        view = broadcast_mask(mask, weights)  # None without a mask: every key allowed
        allowed = torch.ones_like(weights, dtype=torch.bool) if view is None else view.expand_as(weights)
        if not torch.isfinite(weights).all() or (weights < 0).any():
            raise _fail(name, f"weights are negative or not finite with {what}")
        if weights.masked_select(~allowed).abs().sum() > 0:
            raise _fail(name, f"a masked key gets weight with {what}")
        if (weights.sum(-1) - 1).abs().max() > TOLERANCE:
            raise _fail(name, f"a row of weights does not sum to 1 with {what}")
    passed += ["weights of the scores' shape, finite, >= 0", "masked keys get weight 0", "rows sum to 1"]

    weights = _weights(name, normalize, scores, padding)
    alone = _weights(name, normalize, scores[1:2, :, :, : int(lengths[1])], None)  # one sentence, no padding
    if not torch.allclose(alone[0], weights[1, :, :, : int(lengths[1])], atol=TOLERANCE):
        raise _fail(name, "a sentence's weights change with its padding or the other sentences of its batch")
    passed.append("a sentence's weights ignore its padding and its batch")

    nothing = _weights(name, normalize, scores.detach(), torch.zeros(B, S, dtype=torch.bool))
    if not torch.isfinite(nothing).all():
        raise _fail(name, "a row that may attend no key gives non-finite weights (give it uniform ones)")
    large = _weights(name, normalize, scores.detach() * 1e4, padding)
    if not torch.isfinite(large).all() or (large.sum(-1) - 1).abs().max() > 1e-4:
        raise _fail(name, "scores of size 1e4 give weights that are not finite or do not sum to 1")
    passed.append("finite for a row with no key and for scores of size 1e4")

    (weights * torch.randn_like(weights)).sum().backward()
    if scores.grad is None or not torch.isfinite(scores.grad).all():
        raise _fail(name, "gradients to the scores are missing or not finite")
    passed.append("finite gradients to the scores")
    return passed
