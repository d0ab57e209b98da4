"""The combine steps a config may name: how the decoder makes its attentional output from the query and the context.

After the energy, the normalization and the weighted sum, the decoder combines what it attended with its
own state into the vector the output layer reads.  The style fixes *what* is combined,
x = [s_t; c_t; e_t] (Bahdanau et al. 2015: the state, the context and the previous word's embedding) or
x = [c_t; h_t] (Luong et al. 2015: the context and the state); the combine step is the function
``combine(x) -> o_t`` of size H: a registered subclass of ``nmt.model.combine.Combine``, built as
``cls(in_size, out_size)``.  nmt's ``tanh``, ``maxout`` and ``gate`` (:mod:`nmt.model.combine`) are
registered through the :func:`register_combine` a user calls; a config names one by name or import
path (``model.attention.combine``).  Pure Python: the config imports it before torch.
"""

from __future__ import annotations

from typing import Any, Optional

from nmt.util.registry import Registry

COMBINE_NAMES = ("tanh", "maxout", "gate")
"""nmt's own combine steps."""
COMBINE_BASE = "nmt.model.combine.Combine"


def not_a_combine(target: Any) -> Optional[str]:
    """Why ``target`` cannot be a combine step (not a strict subclass of ``nmt.Combine``), or None."""
    bases = (
        [f"{c.__module__}.{c.__qualname__}" for c in getattr(target, "__mro__", ())] if isinstance(target, type) else []
    )
    if COMBINE_BASE not in bases[1:]:
        return "is not a subclass of nmt.Combine (class MyCombine(nmt.Combine) with forward(x))"
    return None


COMBINES = Registry("combine", "model.attention.combine", accepts=not_a_combine)
COMBINES.reserve(COMBINE_NAMES)


def register_combine(name: str, combine: Optional[type] = None, replace: bool = False) -> Any:
    """Register a combine step (a subclass of ``nmt.Combine``) under ``name`` (``model.attention.combine:
    NAME``); with no class, a decorator.  ``nmt.check_combine`` checks it as nmt's own."""
    if combine is None:
        return COMBINES.decorator(name, replace)
    return COMBINES.register(name, combine, replace)
