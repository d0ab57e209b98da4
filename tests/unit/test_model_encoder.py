"""Encoder: shapes, zeros at padding, and padding never entering the recurrence."""

from __future__ import annotations

import pytest
import torch

from nmt.model.encoder import Encoder

V, E, H = 20, 6, 5


def make(cell: str, layers: int, bidirectional: bool) -> Encoder:
    torch.manual_seed(0)
    return Encoder(V, E, H, num_layers=layers, bidirectional=bidirectional, cell=cell, dropout=0.3).eval()


def batch() -> tuple[torch.Tensor, torch.Tensor]:
    lengths = torch.tensor([4, 6, 2])
    src = torch.randint(4, V, (3, 7))  # one column of padding beyond the longest sentence
    src[torch.arange(7) >= lengths.unsqueeze(1)] = 0
    return src, lengths


@pytest.mark.parametrize("cell", ["gru", "lstm"])
@pytest.mark.parametrize("layers", [1, 2])
@pytest.mark.parametrize("bidirectional", [True, False])
def test_shapes_and_zero_outputs_at_padding(cell: str, layers: int, bidirectional: bool) -> None:
    enc = make(cell, layers, bidirectional)
    src, lengths = batch()
    memory, final = enc(src, lengths)
    K = H * (2 if bidirectional else 1)
    assert enc.output_size == K and memory.shape == (3, 7, K)
    assert torch.all(memory[src == 0] == 0)
    finals = final if cell == "lstm" else (final,)
    for state in finals:
        assert state.shape == (layers, 3, K)


@pytest.mark.parametrize("cell", ["gru", "lstm"])
@pytest.mark.parametrize("bidirectional", [True, False])
def test_padded_sentence_encodes_as_alone(cell: str, bidirectional: bool) -> None:
    enc = make(cell, 2, bidirectional)
    src, lengths = batch()
    memory, final = enc(src, lengths)
    for i, n in enumerate(lengths.tolist()):
        alone, alone_final = enc(src[i : i + 1, :n], lengths[i : i + 1])
        assert torch.allclose(memory[i, :n], alone[0], atol=1e-6)
        got = final[0] if cell == "lstm" else final
        want = alone_final[0] if cell == "lstm" else alone_final
        assert torch.allclose(got[:, i], want[:, 0], atol=1e-6)


def test_final_state_is_read_after_the_last_real_token() -> None:
    enc = make("gru", 1, True)
    src, lengths = batch()
    memory, final = enc(src, lengths)
    for i, n in enumerate(lengths.tolist()):
        assert torch.allclose(final[0, i, :H], memory[i, n - 1, :H], atol=1e-6)  # forward direction
        assert torch.allclose(final[0, i, H:], memory[i, 0, H:], atol=1e-6)  # backward direction


def test_unknown_cell_lists_options() -> None:
    with pytest.raises(ValueError, match="valid options: gru, lstm"):
        Encoder(V, E, H, cell="rnn")
