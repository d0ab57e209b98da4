"""Which attentions scripts/align_rwth.py reads of a model, one JSON line each, and how it reads one.

A Transformer has a cross-attention per decoder layer, each with several heads; an RNN has one
attention, with several heads where its variant splits them (``qkv`` with ``model.attention.heads``
> 1).  ``Translator.align`` reads either as asked: a Transformer's layer and head (default the
penultimate layer, heads averaged: Garg et al. 2019, "Jointly Learning to Align and Translate with
Transformer Models"), an RNN's heads averaged or one head (on the torch engine).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Optional

import nmt
from nmt.decode.torch_engine import TorchEngine, multi_head_attention
from nmt.decode.word_merge import WordAlignment
from nmt.util.errors import UserError


@dataclass(frozen=True)
class Reading:
    """One attention a model's alignment reads: ``layer`` a Transformer's decoder layer (None for an
    RNN), ``head`` one head (None: the heads averaged); ``default`` where it is what
    ``Translator.align`` reads when given neither."""

    layer: Optional[int]
    head: Optional[int]
    default: bool


def readings(arch: str, layers: int, heads: int, per_head: bool) -> list[Reading]:
    """The lines of a model: every decoder layer of a Transformer (its penultimate the default), heads
    averaged and, with ``per_head``, each head; an RNN's one attention, then each head where it has several."""
    if arch == "transformer":
        default = max(layers - 2, 0)  # as nmt.decode.alignment picks it
        out = []
        for layer in range(layers):
            out.append(Reading(layer, None, layer == default))
            out += [Reading(layer, h, False) for h in range(heads)] if per_head else []
        return out
    return [Reading(None, None, True)] + ([Reading(None, h, False) for h in range(heads)] if heads > 1 else [])


def model_shape(model: nmt.Translator, path: Path) -> tuple[str, Optional[int], int]:
    """(arch, decoder layers (a Transformer's; None for an RNN), attention heads) of a model on torch."""
    if not isinstance(model.engine, TorchEngine):
        raise UserError(f"{path}: give a run folder or a checkpoint (engine torch), not a {model.engine_name} export")
    config = model.engine.loaded.config.model
    if config.arch == "transformer":
        return "transformer", config.transformer.dec_layers, config.transformer.heads
    attention = multi_head_attention(model.engine.loaded.model)
    return "rnn", None, 1 if attention is None else attention.heads


def align_reading(
    model: nmt.Translator,
    sources: list[str],
    targets: list[str],
    reading: Reading,
    batch_size: Optional[int],
    step: str = "predict",
    merge: str = "sum",
) -> list[WordAlignment]:
    """The pairs aligned by the attention ``reading`` names, read at the decoder ``step`` that predicts
    each target word or takes it as input (``Translator.align``'s ``reading``), a source word's pieces
    merged by ``merge``."""
    return model.align(
        sources, targets, layer=reading.layer, head=reading.head, batch_size=batch_size, reading=step, merge=merge
    )
