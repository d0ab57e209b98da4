"""Decoder start states zero / last / bridge for GRU and LSTM, layer counts, directions."""

from __future__ import annotations

import pytest
import torch

from nmt.config import AttentionConfig, ModelConfig
from nmt.model.bridge import StartState
from nmt.model.seq2seq import build_model

H, B = 6, 3


def encoder_final(layers: int, directions: int, lstm: bool):
    torch.manual_seed(0)
    h = torch.randn(layers, B, H * directions)
    return (h, torch.randn_like(h)) if lstm else h


@pytest.mark.parametrize("mode", ["zero", "last", "bridge"])
@pytest.mark.parametrize("cell", ["gru", "lstm"])
@pytest.mark.parametrize("enc_layers,dec_layers", [(1, 1), (2, 2), (1, 2), (2, 1)])
@pytest.mark.parametrize("directions", [1, 2])
def test_start_state_shapes_and_values(mode: str, cell: str, enc_layers: int, dec_layers: int,
                                       directions: int) -> None:
    lstm = cell == "lstm"
    start = StartState(mode, H * directions, directions, H, dec_layers, lstm)
    final = encoder_final(enc_layers, directions, lstm)
    h, c = start(final)
    assert h.shape == (dec_layers, B, H)
    assert (c is not None) == lstm and (c is None or c.shape == h.shape)
    h_enc = final[0] if lstm else final
    if mode == "zero":
        assert torch.all(h == 0) and (c is None or torch.all(c == 0))
    elif mode == "last":
        src = h_enc if enc_layers == dec_layers else h_enc[-1:].expand(dec_layers, -1, -1)
        assert torch.allclose(h, src.view(dec_layers, B, directions, H).sum(2))
    else:
        assert torch.all(h.abs() < 1)
        if enc_layers != dec_layers:  # every decoder layer starts from the top encoder layer
            assert torch.allclose(h[0], h[-1])


def test_last_needs_matching_sizes() -> None:
    with pytest.raises(ValueError, match="init_state=bridge"):
        StartState("last", 10, 2, 6, 1, lstm=False)
    with pytest.raises(ValueError, match="valid options: zero, last, bridge"):
        StartState("copy", 6, 1, 6, 1, lstm=False)


@pytest.mark.parametrize("mode", ["zero", "last", "bridge"])
@pytest.mark.parametrize("cell", ["gru", "lstm"])
@pytest.mark.parametrize("layers", [1, 2])
@pytest.mark.parametrize("bidirectional", [True, False])
def test_model_init_state(mode: str, cell: str, layers: int, bidirectional: bool) -> None:
    cfg = ModelConfig(cell=cell, emb_size=4, hidden_size=H, enc_layers=layers, dec_layers=layers,
                      bidirectional=bidirectional, init_state=mode,
                      attention=AttentionConfig(type="luong_general"))
    m = build_model(cfg, 11, 13).eval()
    src = torch.randint(4, 11, (B, 5))
    enc = m.encode(src, torch.tensor([5, 2, 4]))
    state = m.init_state(enc)
    assert state.hidden.shape == (layers, B, H)
    assert (state.cell is not None) == (cell == "lstm")
    assert state.feed is not None and torch.all(state.feed == 0)  # luong input feeding starts at 0
    logits, weights = m(src, torch.tensor([5, 2, 4]), torch.full((B, 3), 2))
    assert torch.isfinite(logits).all()
