"""What one target token costs a model: floating-point operations of its matrix products.

Counted, not estimated: one teacher-forced forward pass over a single sentence pair of
``src_len`` source and ``tgt_len`` target tokens runs under ``torch.utils.flop_counter``, which
adds up the operations of every matrix product it dispatches (a multiply-add counts as 2), the
GRU and LSTM cells' included; element-wise work (activations, softmax, dropout) is not counted.
Dividing by ``tgt_len`` gives the cost per target token, the unit in which translation is paid:
for an RNN with attention it grows with the source length (each step attends over it), so the
lengths are part of the figure.
"""

from __future__ import annotations

import torch
from torch import nn
from torch.utils.flop_counter import FlopCounterMode

from nmt.data.tokenizer import BOS

PAIR_LENGTHS = (16, 16)
"""Source and target tokens of the pair that is counted (Multi30k's sentences average 12-16 pieces)."""

_TOKEN = 5  # any ordinary piece id: the count does not depend on which


def _mv_flops(matrix_shape: tuple[int, ...], vector_shape: tuple[int, ...], *args: object, **kwargs: object) -> int:
    """A matrix-vector product (m x k) @ (k): one multiply-add, 2 FLOPs, per matrix entry."""
    rows, inner = matrix_shape
    return 2 * rows * inner


UNCOUNTED = {torch.ops.aten.mv: _mv_flops}
"""Matrix products ``torch.utils.flop_counter`` has no formula for: ``aten.mv``, the additive energy's
``v^T tanh(...)`` (``hidden @ v`` with a vector ``v``), which it left out of every count before."""


def flops_per_target_token(model: nn.Module, src_len: int = PAIR_LENGTHS[0], tgt_len: int = PAIR_LENGTHS[1]) -> float:
    """Forward FLOPs of the model's matrix products per target token, on one pair of the given lengths."""
    device = next(model.parameters()).device
    src = torch.full((1, src_len), _TOKEN, dtype=torch.long, device=device)
    tgt_in = torch.full((1, tgt_len), _TOKEN, dtype=torch.long, device=device)
    tgt_in[0, 0] = BOS
    was_training = model.training
    model.eval()
    try:
        with torch.no_grad(), FlopCounterMode(display=False, custom_mapping=UNCOUNTED) as counter:
            model(src, torch.tensor([src_len], device=device), tgt_in)
    finally:
        model.train(was_training)
    return counter.get_total_flops() / tgt_len
