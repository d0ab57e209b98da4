"""One time step of a GRU or LSTM stack, written out with the weights of an nn.GRU/nn.LSTM.

The decoder keeps its recurrent weights in an ``nn.GRU``/``nn.LSTM`` (so a whole target
can go through it in one call when nothing is fed back) but steps through time with the
arithmetic below.  Taking the *input* contribution ``W_ih x + b_ih`` as an argument lets
the caller compute the part that does not depend on the previous step (the target
embeddings) once for all T, and add only what does (a context vector) per step.

Gate layouts follow PyTorch: GRU (r, z, n), LSTM (i, f, g, o).
Shapes: B batch, H hidden size, G gates x H.
"""

from __future__ import annotations

from typing import NamedTuple, Optional

import torch
import torch.nn.functional as F
from torch import Tensor, nn


class LayerWeights(NamedTuple):
    w_ih: Tensor  # (G, input size)
    w_hh: Tensor  # (G, H)
    b_ih: Tensor  # (G,)
    b_hh: Tensor  # (G,)


def layer_weights(rnn: nn.RNNBase) -> list[LayerWeights]:
    """The per-layer weights of a unidirectional ``nn.GRU``/``nn.LSTM`` with biases."""
    return [
        LayerWeights(*(getattr(rnn, f"{name}_l{layer}") for name in ("weight_ih", "weight_hh", "bias_ih", "bias_hh")))
        for layer in range(rnn.num_layers)
    ]


def gru_cell(x_gates: Tensor, h: Tensor, w_hh: Tensor, b_hh: Tensor, size: Optional[int] = None) -> Tensor:
    """GRU step (Cho et al. 2014) from the input contribution ``x_gates`` = W_ih x + b_ih (B, 3H).

    r, z = sigmoid(x_rz + W_hrz h + b_hrz);  n = tanh(x_n + r * (W_hn h + b_hn));  h' = (1 - z) n + z h

    ``size`` H, when given, is used instead of h's: inside an exported scan a size read from a
    tensor is symbolic, and gates split by a symbolic size fail to export (:mod:`nmt.export.onnx_graphs`).
    """
    H = size or h.size(-1)
    h_gates = F.linear(h, w_hh, b_hh)  # (B, 3H)
    (x_rz, x_n), (h_rz, h_n) = x_gates.split((2 * H, H), 1), h_gates.split((2 * H, H), 1)
    r, z = torch.sigmoid(x_rz + h_rz).split((H, H), 1)  # one op for both gates
    n = torch.tanh(x_n + r * h_n)
    return n + z * (h - n)


def lstm_cell(
    x_gates: Tensor, h: Tensor, c: Tensor, w_hh: Tensor, b_hh: Tensor, size: Optional[int] = None
) -> tuple[Tensor, Tensor]:
    """LSTM step (Hochreiter & Schmidhuber 1997) from ``x_gates`` = W_ih x + b_ih (B, 4H).

    i, f, o = sigmoid(.);  g = tanh(.);  c' = f c + i g;  h' = o tanh(c')   (``size``: as for gru_cell)
    """
    H = size or h.size(-1)
    gates = x_gates + F.linear(h, w_hh, b_hh)  # (B, 4H)
    i, f, g, o = gates.split((H, H, H, H), 1)  # every piece used: an unused one fails to export in a scan
    c = torch.sigmoid(f) * c + torch.sigmoid(i) * torch.tanh(g)
    return torch.sigmoid(o) * torch.tanh(c), c


def stack_step(
    x_gates: Tensor,
    hs: list[Tensor],
    cs: Optional[list[Tensor]],
    weights: list[LayerWeights],
    dropout: float,
    training: bool,
) -> tuple[list[Tensor], Optional[list[Tensor]]]:
    """One time step through all layers; ``x_gates`` is layer 0's input contribution (B, G).

    Layer l > 0 reads the new output of layer l - 1 through dropout, as nn.GRU/nn.LSTM do.
    ``hs``/``cs`` hold one (B, H) tensor per layer (``cs`` None for a GRU).
    """
    new_h: list[Tensor] = []
    new_c: Optional[list[Tensor]] = [] if cs is not None else None
    for layer, w in enumerate(weights):
        if layer > 0:
            below = F.dropout(new_h[-1], dropout, training) if dropout > 0 else new_h[-1]
            x_gates = F.linear(below, w.w_ih, w.b_ih)
        if cs is None:
            new_h.append(gru_cell(x_gates, hs[layer], w.w_hh, w.b_hh))
        else:
            h, c = lstm_cell(x_gates, hs[layer], cs[layer], w.w_hh, w.b_hh)
            new_h.append(h)
            new_c.append(c)  # type: ignore[union-attr]
    return new_h, new_c
