"""Greedy search and sampling on tensors, batched over sentences, and :func:`search`, which
picks a search from its arguments; no file I/O.  Beam search lives in :mod:`nmt.beam`.

Both greedy and beam search call ``model.encode`` once (keys are projected there) and then
``model.step`` once per output position for the whole batch.  Scores are sums of token
log-probabilities; beam search ranks finished hypotheses by the GNMT length penalty of
Wu et al. (2016): ``score / ((5 + |Y|) / 6) ** alpha``.  What the searches share is here:
:class:`StepModel`, :class:`Hypotheses`, output budgets (:func:`max_lengths`, never above
:data:`~nmt.config_sections.MAX_OUTPUT_TOKENS`),
:func:`length_penalty` and one restricted decoder step.

Rules from :mod:`nmt.decode_rules` plug in: n-gram blocking (all searches), sampling
(:func:`sample`, the greedy loop drawing instead of choosing) and the GNMT coverage
penalty (beam search, on finished hypotheses).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Optional, Protocol

import torch
from torch import Tensor

from nmt.config_sections import MAX_OUTPUT_TOKENS
from nmt.data.tokenizer import BOS, EOS, PAD
from nmt.decode_rules import Sampling, block_repeated_ngrams


class StepModel(Protocol):
    """What the searches call: a :class:`~nmt.model.seq2seq.Seq2Seq` or an :class:`~nmt.ensemble.Ensemble`.

    The encoding and the state are whatever the model returns; the searches only pass them
    back and reorder their rows with ``index_select``.
    """

    def encode(self, src: Tensor, src_len: Tensor) -> Any: ...

    def init_state(self, enc: Any) -> Any: ...

    def step(self, prev: Tensor, state: Any, enc: Any) -> tuple[Tensor, Any, Tensor]: ...


@dataclass
class Hypotheses:
    """Search output for a batch: ``n`` hypotheses per sentence, best first."""

    tokens: Tensor              # (B, n, L) ids ending in EOS, PAD after it
    lengths: Tensor             # (B, n) tokens including EOS
    log_probs: Tensor           # (B, n) sum of token log-probabilities (model score)
    scores: Tensor              # (B, n) ranking score (length-normalized for beam search)
    attention: Optional[Tensor] = None  # (B, n, L, S) weights when requested


def max_lengths(src_len: Tensor, a: float, b: int) -> Tensor:
    """Per-sentence output budget ``a * src_len + b`` in tokens, EOS included, at most
    :data:`~nmt.config_sections.MAX_OUTPUT_TOKENS` whatever ``a`` and ``b`` (the bound every
    search keeps, however it was called).  Computed in floats, so a huge ``a`` cannot overflow."""
    budget = (src_len.float() * a).floor() + b
    return budget.clamp(max=MAX_OUTPUT_TOKENS).long()


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


def next_token_scores(model: StepModel, prev: Tensor, state: Any, enc: Any, t: int, min_len: int,
                       max_len: Tensor, prefix: Tensor, no_repeat_ngram: Optional[int]
                       ) -> tuple[Tensor, Tensor, Any, Tensor]:
    """One decoder step: restricted logits (N, V), their log-normalizer (N, 1), state, attention.

    ``logits - log_z`` is log p(y_t | y_<t, x) for every allowed token; ranking raw logits
    avoids writing the full log-softmax, since only a few candidates per row are kept.
    ``prefix`` (N, t) is each row's output so far, for ``no_repeat_ngram`` blocking.
    """
    logits, state, attn = model.step(prev, state, enc)
    logits = logits.float()
    log_z = torch.logsumexp(logits, dim=-1, keepdim=True)      # before any token is forbidden
    if no_repeat_ngram:
        block_repeated_ngrams(logits, prefix, no_repeat_ngram)
    return _restrict(logits, t, min_len, max_len), log_z, state, attn


def _best(scores: Tensor) -> Tensor:
    """The most probable token of every row (N,)."""
    return scores.max(dim=-1).indices


@torch.inference_mode()
def greedy(model: StepModel, src: Tensor, src_len: Tensor, *, max_len_a: float = 1.5, max_len_b: int = 10,
           min_len: int = 1, no_repeat_ngram: Optional[int] = None, return_attention: bool = False,
           choose: Callable[[Tensor], Tensor] = _best) -> Hypotheses:
    """One token per step for all sentences at once: the most probable, or what ``choose``
    picks from the restricted scores (N, V) (:func:`sample` draws)."""
    enc = model.encode(src, src_len)
    state = model.init_state(enc)
    batch = src.size(0)
    limit = max_lengths(src_len, max_len_a, max_len_b)          # (B,)
    prev = torch.full((batch,), BOS, dtype=torch.long, device=src.device)
    done = torch.zeros(batch, dtype=torch.bool, device=src.device)
    log_probs = torch.zeros(batch, device=src.device)
    out = torch.full((batch, int(limit.max())), PAD, dtype=torch.long, device=src.device)  # (B, L)
    weights = []
    for t in range(out.size(1)):
        scores, log_z, state, attn = next_token_scores(model, prev, state, enc, t, min_len, limit,
                                                        out[:, :t], no_repeat_ngram)
        tok = choose(scores)                                     # (B,)
        chosen = scores.gather(1, tok.unsqueeze(1)).squeeze(1)
        tok = tok.masked_fill(done, PAD)
        log_probs += (chosen - log_z.squeeze(1)).masked_fill(done, 0.0)
        out[:, t] = tok
        if return_attention:
            weights.append(attn.float().masked_fill(done.unsqueeze(1), 0.0))
        done |= tok == EOS
        prev = tok
        if bool(done.all()):
            out = out[:, : t + 1]
            break
    lengths = (out != PAD).sum(dim=1)
    attention = torch.stack(weights, dim=1).unsqueeze(1) if return_attention else None
    return Hypotheses(out.unsqueeze(1), lengths.unsqueeze(1), log_probs.unsqueeze(1),
                      log_probs.unsqueeze(1).clone(), attention)


def sample(model: StepModel, src: Tensor, src_len: Tensor, sampling: Sampling, *, n: int = 1,
           max_len_a: float = 1.5, max_len_b: int = 10, min_len: int = 1,
           no_repeat_ngram: Optional[int] = None, return_attention: bool = False) -> Hypotheses:
    """``n`` outputs per sentence, each token drawn by ``sampling``; the most probable first.

    Scores are the model's own log-probabilities of each sample (before temperature and
    filtering), so they equal forced-decoding scores as for the other searches.
    """
    B = src.size(0)
    rows = torch.arange(B, device=src.device).repeat_interleave(n)  # each sentence n times
    hyp = greedy(model, src[rows], src_len[rows], max_len_a=max_len_a, max_len_b=max_len_b, min_len=min_len,
                 no_repeat_ngram=no_repeat_ngram, return_attention=return_attention, choose=sampling.draw)
    order = hyp.log_probs.view(B, n).argsort(dim=1, descending=True)  # (B, n)
    pick = (order + torch.arange(B, device=src.device).unsqueeze(1) * n).view(-1)
    attention = None if hyp.attention is None else hyp.attention[pick, 0].view(B, n, *hyp.attention.shape[2:])
    return Hypotheses(hyp.tokens[pick, 0].view(B, n, -1), hyp.lengths[pick, 0].view(B, n),
                      hyp.log_probs[pick, 0].view(B, n), hyp.scores[pick, 0].view(B, n), attention)


def search(model: StepModel, src: Tensor, src_len: Tensor, *, beam: int, alpha: float, max_len_a: float,
           max_len_b: int, min_len: int, n_best: int = 1, no_repeat_ngram: Optional[int] = None,
           coverage: float = 0.0, sampling: Optional[Sampling] = None,
           return_attention: bool = False) -> Hypotheses:
    """``n_best`` samples with ``sampling``; greedy search for ``beam == 1`` (it is what a beam
    of one computes); else beam search (:func:`nmt.beam.beam_search`)."""
    from nmt.beam import beam_search  # imported here: nmt.beam builds on this module

    limits = dict(max_len_a=max_len_a, max_len_b=max_len_b, min_len=min_len, no_repeat_ngram=no_repeat_ngram,
                  return_attention=return_attention)
    if sampling is not None:
        return sample(model, src, src_len, sampling, n=n_best, **limits)
    if beam == 1:
        return greedy(model, src, src_len, **limits)
    return beam_search(model, src, src_len, beam=beam, alpha=alpha, n_best=n_best, coverage=coverage, **limits)
