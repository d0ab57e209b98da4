"""Word dropout on input ids, shared by both model kinds."""

from __future__ import annotations

import torch
from torch import Tensor

from nmt.data.tokenizer import PAD, UNK


def word_dropout(ids: Tensor, p: float, skip_first: bool = False) -> Tensor:
    """``ids`` (B, T) with each real token replaced by <unk> with probability ``p``.

    Word dropout (Gal & Ghahramani 2016, as Sennrich et al. 2016 applied it to NMT): the model
    cannot lean on any one input word, so it learns from context.  Padding is never replaced,
    nor column 0 with ``skip_first``.  Draws from the global generator only when ``p > 0``, so
    runs without it are unchanged and a resumed run draws what the uninterrupted one drew.
    """
    if p <= 0.0:
        return ids
    drop = (torch.rand(ids.shape, device=ids.device) < p) & (ids != PAD)
    if skip_first:
        drop[:, 0] = False
    return ids.masked_fill(drop, UNK)
