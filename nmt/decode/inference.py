"""Turning token-id sentences into translations with a trained model.

Sentences are sorted by length into batches (little padding, similar output
lengths), searched by :func:`search` (greedy, beam or sampling), and returned in input order.  Also
rebuilds a model and its tokenizers from a self-contained checkpoint.

Beam search holds ``sentences x beam`` rows of state (decoder state, a copy of the
encoder output, one row of logits over the target vocabulary), and sampling
``sentences x samples`` rows, so a batch is cut to at most :data:`MAX_BEAM_ROWS` rows
and a beam or a sentence's samples are at most that many: a wide beam or many samples
are slower, never out of memory.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Optional, TypedDict, Union

import torch
from torch import Tensor

from nmt.config import Config, DecodeConfig
from nmt.config.saved import saved_config
from nmt.data.batching import pad_sources
from nmt.data.tokenizer import Tokenizer
from nmt.decode.beam import beam_search
from nmt.decode.common import Hypotheses, StepModel
from nmt.decode.ensemble import Ensemble
from nmt.decode.greedy import greedy, sample
from nmt.decode.rules import Sampling
from nmt.model.build import TranslationModel, build_model
from nmt.run import checkpoint as ckpt
from nmt.util import threads
from nmt.util.errors import CheckpointError, UserError

Model = Union[TranslationModel, Ensemble]
"""What translates: one model, or several decoded together."""

log = logging.getLogger(__name__)

MAX_BEAM_ROWS = 4096
"""Most beam rows (sentences x beam) one search call may hold.

A row costs a few hundred KB on a large model (a 64-sentence batch with beam 1000,
64,000 rows, took 21 GB), so 4096 rows stay near 1-2 GB whatever the beam; the
defaults (64 sentences, beam 5: 320 rows) and beams up to 64 are never cut.
"""


@dataclass
class Translation:
    """One input sentence's n-best list, best first."""

    ids: list[list[int]]  # hypotheses without EOS
    log_probs: list[float]
    scores: list[float]
    attention: Optional[torch.Tensor] = None  # (len(ids[0]) + 1, S) weights of the best, EOS row included


@dataclass
class Loaded:
    """A model ready to translate: its (first) checkpoint's config, its tokenizers, its update."""

    config: Config
    model: Model
    src_tok: Tokenizer
    tgt_tok: Tokenizer
    step: int


def load_checkpoint(path: Path, device: torch.device) -> Loaded:
    """Rebuild config, model and tokenizers from one checkpoint file."""
    saved = ckpt.load(path)
    try:
        config = saved_config(saved.config)
        src_tok = Tokenizer(saved.tokenizers["src"])
        tgt_tok = Tokenizer(saved.tokenizers["tgt"])
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


def encode_sources(
    tok: Tokenizer, lines: Sequence[str], max_len: int, name: str = "input", first_line: int = 1
) -> list[list[int]]:
    """Subword ids of source lines (no BOS/EOS), each cut to ``max_len`` tokens with a warning."""
    ids = tok.encode(lines)
    for i, seq in enumerate(ids):
        if len(seq) > max_len:
            log.warning("%s: line %d has %d tokens; translating its first %d", name, first_line + i, len(seq), max_len)
            ids[i] = seq[:max_len]
    return ids


def max_beam(model: Model) -> int:
    """The widest useful beam: no more hypotheses than target tokens, nor rows than the budget."""
    return min(model.target_vocab_size, MAX_BEAM_ROWS)


def check_beam(beam: int, model: Model) -> None:
    """Refuse a beam below 1 or above :func:`max_beam`, naming the limit, before any search."""
    limit = max_beam(model)
    if not 1 <= beam <= limit:
        raise UserError(
            f"--beam {beam}: the beam size must be between 1 and {limit} (this model's target "
            f"vocabulary has {model.target_vocab_size} tokens; at most "
            f"{MAX_BEAM_ROWS} beam rows per search)"
        )


def check_n_best(n_best: int, beam: int, sample: bool) -> None:
    """Refuse an n-best list a search cannot give within its rows, before any search.

    A beam keeps at most ``beam`` hypotheses; sampling draws one row per sample, and a
    sentence's samples are drawn in one search call, so they are at most
    :data:`MAX_BEAM_ROWS` (as a beam is).
    """
    if sample and not 1 <= n_best <= MAX_BEAM_ROWS:
        raise UserError(
            f"--sample --n-best {n_best}: between 1 and {MAX_BEAM_ROWS} samples per line "
            f"(each sample is a search row, at most {MAX_BEAM_ROWS} per search)"
        )
    if not sample and not 1 <= n_best <= beam:
        raise UserError(f"--beam {beam} --n-best {n_best}: need 1 <= n-best <= beam")


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


def sentences_per_search(batch_size: int, beam: int, max_rows: int) -> int:
    """Sentences searched at once: ``batch_size``, cut so ``sentences x beam <= max_rows`` (at least one)."""
    return max(1, min(batch_size, max_rows // beam))


def _batches(lengths: Sequence[int], batch_size: int) -> Iterator[list[int]]:
    order = sorted(range(len(lengths)), key=lambda i: -lengths[i])
    for start in range(0, len(order), batch_size):
        yield order[start : start + batch_size]


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
    results: list[Optional[Translation]] = [None] * len(sentences)
    todo = [i for i, s in enumerate(sentences) if len(s) > 0]
    for i, s in enumerate(sentences):
        if len(s) == 0:
            results[i] = Translation([[] for _ in range(n_best)], [0.0] * n_best, [0.0] * n_best)
    sampling = None
    if decode.sample:  # one generator per call: the same input and seed draw the same samples
        generator = torch.Generator(device=device).manual_seed(decode.seed)
        sampling = Sampling(decode.top_k, decode.top_p, decode.temperature, generator)
    was_training = model.training
    model.eval()
    for batch in _batches([len(sentences[i]) for i in todo], per_search):
        threads.tick()
        rows = [todo[b] for b in batch]
        src, src_len = (t.to(device) for t in pad_sources([sentences[i] for i in rows]))  # no empty rows here
        hyp = search(
            model,
            src,
            src_len,
            beam=beam,
            alpha=decode.length_penalty,
            max_len_a=decode.max_len_a,
            max_len_b=decode.max_len_b,
            min_len=decode.min_len,
            n_best=n_best,
            no_repeat_ngram=decode.no_repeat_ngram,
            coverage=decode.coverage_penalty,
            sampling=sampling,
            return_attention=return_attention,
        )
        tokens, lengths = hyp.tokens.cpu(), hyp.lengths.cpu()
        for r, i in enumerate(rows):
            ids = [tokens[r, k, : max(int(lengths[r, k]) - 1, 0)].tolist() for k in range(tokens.size(1))]
            attn = None
            if hyp.attention is not None:  # return_attention
                attn = hyp.attention[r, 0, : int(lengths[r, 0]), : int(src_len[r])].cpu()
            results[i] = Translation(ids, hyp.log_probs[r].tolist(), hyp.scores[r].tolist(), attn)
    model.train(was_training)
    return [r for r in results if r is not None]


class _Limits(TypedDict):
    """The options every search takes alike."""

    max_len_a: float
    max_len_b: int
    min_len: int
    no_repeat_ngram: Optional[int]
    return_attention: bool


def search(
    model: StepModel,
    src: Tensor,
    src_len: Tensor,
    *,
    beam: int,
    alpha: float,
    max_len_a: float,
    max_len_b: int,
    min_len: int,
    n_best: int = 1,
    no_repeat_ngram: Optional[int] = None,
    coverage: float = 0.0,
    sampling: Optional[Sampling] = None,
    return_attention: bool = False,
) -> Hypotheses:
    """``n_best`` samples with ``sampling``; greedy search for ``beam == 1`` (it is what a beam
    of one computes); else beam search (:func:`nmt.decode.beam.beam_search`)."""
    limits = _Limits(
        max_len_a=max_len_a,
        max_len_b=max_len_b,
        min_len=min_len,
        no_repeat_ngram=no_repeat_ngram,
        return_attention=return_attention,
    )
    if sampling is not None:
        return sample(model, src, src_len, sampling, n=n_best, **limits)
    if beam == 1:
        return greedy(model, src, src_len, **limits)
    return beam_search(model, src, src_len, beam=beam, alpha=alpha, n_best=n_best, coverage=coverage, **limits)
