"""Batched beam search (active sentences x K rows per step); no file I/O.

Beam search is built from small functions on arrays, each testable without a model:
:func:`expand` (the best continuations of every hypothesis), :func:`prune` (the 2K best
per sentence), :func:`extend` (the candidates as whole hypotheses), :func:`finish` (EOS
candidates into the pool of finished ones), :func:`survive` (the K best others stay
alive), :func:`is_done`, and :func:`compact` (sentences that are done leave the batch,
every tensor of the :class:`BeamState` at once).

Finished hypotheses rank by the GNMT length penalty and, when asked, the GNMT coverage
penalty of :mod:`nmt.decode.rules`.  The model protocol, the output type, output budgets
and the restricted decoder step come from :mod:`nmt.decode.common`, which greedy search and
sampling (:mod:`nmt.decode.greedy`) share.  Every function runs on torch tensors or numpy
arrays, whichever it is given (:mod:`nmt.decode.arrays`).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any, NamedTuple, Optional

from nmt.data.tokenizer import BOS, EOS, PAD
from nmt.decode.arrays import Array, ops_for
from nmt.decode.common import Hypotheses, StepModel, length_penalty, max_lengths, next_token_scores
from nmt.decode.rules import coverage_penalty

DONE_CHECK_EVERY = 4
"""On a GPU, steps between two looks for sentences that are done (each look waits for the device).

A sentence found done a few steps late leaves the batch then, with the same finished
hypotheses: once done it stays done, and no later candidate can score above the pool's worst
member (see :func:`is_done`); only hypotheses of exactly equal score may come out in another
order, as top-k keeps none among ties.  On the host every step looks, as waiting costs
nothing there and the sentences leave the batch at once."""

# Shapes: n sentences still searching, K beam size, C candidates per sentence (2K),
# P = min(2K, V) tokens kept per hypothesis, L output budget of the longest sentence,
# S source length.  The decoder state and ``enc`` hold K rows per sentence, n*K in all.


def _cat_present(tensors: list[Optional[Array]], dim: int) -> Optional[Array]:
    """An optional field of beams joined: None where the beams do not keep it, as all or none do."""
    present = [t for t in tensors if t is not None]
    if not present:
        return None
    if len(present) != len(tensors):
        raise ValueError("cannot join beams that keep this field with beams that do not")
    return ops_for(present[0]).cat(present, dim)


@dataclass
class Beams:
    """k hypotheses for each of n sentences, in the order the search keeps them (best first).

    The alive hypotheses, the candidates of one step and the pool of finished ones all take
    this form; an empty slot has score and log-probability -inf.
    """

    scores: Array  # (n, k) ranking score: log_probs, or log_probs / length penalty once finished
    log_probs: Array  # (n, k) sum of token log-probabilities
    tokens: Array  # (n, k, L) ids so far, PAD after them
    attention: Optional[Array] = None  # (n, k, L, S) weights so far, when requested
    coverage: Optional[Array] = None  # (n, k, S) attention summed over the output, for the coverage penalty

    def take(self, idx: Array) -> Beams:
        """Hypotheses ``idx`` (n, j) of each sentence, in that order."""
        xp = ops_for(idx)
        attention = coverage = None
        if self.attention is not None:
            attention = xp.take_along(self.attention, idx[:, :, None, None], 1)
        if self.coverage is not None:
            coverage = xp.take_along(self.coverage, idx[:, :, None], 1)
        return Beams(
            xp.take_along(self.scores, idx, 1),
            xp.take_along(self.log_probs, idx, 1),
            xp.take_along(self.tokens, idx[:, :, None], 1),
            attention,
            coverage,
        )

    def first(self, k: int) -> Beams:
        """The first ``k`` hypotheses of each sentence (views, no copy)."""
        attention = None if self.attention is None else self.attention[:, :k]
        coverage = None if self.coverage is None else self.coverage[:, :k]
        return Beams(self.scores[:, :k], self.log_probs[:, :k], self.tokens[:, :k], attention, coverage)

    def rows(self, idx: Array) -> Beams:
        """Sentences ``idx`` (m,), in that order."""
        xp = ops_for(idx)
        attention = None if self.attention is None else xp.rows(self.attention, idx)
        coverage = None if self.coverage is None else xp.rows(self.coverage, idx)
        return Beams(
            xp.rows(self.scores, idx), xp.rows(self.log_probs, idx), xp.rows(self.tokens, idx), attention, coverage
        )

    @staticmethod
    def cat(parts: list[Beams], dim: int) -> Beams:
        """Parts joined along sentences (``dim=0``) or hypotheses (``dim=1``)."""
        xp = ops_for(parts[0].scores)
        attention = _cat_present([b.attention for b in parts], dim)
        coverage = _cat_present([b.coverage for b in parts], dim)
        return Beams(
            xp.cat([b.scores for b in parts], dim),
            xp.cat([b.log_probs for b in parts], dim),
            xp.cat([b.tokens for b in parts], dim),
            attention,
            coverage,
        )


class Candidates(NamedTuple):
    """The best continuations of each sentence at one step, best first."""

    log_probs: Array  # (n, C) log p(y_<t) + log p(y_t | y_<t, x)
    tokens: Array  # (n, C) the new token y_t
    rows: Array  # (n, C) the decoder-state row (of n*K) of the hypothesis it extends


@dataclass
class BeamState:
    """The search over the n sentences still searching, as of the end of one step."""

    ids: Array  # (n,) each sentence's position in the batch
    limit: Array  # (n,) output budget in tokens, EOS included
    lp_max: Array  # (n,) length penalty at the budget
    alive: Beams  # (n, K) hypotheses still growing
    finished: Beams  # (n, K) the best finished hypotheses (scores length-normalized)
    prev: Array  # (n, K) last token of each alive hypothesis, the next step's input
    parents: Array  # (n, K) the row of the last step's decoder state each alive one continues
    enc: Any  # n*K rows: each sentence's encoding (the model's type), once per beam


def _empty(B: int, K: int, L: int, S: Optional[int], like: Array, coverage: Optional[Array] = None) -> Beams:
    """K empty slots per sentence: -inf scores, PAD tokens, zero attention (when S is given),
    and ``coverage`` (B, S) in every slot when given; arrays of the kind (and device) of ``like``."""
    xp = ops_for(like)
    scores = xp.full((B, K), -float("inf"), "float", like)
    tokens = xp.full((B, K, L), PAD, "long", like)
    attention = None if S is None else xp.full((B, K, L, S), 0.0, "float", like)
    cov = None if coverage is None else xp.repeat(coverage[:, None], K, 1)
    return Beams(scores, xp.copy(scores), tokens, attention, cov)


def start(
    enc: Any, limit: Array, K: int, alpha: float, src_size: Optional[int], coverage: Optional[Array] = None
) -> BeamState:
    """One live empty hypothesis (log-probability 0) and an empty pool per sentence.

    ``enc`` holds K rows per sentence; ``limit`` (B,) the output budgets, whose largest sets L;
    ``src_size`` S when attention is wanted, else None; ``coverage`` (B, S) the starting
    attention sums when the coverage penalty is on (1 at padding, else 0), else None.
    """
    xp, (B,), L = ops_for(limit), limit.shape, int(limit.max())
    alive = _empty(B, K, L, src_size, limit, coverage)
    alive.log_probs[:, 0] = 0.0
    alive = replace(alive, scores=alive.log_probs)  # alive ones rank by log-probability
    return BeamState(
        ids=xp.arange(B, limit),
        limit=limit,
        lp_max=length_penalty(limit, alpha),
        alive=alive,
        finished=_empty(B, K, L, src_size, limit, coverage),
        prev=xp.full((B, K), BOS, "long", limit),
        parents=xp.arange(B * K, limit).reshape(B, K),
        enc=enc,
    )


def expand(scores: Array, log_z: Array, alive: Array) -> tuple[Array, Array]:
    """The continuations worth ranking: the P = min(2K, V) best tokens of every alive hypothesis.

    ``scores`` (n*K, V) restricted logits and ``log_z`` (n*K, 1) their log-normalizer;
    ``alive`` (n, K) the hypotheses' log-probabilities.  Returns the continuations'
    log-probabilities alive + log p(y_t | y_<t, x) (n, K, P), best first per hypothesis, and
    their tokens (n, K, P).  A sentence's 2K best continuations are all among these, since
    any other is beaten by the P >= 2K (or all V) kept from its own hypothesis.
    """
    n, K = alive.shape
    P = min(2 * K, scores.shape[1])
    tok_score, tok_id = ops_for(scores).topk(scores, P)  # (n*K, P)
    cand = alive.reshape(-1, 1) + (tok_score - log_z)
    return cand.reshape(n, K, P), tok_id.reshape(n, K, P)


def prune(log_probs: Array, tokens: Array, width: int) -> Candidates:
    """The ``width`` best of each sentence's continuations (n, K, P), best first."""
    xp = ops_for(log_probs)
    n, K, P = log_probs.shape
    top, idx = xp.topk(log_probs.reshape(n, K * P), width)  # (n, C)
    rows = xp.arange(n, idx)[:, None] * K + idx // P
    return Candidates(top, xp.take_along(tokens.reshape(n, K * P), idx, 1), rows)


def extend(alive: Beams, cand: Candidates, attn: Array, t: int) -> Beams:
    """The candidates as whole hypotheses: each parent's tokens with the new one at position t.

    ``attn`` (n*K, S) is this step's attention of every alive hypothesis, kept where
    ``alive`` keeps attention.
    """
    xp = ops_for(alive.tokens)
    n, K, L = alive.tokens.shape
    tokens = alive.tokens.reshape(n * K, L)[cand.rows]  # (n, C, L)
    tokens[:, :, t] = cand.tokens
    attention = coverage = None
    if alive.attention is not None:
        attention = alive.attention.reshape(n * K, L, -1)[cand.rows]  # (n, C, L, S)
        attention[:, :, t] = xp.to_float(attn)[cand.rows]
    if alive.coverage is not None:
        coverage = alive.coverage.reshape(n * K, -1)[cand.rows] + xp.to_float(attn)[cand.rows]  # (n, C, S)
    return Beams(cand.log_probs, cand.log_probs, tokens, attention, coverage)


def finish(pool: Beams, cand: Beams, t: int, alpha: float, beta: float = 0.0) -> Beams:
    """The pool of each sentence's K best finished hypotheses after step t.

    A candidate (its last token at t, so of length t + 1) finishes when it ends in EOS,
    has a finite log-probability, and ranks inside the beam (among the first K of the
    C = 2K, which are best first), so a beam of one makes exactly the choices greedy
    search makes.  It enters the pool with score log_prob / length_penalty(t + 1, alpha)
    (+ the coverage penalty with weight ``beta`` when the beams carry coverage); the pool
    keeps the K best by score, best first.
    """
    xp, K = ops_for(cand.log_probs), pool.scores.shape[1]
    in_beam = cand.first(K)  # (n, K) only these can finish
    top = in_beam.log_probs
    other = ~((in_beam.tokens[:, :, t] == EOS) & xp.isfinite(top))  # (n, K) not finishing now
    norm = top / length_penalty(t + 1, alpha)
    if in_beam.coverage is not None:
        norm = norm + coverage_penalty(in_beam.coverage, beta)
    new = Beams(
        xp.masked_fill(norm, other, -float("inf")),
        xp.masked_fill(top, other, -float("inf")),
        in_beam.tokens,
        in_beam.attention,
        in_beam.coverage,
    )
    both = Beams.cat([pool, new], dim=1)  # (n, 2K)
    _, keep = xp.topk(both.scores, K)
    return both.take(keep)


def survive(cand: Beams, t: int, K: int) -> tuple[Beams, Array]:
    """The K best candidates not ending in EOS (at t), best first, and their places (n, K) among them.

    Where fewer than K do not end in EOS, the rest are filled with -inf hypotheses.
    """
    xp = ops_for(cand.log_probs)
    ended = cand.tokens[:, :, t] == EOS
    masked = xp.masked_fill(cand.log_probs, ended, -float("inf"))
    _, pick = xp.topk(masked, K)
    return Beams(masked, masked, cand.tokens, cand.attention, cand.coverage).take(pick), pick


def advance(
    beams: BeamState, scores: Array, log_z: Array, attn: Array, t: int, alpha: float, beta: float = 0.0
) -> BeamState:
    """One search step from the decoder's restricted ``scores`` (n*K, V), their log-normalizer
    ``log_z`` (n*K, 1) and attention ``attn`` (n*K, S): expand, prune, finish, survive."""
    K = beams.alive.scores.shape[1]
    cand = prune(*expand(scores, log_z, beams.alive.log_probs), 2 * K)
    grown = extend(beams.alive, cand, attn, t)
    alive, pick = survive(grown, t, K)
    return BeamState(
        beams.ids,
        beams.limit,
        beams.lp_max,
        alive,
        finish(beams.finished, grown, t, alpha, beta),
        prev=alive.tokens[:, :, t],
        parents=ops_for(pick).take_along(cand.rows, pick, 1),
        enc=beams.enc,
    )


def is_done(finished: Array, alive: Array, lp_max: Array) -> Array:
    """(n,) True where a sentence's search is over.

    That is when nothing is alive, or when the pool is full and its worst score ``finished``
    (n, K) beats the best any alive hypothesis can still reach: the best log-probability
    ``alive`` (n, K) can only fall, and it is divided by at most ``lp_max`` (alpha >= 0).  A
    coverage penalty is never above 0, so the bound holds with one.
    """
    bound = alive[:, 0] / lp_max
    return (finished[:, -1] >= bound) | ~ops_for(alive).isfinite(alive[:, 0])


def compact(beams: BeamState, stay: Array) -> BeamState:
    """The search restricted to sentences ``stay`` (n',), in that order: every array, one index."""
    K = beams.alive.scores.shape[1]
    rows = (stay[:, None] * K + ops_for(stay).arange(K, stay)).reshape(-1)  # (n'*K,)
    return BeamState(
        ids=beams.ids[stay],
        limit=beams.limit[stay],
        lp_max=beams.lp_max[stay],
        alive=beams.alive.rows(stay),
        finished=beams.finished.rows(stay),
        prev=beams.prev[stay],
        parents=beams.parents[stay],
        enc=beams.enc.index_select(rows),
    )


def beam_search(
    model: StepModel,
    src: Array,
    src_len: Array,
    *,
    beam: int = 5,
    alpha: float = 1.0,
    max_len_a: float = 1.5,
    max_len_b: int = 10,
    min_len: int = 1,
    n_best: int = 1,
    no_repeat_ngram: Optional[int] = None,
    coverage: float = 0.0,
    return_attention: bool = False,
) -> Hypotheses:
    """Beam search over all sentences and beams at once (active sentences x K rows per step).

    Each step extends the K alive hypotheses of every sentence still searching, takes
    the 2K best candidates (from the 2K best tokens of each beam, which hold them),
    moves those ending in EOS into the sentence's pool of the K best finished ones (by
    length-normalized score), and keeps the K best others alive.  A sentence is done
    when its pool is full and no alive hypothesis can still beat the pool's worst
    member, or when nothing is alive; its pool is then written out and its rows leave
    the batch, so later steps only compute the sentences still searching.

    ``coverage`` > 0 adds the GNMT coverage penalty with that weight (beta) to finished
    hypotheses' scores; ``no_repeat_ngram`` n forbids repeating any n-gram.  ``src`` (B, S)
    and ``src_len`` (B,) are torch tensors or numpy arrays, and so is the output.
    """
    xp, (B, S), K = ops_for(src), src.shape, beam
    if n_best > K:
        raise ValueError(f"n_best={n_best} exceeds beam={K}")
    with xp.inference():
        enc = model.encode(src, src_len).index_select(xp.repeat(xp.arange(B, src), K))
        state = model.init_state(enc)
        limit = max_lengths(src_len, max_len_a, max_len_b)  # (B,)
        padding = xp.to_float(xp.arange(S, src) >= src_len[:, None])  # (B, S) 1 = padding
        beams = start(enc, limit, K, alpha, S if return_attention else None, padding if coverage > 0 else None)
        done_ids: list[Array] = []  # sentences done, in the order they finished
        done_pools: list[Beams] = []  # and their finished hypotheses
        row_limit = xp.repeat(beams.limit, K)  # (n*K,) each row's output budget
        shortest = int(beams.limit.min())  # on the host: no row runs out of room before it
        steps = beams.alive.tokens.shape[2]
        check_every = DONE_CHECK_EVERY if xp.waits(src) else 1
        for t in range(steps):
            n = beams.alive.tokens.shape[0]
            prefix = beams.alive.tokens[:, :, :t].reshape(n * K, t) if no_repeat_ngram else None  # (n*K, t)
            scores, log_z, state, attn = next_token_scores(
                model,
                beams.prev.reshape(-1),
                state,
                beams.enc,
                t,
                min_len,
                row_limit,
                prefix,
                no_repeat_ngram,
                shortest,
            )
            beams = advance(beams, scores, log_z, attn, t, alpha, coverage)
            if (t + 1) % check_every == 0 or t + 1 == steps:  # a look reads the device (on a GPU)
                done = is_done(beams.finished.scores, beams.alive.log_probs, beams.lp_max)
                if bool(done.any()):
                    finished = xp.nonzero(done)
                    done_ids.append(beams.ids[finished])
                    done_pools.append(beams.finished.rows(finished))
                    stay = xp.nonzero(~done)  # (n',) rows still searching
                    if len(stay) == 0:
                        break
                    beams = compact(beams, stay)
                    row_limit, shortest = xp.repeat(beams.limit, K), int(beams.limit.min())
            state = state.index_select(beams.parents.reshape(-1))
        else:  # each sentence's last allowed step admits only EOS, which ends it: never reached
            raise AssertionError("beam search ran out of steps with unfinished sentences")

        out = Beams.cat(done_pools, dim=0).rows(xp.argsort(xp.cat(done_ids, 0)))  # (B, K, ...) in batch order
        tokens = out.tokens[:, :n_best]
        attention = out.attention[:, :n_best] if out.attention is not None else None
        return Hypotheses(tokens, (tokens != PAD).sum(-1), out.log_probs[:, :n_best], out.scores[:, :n_best], attention)
