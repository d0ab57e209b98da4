"""What greedy, sampled and beam search share: the model they call, their output, output
budgets, the GNMT length penalty and one restricted decoder step.  No search lives here.

Every search calls ``model.encode`` once (keys are projected there) and then ``model.step``
once per output position for the whole batch.  Scores are sums of token log-probabilities;
beam search ranks finished hypotheses by the GNMT length penalty of Wu et al. (2016):
``score / ((5 + |Y|) / 6) ** alpha``.  Output budgets (:func:`max_lengths`) never exceed
:data:`~nmt.config.sections.MAX_OUTPUT_TOKENS`.

The searches run on torch tensors or on numpy arrays alike (:mod:`nmt.decode.arrays`), so
nothing here imports torch.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Optional, Protocol

from nmt.config.sections import MAX_OUTPUT_TOKENS
from nmt.data.tokenizer import BOS, EOS, PAD
from nmt.decode.arrays import Array, ops_for
from nmt.decode.rules import block_repeated_ngrams


class StepModel(Protocol):
    """What the searches call: a :class:`~nmt.model.seq2seq.Seq2Seq`, an
    :class:`~nmt.decode.ensemble.Ensemble`, or an exported model on numpy arrays.

    ``src`` (B, S) and ``src_len`` (B,) are int64; ``step`` takes the previous tokens
    (N,) int64 and returns float logits (N, V), the new state and attention (N, S).  The
    encoding and the state are whatever the model returns; the searches only pass them
    back and reorder their rows with ``index_select(idx)`` (idx (N,) int64, the same kind
    of array as ``src``).  The searches restrict the returned logits in place.
    """

    def encode(self, src: Array, src_len: Array) -> Any: ...

    def init_state(self, enc: Any) -> Any: ...

    def step(self, prev: Array, state: Any, enc: Any) -> tuple[Array, Any, Array]: ...


@dataclass
class Hypotheses:
    """Search output for a batch: ``n`` hypotheses per sentence, best first (arrays of the search's kind)."""

    tokens: Array  # (B, n, L) ids ending in EOS, PAD after it
    lengths: Array  # (B, n) tokens including EOS
    log_probs: Array  # (B, n) sum of token log-probabilities (model score)
    scores: Array  # (B, n) ranking score (length-normalized for beam search)
    attention: Optional[Array] = None  # (B, n, L, S) weights when requested


def max_lengths(src_len: Array, a: float, b: int) -> Array:
    """Per-sentence output budget ``a * src_len + b`` in tokens, EOS included, at most
    :data:`~nmt.config.sections.MAX_OUTPUT_TOKENS` whatever ``a`` and ``b`` (the bound every
    search keeps, however it was called).  Computed in floats, so a huge ``a`` cannot overflow."""
    xp = ops_for(src_len)
    budget = xp.floor(xp.to_float(src_len) * a) + b
    return xp.to_long(xp.clip(budget, None, MAX_OUTPUT_TOKENS))


def length_penalty(lengths: Array | int, alpha: float) -> Array | float:
    """GNMT length penalty ``((5 + |Y|) / 6) ** alpha`` (Wu et al. 2016), of an array of lengths
    or of one length (a float, so a search step that knows its length launches no kernel for it)."""
    n = lengths if isinstance(lengths, int) else ops_for(lengths).to_float(lengths)
    return ((5.0 + n) / 6.0) ** alpha


def _restrict(scores: Array, t: int, min_len: int, max_len: Array, shortest: int) -> Array:
    """Forbid PAD, BOS and (before ``min_len``) EOS; force EOS at each row's last position.

    Works in place on ``scores`` (N, V) and returns it.  A forced EOS keeps its own
    score (made finite), so search scores stay equal to forced-decoding scores.
    ``shortest`` is at most the smallest of ``max_len``: before it no row can be out of
    room, and the rows are not looked at.  On a GPU the rows out of room are then rewritten by
    a mask over every row, which never waits for the device; on the host only those rows are
    found and written, which costs less there than a pass over all N x V scores.
    """
    xp = ops_for(scores)
    scores[:, PAD] = -float("inf")
    scores[:, BOS] = -float("inf")
    if t < min_len:  # t tokens precede a token chosen at step t
        scores[:, EOS] = -float("inf")
    if t + 1 < shortest:
        return scores
    if xp.waits(scores):
        out = t + 1 >= max_len  # (N,) rows out of room
        eos = xp.where(out, xp.clip(scores[:, EOS], xp.lowest(scores), None), scores[:, EOS])
        scores = xp.masked_fill(scores, out[:, None], -float("inf"))
        scores[:, EOS] = eos
        return scores
    last = xp.nonzero(t + 1 >= max_len)  # rows out of room
    if len(last):
        eos = xp.clip(scores[last, EOS], xp.lowest(scores), None)
        scores[last] = -float("inf")
        scores[last, EOS] = eos
    return scores


def next_token_scores(
    model: StepModel,
    prev: Array,
    state: Any,
    enc: Any,
    t: int,
    min_len: int,
    max_len: Array,
    prefix: Optional[Array],
    no_repeat_ngram: Optional[int],
    shortest: int = 0,
) -> tuple[Array, Array, Any, Array]:
    """One decoder step: restricted logits (N, V), their log-normalizer (N, 1), state, attention.

    ``logits - log_z`` is log p(y_t | y_<t, x) for every allowed token; ranking raw logits
    avoids writing the full log-softmax, since only a few candidates per row are kept.
    ``prefix`` (N, t) is each row's output so far, needed only for ``no_repeat_ngram``
    blocking; ``shortest`` a lower bound of ``max_len`` known on the host (see :func:`_restrict`).
    """
    logits, state, attn = model.step(prev, state, enc)
    xp = ops_for(logits)
    logits = xp.to_float(logits)
    log_z = xp.logsumexp(logits)  # before any token is forbidden
    if no_repeat_ngram:
        if prefix is None:
            raise ValueError("no_repeat_ngram blocking needs each row's output so far (prefix)")
        block_repeated_ngrams(logits, prefix, no_repeat_ngram)
    return _restrict(logits, t, min_len, max_len, shortest), log_z, state, attn
