"""The source encoder: embeddings and a (bi)directional GRU or LSTM stack.

Sentences are packed (``pack_padded_sequence``) so padding never enters the
recurrence: the backward direction starts at each sentence's last real token and
the final state is the state after the last real token, whatever the padding.

Shapes: B batch, S source length, E embedding size, H hidden size per direction,
K = H x directions, L layers.
"""

from __future__ import annotations

from torch import Tensor, nn
from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence

from nmt.model.state import FinalState

CELLS = ("gru", "lstm")


def rnn_class(cell: str) -> type[nn.GRU] | type[nn.LSTM]:
    """``nn.GRU`` or ``nn.LSTM`` for a cell name."""
    if cell == "gru":
        return nn.GRU
    if cell == "lstm":
        return nn.LSTM
    raise ValueError(f"unknown RNN cell {cell!r}; valid options: {', '.join(CELLS)}")


class Encoder(nn.Module):
    """Embed the source and run a recurrent stack over the real tokens only."""

    def __init__(
        self,
        vocab_size: int,
        emb_size: int,
        hidden_size: int,
        num_layers: int = 1,
        bidirectional: bool = True,
        cell: str = "gru",
        dropout: float = 0.0,
        emb_dropout: float = 0.0,
        pad_id: int = 0,
    ) -> None:
        super().__init__()
        self.cell = cell
        self.num_layers = num_layers
        self.directions = 2 if bidirectional else 1
        self.hidden_size = hidden_size
        self.output_size = hidden_size * self.directions  # K
        self.embedding = nn.Embedding(vocab_size, emb_size, padding_idx=pad_id)
        self.emb_dropout = nn.Dropout(emb_dropout)
        # nn.GRU / nn.LSTM apply `dropout` to the outputs of every layer but the last.
        self.rnn = rnn_class(cell)(
            emb_size,
            hidden_size,
            num_layers,
            batch_first=True,
            bidirectional=bidirectional,
            dropout=dropout if num_layers > 1 else 0.0,
        )

    def forward(self, src: Tensor, src_len: Tensor) -> tuple[Tensor, FinalState]:
        """Encode ``src`` (B, S) token ids whose real lengths are ``src_len`` (B,), all >= 1.

        Returns the outputs (B, S, K), zero at padded positions, and the final state
        per layer with both directions concatenated: (L, B, K), or a pair of them
        (hidden, cell) for an LSTM.
        """
        B, S = src.shape
        emb = self.emb_dropout(self.embedding(src))  # (B, S, E)
        # Packing needs the lengths on the CPU: one host sync per batch, not per step.
        packed = pack_padded_sequence(emb, src_len.cpu(), batch_first=True, enforce_sorted=False)
        out, final = self.rnn(packed)
        memory, _ = pad_packed_sequence(out, batch_first=True, total_length=S)  # (B, S, K)
        if isinstance(final, tuple):
            return memory, (self._join(final[0], B), self._join(final[1], B))
        return memory, self._join(final, B)

    def _join(self, state: Tensor, batch: int) -> Tensor:
        """(L * directions, B, H) -> (L, B, directions * H), directions side by side."""
        state = state.view(self.num_layers, self.directions, batch, self.hidden_size)
        return state.permute(0, 2, 1, 3).reshape(self.num_layers, batch, self.output_size)
