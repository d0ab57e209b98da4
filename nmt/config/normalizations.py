"""The normalizations a config may name: the step of attention that turns scores into weights.

Lectures 003 and 004 write attention as three steps: an energy scores each key, a normalization
makes the scores of one query into weights (non-negative, summing to 1 over the keys it may
attend), and the weighted sum pools the values.  A normalization is a function
``normalize(scores, mask) -> weights`` on scores (B, h, T, S) and a mask (True where a key may be
attended: (B, S), (B, T, S) or None).  nmt's ``softmax``, ``sparsemax``, ``entmax15`` and ``epanechnikov``
(:mod:`nmt.model.normalize`) are registered through the :func:`register_normalization` a user
calls; a config names one by name or by import path (``my_norms:kernel``), as it names an energy.
Pure Python: the config imports it before torch.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any, Optional

from nmt.util.registry import Registry

NORMALIZATION_NAMES = ("softmax", "sparsemax", "entmax15", "epanechnikov")
"""nmt's own normalizations."""


def not_a_normalization(target: Any) -> Optional[str]:
    """Why ``target`` cannot be a normalization (not a function taking ``(scores, mask)``), or None."""
    if isinstance(target, type) or not callable(target):
        return "is not a function (scores, mask) -> weights"
    try:
        inspect.signature(target).bind(None, None)
    except TypeError:
        return "does not take the two arguments (scores, mask) a normalization is called with"
    except ValueError:  # no signature to read: the checks call it
        return None
    return None


NORMALIZATIONS = Registry("normalization", "model.attention.normalize", accepts=not_a_normalization)
NORMALIZATIONS.reserve(NORMALIZATION_NAMES)


def register_normalization(name: str, normalize: Optional[Callable[..., Any]] = None, replace: bool = False) -> Any:
    """Register ``normalize(scores, mask) -> weights`` under ``name`` (``model.attention.normalize:
    NAME``); with no function, a decorator.  ``nmt.check_normalization`` checks it as nmt's own."""
    if normalize is None:
        return NORMALIZATIONS.decorator(name, replace)
    return NORMALIZATIONS.register(name, normalize, replace)
