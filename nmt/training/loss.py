"""The training objective: (label-smoothed) token cross-entropy of one batch."""

from __future__ import annotations

from typing import Optional

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from nmt.data.batching import Batch
from nmt.data.tokenizer import PAD
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
) -> Tensor:
    """Cross-entropy summed over the batch's target tokens (a scalar); padding does not count.

    The forward pass runs under ``amp`` autocast with teacher-forcing probability
    ``teacher_forcing``; ``fast`` picks the decoder path (None = automatic).  The caller
    divides by the tokens it normalizes over (a whole update's, for accumulation and DDP).
    """
    with runtime.autocast(device, amp):
        logits, _ = model(
            batch.src, batch.src_len, batch.tgt_in, teacher_forcing=teacher_forcing, fast=fast
        )  # (B, T, V)
    return F.cross_entropy(
        logits.float().flatten(0, 1),
        batch.tgt_out.flatten(),
        ignore_index=PAD,
        label_smoothing=label_smoothing,
        reduction="sum",
    )
