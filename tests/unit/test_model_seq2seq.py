"""The whole model on tiny configs: paths that must agree, teacher forcing, padding, gradients."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

from conftest import V_SRC, V_TGT
from conftest import random_batch as batch
from nmt.config import ATTENTION_TYPES, AttentionConfig, ModelConfig
from nmt.model.build import build_model, count_parameters
from nmt.model.seq2seq import DecoderState, EncoderOutput, Seq2Seq

LUONG_TYPES = [t for t in ATTENTION_TYPES if t not in ("none", "coverage", "luong_local_m")]  # stateful: no fast path


def model(type_: str = "bahdanau", cell: str = "gru", layers: int = 1, train: bool = False, **kw: object) -> Seq2Seq:
    """A tiny model; luong_dot/scaled_dot get a unidirectional encoder so that sizes match."""
    att = {k: kw.pop(k) for k in ("style", "input_feeding") if k in kw}
    bidirectional = kw.pop("bidirectional", type_ not in ("luong_dot", "scaled_dot"))
    cfg = ModelConfig(
        cell=cell,
        emb_size=8,
        hidden_size=8,
        enc_layers=layers,
        dec_layers=layers,
        bidirectional=bidirectional,
        attention=AttentionConfig(type=type_, heads=2 if type_ == "qkv" else 1, **att),
        **kw,
    )
    torch.manual_seed(0)
    m = build_model(cfg, V_SRC, V_TGT)
    return m.train(train)


def fed_steps(m: Seq2Seq, src, lengths, tgt_in, use_ref: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Call step() in a loop; at t > 0 sentence b reads the reference where use_ref[b, t], else its argmax."""
    enc = m.encode(src, lengths)
    state = m.init_state(enc)
    prev, logits, attn = tgt_in[:, 0], [], []
    for t in range(tgt_in.size(1)):
        if t > 0:
            prev = torch.where(use_ref[:, t], tgt_in[:, t], logits[-1].argmax(-1))
        out, state, weights = m.step(prev, state, enc)
        logits.append(out)
        attn.append(weights)
    return torch.stack(logits, 1), torch.stack(attn, 1)


def greedy_steps(m: Seq2Seq, src, lengths, tgt_in, teacher: bool) -> tuple[torch.Tensor, torch.Tensor]:
    """Call step() in a loop, feeding the reference (teacher) or the argmax."""
    return fed_steps(m, src, lengths, tgt_in, torch.full(tgt_in.shape, teacher))


@pytest.mark.parametrize("type_", ATTENTION_TYPES)
@pytest.mark.parametrize("cell", ["gru", "lstm"])
def test_gradients_reach_every_parameter(type_: str, cell: str) -> None:
    m = model(type_, cell, layers=2, train=True)
    src, lengths, tgt_in = batch()
    logits, _weights = m(src, lengths, tgt_in)
    F.cross_entropy(logits.reshape(-1, V_TGT), torch.randint(4, V_TGT, (logits.shape[0] * logits.shape[1],))).backward()
    for name, param in m.named_parameters():
        assert param.grad is not None and param.grad.abs().sum() > 0, name


# Luong style needs an attention (the config refuses type none with style luong).
TYPE_STYLES = [(t, s) for t in ATTENTION_TYPES for s in ("bahdanau", "luong") if (t, s) != ("none", "luong")]


@pytest.mark.parametrize("type_,style", TYPE_STYLES)
@pytest.mark.parametrize("input_feeding", [True, False])
def test_forward_shapes_and_weights(type_: str, style: str, input_feeding: bool) -> None:
    m = model(type_, style=style, input_feeding=input_feeding)
    src, lengths, tgt_in = batch()
    logits, weights = m(src, lengths, tgt_in)
    assert logits.shape == (3, 5, V_TGT) and weights.shape == (3, 5, 6)
    mask = torch.arange(6) < lengths.unsqueeze(1)
    assert torch.allclose(weights.sum(-1), torch.ones(3, 5), atol=1e-5)
    assert torch.all(weights.masked_select(~mask.unsqueeze(1)) == 0)


@pytest.mark.parametrize("type_", LUONG_TYPES)
@pytest.mark.parametrize("cell", ["gru", "lstm"])
@pytest.mark.parametrize("layers", [1, 2])
def test_fast_path_equals_step_path(type_: str, cell: str, layers: int) -> None:
    m = model(type_, cell, layers, style="luong", input_feeding=False)
    src, lengths, tgt_in = batch()
    fast = m(src, lengths, tgt_in, fast=True)
    slow = m(src, lengths, tgt_in, fast=False)
    auto = m(src, lengths, tgt_in)
    for a, b, c in zip(fast, slow, auto):
        assert torch.allclose(a, b, atol=1e-5) and torch.equal(a, c)


@pytest.mark.parametrize(
    "kw",
    [
        dict(type_="bahdanau"),
        dict(type_="luong_general", input_feeding=True),
        dict(type_="luong_general", input_feeding=False, teacher_forcing=0.5),
    ],
)
def test_fast_path_refused_when_not_applicable(kw: dict) -> None:
    p = kw.pop("teacher_forcing", 1.0)
    m = model(**kw)
    with pytest.raises(ValueError, match="fast"):
        m(*batch(), teacher_forcing=p, fast=True)


@pytest.mark.parametrize("type_,style", TYPE_STYLES)
@pytest.mark.parametrize("cell", ["gru", "lstm"])
def test_step_loop_reproduces_forward(type_: str, style: str, cell: str) -> None:
    m = model(type_, cell, layers=2, style=style)
    src, lengths, tgt_in = batch()
    logits, weights = m(src, lengths, tgt_in)
    step_logits, step_weights = greedy_steps(m, src, lengths, tgt_in, teacher=True)
    assert torch.allclose(logits, step_logits, atol=1e-5)
    assert torch.allclose(weights, step_weights, atol=1e-6)


@pytest.mark.parametrize("type_", ["bahdanau", "luong_general", "qkv"])
@pytest.mark.parametrize("input_feeding", [True, False])
def test_without_teacher_forcing_the_decoder_reads_its_own_predictions(type_: str, input_feeding: bool) -> None:
    m = model(type_, input_feeding=input_feeding)
    src, lengths, tgt_in = batch()
    other = tgt_in.clone()
    other[:, 1:] = torch.randint(4, V_TGT, other[:, 1:].shape)
    free, _ = m(src, lengths, tgt_in, teacher_forcing=0.0)
    assert torch.equal(free, m(src, lengths, other, teacher_forcing=0.0)[0])
    assert torch.allclose(free, greedy_steps(m, src, lengths, tgt_in, teacher=False)[0], atol=1e-5)
    forced, _ = m(src, lengths, tgt_in, teacher_forcing=1.0)
    assert not torch.allclose(forced, m(src, lengths, other, teacher_forcing=1.0)[0])


@pytest.mark.parametrize("type_", ["bahdanau", "luong_general", "qkv"])
@pytest.mark.parametrize("input_feeding", [True, False])
def test_each_coin_feeds_the_reference_or_the_previous_prediction(type_: str, input_feeding: bool) -> None:
    m = model(type_, input_feeding=input_feeding)
    src, lengths, tgt_in = batch()
    torch.manual_seed(7)
    mixed, mixed_weights = m(src, lengths, tgt_in, teacher_forcing=0.5)
    torch.manual_seed(7)
    use_ref = torch.rand(tgt_in.shape) < 0.5  # the coins the decoder drew
    assert use_ref[:, 1:].any() and not use_ref[:, 1:].all()
    logits, weights = fed_steps(m, src, lengths, tgt_in, use_ref)
    assert torch.allclose(mixed, logits, atol=1e-5)
    assert torch.allclose(mixed_weights, weights, atol=1e-6)


def test_teacher_forcing_coins_come_from_the_global_rng() -> None:
    m = model("bahdanau")
    src, lengths, tgt_in = batch()
    torch.manual_seed(5)
    a, _ = m(src, lengths, tgt_in, teacher_forcing=0.5)
    torch.manual_seed(5)
    b, _ = m(src, lengths, tgt_in, teacher_forcing=0.5)
    assert torch.equal(a, b)


@pytest.mark.parametrize("type_", ATTENTION_TYPES)
@pytest.mark.parametrize("cell", ["gru", "lstm"])
def test_padding_does_not_change_real_results(type_: str, cell: str) -> None:
    m = model(type_, cell, layers=2)
    src, lengths, tgt_in = batch()
    logits, weights = m(src, lengths, tgt_in)
    for i, n in enumerate(lengths.tolist()):
        alone, alone_w = m(src[i : i + 1, :n], lengths[i : i + 1], tgt_in[i : i + 1])
        assert torch.allclose(logits[i], alone[0], atol=1e-5)
        assert torch.allclose(weights[i, :, :n], alone_w[0], atol=1e-6)


@pytest.mark.parametrize("type_", ["bahdanau", "luong_general"])
@pytest.mark.parametrize("cell", ["gru", "lstm"])
def test_index_select_reorders_encoder_output_and_state(type_: str, cell: str) -> None:
    m = model(type_, cell, layers=2)
    src, lengths, tgt_in = batch()
    enc = m.encode(src, lengths)
    state = m.init_state(enc)
    logits, new_state, weights = m.step(tgt_in[:, 0], state, enc)
    idx = torch.tensor([2, 0, 2, 1])  # reorder and duplicate, as beam search does
    enc_r, state_r = enc.index_select(idx), state.index_select(idx)
    assert isinstance(enc_r, EncoderOutput) and isinstance(state_r, DecoderState)
    logits_r, new_state_r, weights_r = m.step(tgt_in[idx, 0], state_r, enc_r)
    assert torch.allclose(logits_r, logits[idx], atol=1e-6) and torch.allclose(weights_r, weights[idx])
    assert torch.allclose(new_state_r.hidden, new_state.hidden[:, idx], atol=1e-6)
    # a second step from the reordered state matches too
    nxt, _, _ = m.step(tgt_in[:, 1], new_state, enc)
    nxt_r, _, _ = m.step(tgt_in[idx, 1], new_state_r, enc_r)
    assert torch.allclose(nxt_r, nxt[idx], atol=1e-6)


def test_empty_source_gives_finite_output() -> None:
    m = model("bahdanau")
    src, lengths, tgt_in = batch()
    src[2] = 0
    lengths[2] = 0
    logits, weights = m(src, lengths, tgt_in)
    assert torch.isfinite(logits).all() and torch.isfinite(weights).all()


def test_tied_embeddings_share_one_matrix() -> None:
    untied, tied = model(), model(tie_embeddings=True)
    assert tied.decoder.output.weight is tied.decoder.embedding.weight
    assert count_parameters(untied) - count_parameters(tied) == V_TGT * 8
    assert count_parameters(untied) == sum(p.numel() for p in untied.parameters())


def test_initialization() -> None:
    m = model(cell="lstm")
    assert torch.all(m.encoder.embedding.weight[0] == 0) and torch.all(m.decoder.embedding.weight[0] == 0)
    assert torch.all(m.decoder.rnn.bias_ih_l0[8:16] == 1) and torch.all(m.decoder.rnn.bias_hh_l0 == 0)
    w_hh = m.decoder.rnn.weight_hh_l0[:8]
    assert torch.allclose(w_hh @ w_hh.T, torch.eye(8), atol=1e-5)


def _output_weight(output_init: str, tie: bool = False, vocab: int = 4000) -> torch.Tensor:
    cfg = ModelConfig(emb_size=64, hidden_size=64, tie_embeddings=tie, output_init=output_init)
    torch.manual_seed(0)
    return build_model(cfg, 50, vocab).decoder.output.weight.detach()


def test_output_init_embedding_starts_w_out_at_std_one_over_sqrt_h_and_xavier_at_xavier() -> None:
    """embedding: std H^-1/2 like a tied layer; xavier: sqrt(2 / (H + V)), far smaller with a large vocabulary."""
    H, V = 64, 4000
    assert _output_weight("embedding").std().item() == pytest.approx(H**-0.5, rel=0.02)
    assert _output_weight("xavier").std().item() == pytest.approx((2 / (H + V)) ** 0.5, rel=0.02)
    assert _output_weight("embedding").std() > 3 * _output_weight("xavier").std()


def test_output_init_leaves_a_tied_output_layer_as_the_embedding() -> None:
    """Tied, both values build the same model: the shared matrix starts as an embedding."""
    torch.testing.assert_close(_output_weight("embedding", tie=True), _output_weight("xavier", tie=True))


def test_runs_saved_before_output_init_rebuild_with_xavier_and_compare_ignores_it_when_tied() -> None:
    from nmt import config as C
    from nmt.config.saved import without_inert_options

    old = C.Config().model_dump(mode="json")
    del old["model"]["output_init"]
    assert C.from_dict(C.fill_saved_defaults(old)).model.output_init == "xavier"
    assert C.Config().model.output_init == "embedding"
    for tie, inert in (("true", True), ("false", False)):
        a, b = (
            C.load(None, [f"model.tie_embeddings={tie}", f"model.output_init={value}"])
            for value in ("embedding", "xavier")
        )
        assert (without_inert_options(a) == without_inert_options(b)) is inert
