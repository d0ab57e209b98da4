"""Which attentions scripts/align_rwth.py reads of a model, one JSON line each, and how it reads one.

A Transformer has a cross-attention per decoder layer, each with several heads; an RNN has one
attention, with several heads where its variant splits them (``qkv`` with ``model.attention.heads``
> 1).  ``Translator.align`` reads a Transformer's layer and head as asked (default the penultimate
layer, heads averaged: Garg et al. 2019, "Jointly Learning to Align and Translate with Transformer
Models"), but an RNN's heads only averaged: it refuses a head for an RNN.  :func:`one_head` gives
one head of an RNN anyway, by swapping the weights its attention module returns while the target is
forced: the decoder only passes those weights on (the context it computes from the heads is left
as it was), so every prediction is unchanged and only the attention read is one head's.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Optional

from torch import Tensor, nn

import nmt
from nmt.decode.torch_engine import TorchEngine
from nmt.decode.word_merge import WordAlignment
from nmt.model.attention import Attention
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


def rnn_attention(model: nmt.Translator) -> Attention:
    """The cross-attention module of an RNN model loaded on the torch engine."""
    assert isinstance(model.engine, TorchEngine), "model_shape lets only torch models through"
    loaded = model.engine.loaded.model
    attention = getattr(getattr(loaded, "decoder", None), "attention", None)
    if not isinstance(attention, Attention):
        raise UserError(f"{type(loaded).__name__}: no RNN decoder attention to read heads from")
    return attention


def model_shape(model: nmt.Translator, path: Path) -> tuple[str, Optional[int], int]:
    """(arch, decoder layers (a Transformer's; None for an RNN), attention heads) of a model on torch."""
    if not isinstance(model.engine, TorchEngine):
        raise UserError(f"{path}: give a run folder or a checkpoint (engine torch), not a {model.engine_name} export")
    config = model.engine.loaded.config.model
    if config.arch == "transformer":
        return "transformer", config.transformer.dec_layers, config.transformer.heads
    return "rnn", None, rnn_attention(model).heads


@contextlib.contextmanager
def one_head(attention: Attention, head: int) -> Iterator[None]:
    """While open, ``attention`` returns head ``head``'s weights in place of the heads' mean; its
    context, so every prediction, stays as it was."""
    if not 0 <= head < attention.heads:
        raise ValueError(f"head {head}: the attention has {attention.heads}")

    def swap(module: nn.Module, args: tuple[Any, ...], kwargs: dict[str, Any], output: Any) -> tuple[Tensor, Tensor]:
        _, weights = module.forward(*args, **{**kwargs, "per_head": True})  # (B, h, [T,] S); forward runs no hook
        return output[0], weights[:, head]  # (B, [T,] S), as the mean was

    handle = attention.register_forward_hook(swap, with_kwargs=True)
    try:
        yield
    finally:
        handle.remove()


def align_reading(
    model: nmt.Translator, sources: list[str], targets: list[str], reading: Reading, batch_size: Optional[int]
) -> list[WordAlignment]:
    """The pairs aligned by the attention ``reading`` names."""
    if reading.layer is not None or reading.head is None:
        return model.align(sources, targets, layer=reading.layer, head=reading.head, batch_size=batch_size)
    with one_head(rnn_attention(model), reading.head):  # Translator.align takes no head for an RNN
        return model.align(sources, targets, batch_size=batch_size)
