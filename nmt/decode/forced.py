"""Forced decoding: the model's log-probability of a given output, token by token, with its attention.

The decoder is fed the given tokens instead of its own choices, one :meth:`step` at a time, the
call every search makes (:class:`~nmt.decode.common.StepModel`), so a forced score is computed as
a search computes its own: ``logits[y_t] - logsumexp(logits)`` on the float logits of each step.
A search's ``log_probs`` of a hypothesis therefore equal the forced score of that hypothesis.
Like the searches, this runs on torch tensors or numpy arrays (an exported model) alike.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
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


def force_batches(
    sources: Sequence[Sequence[int]], targets: Sequence[Sequence[int]], run: ForceRun, *, batch_size: int
) -> list[Forced]:
    """Score every target (ids without EOS) given its source (ids, not empty), in input order,
    ``batch_size`` pairs per call of ``run``; results copied to the host as numpy arrays."""
    if len(sources) != len(targets):
        raise UserError(f"{len(sources)} sources but {len(targets)} targets: give one target per source")
    blank = next((i for i, s in enumerate(sources) if len(s) == 0), None)
    if blank is not None:
        raise UserError(f"source {blank} is blank: a model scores an output only given some source text")
    results: list[Forced] = []
    for start in range(0, len(sources), max(1, batch_size)):
        src, src_len = pad_ids(sources[start : start + batch_size])
        tgt, _ = pad_ids([[*t, EOS] for t in targets[start : start + batch_size]])
        log_probs, attention = run(src, src_len, tgt)
        xp = ops_for(log_probs)
        log_probs = np.asarray(xp.host(log_probs), dtype=np.float64)
        attention = None if attention is None else np.asarray(xp.host(attention), dtype=np.float64)
        for row, target in enumerate(targets[start : start + batch_size]):
            n, s = len(target) + 1, int(src_len[row])
            results.append(Forced(log_probs[row, :n], None if attention is None else attention[row, :n, :s]))
    return results
