"""Named model variants: the attention presets, Luong's location attention, sparse normalizations and self-attention.

A variant is a list of ``--set`` overrides applied on top of a base config.  ``nmt compare``
trains them side by side, and the learning tests train each on a toy task.
Dot-product energies compare the decoder state with the encoder states element by element, so
the keys must have the decoder's size: luong_dot and scaled_dot read a bidirectional encoder of
half the decoder's size per direction (``model.enc_hidden_size=half``; a unidirectional one
trailed it, docs/attention_diagnosis.md, hypothesis 12).
"""

from __future__ import annotations

from nmt.config.attention_space import ATTENTION_ENERGIES, ATTENTIONS
from nmt.util.errors import UserError
from nmt.util.registry import PATH

VARIANTS: dict[str, tuple[str, ...]] = {
    "none": ("model.attention.type=none",),
    "bahdanau": ("model.attention.type=bahdanau",),
    "luong_dot": ("model.attention.type=luong_dot", "model.enc_hidden_size=half"),
    "luong_general": ("model.attention.type=luong_general",),
    "luong_concat": ("model.attention.type=luong_concat",),
    "luong_location": ("model.attention.type=custom", "model.attention.energy=location"),
    "scaled_dot": ("model.attention.type=scaled_dot", "model.enc_hidden_size=half"),
    "qkv": ("model.attention.type=qkv", "model.attention.heads=4"),
    "gaussian": ("model.attention.type=gaussian",),
    "coverage": ("model.attention.type=coverage",),
    "luong_local_p": ("model.attention.type=luong_local_p",),
    "luong_local_m": ("model.attention.type=luong_local_m",),
    "bahdanau+sparsemax": ("model.attention.type=bahdanau", "model.attention.normalize=sparsemax"),
    "bahdanau+entmax15": ("model.attention.type=bahdanau", "model.attention.normalize=entmax15"),
    "bahdanau+epanechnikov": ("model.attention.type=bahdanau", "model.attention.normalize=epanechnikov"),
    "bahdanau+enc_self": (
        "model.attention.type=bahdanau",
        "model.enc_self_attention.layers=1",
        "model.enc_self_attention.heads=4",
    ),
    "bahdanau+dec_self": ("model.attention.type=bahdanau", "model.dec_self_attention.enabled=true"),
}


def registered_variants() -> list[str]:
    """The energies registered by the user (``nmt.register_attention``): each is a variant of its own."""
    return [name for name in ATTENTIONS.names() if name not in ATTENTION_ENERGIES and ":" not in name]


def variant_overrides(name: str) -> list[str]:
    """The overrides of variant ``name`` (a registered energy ``X``, or an energy's import path
    ``module:Class``: ``model.attention.type=X``); a UserError naming the known ones otherwise."""
    if name in VARIANTS:
        return list(VARIANTS[name])
    if name in registered_variants() or PATH.fullmatch(name):
        return [f"model.attention.type={name}"]
    known = [*VARIANTS, *registered_variants()]
    raise UserError(
        f"unknown variant {name!r}; choose from {', '.join(known)} (or register an attention: nmt.register_attention, "
        "--module)"
    )


def run_name(name: str) -> str:
    """A run-directory-safe form of a variant name ('+' and an import path's ':' are not allowed in run names)."""
    return name.replace("+", "_").replace(":", "_")
