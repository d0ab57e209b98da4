"""Decoder start states zero / last / bridge for GRU and LSTM, layer counts, directions."""

from __future__ import annotations

import pytest
import torch

from nmt.config import AttentionConfig, ModelConfig
from nmt.model.bridge import StartState
from nmt.model.build import build_model

H, B = 6, 3


def encoder_final(layers: int, directions: int, lstm: bool):
    torch.manual_seed(0)
    h = torch.randn(layers, B, H * directions)
    return (h, torch.randn_like(h)) if lstm else h


def expected_start(start: StartState, final, enc_layers: int, dec_layers: int, directions: int):
    """The documented start state, computed by hand from the encoder final state (L_enc, B, K)."""
    h_enc, c_enc = final if isinstance(final, tuple) else (final, None)

    def layers(x: torch.Tensor) -> torch.Tensor:  # layer l from layer l, else every layer from the top one
        return x if enc_layers == dec_layers else x[-1:].expand(dec_layers, -1, -1)

    zeros = torch.zeros(dec_layers, B, H)
    if start.mode == "zero":
        return zeros, (zeros if start.lstm else None)
    if start.mode == "last":  # directions summed

        def last(x):
            return layers(x).view(dec_layers, B, directions, H).sum(2)

        return last(h_enc), (last(c_enc) if start.lstm else None)
    W, b = start.hidden_bridge.weight, start.hidden_bridge.bias
    h = torch.tanh(layers(h_enc) @ W.T + b)
    if not start.lstm:
        return h, None
    Wc, bc = start.cell_bridge.weight, start.cell_bridge.bias
    return h, layers(c_enc) @ Wc.T + bc  # no tanh on the cell


@pytest.mark.parametrize("mode", ["zero", "last", "bridge"])
@pytest.mark.parametrize("cell", ["gru", "lstm"])
@pytest.mark.parametrize("enc_layers,dec_layers", [(1, 1), (2, 2), (1, 2), (2, 1)])
@pytest.mark.parametrize("directions", [1, 2])
def test_start_state_follows_its_formula(
    mode: str, cell: str, enc_layers: int, dec_layers: int, directions: int
) -> None:
    lstm = cell == "lstm"
    start = StartState(mode, H * directions, directions, H, dec_layers, lstm)
    if start.hidden_bridge is not None:  # biases away from zero, so a dropped bias shows
        torch.nn.init.uniform_(start.hidden_bridge.bias, 0.5, 1.0)
    if start.cell_bridge is not None:
        torch.nn.init.uniform_(start.cell_bridge.bias, 0.5, 1.0)
    final = encoder_final(enc_layers, directions, lstm)
    h, c = start(final)
    want_h, want_c = expected_start(start, final, enc_layers, dec_layers, directions)
    torch.testing.assert_close(h, want_h)
    assert (c is None) == (want_c is None)
    if c is not None:
        torch.testing.assert_close(c, want_c)
    if enc_layers > 1 and enc_layers == dec_layers and mode != "zero":
        assert not torch.allclose(h[0], h[1])  # layer l really comes from encoder layer l


@pytest.mark.parametrize("mode", ["last", "bridge"])
def test_lstm_decoder_after_gru_encoder_starts_its_cell_at_zero(mode: str) -> None:
    start = StartState(mode, H, 1, H, 1, lstm=True)
    h, c = start(encoder_final(1, 1, lstm=False))
    assert c is not None and c.shape == h.shape and torch.all(c == 0) and not torch.all(h == 0)


def test_last_needs_matching_sizes() -> None:
    with pytest.raises(ValueError, match="init_state=bridge"):
        StartState("last", 10, 2, 6, 1, lstm=False)
    with pytest.raises(ValueError, match="valid options: zero, last, bridge"):
        StartState("copy", 6, 1, 6, 1, lstm=False)


def final_by_hand(m, src: torch.Tensor, lengths: torch.Tensor):
    """The encoder final state from each sentence run alone, unpadded: (L, B, K), directions side by side."""
    enc = m.encoder
    hs, cs = [], []
    for row, n in zip(src, lengths.tolist()):
        _, final = enc.rnn(enc.embedding(row[:n].unsqueeze(0)))  # (L * D, 1, H) each
        for out, state in zip((hs, cs), final if isinstance(final, tuple) else (final,)):
            per_layer = state.view(enc.num_layers, enc.directions, 1, enc.hidden_size)
            out.append(torch.cat(per_layer.unbind(1), dim=-1))  # (L, 1, D * H)
    h = torch.cat(hs, dim=1)
    return (h, torch.cat(cs, dim=1)) if cs else h


@pytest.mark.parametrize("mode", ["zero", "last", "bridge"])
@pytest.mark.parametrize("cell", ["gru", "lstm"])
@pytest.mark.parametrize("enc_layers,dec_layers", [(1, 1), (2, 2), (2, 1)])
@pytest.mark.parametrize("bidirectional", [True, False])
def test_model_start_state_comes_from_the_source(
    mode: str, cell: str, enc_layers: int, dec_layers: int, bidirectional: bool
) -> None:
    """The decoder starts from its formula applied to the encoder's state after each sentence's
    last real token: padding changes nothing, a real source word changes it (except for zero)."""
    cfg = ModelConfig(
        cell=cell,
        emb_size=4,
        hidden_size=H,
        enc_layers=enc_layers,
        dec_layers=dec_layers,
        bidirectional=bidirectional,
        init_state=mode,
        attention=AttentionConfig(type="luong_general"),
    )
    torch.manual_seed(0)
    m = build_model(cfg, 11, 13).eval()
    src, lengths = torch.randint(4, 11, (B, 5)), torch.tensor([5, 2, 4])
    with torch.no_grad():
        state = m.init_state(m.encode(src, lengths))
        want_h, want_c = expected_start(
            m.decoder.start, final_by_hand(m, src, lengths), enc_layers, dec_layers, 2 if bidirectional else 1
        )
        torch.testing.assert_close(state.hidden, want_h)
        assert (state.cell is None) == (want_c is None)
        if state.cell is not None:
            torch.testing.assert_close(state.cell, want_c)
        assert state.feed is not None and torch.all(state.feed == 0)  # luong input feeding starts at 0

        padded = src.clone()
        padded[1, 2:] = 7  # only padding of sentence 1 changes
        torch.testing.assert_close(m.init_state(m.encode(padded, lengths)).hidden, state.hidden)
        changed = src.clone()
        changed[1, 0] = 4 if src[1, 0] != 4 else 5  # a real word of sentence 1 changes
        moved = m.init_state(m.encode(changed, lengths)).hidden
    rows = (moved != state.hidden).any(dim=2).any(dim=0)  # (B,) which sentences' start states moved
    assert rows.tolist() == ([False, False, False] if mode == "zero" else [False, True, False])
