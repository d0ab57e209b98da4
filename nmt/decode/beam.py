"""Batched beam search on tensors (active sentences x K rows per step); no file I/O.

Beam search is built from small functions on tensors, each testable without a model:
:func:`expand` (the best continuations of every hypothesis), :func:`prune` (the 2K best
per sentence), :func:`extend` (the candidates as whole hypotheses), :func:`finish` (EOS
candidates into the pool of finished ones), :func:`survive` (the K best others stay
alive), :func:`is_done`, and :func:`compact` (sentences that are done leave the batch,
every tensor of the :class:`BeamState` at once).

Finished hypotheses rank by the GNMT length penalty and, when asked, the GNMT coverage
penalty of :mod:`nmt.decode.rules`.  The model protocol, the output type, output budgets
and the restricted decoder step come from :mod:`nmt.decode.common`, which greedy search and
sampling (:mod:`nmt.decode.greedy`) share.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any, NamedTuple, Optional

import torch
from torch import Tensor

from nmt.data.tokenizer import BOS, EOS, PAD
from nmt.decode.common import Hypotheses, StepModel, length_penalty, max_lengths, next_token_scores
from nmt.decode.rules import coverage_penalty

# Shapes: n sentences still searching, K beam size, C candidates per sentence (2K),
# P = min(2K, V) tokens kept per hypothesis, L output budget of the longest sentence,
# S source length.  The decoder state and ``enc`` hold K rows per sentence, n*K in all.


def _cat_present(tensors: list[Optional[Tensor]], dim: int) -> Optional[Tensor]:
    """An optional field of beams joined: None where the beams do not keep it, as all or none do."""
    present = [t for t in tensors if t is not None]
    if not present:
        return None
    if len(present) != len(tensors):
        raise ValueError("cannot join beams that keep this field with beams that do not")
    return torch.cat(present, dim)


@dataclass
class Beams:
    """k hypotheses for each of n sentences, in the order the search keeps them (best first).

    The alive hypotheses, the candidates of one step and the pool of finished ones all take
    this form; an empty slot has score and log-probability -inf.
    """

    scores: Tensor  # (n, k) ranking score: log_probs, or log_probs / length penalty once finished
    log_probs: Tensor  # (n, k) sum of token log-probabilities
    tokens: Tensor  # (n, k, L) ids so far, PAD after them
    attention: Optional[Tensor] = None  # (n, k, L, S) weights so far, when requested
    coverage: Optional[Tensor] = None  # (n, k, S) attention summed over the output, for the coverage penalty

    def take(self, idx: Tensor) -> Beams:
        """Hypotheses ``idx`` (n, j) of each sentence, in that order."""
        n, j = idx.shape
        L = self.tokens.size(2)
        attention = coverage = None
        if self.attention is not None:
            attention = self.attention.gather(1, idx.view(n, j, 1, 1).expand(-1, -1, L, self.attention.size(3)))
        if self.coverage is not None:
            coverage = self.coverage.gather(1, idx.unsqueeze(-1).expand(-1, -1, self.coverage.size(2)))
        return Beams(
            self.scores.gather(1, idx),
            self.log_probs.gather(1, idx),
            self.tokens.gather(1, idx.unsqueeze(-1).expand(-1, -1, L)),
            attention,
            coverage,
        )

    def rows(self, idx: Tensor) -> Beams:
        """Sentences ``idx`` (m,), in that order."""
        attention = None if self.attention is None else self.attention.index_select(0, idx)
        coverage = None if self.coverage is None else self.coverage.index_select(0, idx)
        return Beams(
            self.scores.index_select(0, idx),
            self.log_probs.index_select(0, idx),
            self.tokens.index_select(0, idx),
            attention,
            coverage,
        )

    @staticmethod
    def cat(parts: list[Beams], dim: int) -> Beams:
        """Parts joined along sentences (``dim=0``) or hypotheses (``dim=1``)."""
        attention = _cat_present([b.attention for b in parts], dim)
        coverage = _cat_present([b.coverage for b in parts], dim)
        return Beams(
            torch.cat([b.scores for b in parts], dim),
            torch.cat([b.log_probs for b in parts], dim),
            torch.cat([b.tokens for b in parts], dim),
            attention,
            coverage,
        )


class Candidates(NamedTuple):
    """The best continuations of each sentence at one step, best first."""

    log_probs: Tensor  # (n, C) log p(y_<t) + log p(y_t | y_<t, x)
    tokens: Tensor  # (n, C) the new token y_t
    rows: Tensor  # (n, C) the decoder-state row (of n*K) of the hypothesis it extends


@dataclass
class BeamState:
    """The search over the n sentences still searching, as of the end of one step."""

    ids: Tensor  # (n,) each sentence's position in the batch
    limit: Tensor  # (n,) output budget in tokens, EOS included
    lp_max: Tensor  # (n,) length penalty at the budget
    alive: Beams  # (n, K) hypotheses still growing
    finished: Beams  # (n, K) the best finished hypotheses (scores length-normalized)
    prev: Tensor  # (n, K) last token of each alive hypothesis, the next step's input
    parents: Tensor  # (n, K) the row of the last step's decoder state each alive one continues
    enc: Any  # n*K rows: each sentence's encoding (the model's type), once per beam


def _empty(B: int, K: int, L: int, S: Optional[int], device: torch.device, coverage: Optional[Tensor] = None) -> Beams:
    """K empty slots per sentence: -inf scores, PAD tokens, zero attention (when S is given),
    and ``coverage`` (B, S) in every slot when given."""
    scores = torch.full((B, K), -float("inf"), device=device)
    tokens = torch.full((B, K, L), PAD, dtype=torch.long, device=device)
    attention = None if S is None else torch.zeros((B, K, L, S), device=device)
    cov = None if coverage is None else coverage.unsqueeze(1).repeat(1, K, 1)
    return Beams(scores, scores.clone(), tokens, attention, cov)


def start(
    enc: Any, limit: Tensor, K: int, alpha: float, src_size: Optional[int], coverage: Optional[Tensor] = None
) -> BeamState:
    """One live empty hypothesis (log-probability 0) and an empty pool per sentence.

    ``enc`` holds K rows per sentence; ``limit`` (B,) the output budgets, whose largest sets L;
    ``src_size`` S when attention is wanted, else None; ``coverage`` (B, S) the starting
    attention sums when the coverage penalty is on (1 at padding, else 0), else None.
    """
    (B,), L, dev = limit.shape, int(limit.max()), limit.device
    alive = _empty(B, K, L, src_size, dev, coverage)
    alive.log_probs[:, 0] = 0.0
    alive = replace(alive, scores=alive.log_probs)  # alive ones rank by log-probability
    return BeamState(
        ids=torch.arange(B, device=dev),
        limit=limit,
        lp_max=length_penalty(limit, alpha),
        alive=alive,
        finished=_empty(B, K, L, src_size, dev, coverage),
        prev=torch.full((B, K), BOS, dtype=torch.long, device=dev),
        parents=torch.arange(B * K, device=dev).view(B, K),
        enc=enc,
    )


def expand(scores: Tensor, log_z: Tensor, alive: Tensor) -> tuple[Tensor, Tensor]:
    """The continuations worth ranking: the P = min(2K, V) best tokens of every alive hypothesis.

    ``scores`` (n*K, V) restricted logits and ``log_z`` (n*K, 1) their log-normalizer;
    ``alive`` (n, K) the hypotheses' log-probabilities.  Returns the continuations'
    log-probabilities alive + log p(y_t | y_<t, x) (n, K, P), best first per hypothesis, and
    their tokens (n, K, P).  A sentence's 2K best continuations are all among these, since
    any other is beaten by the P >= 2K (or all V) kept from its own hypothesis.
    """
    n, K = alive.shape
    P = min(2 * K, scores.size(1))
    tok_score, tok_id = scores.topk(P, dim=1)  # (n*K, P)
    cand = alive.view(-1, 1) + (tok_score - log_z)
    return cand.view(n, K, P), tok_id.view(n, K, P)


def prune(log_probs: Tensor, tokens: Tensor, width: int) -> Candidates:
    """The ``width`` best of each sentence's continuations (n, K, P), best first."""
    n, K, P = log_probs.shape
    top, idx = log_probs.view(n, K * P).topk(width, dim=1)  # (n, C)
    rows = torch.arange(n, device=idx.device).unsqueeze(1) * K + idx // P
    return Candidates(top, tokens.view(n, K * P).gather(1, idx), rows)


def extend(alive: Beams, cand: Candidates, attn: Tensor, t: int) -> Beams:
    """The candidates as whole hypotheses: each parent's tokens with the new one at position t.

    ``attn`` (n*K, S) is this step's attention of every alive hypothesis, kept where
    ``alive`` keeps attention.
    """
    n, K, L = alive.tokens.shape
    tokens = alive.tokens.view(n * K, L)[cand.rows]  # (n, C, L)
    tokens[:, :, t] = cand.tokens
    attention = coverage = None
    if alive.attention is not None:
        attention = alive.attention.view(n * K, L, -1)[cand.rows]  # (n, C, L, S)
        attention[:, :, t] = attn.float()[cand.rows]
    if alive.coverage is not None:
        coverage = alive.coverage.view(n * K, -1)[cand.rows] + attn.float()[cand.rows]  # (n, C, S)
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
    K, top = pool.scores.size(1), cand.log_probs
    in_beam = torch.arange(top.size(1), device=top.device) < K
    is_eos = (cand.tokens[:, :, t] == EOS) & in_beam & torch.isfinite(top)
    norm = top / length_penalty(torch.full_like(top, t + 1), alpha)
    if cand.coverage is not None:
        norm = norm + coverage_penalty(cand.coverage, beta)
    neg_inf = torch.full_like(norm, -float("inf"))
    new = Beams(
        torch.where(is_eos, norm, neg_inf),
        top.masked_fill(~is_eos, -float("inf")),
        cand.tokens,
        cand.attention,
        cand.coverage,
    )
    both = Beams.cat([pool, new], dim=1)  # (n, K + C)
    _, keep = both.scores.topk(K, dim=1)
    return both.take(keep)


def survive(cand: Beams, t: int, K: int) -> tuple[Beams, Tensor]:
    """The K best candidates not ending in EOS (at t), best first, and their places (n, K) among them.

    Where fewer than K do not end in EOS, the rest are filled with -inf hypotheses.
    """
    ended = cand.tokens[:, :, t] == EOS
    masked = cand.log_probs.masked_fill(ended, -float("inf"))
    _, pick = masked.topk(K, dim=1)
    return Beams(masked, masked, cand.tokens, cand.attention, cand.coverage).take(pick), pick


def advance(
    beams: BeamState, scores: Tensor, log_z: Tensor, attn: Tensor, t: int, alpha: float, beta: float = 0.0
) -> BeamState:
    """One search step from the decoder's restricted ``scores`` (n*K, V), their log-normalizer
    ``log_z`` (n*K, 1) and attention ``attn`` (n*K, S): expand, prune, finish, survive."""
    K = beams.alive.scores.size(1)
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
        parents=cand.rows.gather(1, pick),
        enc=beams.enc,
    )


def is_done(finished: Tensor, alive: Tensor, lp_max: Tensor) -> Tensor:
    """(n,) True where a sentence's search is over.

    That is when nothing is alive, or when the pool is full and its worst score ``finished``
    (n, K) beats the best any alive hypothesis can still reach: the best log-probability
    ``alive`` (n, K) can only fall, and it is divided by at most ``lp_max`` (alpha >= 0).  A
    coverage penalty is never above 0, so the bound holds with one.
    """
    bound = alive[:, 0] / lp_max
    return (finished[:, -1] >= bound) | ~torch.isfinite(alive[:, 0])


def compact(beams: BeamState, stay: Tensor) -> BeamState:
    """The search restricted to sentences ``stay`` (n',), in that order: every tensor, one index."""
    K = beams.alive.scores.size(1)
    rows = (stay.unsqueeze(1) * K + torch.arange(K, device=stay.device)).view(-1)  # (n'*K,)
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


@torch.inference_mode()
def beam_search(
    model: StepModel,
    src: Tensor,
    src_len: Tensor,
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
    hypotheses' scores; ``no_repeat_ngram`` n forbids repeating any n-gram.
    """
    B, K, dev = src.size(0), beam, src.device
    if n_best > K:
        raise ValueError(f"n_best={n_best} exceeds beam={K}")
    enc = model.encode(src, src_len).index_select(torch.arange(B, device=dev).repeat_interleave(K))
    state = model.init_state(enc)
    limit = max_lengths(src_len, max_len_a, max_len_b)  # (B,)
    padding = (torch.arange(src.size(1), device=dev) >= src_len.unsqueeze(1)).float()  # (B, S) 1 = padding
    beams = start(enc, limit, K, alpha, src.size(1) if return_attention else None, padding if coverage > 0 else None)
    done_ids: list[Tensor] = []  # sentences done, in the order they finished
    done_pools: list[Beams] = []  # and their finished hypotheses
    for t in range(beams.alive.tokens.size(2)):
        row_limit = beams.limit.repeat_interleave(K)  # (n*K,)
        n = beams.alive.tokens.size(0)
        prefix = beams.alive.tokens[:, :, :t].reshape(n * K, t)  # (n*K, t) each row's output so far
        scores, log_z, state, attn = next_token_scores(
            model, beams.prev.reshape(-1), state, beams.enc, t, min_len, row_limit, prefix, no_repeat_ngram
        )
        beams = advance(beams, scores, log_z, attn, t, alpha, coverage)
        done = is_done(beams.finished.scores, beams.alive.log_probs, beams.lp_max)
        if bool(done.any()):
            finished = done.nonzero().squeeze(1)
            done_ids.append(beams.ids[finished])
            done_pools.append(beams.finished.rows(finished))
            stay = (~done).nonzero().squeeze(1)  # (n',) rows still searching
            if stay.numel() == 0:
                break
            beams = compact(beams, stay)
        state = state.index_select(beams.parents.reshape(-1))
    else:  # each sentence's last allowed step admits only EOS, which ends it: never reached
        raise AssertionError("beam search ran out of steps with unfinished sentences")

    out = Beams.cat(done_pools, dim=0).rows(torch.cat(done_ids).argsort())  # (B, K, ...) in batch order
    tokens = out.tokens[:, :n_best]
    attention = out.attention[:, :n_best] if out.attention is not None else None
    return Hypotheses(tokens, (tokens != PAD).sum(-1), out.log_probs[:, :n_best], out.scores[:, :n_best], attention)
