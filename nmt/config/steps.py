"""The options every attention of the model section shares beyond its axes: the normalize step and the
energy's own options, one definition for the RNN's cross-attention, its self-attention blocks and the
Transformer (:mod:`nmt.config.model_sections`, :mod:`nmt.config.transformer_section`).
"""

from __future__ import annotations

from typing import Any

from pydantic import Field

from nmt.config.normalizations import NORMALIZATION_NAMES


def normalize_field() -> Any:
    """``normalize``: how scores become weights (a registered normalization)."""
    return Field(
        "softmax",
        description="How scores become weights: " + ", ".join(NORMALIZATION_NAMES) + " (softmax; sparsemax, "
        "Martins & Astudillo 2016; 1.5-entmax, Peters et al. 2019: both give keys far below the best "
        "exactly 0; epanechnikov: lecture 003's kernel divided by its sum, keys 2 below the best at 0), a "
        "registered normalization's name or an import path module:function.",
    )


def params_field() -> Any:
    """``params``: the energy's own options, for an energy whose class declares them."""
    return Field(
        default_factory=dict,
        description="The energy's own options, for an energy whose class declares them (a pydantic model "
        "Params, e.g. {rank: 8}); checked against it and shown filled in; {} for the others.",
    )
