"""The *combine* step: the attentional output o_t = combine(x) the output layer reads, x the style's parts.

x is [s_t; c_t; e_t] in Bahdanau's style and [c_t; h_t] in Luong's (:mod:`nmt.model.decoder`); every
combine maps it to the decoder's size H:

- ``tanh``: o = tanh(W x + b), Luong et al.'s (2015) h~_t = tanh(W_c [c_t; h_t]) and the single-layer
  readout of Bahdanau's style (nmt's default; its parameters keep the decoder's ``readout`` names);
- ``maxout``: t = W x + b of size 2H, o_j = max(t_{2j-1}, t_{2j}), Bahdanau et al.'s (2015) own readout
  (a maxout layer of pool 2, Goodfellow et al. 2013);
- ``gate``: o = sigmoid(W_g x + b_g) * (W_i x + b_i), the gated output of "attention on attention"
  (Huang et al. 2019): a gate per unit decides how much of the combined information passes.

A user's combine subclasses :class:`Combine`, is registered (``nmt.register_combine``) and named by
``model.attention.combine``; :func:`check_combine` checks it before training.

Shapes: ... leading axes (B, or B and T), I = in_size, H = out_size.
"""

from __future__ import annotations

from typing import Union

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from nmt.config.combines import COMBINES, register_combine
from nmt.util.registry import PluginError


class Combine(nn.Module):
    """The attentional output from the style's parts: subclass it, write ``forward(x)``, register the class.

    nmt builds it as ``cls(in_size, out_size)``; Linear layers inside are Xavier-initialized like every
    other (``nmt.model.build.init_weights``)."""

    def forward(self, x: Tensor) -> Tensor:  # pragma: no cover - every combine defines it
        """Parts x (..., I) -> attentional output o (..., H)."""
        raise NotImplementedError(f"{type(self).__name__} must define forward(x)")


@register_combine("tanh")
class TanhCombine(Combine, nn.Linear):
    """tanh(W x + b): Luong's h~_t = tanh(W_c [c_t; h_t]), and Bahdanau's style's one-layer readout."""

    def __init__(self, in_size: int, out_size: int) -> None:
        nn.Linear.__init__(self, in_size, out_size)  # W and b keep the names decoder.readout.weight and .bias

    def forward(self, x: Tensor) -> Tensor:
        return torch.tanh(F.linear(x, self.weight, self.bias))


@register_combine("maxout")
class MaxoutCombine(Combine):
    """max over pairs of W x + b (Bahdanau et al. 2015's readout: maxout of pool 2)."""

    def __init__(self, in_size: int, out_size: int) -> None:
        super().__init__()
        self.linear = nn.Linear(in_size, 2 * out_size)

    def forward(self, x: Tensor) -> Tensor:
        t = self.linear(x)  # (..., 2H)
        return t.view(*t.shape[:-1], -1, 2).amax(-1)  # (..., H)


@register_combine("gate")
class GateCombine(Combine):
    """sigmoid(W_g x + b_g) * (W_i x + b_i): the gated output of attention on attention (Huang et al. 2019)."""

    def __init__(self, in_size: int, out_size: int) -> None:
        super().__init__()
        self.information = nn.Linear(in_size, out_size)  # W_i, b_i
        self.gate = nn.Linear(in_size, out_size)  # W_g, b_g

    def forward(self, x: Tensor) -> Tensor:
        return torch.sigmoid(self.gate(x)) * self.information(x)


def combine_class(name: str) -> type[Combine]:
    """The Combine class registered as ``name`` (import path names import if allowed)."""
    target = COMBINES.get(name).target
    if not (isinstance(target, type) and issubclass(target, Combine)):
        raise TypeError(f"combine {name!r} is {target!r}, not a subclass of nmt.Combine")
    return target


def check_combine(combine: Union[str, type], seed: int = 0) -> list[str]:
    """Check a combine step (a subclass of :class:`Combine`, or a registered name) as nmt checks its own:
    built as ``cls(in_size, out_size)``, outputs (..., out_size) for one step (B, I) and a whole target
    (B, T, I) alike, finite, the same row for row whatever the batch, and gradients reaching its
    parameters.  One PluginError naming the first property that fails; the name is then unregistered."""
    name = combine if isinstance(combine, str) else COMBINES.name_for(combine)
    try:
        return _check(name, seed)
    except PluginError:
        COMBINES.unregister(name)
        raise


def _check(name: str, seed: int) -> list[str]:
    in_size, out_size = 12, 8
    with torch.random.fork_rng():
        torch.manual_seed(seed)
        try:
            module = combine_class(name)(in_size, out_size).eval()
        except Exception as exc:
            raise PluginError(f"combine {name} cannot be built as cls(in_size, out_size): {exc}") from exc
        x = torch.randn(3, 5, in_size, requires_grad=True)
        out = module(x)
        if not isinstance(out, Tensor) or tuple(out.shape) != (3, 5, out_size):
            shape = tuple(out.shape) if isinstance(out, Tensor) else type(out).__name__
            raise PluginError(f"combine {name} fails a check: output {shape}, expected (B, T, out_size) = (3, 5, 8)")
        if not torch.isfinite(out).all():
            raise PluginError(f"combine {name} fails a check: its output is not finite on random inputs")
        if not torch.allclose(module(x[:, 2]), out[:, 2], atol=1e-6) or not torch.allclose(
            module(x[1:2]), out[1:2], atol=1e-6
        ):
            raise PluginError(f"combine {name} fails a check: a row's output changes with the other rows or steps")
        out.pow(2).sum().backward()
        params = list(module.parameters())
        if any(p.grad is None or not torch.isfinite(p.grad).all() for p in params):
            raise PluginError(f"combine {name} fails a check: a parameter gets no finite gradient")
    return [
        "output (..., out_size), finite",
        "each row independent of the others",
        "gradients reach its parameters" if params else "gradients (no parameters)",
    ]
