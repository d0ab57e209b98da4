"""nmt's decoder loop over target positions, registered as a user's loop is (``train.decoder_loop``).

Teacher forcing with probability p (lecture 002; scheduled sampling, Bengio et al. 2015): at each
position t > 0 each sentence reads the reference y_t with probability p, else the argmax of its
own logits at t - 1.  The argmax carries no gradient: the prediction is fed back as a constant.

A loop sees the decoder only through ``step(tokens, state) -> (logits, state)``: tokens (B,),
logits (B, V); the state is the decoder's (:class:`~nmt.model.state.StepState`), attention
included, and the loop passes it on without looking inside.  The decoder collects the attention
weights of every step itself (:meth:`nmt.model.decoder.Decoder.forward`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch
from torch import Tensor

from nmt.config.decoder_loops import register_loop

Step = Callable[[Tensor, Any], tuple[Tensor, Any]]
"""``step(tokens (B,), state) -> (logits (B, V), state)``: one decoder position."""

Loop = Callable[..., Tensor]
"""A decoder loop ``(step, tgt_in, state, p) -> logits (B, T, V)`` (:mod:`nmt.config.decoder_loops`)."""


@register_loop("sampled")
def sampled(step: Step, tgt_in: Tensor, state: Any, p: float) -> Tensor:
    """The reference with probability ``p`` per sentence and position, else the previous argmax: logits (B, T, V).

    The coins are drawn up front, one (B, T) draw from the global RNG on the data's device, so a
    loop that draws them the same way trains to the same losses under one seed.
    """
    B, T = tgt_in.shape
    use_ref = torch.rand(B, T, device=tgt_in.device) < p  # (B, T); position 0 always reads BOS
    tokens = tgt_in[:, 0]
    logits: list[Tensor] = []
    for t in range(T):
        if t > 0:
            tokens = torch.where(use_ref[:, t], tgt_in[:, t], logits[-1].argmax(-1))
        out, state = step(tokens, state)
        logits.append(out)
    return torch.stack(logits, dim=1)
