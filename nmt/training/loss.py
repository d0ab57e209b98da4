"""The training objective: (label-smoothed) token cross-entropy of one batch, plus See et al.'s coverage loss."""

from __future__ import annotations

from typing import Optional

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from nmt.data.batching import Batch
from nmt.data.tokenizer import PAD
from nmt.model.decoder_loop import Loop
from nmt.util import runtime


def batch_loss(
    model: nn.Module,
    batch: Batch,
    *,
    label_smoothing: float,
    teacher_forcing: float,
    device: torch.device,
    amp: Optional[torch.dtype],
    fast: Optional[bool] = None,
    coverage_loss: float = 0.0,
    loop: Optional[Loop] = None,
) -> Tensor:
    """Cross-entropy summed over the batch's target tokens (a scalar); padding does not count.

    The forward pass runs under ``amp`` autocast with teacher-forcing probability
    ``teacher_forcing``, or a user's decoder ``loop``; ``fast`` picks the decoder path (None = automatic).  The caller
    divides by the tokens it normalizes over (a whole update's, for accumulation and DDP).
    ``coverage_loss`` > 0 adds lambda times :func:`coverage_penalty`.
    """
    looping = {} if loop is None else {"loop": loop}  # a model of the user's without a loop keeps its signature
    with runtime.autocast(device, amp):
        logits, weights = model(
            batch.src, batch.src_len, batch.tgt_in, teacher_forcing=teacher_forcing, fast=fast, **looping
        )  # (B, T, V), (B, T, S)
    loss = F.cross_entropy(
        logits.float().flatten(0, 1),
        batch.tgt_out.flatten(),
        ignore_index=PAD,
        label_smoothing=label_smoothing,
        reduction="sum",
    )
    if coverage_loss > 0:
        loss = loss + coverage_loss * coverage_penalty(weights.float(), batch.tgt_out != PAD)
    return loss


def coverage_penalty(weights: Tensor, real: Tensor) -> Tensor:
    """See et al.'s (2017) coverage loss summed over real target tokens: sum_t sum_i min(a_{t,i}, c_{t,i}).

    ``weights`` (B, T, S) are each step's attention weights, ``real`` (B, T) marks the target tokens
    that count; c_t = sum_{t' < t} a_{t'} is the coverage before step t.  A position attended at one
    step costs at the next as much as it is attended again (up to its coverage), so repeating is
    penalized and moving on is not.
    """
    coverage = weights.cumsum(1) - weights  # (B, T, S): the weights of the steps before t
    per_token = torch.minimum(weights, coverage).sum(-1)  # (B, T)
    return (per_token * real).sum()
