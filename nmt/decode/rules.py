"""Rules a search applies to one step's scores: n-gram blocking, sampling, GNMT coverage.

Each works on plain arrays, so it is tested without a model; :mod:`nmt.decode.greedy` and
:mod:`nmt.decode.beam` call them.  Scores are restricted logits (N, V): log-probabilities up to
each row's normalizer, with forbidden tokens at -inf.  N-gram blocking and the coverage
penalty take torch tensors or numpy arrays (:mod:`nmt.decode.arrays`); sampling draws with a
``torch.Generator`` and so needs tensors, but torch is imported only when a token is drawn.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Optional

from nmt.data.tokenizer import PAD
from nmt.decode.arrays import Array, ops_for

if TYPE_CHECKING:
    import torch
    from torch import Tensor

NEG_INF = -float("inf")


def block_repeated_ngrams(scores: Array, prefix: Array, n: int) -> Array:
    """Forbid (in place) every token that would repeat an n-gram already in the row's output.

    ``prefix`` (N, t) holds each row's output so far.  A token y is banned when the last
    n - 1 tokens followed by y occur earlier in the prefix, so no finished output holds an
    n-gram twice (n = 1: no token twice).  Only output tokens are compared; PAD in a
    finished row's prefix bans PAD, which is never allowed anyway.
    """
    t = prefix.shape[1]
    if t < n:  # an n-gram needs n earlier tokens to be repeated
        return scores
    xp = ops_for(scores)
    windows = xp.windows(prefix, n)  # (N, t - n + 1, n): every n-gram so far
    tail = prefix[:, t - n + 1 :]  # (N, n - 1): what the next token would follow
    match = (windows[:, :, :-1] == tail[:, None]).all(-1)  # (N, W): n-grams whose first n-1 tokens recur
    banned = xp.masked_fill(windows[:, :, -1], ~match, PAD)  # their last tokens; the others point at PAD
    return xp.scatter_fill_(scores, banned, NEG_INF)


@dataclass(frozen=True)
class Sampling:
    """Draw each token from the model's distribution instead of taking the best.

    The distribution is sharpened or flattened by ``temperature``, then cut to the
    ``top_k`` most probable tokens (0 = all) and to the smallest set whose probability
    reaches ``top_p`` (nucleus sampling, Holtzman et al. 2020; 1 = all).  ``generator``
    makes the draws repeatable.
    """

    top_k: int = 0
    top_p: float = 1.0
    temperature: float = 1.0
    generator: Optional[torch.Generator] = None

    def filter(self, scores: Tensor) -> Tensor:
        """Tempered logits (N, V) with every token outside top-k and top-p at -inf (a new tensor)."""
        logits = scores / self.temperature
        if 0 < self.top_k < logits.size(1):
            kth = logits.topk(self.top_k, dim=1).values[:, -1:]  # (N, 1) the k-th best
            logits = logits.masked_fill(logits < kth, NEG_INF)
        if self.top_p < 1.0:
            sorted_logits, order = logits.sort(dim=1, descending=True)
            probs = sorted_logits.softmax(dim=1)
            before = probs.cumsum(dim=1) - probs  # mass of the better tokens
            cut = before >= self.top_p  # the best token always stays
            logits = logits.scatter(1, order, sorted_logits.masked_fill(cut, NEG_INF))
        return logits

    def draw(self, scores: Tensor) -> Tensor:
        """One token per row (N,) from the filtered distribution."""
        import torch  # only sampling needs torch; the other searches also run on numpy

        probs = self.filter(scores).softmax(dim=1)
        return torch.multinomial(probs, 1, generator=self.generator).squeeze(1)


def coverage_penalty(coverage: Array, beta: float) -> Array:
    """GNMT coverage penalty (Wu et al. 2016): ``beta * sum_i log(min(sum_j p_ij, 1))``.

    ``coverage`` (..., S) is each source position's attention summed over the output so far
    (padding positions hold 1, so they cost nothing).  The penalty is at most 0; a source
    word that got almost no attention lowers the score.  Sums are floored at 1e-6 so an
    unattended word costs a large finite amount instead of -inf (which marks empty slots).
    """
    xp = ops_for(coverage)
    return beta * xp.log(xp.clip(coverage, 1e-6, 1.0)).sum(-1)
