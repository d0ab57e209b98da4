"""Greedy search and sampling on tensors, batched over sentences; no file I/O.

Greedy search takes the most probable token at every step for all sentences at once;
sampling (:func:`sample`) is the same loop drawing each token with a
:class:`~nmt.decode.rules.Sampling` rule instead.  Beam search lives in
:mod:`nmt.decode.beam`, what they share in :mod:`nmt.decode.common`, and the
:func:`~nmt.decode.inference.search` dispatcher, which picks one from its arguments, in
:mod:`nmt.decode.inference`.  N-gram blocking (:mod:`nmt.decode.rules`) applies to both.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Optional

import torch
from torch import Tensor

from nmt.data.tokenizer import BOS, EOS, PAD
from nmt.decode.common import Hypotheses, StepModel, max_lengths, next_token_scores
from nmt.decode.rules import Sampling


def _best(scores: Tensor) -> Tensor:
    """The most probable token of every row (N,)."""
    return scores.max(dim=-1).indices


@torch.inference_mode()
def greedy(
    model: StepModel,
    src: Tensor,
    src_len: Tensor,
    *,
    max_len_a: float = 1.5,
    max_len_b: int = 10,
    min_len: int = 1,
    no_repeat_ngram: Optional[int] = None,
    return_attention: bool = False,
    choose: Callable[[Tensor], Tensor] = _best,
) -> Hypotheses:
    """One token per step for all sentences at once: the most probable, or what ``choose``
    picks from the restricted scores (N, V) (:func:`sample` draws)."""
    enc = model.encode(src, src_len)
    state = model.init_state(enc)
    batch = src.size(0)
    limit = max_lengths(src_len, max_len_a, max_len_b)  # (B,)
    prev = torch.full((batch,), BOS, dtype=torch.long, device=src.device)
    done = torch.zeros(batch, dtype=torch.bool, device=src.device)
    log_probs = torch.zeros(batch, device=src.device)
    out = torch.full((batch, int(limit.max())), PAD, dtype=torch.long, device=src.device)  # (B, L)
    weights = []
    for t in range(out.size(1)):
        scores, log_z, state, attn = next_token_scores(
            model, prev, state, enc, t, min_len, limit, out[:, :t], no_repeat_ngram
        )
        tok = choose(scores)  # (B,)
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
    return Hypotheses(
        out.unsqueeze(1), lengths.unsqueeze(1), log_probs.unsqueeze(1), log_probs.unsqueeze(1).clone(), attention
    )


def sample(
    model: StepModel,
    src: Tensor,
    src_len: Tensor,
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
    B = src.size(0)
    rows = torch.arange(B, device=src.device).repeat_interleave(n)  # each sentence n times
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
    order = hyp.log_probs.view(B, n).argsort(dim=1, descending=True)  # (B, n)
    pick = (order + torch.arange(B, device=src.device).unsqueeze(1) * n).view(-1)
    attention = None if hyp.attention is None else hyp.attention[pick, 0].view(B, n, *hyp.attention.shape[2:])
    return Hypotheses(
        hyp.tokens[pick, 0].view(B, n, -1),
        hyp.lengths[pick, 0].view(B, n),
        hyp.log_probs[pick, 0].view(B, n),
        hyp.scores[pick, 0].view(B, n),
        attention,
    )
