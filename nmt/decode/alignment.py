"""Word alignments out of any engine with attention: force the target, read the cross-attention,
merge the pieces into words (:mod:`nmt.decode.word_merge`).

Which attention is read:

- an RNN model: its one attention, as forced decoding returns it (heads averaged for a
  multi-head attention), row t the step that predicts target piece t; one head of a multi-head
  attention on the torch engine (its ``layer_attention``, one layer);
- a Transformer on the torch engine: the cross-attention of one decoder layer, heads averaged or
  one head (the engine's ``layer_attention``); by default the penultimate layer with its heads
  averaged, the choice Garg et al. (2019, "Jointly Learning to Align and Translate with
  Transformer Models") found to align best;
- a Transformer where the engine returns only the last layer, heads averaged (onnxruntime, or an
  ensemble on torch): that, and a request for another layer or one head is refused in one line.

CTranslate2 returns no attention here: refused in one line, before any work.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Optional

import numpy as np

from nmt.config import DecodeConfig
from nmt.config.attention_space import ATTENTION_PRESETS
from nmt.config.sections import MAX_OUTPUT_TOKENS
from nmt.decode.engines import Engine
from nmt.decode.model_info import ModelInfo
from nmt.decode.word_merge import MERGES, WordAlignment, empty_alignment, word_alignment, word_pieces
from nmt.util.errors import UserError

log = logging.getLogger(__name__)


READINGS = ("predict", "input")
"""Which decoder step's attention a target piece is aligned by: the step that *predicts* it (row t for
piece t, as attention is drawn) or the step that reads it as its *input* (row t + 1: Chen et al. 2020's
shift, after which the decoder has seen the word it aligns)."""


@dataclass(frozen=True)
class AttentionChoice:
    """Which cross-attention to read: ``layer`` None (the penultimate) or an index (negative from the
    end), ``head`` None (heads averaged) or an index; None and None on a model with one attention.
    ``reading``: :data:`READINGS`; ``merge``: how a source word's pieces merge
    (:data:`nmt.decode.word_merge.MERGES`)."""

    layer: Optional[int] = None
    head: Optional[int] = None
    reading: str = "predict"
    merge: str = "sum"

    def __post_init__(self) -> None:
        if self.reading not in READINGS:
            raise UserError(f"reading {self.reading!r}: give one of {', '.join(READINGS)}")
        if self.merge not in MERGES:
            raise UserError(f"merge {self.merge!r}: give one of {', '.join(MERGES)}")


def _decoder_layers(info: ModelInfo) -> Optional[int]:
    """A Transformer's decoder layers as its config records them (None where the export lacks it)."""
    try:
        return int(info.config["model"]["transformer"]["dec_layers"])  # type: ignore[index]
    except (TypeError, KeyError, ValueError):
        return None


def _heads(info: ModelInfo) -> Optional[int]:
    """The heads of the attention alignments read, as the model's config records them: a
    Transformer's (every layer has as many), an RNN attention's (``heads`` unset: its preset's,
    which is 1, as is ``custom``'s); None where the config does not say (an export written
    before nmt recorded it, or unset on a registered energy, whose defaults may set it)."""
    model = (info.config or {}).get("model")
    section = (model or {}).get("transformer" if info.arch == "transformer" else "attention")
    if not isinstance(section, dict):
        return None
    heads = section.get("heads")
    if heads is None and info.arch != "transformer" and section.get("type") in (*ATTENTION_PRESETS, "custom"):
        return 1
    return heads if isinstance(heads, int) and not isinstance(heads, bool) and heads >= 1 else None


def check_alignable(engine: Engine, choice: AttentionChoice, *, warn: bool = True) -> None:
    """Refuse, in one line and before any input is read, an engine without attention or a layer or
    head that ``engine`` cannot give; ``warn`` logs it where the default layer is not to be had."""
    info = engine.describe()
    if not info.search_attention:
        raise UserError(
            f"--engine {engine.name} returns no attention weights, so it cannot align; use --engine torch or onnxruntime"
        )
    if info.arch != "transformer":
        if choice.layer not in (None, 0, -1):
            raise UserError(f"layer {choice.layer}: an RNN model has one attention (layer 0); leave out layer")
        if choice.head is not None and not info.layer_attention:
            raise UserError(f"head {choice.head}: {_no_rnn_heads(engine, info)}; leave out head")
        return
    if info.layer_attention:
        return
    layers = _decoder_layers(info)
    last = choice.layer is None or choice.layer == -1 or (layers is not None and choice.layer == layers - 1)
    if not last or choice.head is not None:
        raise UserError(
            f"--engine {engine.name} with this model gives the last layer's cross-attention only, heads averaged: "
            "leave out layer and head (or give layer -1), or align with --engine torch on one checkpoint"
        )
    if choice.layer is None and warn:
        log.warning(
            "--engine %s gives the last layer's cross-attention only: alignments read it, heads averaged "
            "(the default elsewhere, the penultimate layer, needs --engine torch on one checkpoint)",
            engine.name,
        )


def _no_rnn_heads(engine: Engine, info: ModelInfo) -> str:
    """Why an RNN's one head cannot be read here: a single head (on any engine), another engine,
    or an ensemble."""
    heads = _heads(info)
    if heads == 1 or (heads is None and engine.name == "torch"):  # torch gives a lone model's several heads
        return "the model's attention has one head (heads come with model.attention.heads above 1)"
    if engine.name != "torch":
        return f"--engine {engine.name} gives an RNN's heads averaged (one head needs --engine torch)"
    return "an ensemble gives its members' heads averaged (one head needs one checkpoint)"


def describe_choice(engine: Engine, choice: AttentionChoice) -> str:
    """The attention ``choice`` reads on ``engine``, in words, for a report."""
    info = engine.describe()
    head, count = choice.head, _heads(info)
    if head is not None and count is not None and -count <= head < 0:  # -1: the last head
        head %= count
    if info.arch != "transformer":
        if head is None:
            return "the model's attention (heads averaged where it has several)"
        return f"the model's attention, head {head}"
    if not info.layer_attention:
        return "the last decoder layer's cross-attention, heads averaged"
    layers = _decoder_layers(info)
    heads = "heads averaged" if head is None else f"head {head}"
    if layers is None:
        return (
            f"decoder layer {choice.layer}, {heads}" if choice.layer is not None else f"the penultimate layer, {heads}"
        )
    layer = max(layers - 2, 0) if choice.layer is None else choice.layer % layers
    return f"decoder layer {layer} of {layers} (counted from 0), {heads}"


def _pick(index: Optional[int], size: int, default: int, what: str) -> int:
    if index is None:
        return default
    if not -size <= index < size:
        raise UserError(f"{what} {index}: the model has {size} ({what} 0 to {size - 1}, or -{size} to -1)")
    return index % size


def _layer_attention(maps: np.ndarray, choice: AttentionChoice) -> np.ndarray:
    """One layer's cross-attention (T + 1, S), heads averaged or one head, of one pair's every-layer maps."""
    maps = np.asarray(maps, dtype=np.float64)  # (layers, heads, T + 1, S)
    layer = _pick(choice.layer, maps.shape[0], max(maps.shape[0] - 2, 0), "layer")
    per_head = maps[layer]  # (heads, T + 1, S)
    return per_head.mean(0) if choice.head is None else per_head[_pick(choice.head, per_head.shape[0], 0, "head")]


def align_pairs(
    engine: Engine,
    sources: Sequence[str],
    targets: Sequence[str],
    choice: AttentionChoice = AttentionChoice(),
    *,
    batch_size: Optional[int] = None,
    as_searched: Optional[DecodeConfig] = None,
    where: Callable[[str, int], str] = lambda side, k: f"{side}[{k}]",
) -> list[WordAlignment]:
    """The word alignment of each (source, target) pair, in input order; a pair with a blank side
    gets no links.

    A source longer than the model's ``decode.max_src_len`` pieces, or a target longer than a
    search may write, is refused.  ``as_searched``, the decode options of a search whose output
    the targets are (``nmt translate --alignments``): the sources are cut where that search cut
    them (their words past the cut get no link), the targets taken as they are.  ``where(side, k)``
    names pair ``k``'s source (side ``"sources"``) or target in a message.
    """
    if len(sources) != len(targets):
        raise UserError(f"{len(sources)} sources but {len(targets)} targets; give one target per source")
    check_alignable(engine, choice, warn=as_searched is None)  # nmt translate checked (and warned) once
    overrides = [] if batch_size is None else [f"decode.batch_size={batch_size}"]
    decode = as_searched if as_searched is not None else engine.decode_config(overrides)
    src_pieces, tgt_pieces = word_pieces(engine.src_tok, sources), word_pieces(engine.tgt_tok, targets)
    for k, (ids, _) in enumerate(src_pieces):
        if len(ids) > decode.max_src_len and as_searched is None:
            raise UserError(
                f"{where('sources', k)} has {len(ids):,} tokens, more than {decode.max_src_len} "
                "(the model's decode.max_src_len)"
            )
    for k, (ids, _) in enumerate(tgt_pieces):
        if len(ids) > MAX_OUTPUT_TOKENS - 1 and as_searched is None:
            raise UserError(f"{where('targets', k)} has {len(ids):,} tokens, more than {MAX_OUTPUT_TOKENS - 1}")
    src_pieces = [(ids[: decode.max_src_len], owner[: decode.max_src_len]) for ids, owner in src_pieces]
    live = [k for k, ((s, _), (t, _)) in enumerate(zip(src_pieces, tgt_pieces)) if s and t]
    attention = _attention(engine, [src_pieces[k][0] for k in live], [tgt_pieces[k][0] for k in live], choice, decode)
    found = dict(zip(live, attention))
    return [
        word_alignment(found[k], sources[k], targets[k], src_pieces[k][1], tgt_pieces[k][1], choice.merge)
        if k in found
        else empty_alignment(sources[k], targets[k])
        for k in range(len(sources))
    ]


def _attention(
    engine: Engine, sources: list[list[int]], targets: list[list[int]], choice: AttentionChoice, decode: DecodeConfig
) -> list[np.ndarray]:
    """Each pair's piece attention (T, S) of the T + 1 forced steps: the rows that predict the T pieces
    (the EOS row dropped), or with ``choice.reading`` "input" the rows of the steps that read them (the
    first row dropped).  From the layer maps where the engine has them (a Transformer on torch, or one
    head of an RNN's on torch: every head computed for each reading), else from forced decoding; in
    batches of ``decode.batch_size`` pairs either way."""
    if not sources:
        return []
    rows = slice(None, -1) if choice.reading == "predict" else slice(1, None)
    info = engine.describe()
    if info.layer_attention and (info.arch == "transformer" or choice.head is not None):  # an RNN's head: its maps
        maps = engine.layer_attention(sources, targets, batch_size=decode.batch_size)
        assert maps is not None, "check_alignable lets only engines with layer maps reach here"
        return [_layer_attention(m, choice)[rows] for m in maps]
    forced = engine.force(sources, targets, decode, attention=True)
    return [np.asarray(f.attention)[rows] for f in forced]
