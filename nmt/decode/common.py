"""What greedy, sampled and beam search share: the model they call, their output, output
budgets, the GNMT length penalty and one restricted decoder step.  No search lives here.

Every search calls ``model.encode`` once (keys are projected there) and then ``model.step``
once per output position for the whole batch.  Scores are sums of token log-probabilities;
beam search ranks finished hypotheses by the GNMT length penalty of Wu et al. (2016):
``score / ((5 + |Y|) / 6) ** alpha``.  Output budgets (:func:`max_lengths`) never exceed
:data:`~nmt.config.sections.MAX_OUTPUT_TOKENS`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Optional, Protocol

import torch
from torch import Tensor

from nmt.config.sections import MAX_OUTPUT_TOKENS
from nmt.data.tokenizer import BOS, EOS, PAD
from nmt.decode.rules import block_repeated_ngrams


class StepModel(Protocol):
    """What the searches call: a :class:`~nmt.model.seq2seq.Seq2Seq` or an :class:`~nmt.decode.ensemble.Ensemble`.

    The encoding and the state are whatever the model returns; the searches only pass them
    back and reorder their rows with ``index_select``.
    """

    def encode(self, src: Tensor, src_len: Tensor) -> Any: ...

    def init_state(self, enc: Any) -> Any: ...

    def step(self, prev: Tensor, state: Any, enc: Any) -> tuple[Tensor, Any, Tensor]: ...


@dataclass
class Hypotheses:
    """Search output for a batch: ``n`` hypotheses per sentence, best first."""

    tokens: Tensor  # (B, n, L) ids ending in EOS, PAD after it
    lengths: Tensor  # (B, n) tokens including EOS
    log_probs: Tensor  # (B, n) sum of token log-probabilities (model score)
    scores: Tensor  # (B, n) ranking score (length-normalized for beam search)
    attention: Optional[Tensor] = None  # (B, n, L, S) weights when requested


def max_lengths(src_len: Tensor, a: float, b: int) -> Tensor:
    """Per-sentence output budget ``a * src_len + b`` in tokens, EOS included, at most
    :data:`~nmt.config.sections.MAX_OUTPUT_TOKENS` whatever ``a`` and ``b`` (the bound every
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
    last = (t + 1 >= max_len).nonzero().squeeze(1)  # rows out of room (a sync on GPU,
    #                                                            as the searches sync per step anyway)
    if last.numel():
        eos = scores[last, EOS].clamp_min(torch.finfo(scores.dtype).min)
        scores[last] = -float("inf")
        scores[last, EOS] = eos
    return scores


def next_token_scores(
    model: StepModel,
    prev: Tensor,
    state: Any,
    enc: Any,
    t: int,
    min_len: int,
    max_len: Tensor,
    prefix: Tensor,
    no_repeat_ngram: Optional[int],
) -> tuple[Tensor, Tensor, Any, Tensor]:
    """One decoder step: restricted logits (N, V), their log-normalizer (N, 1), state, attention.

    ``logits - log_z`` is log p(y_t | y_<t, x) for every allowed token; ranking raw logits
    avoids writing the full log-softmax, since only a few candidates per row are kept.
    ``prefix`` (N, t) is each row's output so far, for ``no_repeat_ngram`` blocking.
    """
    logits, state, attn = model.step(prev, state, enc)
    logits = logits.float()
    log_z = torch.logsumexp(logits, dim=-1, keepdim=True)  # before any token is forbidden
    if no_repeat_ngram:
        block_repeated_ngrams(logits, prefix, no_repeat_ngram)
    return _restrict(logits, t, min_len, max_len), log_z, state, attn
