"""The named attention types (presets), each a point of the design space that
:class:`nmt.model.attention.Attention` implements.

``model.attention.type`` picks a preset; every axis left null in the config takes the
preset's value and an axis that is set overrides it (``type: custom`` starts from no
preset: the energy is required, maps identity, no output projection, one head).  The table
itself lives in :mod:`nmt.config.attention_space`, shared by the config (which resolves a
section's axes against it) and the model.  This module lists it for ``nmt presets``
(:func:`describe_presets`) and builds one preset's attention with explicit sizes, without
a config (:func:`build_preset`), for tests and notebooks.
"""

from __future__ import annotations

from typing import Any, Optional

from nmt.config.attention_space import ATTENTION_PRESETS, ATTENTION_TYPES, AXES, CUSTOM_ATTENTION
from nmt.model.attention import Attention

__all__ = ["ATTENTION_TYPES", "MODEL_PRESETS", "PRESETS", "build_preset", "describe_model_presets", "describe_presets"]

MODEL_PRESETS: dict[str, list[str]] = {"transformer_small": ["model.arch=transformer"]}
"""Named models beyond the attention presets: the overrides that select each.  ``transformer_small``
is the Transformer with every ``model.transformer`` default."""

PRESETS: dict[str, dict[str, Any]] = ATTENTION_PRESETS

_SHORT = {"query_map": "query", "key_map": "key", "value_map": "value"}


def _line(point: dict[str, Any]) -> str:
    def shown(value: Any) -> str:
        if value is None:
            return "<required>"
        return str(value).lower() if isinstance(value, bool) else str(value)

    return ", ".join(f"{_SHORT.get(k, k)}={shown(point[k])}" for k in (*AXES, "style"))


def describe_presets() -> list[tuple[str, str]]:
    """(name, one-line expansion) for every preset, then ``custom`` (what unset axes default to)."""
    return [(name, _line(point)) for name, point in PRESETS.items()] + [("custom", _line(CUSTOM_ATTENTION))]


def describe_model_presets() -> list[tuple[str, str]]:
    """(name, the --set options that select it and what they expand to) for every model preset."""
    from nmt.config import load

    rows = []
    for name, overrides in MODEL_PRESETS.items():
        t = load(None, overrides).model.transformer
        sets = " ".join(f"--set {o}" for o in overrides)
        rows.append(
            (
                name,
                f"{sets}: d_model={t.d_model}, heads={t.heads}, ff_size={t.ff_size}, "
                f"layers={t.enc_layers}+{t.dec_layers}, pre_norm={str(t.pre_norm).lower()}, "
                f"positions={t.positions}",
            )
        )
    return rows


def build_preset(
    name: str, query_size: int, key_size: int, dim: Optional[int] = None, heads: int = 1, max_len: int = 256
) -> Attention:
    """The attention of preset ``name`` with explicit sizes; ``heads`` overrides the preset's."""
    if name not in PRESETS:
        raise ValueError(f"unknown attention type {name!r}; valid options: {', '.join(PRESETS)}")
    axes = {k: PRESETS[name][k] for k in AXES}
    axes["heads"] = heads
    return Attention(query_size, key_size, **axes, dim=dim, max_len=max_len)
