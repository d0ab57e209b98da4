"""Translating many id sentences with one search function: the batch loop, without torch.

Sentences are sorted by length into batches (little padding, similar output lengths),
padded into numpy arrays, searched by :func:`search` (greedy, beam or sampling) and
returned in input order; an empty sentence gets an empty translation without a search.
The loop knows nothing of devices: :func:`translate_batches` hands each padded batch to a
function that runs the search, which moves it where the model lives.  A checkpoint
(:func:`nmt.decode.inference.translate_ids`) and an exported model on numpy arrays
(:func:`translate_arrays`) both translate through it.

Beam search holds ``sentences x beam`` rows of state (decoder state, a copy of the
encoder output, one row of logits over the target vocabulary), and sampling
``sentences x samples`` rows, so a batch is cut to at most :data:`MAX_BEAM_ROWS` rows
and a beam or a sentence's samples are at most that many: a wide beam or many samples
are slower, never out of memory.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any, Optional, TypedDict

import numpy as np

from nmt.config.sections import MAX_BEAM_ROWS, DecodeConfig
from nmt.data.tokenizer import PAD, Tokenizer
from nmt.decode.arrays import Array, ops_for
from nmt.decode.beam import beam_search
from nmt.decode.common import Hypotheses, StepModel
from nmt.decode.greedy import greedy, sample
from nmt.decode.rules import Sampling
from nmt.util.errors import UserError

log = logging.getLogger(__name__)

IdBatch = Sequence[Sequence[int]]
"""Sentences as subword ids, one list each (no BOS or EOS): what the engines translate and force-decode."""


@dataclass
class Translation:
    """One input sentence's n-best list, best first."""

    ids: list[list[int]]  # hypotheses without EOS
    log_probs: list[float]
    scores: list[float]
    attention: Optional[Any] = None  # (len(ids[0]) + 1, S) weights of the best, EOS row included, on the host:
    #                                  a torch tensor from a torch search, a numpy array from a numpy one


class SearchOptions(TypedDict):
    """Everything :func:`search` takes besides the model and the batch."""

    beam: int
    alpha: float
    max_len_a: float
    max_len_b: int
    min_len: int
    n_best: int
    no_repeat_ngram: Optional[int]
    coverage: float
    sampling: Optional[Sampling]
    return_attention: bool


def search_options(
    decode: DecodeConfig, beam: int, n_best: int, sampling: Optional[Sampling], return_attention: bool
) -> SearchOptions:
    """The options of one translation call, read from the decode config (which has been validated)."""
    return SearchOptions(
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


class _Limits(TypedDict):
    """The options every search takes alike."""

    max_len_a: float
    max_len_b: int
    min_len: int
    no_repeat_ngram: Optional[int]
    return_attention: bool


def search(
    model: StepModel,
    src: Array,
    src_len: Array,
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


def check_beam_size(beam: int, vocab_size: int, max_rows: int = MAX_BEAM_ROWS) -> None:
    """Refuse a beam below 1, or wider than the target vocabulary or ``max_rows``, naming the limit."""
    limit = min(vocab_size, max_rows)
    if not 1 <= beam <= limit:
        raise UserError(
            f"--beam {beam}: the beam size must be between 1 and {limit} (this model's target "
            f"vocabulary has {vocab_size} tokens; at most {max_rows} beam rows per search)"
        )


def check_n_best(n_best: int, beam: int, sample: bool, max_rows: int = MAX_BEAM_ROWS) -> None:
    """Refuse an n-best list a search cannot give within its rows, before any search.

    A beam keeps at most ``beam`` hypotheses; sampling draws one row per sample, and a
    sentence's samples are drawn in one search call, so they are at most ``max_rows``
    (as a beam is).
    """
    if sample and not 1 <= n_best <= max_rows:
        raise UserError(
            f"--sample --n-best {n_best}: between 1 and {max_rows} samples per line "
            f"(each sample is a search row, at most {max_rows} per search)"
        )
    if not sample and not 1 <= n_best <= beam:
        raise UserError(f"--beam {beam} --n-best {n_best}: need 1 <= n-best <= beam")


def sentences_per_search(batch_size: int, beam: int, max_rows: int) -> int:
    """Sentences searched at once: ``batch_size``, cut so ``sentences x beam <= max_rows`` (at least one)."""
    return max(1, min(batch_size, max_rows // beam))


def by_length(lengths: Sequence[int], batch_size: int) -> Iterator[list[int]]:
    """Positions of ``lengths`` in batches of ``batch_size``, longest sentences first."""
    order = sorted(range(len(lengths)), key=lambda i: -lengths[i])
    for start in range(0, len(order), batch_size):
        yield order[start : start + batch_size]


def pad_ids(sentences: Sequence[Sequence[int]]) -> tuple[np.ndarray, np.ndarray]:
    """``(src (B, S) int64 PAD-padded with S >= 1, src_len (B,) int64)``, in the given order."""
    src = np.full((len(sentences), max(1, max(len(s) for s in sentences))), PAD, dtype=np.int64)
    for b, s in enumerate(sentences):
        src[b, : len(s)] = s
    return src, np.array([len(s) for s in sentences], dtype=np.int64)


def translate_batches(
    sentences: Sequence[Sequence[int]],
    run: Callable[[np.ndarray, np.ndarray], Hypotheses],
    *,
    per_search: int,
    n_best: int,
    on_batch: Optional[Callable[[], None]] = None,
) -> list[Translation]:
    """Translate id sequences (no BOS/EOS) with ``run``; results in input order.

    ``run(src, src_len)`` searches one padded batch (numpy int64 (B, S) and (B,), no empty
    sentence) and returns its ``n_best`` hypotheses, on torch tensors or numpy arrays;
    batches hold at most ``per_search`` sentences, longest first.  ``on_batch`` is called
    before each (nmt uses it to re-check its thread count).
    """
    results: list[Optional[Translation]] = [None] * len(sentences)
    todo = [i for i, s in enumerate(sentences) if len(s) > 0]
    for i, s in enumerate(sentences):
        if len(s) == 0:
            results[i] = Translation([[] for _ in range(n_best)], [0.0] * n_best, [0.0] * n_best)
    for batch in by_length([len(sentences[i]) for i in todo], per_search):
        if on_batch is not None:
            on_batch()
        rows = [todo[b] for b in batch]
        src, src_len = pad_ids([sentences[i] for i in rows])
        hyp = run(src, src_len)
        xp = ops_for(hyp.tokens)
        tokens, lengths = xp.host(hyp.tokens).tolist(), xp.host(hyp.lengths).tolist()
        log_probs, scores = xp.host(hyp.log_probs).tolist(), xp.host(hyp.scores).tolist()
        for r, i in enumerate(rows):
            ids = [seq[: max(n - 1, 0)] for seq, n in zip(tokens[r], lengths[r])]
            attn = None
            if hyp.attention is not None:  # return_attention
                attn = xp.host(hyp.attention[r, 0, : lengths[r][0], : int(src_len[r])])
            results[i] = Translation(ids, log_probs[r], scores[r], attn)
    return [r for r in results if r is not None]


def translate_arrays(
    model: StepModel,
    sentences: Sequence[Sequence[int]],
    decode: DecodeConfig,
    *,
    vocab_size: int,
    beam: Optional[int] = None,
    n_best: int = 1,
    return_attention: bool = False,
) -> list[Translation]:
    """Translate id sequences with a model on numpy arrays (an exported one); results in input order.

    The same checks, batches and searches as :func:`nmt.decode.inference.translate_ids`
    for a checkpoint; ``vocab_size`` is the model's target vocabulary, the widest beam.
    Sampling draws with torch, so ``decode.sample`` is refused here.
    """
    if decode.sample:
        raise UserError("--sample: sampling draws with torch; translate with --engine torch to sample")
    beam = beam or decode.beam
    check_beam_size(beam, vocab_size)
    check_n_best(n_best, beam, sample=False)
    options = search_options(decode, beam, n_best, None, return_attention)
    per_search = sentences_per_search(decode.batch_size, beam, MAX_BEAM_ROWS)
    return translate_batches(
        sentences, lambda src, src_len: search(model, src, src_len, **options), per_search=per_search, n_best=n_best
    )


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
