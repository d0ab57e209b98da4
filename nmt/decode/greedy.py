"""Greedy search and sampling, batched over sentences; no file I/O.

Greedy search takes the most probable token at every step for all sentences at once;
sampling (:func:`sample`) is the same loop drawing each token with a
:class:`~nmt.decode.rules.Sampling` rule instead.  Beam search lives in
:mod:`nmt.decode.beam`, what they share in :mod:`nmt.decode.common`, and the
:func:`~nmt.decode.batched.search` dispatcher, which picks one from its arguments, in
:mod:`nmt.decode.batched`.  N-gram blocking (:mod:`nmt.decode.rules`) applies to both.

Both run on torch tensors or numpy arrays, whichever ``src`` is (:mod:`nmt.decode.arrays`);
sampling draws with a ``torch.Generator``, so it needs tensors.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Optional

from nmt.data.tokenizer import BOS, EOS, PAD
from nmt.decode.arrays import Array, ops_for
from nmt.decode.common import Hypotheses, StepModel, max_lengths, next_token_scores
from nmt.decode.rules import Sampling


def _best(scores: Array) -> Array:
    """The most probable token of every row (N,)."""
    return ops_for(scores).argmax(scores)


def greedy(
    model: StepModel,
    src: Array,
    src_len: Array,
    *,
    max_len_a: float = 1.5,
    max_len_b: int = 10,
    min_len: int = 1,
    no_repeat_ngram: Optional[int] = None,
    return_attention: bool = False,
    choose: Callable[[Array], Array] = _best,
) -> Hypotheses:
    """One token per step for all sentences at once: the most probable, or what ``choose``
    picks from the restricted scores (N, V) (:func:`sample` draws)."""
    xp = ops_for(src)
    with xp.inference():
        enc = model.encode(src, src_len)
        state = model.init_state(enc)
        batch = src.shape[0]
        limit = max_lengths(src_len, max_len_a, max_len_b)  # (B,)
        prev = xp.full((batch,), BOS, "long", like=src)
        done = xp.full((batch,), False, "bool", like=src)
        log_probs = xp.full((batch,), 0.0, "float", like=src)
        out = xp.full((batch, int(limit.max())), PAD, "long", like=src)  # (B, L)
        weights = []
        shortest = int(limit.min())  # on the host: no row runs out of room before it
        for t in range(out.shape[1]):
            scores, log_z, state, attn = next_token_scores(
                model, prev, state, enc, t, min_len, limit, out[:, :t], no_repeat_ngram, shortest
            )
            tok = choose(scores)  # (B,)
            chosen = xp.take_along(scores, tok[:, None], 1)[:, 0]
            tok = xp.masked_fill(tok, done, PAD)
            log_probs += xp.masked_fill(chosen - log_z[:, 0], done, 0.0)
            out[:, t] = tok
            if return_attention:
                weights.append(xp.masked_fill(xp.to_float(attn), done[:, None], 0.0))
            done |= tok == EOS
            prev = tok
            if bool(done.all()):
                out = out[:, : t + 1]
                break
        lengths = (out != PAD).sum(1)
        attention = xp.stack(weights, 1)[:, None] if return_attention else None
        return Hypotheses(out[:, None], lengths[:, None], log_probs[:, None], xp.copy(log_probs[:, None]), attention)


def sample(
    model: StepModel,
    src: Array,
    src_len: Array,
    sampling: Sampling,
    *,
    n: int = 1,
    max_len_a: float = 1.5,
    max_len_b: int = 10,
    min_len: int = 1,
    no_repeat_ngram: Optional[int] = None,
    return_attention: bool = False,
) -> Hypotheses:
    """``n`` outputs per sentence, each token drawn by ``sampling``; the most probable first.

    Scores are the model's own log-probabilities of each sample (before temperature and
    filtering), so they equal forced-decoding scores as for the other searches.
    """
    xp = ops_for(src)
    B = src.shape[0]
    rows = xp.repeat(xp.arange(B, like=src), n)  # each sentence n times
    hyp = greedy(
        model,
        src[rows],
        src_len[rows],
        max_len_a=max_len_a,
        max_len_b=max_len_b,
        min_len=min_len,
        no_repeat_ngram=no_repeat_ngram,
        return_attention=return_attention,
        choose=sampling.draw,
    )
    order = xp.argsort(hyp.log_probs.reshape(B, n), axis=1, descending=True)  # (B, n)
    pick = (order + xp.arange(B, like=src)[:, None] * n).reshape(-1)
    attention = None if hyp.attention is None else hyp.attention[pick, 0].reshape(B, n, *hyp.attention.shape[2:])
    return Hypotheses(
        hyp.tokens[pick, 0].reshape(B, n, -1),
        hyp.lengths[pick, 0].reshape(B, n),
        hyp.log_probs[pick, 0].reshape(B, n),
        hyp.scores[pick, 0].reshape(B, n),
        attention,
    )
