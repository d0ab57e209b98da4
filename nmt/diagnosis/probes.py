"""What ``nmt diagnose attention`` measures, through forward hooks on a model it does not change.

:class:`AttentionProbe` reads the decoder's attention scores and weights, :class:`ReadoutProbe`
the readout's tanh inputs, and :func:`grad_norms` the gradient of each part of the model.
"""

from __future__ import annotations

import math
from typing import Any

import torch

from nmt.model.combine import TanhCombine

PARTS = {
    "encoder": "encoder.",
    "attention": "decoder.attention.",
    "decoder_rnn": "decoder.rnn.",
    "readout": "decoder.readout.",
    "output": "decoder.output.",
    "tgt_embedding": "decoder.embedding.",
}
"""The parts of an RNN model whose gradient norms are reported, by the prefix of their parameters' names."""

SATURATED = 2.65
"""|x| beyond which tanh(x) exceeds 0.99 in size (its derivative is below 0.02)."""


class AttentionProbe:
    """Forward hook on the decoder's attention: collects score and weight statistics."""

    def __init__(self, attention: torch.nn.Module) -> None:
        self.rows: list[dict[str, float]] = []
        self.handle = attention.register_forward_hook(self.hook)

    @torch.no_grad()
    def hook(self, module: Any, inputs: tuple[Any, ...], output: tuple[Any, ...]) -> None:
        query, keys, _, mask = inputs
        context, weights = output  # (B, [T,] C), (B, [T,] S)
        if query.dim() == 2:
            query, context, weights = query.unsqueeze(1), context.unsqueeze(1), weights.unsqueeze(1)
        energy = module.energy(module.project_query(query), keys).float().mean(1)  # (B, T, S), mean over heads
        real = mask.unsqueeze(1).expand_as(weights) if mask is not None else torch.ones_like(weights, dtype=torch.bool)
        lengths = real.sum(-1).clamp(min=2).float()  # (B, T)
        p = weights.float().clamp_min(1e-12)
        entropy = -(p * p.log()).masked_fill(~real, 0).sum(-1) / lengths.log()
        centred = energy - (energy * real).sum(-1, keepdim=True) / real.sum(-1, keepdim=True).clamp(min=1)
        var = (centred.pow(2) * real).sum(-1) / (real.sum(-1) - 1).clamp(min=1)
        self.rows.append(
            {
                "energy_std": var.sqrt().mean().item(),
                "entropy": entropy.mean().item(),
                "max_weight": weights.float().max(-1).values.mean().item(),
                "context_rms": context.float().pow(2).mean().sqrt().item(),
            }
        )

    def summary(self) -> dict[str, float]:
        """The mean of each statistic over the calls seen."""
        return {k: round(sum(r[k] for r in self.rows) / len(self.rows), 4) for k in self.rows[0]}


class ReadoutProbe:
    """Forward hook on the decoder's combine step (``readout``): the share of saturated tanh inputs.

    The ``tanh`` combine returns tanh(x), and |x| > :data:`SATURATED` exactly where |tanh(x)| > tanh(SATURATED),
    so its outputs tell.  Another combine has no tanh to saturate: the share is NaN there.
    """

    def __init__(self, readout: torch.nn.Module) -> None:
        self.saturated, self.total = 0, 0
        self.applies = isinstance(readout, TanhCombine)
        self.handle = readout.register_forward_hook(self.hook)

    @torch.no_grad()
    def hook(self, module: torch.nn.Module, inputs: tuple[Any, ...], output: torch.Tensor) -> None:
        self.saturated += int((output.abs() > math.tanh(SATURATED)).sum())
        self.total += output.numel()

    def summary(self) -> dict[str, float]:
        share = round(self.saturated / max(self.total, 1), 4) if self.applies else float("nan")
        return {"readout_saturation": share}


def grad_norms(model: torch.nn.Module) -> dict[str, float]:
    """Gradient norm per part of the model (parameters named by :data:`PARTS` prefixes)."""
    sums = {part: 0.0 for part in PARTS}
    for name, param in model.named_parameters():
        if param.grad is None:
            continue
        for part, prefix in PARTS.items():
            if name.startswith(prefix):
                sums[part] += param.grad.float().pow(2).sum().item()
    return {part: round(math.sqrt(total), 4) for part, total in sums.items()}
