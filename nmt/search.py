"""Greedy and beam search on tensors, batched over sentences (and beams); no file I/O.

Both searches call ``model.encode`` once (keys are projected there) and then
``model.step`` once per output position for the whole batch.  Scores are sums
of token log-probabilities; beam search ranks finished hypotheses by the GNMT
length penalty of Wu et al. (2016): ``score / ((5 + |Y|) / 6) ** alpha``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

import torch
from torch import Tensor

from nmt.data.tokenizer import BOS, EOS, PAD
from nmt.model.seq2seq import Seq2Seq
from nmt.model.state import DecoderState, EncoderOutput


@dataclass
class Hypotheses:
    """Search output for a batch: ``n`` hypotheses per sentence, best first."""

    tokens: Tensor              # (B, n, L) ids ending in EOS, PAD after it
    lengths: Tensor             # (B, n) tokens including EOS
    log_probs: Tensor           # (B, n) sum of token log-probabilities (model score)
    scores: Tensor              # (B, n) ranking score (length-normalized for beam search)
    attention: Optional[Tensor] = None  # (B, n, L, S) weights when requested


def max_lengths(src_len: Tensor, a: float, b: int) -> Tensor:
    """Per-sentence output budget ``a * src_len + b`` in tokens, EOS included."""
    return (src_len.float() * a).floor().long() + b


def length_penalty(lengths: Tensor, alpha: float) -> Tensor:
    """GNMT length penalty ``((5 + |Y|) / 6) ** alpha`` (Wu et al. 2016)."""
    return ((5.0 + lengths.float()) / 6.0) ** alpha


def _restrict(scores: Tensor, t: int, min_len: int, max_len: Tensor) -> Tensor:
    """Forbid PAD, BOS and (before ``min_len``) EOS; force EOS at each row's last position.

    Works in place on ``scores`` (N, V) and returns it.  A forced EOS keeps its own
    score (made finite), so search scores stay equal to forced-decoding scores.
    """
    scores[:, PAD] = -float("inf")
    scores[:, BOS] = -float("inf")
    if t < min_len:  # t tokens precede a token chosen at step t
        scores[:, EOS] = -float("inf")
    last = (t + 1 >= max_len).nonzero().squeeze(1)             # rows out of room (a sync on GPU,
    #                                                            as the searches sync per step anyway)
    if last.numel():
        eos = scores[last, EOS].clamp_min(torch.finfo(scores.dtype).min)
        scores[last] = -float("inf")
        scores[last, EOS] = eos
    return scores


def _next_token_scores(model: Seq2Seq, prev: Tensor, state: DecoderState, enc: EncoderOutput, t: int,
                       min_len: int, max_len: Tensor) -> tuple[Tensor, Tensor, DecoderState, Tensor]:
    """One decoder step: restricted logits (N, V), their log-normalizer (N, 1), state, attention.

    ``logits - log_z`` is log p(y_t | y_<t, x) for every allowed token; ranking raw logits
    avoids writing the full log-softmax, since only a few candidates per row are kept.
    """
    logits, state, attn = model.step(prev, state, enc)
    logits = logits.float()
    log_z = torch.logsumexp(logits, dim=-1, keepdim=True)      # before any token is forbidden
    return _restrict(logits, t, min_len, max_len), log_z, state, attn


@torch.inference_mode()
def greedy(model: Seq2Seq, src: Tensor, src_len: Tensor, *, max_len_a: float = 1.5, max_len_b: int = 10,
           min_len: int = 1, return_attention: bool = False) -> Hypotheses:
    """Pick the most probable token at every step, for all sentences at once."""
    enc = model.encode(src, src_len)
    state = model.init_state(enc)
    batch = src.size(0)
    limit = max_lengths(src_len, max_len_a, max_len_b)          # (B,)
    prev = torch.full((batch,), BOS, dtype=torch.long, device=src.device)
    done = torch.zeros(batch, dtype=torch.bool, device=src.device)
    log_probs = torch.zeros(batch, device=src.device)
    tokens, weights = [], []
    for t in range(int(limit.max())):
        scores, log_z, state, attn = _next_token_scores(model, prev, state, enc, t, min_len, limit)
        best, tok = scores.max(dim=-1)                           # (B,)
        tok = tok.masked_fill(done, PAD)
        log_probs += (best - log_z.squeeze(1)).masked_fill(done, 0.0)
        tokens.append(tok)
        if return_attention:
            weights.append(attn.float().masked_fill(done.unsqueeze(1), 0.0))
        done |= tok == EOS
        prev = tok
        if bool(done.all()):
            break
    out = torch.stack(tokens, dim=1)                             # (B, L)
    lengths = (out != PAD).sum(dim=1)
    attention = torch.stack(weights, dim=1).unsqueeze(1) if return_attention else None
    return Hypotheses(out.unsqueeze(1), lengths.unsqueeze(1), log_probs.unsqueeze(1),
                      log_probs.unsqueeze(1).clone(), attention)


@torch.inference_mode()
def beam_search(model: Seq2Seq, src: Tensor, src_len: Tensor, *, beam: int = 5, alpha: float = 1.0,
                max_len_a: float = 1.5, max_len_b: int = 10, min_len: int = 1, n_best: int = 1,
                return_attention: bool = False) -> Hypotheses:
    """Beam search over all sentences and beams at once (active sentences x K rows per step).

    Each step extends the K alive hypotheses of every sentence still searching, takes
    the 2K best candidates (from the 2K best tokens of each beam, which hold them),
    moves those ending in EOS into the sentence's pool of the K best finished ones (by
    length-normalized score), and keeps the K best others alive.  A sentence is done
    when its pool is full and no alive hypothesis can still beat the pool's worst
    member, or when nothing is alive; its pool is then written out and its rows leave
    the batch, so later steps only compute the sentences still searching.
    """
    B, K, dev = src.size(0), beam, src.device
    if n_best > K:
        raise ValueError(f"n_best={n_best} exceeds beam={K}")
    enc = model.encode(src, src_len).index_select(torch.arange(B, device=dev).repeat_interleave(K))
    state = model.init_state(enc)
    limit = max_lengths(src_len, max_len_a, max_len_b)           # (B,) of the active sentences
    L, S = int(limit.max()), src.size(1)
    neg_inf = -float("inf")
    lp_max = length_penalty(limit, alpha)                        # (B,)

    # Results of finished sentences, by sentence.
    out_scores = torch.full((B, K), neg_inf, device=dev)
    out_logp = torch.full((B, K), neg_inf, device=dev)
    out_tokens = torch.full((B, K, L), PAD, dtype=torch.long, device=dev)
    out_attn = torch.zeros((B, K, L, S), device=dev) if return_attention else None

    # Search state of the n active sentences (rows of the tensors below).
    active = torch.arange(B, device=dev)                         # (n,) sentence ids
    alive = torch.full((B, K), neg_inf, device=dev)
    alive[:, 0] = 0.0                                            # one live start per sentence
    history = torch.full((B, K, L), PAD, dtype=torch.long, device=dev)
    alive_attn = torch.zeros((B, K, L, S), device=dev) if return_attention else None
    pool_scores = torch.full((B, K), neg_inf, device=dev)       # normalized
    pool_logp = torch.full((B, K), neg_inf, device=dev)
    pool_tokens = torch.full((B, K, L), PAD, dtype=torch.long, device=dev)
    pool_attn = torch.zeros((B, K, L, S), device=dev) if return_attention else None
    prev = torch.full((B * K,), BOS, dtype=torch.long, device=dev)
    in_beam = torch.arange(2 * K, device=dev).unsqueeze(0) < K   # (1, 2K) ranks inside the beam

    for t in range(L):
        n = active.size(0)
        row_limit = limit.repeat_interleave(K)                   # (n*K,)
        scores, log_z, state, attn = _next_token_scores(model, prev, state, enc, t, min_len, row_limit)
        per_beam = min(2 * K, scores.size(1))
        tok_score, tok_id = scores.topk(per_beam, dim=1)         # (n*K, 2K) best tokens of each beam
        cand = (alive.view(-1, 1) + (tok_score - log_z)).view(n, K * per_beam)
        top, idx = cand.topk(2 * K, dim=1)                       # (n, 2K)
        src_beam = idx // per_beam
        tok = tok_id.view(n, K * per_beam).gather(1, idx)
        gather_rows = torch.arange(n, device=dev).unsqueeze(1) * K + src_beam  # (n, 2K)
        seqs = history.view(n * K, L)[gather_rows]               # (n, 2K, L)
        seqs[:, :, t] = tok
        if return_attention:
            cand_attn = alive_attn.view(n * K, L, S)[gather_rows].clone()
            cand_attn[:, :, t] = attn.float()[gather_rows]

        # Only an EOS that ranks inside the beam (top K) finishes a hypothesis, so a
        # beam of one makes exactly the choices greedy search makes.
        is_eos = (tok == EOS) & in_beam & torch.isfinite(top)
        norm = top / length_penalty(torch.full_like(top, t + 1), alpha)
        new_fin = torch.where(is_eos, norm, torch.full_like(norm, neg_inf))
        pool_scores, keep = torch.cat([pool_scores, new_fin], dim=1).topk(K, dim=1)  # of (n, 3K)
        pool_logp = torch.cat([pool_logp, top.masked_fill(~is_eos, neg_inf)], 1).gather(1, keep)
        pool_tokens = torch.cat([pool_tokens, seqs], 1).gather(1, keep.unsqueeze(-1).expand(-1, -1, L))
        if return_attention:
            both = torch.cat([pool_attn, cand_attn], 1)
            pool_attn = both.gather(1, keep.view(n, K, 1, 1).expand(-1, -1, L, S))

        # The K best non-EOS candidates stay alive.
        alive, pick = top.masked_fill(tok == EOS, neg_inf).topk(K, dim=1)  # (n, K)
        chosen = gather_rows.gather(1, pick)                     # (n, K) rows of the old beams
        history = seqs.gather(1, pick.unsqueeze(-1).expand(-1, -1, L))
        if return_attention:
            alive_attn = cand_attn.gather(1, pick.view(n, K, 1, 1).expand(-1, -1, L, S))
        prev = tok.gather(1, pick).view(-1)

        bound = alive[:, 0] / lp_max                             # best any alive one can still reach
        done = (pool_scores[:, -1] >= bound) | ~torch.isfinite(alive[:, 0])
        if bool(done.any()):
            finished = active[done]
            out_scores[finished], out_logp[finished], out_tokens[finished] = (
                pool_scores[done], pool_logp[done], pool_tokens[done])
            if return_attention:
                out_attn[finished] = pool_attn[done]
            stay = (~done).nonzero().squeeze(1)                  # (n',) rows still searching
            if stay.numel() == 0:
                break
            stay_rows = (stay.unsqueeze(1) * K + torch.arange(K, device=dev)).view(-1)
            enc = enc.index_select(stay_rows)
            chosen, prev = chosen[stay], prev.view(n, K)[stay].reshape(-1)
            active, limit, lp_max = active[stay], limit[stay], lp_max[stay]
            alive, history = alive[stay], history[stay]
            pool_scores, pool_logp, pool_tokens = pool_scores[stay], pool_logp[stay], pool_tokens[stay]
            if return_attention:
                alive_attn, pool_attn = alive_attn[stay], pool_attn[stay]
        state = state.index_select(chosen.reshape(-1))
    else:  # each sentence's last allowed step admits only EOS, which ends it: never reached
        raise AssertionError("beam search ran out of steps with unfinished sentences")

    n = n_best
    tokens = out_tokens[:, :n]
    lengths = (tokens != PAD).sum(-1)
    attention = out_attn[:, :n] if return_attention else None
    return Hypotheses(tokens, lengths, out_logp[:, :n], out_scores[:, :n], attention)


def search(model: Seq2Seq, src: Tensor, src_len: Tensor, *, beam: int, alpha: float, max_len_a: float,
           max_len_b: int, min_len: int, n_best: int = 1, return_attention: bool = False) -> Hypotheses:
    """Greedy search for ``beam == 1`` (it is what a beam of one computes), else beam search."""
    if beam == 1:
        return greedy(model, src, src_len, max_len_a=max_len_a, max_len_b=max_len_b,
                      min_len=min_len, return_attention=return_attention)
    return beam_search(model, src, src_len, beam=beam, alpha=alpha, max_len_a=max_len_a,
                       max_len_b=max_len_b, min_len=min_len, n_best=n_best,
                       return_attention=return_attention)
