"""Forced decoding: the model's log-probability of a given output, token by token, with its attention.

The decoder is fed the given tokens instead of its own choices, one :meth:`step` at a time, the
call every search makes (:class:`~nmt.decode.common.StepModel`), so a forced score is computed as
a search computes its own: ``logits[y_t] - logsumexp(logits)`` on the float logits of each step.
A search's ``log_probs`` of a hypothesis therefore equal the forced score of that hypothesis.
Like the searches, this runs on torch tensors or numpy arrays (an exported model) alike.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any, Optional

import numpy as np

from nmt.data.tokenizer import BOS, EOS, PAD
from nmt.decode.arrays import Array, ops_for
from nmt.decode.batched import pad_ids
from nmt.decode.common import StepModel
from nmt.util.errors import UserError


@dataclass
class Forced:
    """One output scored under the model: per-token log-probabilities (the output's tokens, then
    EOS) and, where the engine has them, the attention weights (tokens + 1, S) on the host."""

    log_probs: np.ndarray  # (T + 1,) float64
    attention: Optional[np.ndarray] = None  # (T + 1, S) float64

    @property
    def total(self) -> float:
        """log P(y, EOS | x): the sum a search reports as a hypothesis's ``log_probs``."""
        return float(self.log_probs.sum())


def force_decode(
    model: StepModel, src: Array, src_len: Array, tgt: Array, return_attention: bool = False
) -> tuple[Array, Optional[Array]]:
    """Token log-probabilities (B, T) of ``tgt`` (B, T), each row its tokens then EOS then PAD,
    0 at PAD; with ``return_attention``, the weights of every step (B, T, S) as well."""
    xp = ops_for(src)
    with xp.inference():
        enc = model.encode(src, src_len)
        state = model.init_state(enc)
        prev = xp.full((src.shape[0],), BOS, "long", like=src)
        scores, weights = [], []
        for t in range(tgt.shape[1]):
            logits, state, attn = model.step(prev, state, enc)
            logits = xp.to_float(logits)
            chosen = xp.take_along(logits, tgt[:, t : t + 1], 1)[:, 0]
            scores.append(xp.masked_fill(chosen - xp.logsumexp(logits)[:, 0], tgt[:, t] == PAD, 0.0))
            if return_attention:
                weights.append(xp.to_float(attn))
            prev = tgt[:, t]
        attention = xp.stack(weights, 1) if return_attention else None
        return xp.stack(scores, 1), attention


ForceRun = Callable[[np.ndarray, np.ndarray, np.ndarray], tuple[Any, Optional[Any]]]
"""``run(src (B, S), src_len (B,), tgt (B, T))`` on int64 arrays: :func:`force_decode` where the model lives."""


def check_pairs(sources: Sequence[Sequence[int]], targets: Sequence[Sequence[int]]) -> None:
    """Refuse pairs no forced pass can score: a count that differs, or a source with no pieces."""
    if len(sources) != len(targets):
        raise UserError(f"{len(sources)} sources but {len(targets)} targets: give one target per source")
    blank = next((i for i, s in enumerate(sources) if len(s) == 0), None)
    if blank is not None:
        raise UserError(f"source {blank} is blank: a model scores an output only given some source text")


def pair_batches(
    sources: Sequence[Sequence[int]], targets: Sequence[Sequence[int]], batch_size: int
) -> Iterator[tuple[Sequence[Sequence[int]], Sequence[Sequence[int]]]]:
    """The pairs in input order, ``batch_size`` at a time (the last batch may be shorter)."""
    if batch_size < 1:
        raise ValueError(f"batch_size={batch_size}: give 1 or more pairs a batch")
    for start in range(0, len(sources), batch_size):
        yield sources[start : start + batch_size], targets[start : start + batch_size]


def crop_pairs(
    batch: np.ndarray, sources: Sequence[Sequence[int]], targets: Sequence[Sequence[int]]
) -> list[np.ndarray]:
    """Each pair's weights out of a padded batch (B, ..., T, S): row k cut to (len(target) + 1,
    len(source)), the target's tokens and EOS against the source's pieces, padding left out."""
    return [batch[k, ..., : len(t) + 1, : len(s)] for k, (s, t) in enumerate(zip(sources, targets))]


def force_batches(
    sources: Sequence[Sequence[int]], targets: Sequence[Sequence[int]], run: ForceRun, *, batch_size: int
) -> list[Forced]:
    """Score every target (ids without EOS) given its source (ids, not empty), in input order,
    ``batch_size`` pairs per call of ``run``; results copied to the host as numpy arrays."""
    check_pairs(sources, targets)
    results: list[Forced] = []
    for srcs, tgts in pair_batches(sources, targets, batch_size):
        src, src_len = pad_ids(srcs)
        tgt, _ = pad_ids([[*t, EOS] for t in tgts])
        log_probs, attention = run(src, src_len, tgt)
        xp = ops_for(log_probs)
        log_probs = np.asarray(xp.host(log_probs), dtype=np.float64)
        maps: list[Optional[np.ndarray]] = [None] * len(tgts)
        if attention is not None:
            maps = list(crop_pairs(np.asarray(xp.host(attention), dtype=np.float64), srcs, tgts))
        results += [Forced(log_probs[k, : len(t) + 1], maps[k]) for k, t in enumerate(tgts)]
    return results
