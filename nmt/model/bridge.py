"""The decoder's start state, taken from the encoder's final state.

Modes (``init_state``):

- ``zero``: all zeros.
- ``last``: copy the encoder's final state, h_0^dec = h_n^enc.  A bidirectional encoder's
  two directions are *summed* (forward + backward), which keeps the size H without any
  parameter; the encoder's size per direction must equal the decoder's.
- ``bridge``: a learned transform, h_0^dec = tanh(W h_n^enc + b), directions concatenated.
  An LSTM cell gets its own linear map, without tanh (cells are not bounded).

Layers: when encoder and decoder have as many layers, decoder layer l starts from encoder
layer l; otherwise every decoder layer starts from the encoder's top layer.

Shapes: B batch, L layers, H decoder hidden size, K encoder state size (H_enc x directions).
"""

from __future__ import annotations

from typing import Optional

import torch
from torch import Tensor, nn

from nmt.model.state import FinalState

INIT_STATES = ("zero", "last", "bridge")


class StartState(nn.Module):
    """Map the encoder final state (L_enc, B, K) to decoder states (L, B, H)."""

    def __init__(
        self,
        mode: str,
        enc_state_size: int,
        enc_directions: int,
        hidden_size: int,
        num_layers: int,
        lstm: bool,
    ) -> None:
        super().__init__()
        if mode not in INIT_STATES:
            raise ValueError(f"unknown init_state {mode!r}; valid options: {', '.join(INIT_STATES)}")
        if mode == "last" and enc_state_size != enc_directions * hidden_size:
            raise ValueError(
                f"init_state=last needs the encoder size per direction ({enc_state_size // enc_directions}) "
                f"to equal the decoder hidden size ({hidden_size}); use init_state=bridge"
            )
        self.mode = mode
        self.enc_directions = enc_directions
        self.hidden_size = hidden_size
        self.num_layers = num_layers
        self.hidden_bridge = nn.Linear(enc_state_size, hidden_size) if mode == "bridge" else None
        self.cell_bridge = nn.Linear(enc_state_size, hidden_size) if mode == "bridge" and lstm else None
        self.lstm = lstm

    def _layers(self, state: Tensor) -> Tensor:
        """(L_enc, B, K) -> (L, B, K) following the layer rule in the module docstring."""
        if state.size(0) == self.num_layers:
            return state
        return state[-1:].expand(self.num_layers, -1, -1)

    def _last(self, state: Tensor) -> Tensor:
        L, B, _ = state.shape
        return state.view(L, B, self.enc_directions, self.hidden_size).sum(2)  # (L, B, H)

    def forward(self, final: FinalState) -> tuple[Tensor, Optional[Tensor]]:
        """Decoder start (hidden (L, B, H), cell (L, B, H) or None for a GRU)."""
        h_enc, c_enc = final if isinstance(final, tuple) else (final, None)
        h_enc = self._layers(h_enc)
        if self.mode == "zero":
            h = h_enc.new_zeros(self.num_layers, h_enc.size(1), self.hidden_size)
            return h, (torch.zeros_like(h) if self.lstm else None)
        if self.mode == "last":
            h = self._last(h_enc)
            c = self._last(self._layers(c_enc)).contiguous() if c_enc is not None and self.lstm else None
            return h.contiguous(), (torch.zeros_like(h) if self.lstm and c is None else c)
        h = torch.tanh(self.hidden_bridge(h_enc))  # type: ignore[misc]
        c = self.cell_bridge(self._layers(c_enc)) if self.cell_bridge is not None and c_enc is not None else None
        if self.lstm and c is None:  # a GRU encoder under an LSTM decoder: start the cell at zero
            c = torch.zeros_like(h)
        return h, c
