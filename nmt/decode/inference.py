"""Turning token-id sentences into translations with a trained model on torch.

Rebuilds a model and its tokenizers from a self-contained checkpoint, and translates with
it: :func:`translate_ids` adds what is torch's (the device, a seeded ``torch.Generator``
for sampling, eval mode) to the batch loop of :mod:`nmt.decode.batched`, which an exported
model on numpy arrays shares.  Batches are cut to at most :data:`MAX_BEAM_ROWS` beam rows
(see there).
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Optional, Union

import numpy as np
import torch

from nmt.config import Config, DecodeConfig
from nmt.config.saved import saved_config
from nmt.config.sections import MAX_BEAM_ROWS as MAX_BEAM_ROWS
from nmt.data.tokenizer import Tokenizer
from nmt.decode import batched
from nmt.decode.batched import Translation as Translation
from nmt.decode.batched import by_length as _batches  # noqa: F401  (its name before the batch loop moved)
from nmt.decode.batched import encode_sources as encode_sources
from nmt.decode.batched import search as search
from nmt.decode.batched import search_options, sentences_per_search, translate_batches
from nmt.decode.common import Hypotheses
from nmt.decode.ensemble import Ensemble
from nmt.decode.rules import Sampling
from nmt.model.build import TranslationModel, build_model
from nmt.run import checkpoint as ckpt
from nmt.run.anchor import anchor_data
from nmt.run.paths import RunPaths
from nmt.util import threads
from nmt.util.errors import CheckpointError, UserError

Model = Union[TranslationModel, Ensemble]
"""What translates: one model, or several decoded together."""

log = logging.getLogger(__name__)


@dataclass
class Loaded:
    """A model ready to translate: its (first) checkpoint's config, its tokenizers, its update."""

    config: Config
    model: Model
    src_tok: Tokenizer
    tgt_tok: Tokenizer
    step: int


def check_finite_weights(path: Path, weights: dict[str, torch.Tensor]) -> None:
    """Refuse a checkpoint holding a NaN or infinite weight, naming it: such a model translates
    every line to nothing (or to noise), which would pass for a model that has not learned yet."""
    for name, tensor in weights.items():
        if isinstance(tensor, torch.Tensor) and tensor.is_floating_point() and not bool(torch.isfinite(tensor).all()):
            raise CheckpointError(
                f"{path}: weight {name[:80]} holds NaN or infinite values, so the model cannot translate "
                "(training diverged, or the file was changed); use another checkpoint"
            )


def load_checkpoint(path: Path, device: torch.device) -> Loaded:
    """Rebuild config, model and tokenizers from one checkpoint file; one with a weight that is not
    finite is refused (:func:`check_finite_weights`)."""
    saved = ckpt.load(path)
    check_finite_weights(path, saved.model)
    try:
        config = anchor_data(saved_config(saved.config), RunPaths.of_checkpoint(path).root)
        src_tok = Tokenizer(saved.tokenizers["src"], source=f"{path} (source tokenizer)")
        tgt_tok = Tokenizer(saved.tokenizers["tgt"], source=f"{path} (target tokenizer)")
        model = build_model(config.model, src_tok.vocab_size, tgt_tok.vocab_size)
        model.load_state_dict(saved.model)
    except (KeyError, RuntimeError) as exc:
        raise CheckpointError(
            f"{path}: checkpoint does not match its model config: {str(exc).splitlines()[0][:200]}"
        ) from None
    model.to(device).eval()
    return Loaded(config, model, src_tok, tgt_tok, saved.state.step)


def _single(model: Model) -> TranslationModel:
    """One checkpoint's model, which is never an ensemble: :func:`load_checkpoint` builds one network."""
    if isinstance(model, Ensemble):
        raise TypeError("an ensemble cannot be a member of an ensemble")
    return model


def load_models(paths: Sequence[Path], device: torch.device) -> Loaded:
    """One checkpoint, or an :class:`~nmt.decode.ensemble.Ensemble` of several.

    Members must share the source and the target SentencePiece model (one batch of source
    ids and one output token feed them all), and a vocabulary that differs is refused in one
    line; their configs may differ in anything else, the architecture included (no rule of
    :mod:`nmt.config.saved` applies).
    Config (decoding defaults, corpus) and step are the first checkpoint's.
    """
    if not paths:
        raise UserError("give at least one --checkpoint")
    if len(set(Path(p).resolve() for p in paths)) != len(paths):
        raise UserError("a --checkpoint is given twice; an ensemble uses each model once")
    loaded = [load_checkpoint(Path(p), device) for p in paths]
    if len(loaded) == 1:
        return loaded[0]
    first = loaded[0]
    for path, other in zip(paths[1:], loaded[1:]):
        for side, a, b in (("source", first.src_tok, other.src_tok), ("target", first.tgt_tok, other.tgt_tok)):
            if a.sha256 != b.sha256:
                raise UserError(
                    f"{path}: its {side} vocabulary differs from {paths[0]}'s; an ensemble's "
                    "models must share the SentencePiece models (train them on one prepared corpus)"
                )
    model = Ensemble([_single(item.model) for item in loaded]).eval()
    return Loaded(first.config, model, first.src_tok, first.tgt_tok, first.step)


def max_beam(model: Model) -> int:
    """The widest useful beam: no more hypotheses than target tokens, nor rows than the budget."""
    return min(model.target_vocab_size, MAX_BEAM_ROWS)


def check_beam(beam: int, model: Model) -> None:
    """Refuse a beam below 1 or above :func:`max_beam`, naming the limit, before any search."""
    batched.check_beam_size(beam, model.target_vocab_size, MAX_BEAM_ROWS)


def check_n_best(n_best: int, beam: int, sample: bool) -> None:
    """Refuse an n-best list a search cannot give within its rows (:func:`nmt.decode.batched.check_n_best`)."""
    batched.check_n_best(n_best, beam, sample, MAX_BEAM_ROWS)


def check_search(decode: DecodeConfig, beam: int, n_best: int, model: Model, overrides: Sequence[str] = ()) -> None:
    """What ``nmt translate`` and ``nmt eval`` refuse before reading any input, in one line each.

    Beyond :func:`check_beam` and :func:`check_n_best`: sampling takes no beam, and a
    coverage penalty given on this command line (among the ``decode.KEY=VALUE``
    ``overrides``) needs a beam of 2 or more.  One inherited from the checkpoint's config
    is a beam-search setting that an explicit ``--beam 1`` leaves out, as the log says.
    """
    given = {assignment.partition("=")[0].strip() for assignment in overrides}
    if decode.sample and beam != 1:
        raise UserError(
            f"--sample --beam {beam}: sampling draws n-best samples instead of a beam; "
            "leave out --beam or give --beam 1"
        )
    check_beam(beam, model)
    check_n_best(n_best, beam, decode.sample)
    if decode.coverage_penalty > 0 and beam == 1 and not decode.sample:
        if "decode.coverage_penalty" in given:
            raise UserError(
                f"--coverage-penalty {decode.coverage_penalty} applies to beam search: "
                "give --beam 2 or more (--beam 1 is greedy search)"
            )
        log.info(
            "greedy search (--beam 1) leaves out the checkpoint's decode.coverage_penalty %g", decode.coverage_penalty
        )


def translate_ids(
    model: Model,
    sentences: Sequence[Sequence[int]],
    decode: DecodeConfig,
    device: torch.device,
    *,
    beam: Optional[int] = None,
    n_best: int = 1,
    return_attention: bool = False,
) -> list[Translation]:
    """Translate id sequences (no BOS/EOS); results in input order.

    An empty source sentence gives an empty translation without running the model.
    With ``decode.sample`` the ``n_best`` outputs are samples (:mod:`nmt.decode.rules`).
    A beam wider than :func:`max_beam`, or more samples than :data:`MAX_BEAM_ROWS`, is a
    UserError; a wide beam (or many samples) searches fewer sentences at once, so that
    sentences x rows stays within :data:`MAX_BEAM_ROWS`; for a beam this changes no translation.
    """
    beam = beam or decode.beam
    check_beam(beam, model)
    check_n_best(n_best, beam, decode.sample)  # sampling: n_best rows per sentence, at most MAX_BEAM_ROWS
    members = len(model.members) if isinstance(model, Ensemble) else 1  # each row holds every member's state
    rows_per_sentence = n_best if decode.sample else beam  # sampling draws n_best rows per sentence
    per_search = sentences_per_search(decode.batch_size, rows_per_sentence, MAX_BEAM_ROWS // members)
    sampling = None
    if decode.sample:  # one generator per call: the same input and seed draw the same samples
        generator = torch.Generator(device=device).manual_seed(decode.seed)
        sampling = Sampling(decode.top_k, decode.top_p, decode.temperature, generator)
    options = search_options(decode, beam, n_best, sampling, return_attention)

    def run(src: np.ndarray, src_len: np.ndarray) -> Hypotheses:
        return search(model, torch.from_numpy(src).to(device), torch.from_numpy(src_len).to(device), **options)

    was_training = model.training
    model.eval()
    try:
        return translate_batches(sentences, run, per_search=per_search, n_best=n_best, on_batch=threads.tick)
    finally:
        model.train(was_training)
