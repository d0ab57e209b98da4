"""The attention design space: energy x parametrization x direction.

- every energy x parametrization point either builds and behaves (padding at zero weight,
  rows summing to 1, gradients to every parameter) or is refused at config load with a
  message naming both options, and the module and the config agree on which is which;
- location attention never weighs a position past the source length;
- encoder self-attention masks padding; decoder self-attention is causal and its cache
  changes nothing, in the model and in greedy and beam search;
- every preset is exactly the point it expands to.
"""

from __future__ import annotations

import itertools
import re
from typing import Any

import pytest
import torch
import torch.nn.functional as F

from conftest import V_SRC, V_TGT
from conftest import random_batch as batch
from nmt.config import ATTENTION_ENERGIES, ATTENTION_TYPES, ConfigError, ModelConfig, from_dict, load
from nmt.decode.beam import beam_search
from nmt.decode.greedy import greedy
from nmt.model.attention import Attention
from nmt.model.attention_check import _decode as decode_steps
from nmt.model.build import build_model
from nmt.model.presets import PRESETS, describe_presets
from nmt.model.seq2seq import Seq2Seq

H = 4  # decoder hidden size; the encoder output is 8 when bidirectional
MAPS = ("identity", "linear")
GRID = list(itertools.product(ATTENTION_ENERGIES, MAPS, MAPS, MAPS, (False, True), (1, 2, 3), (True, False)))


def axes_of(energy: str, qm: str, km: str, vm: str, out: bool, heads: int) -> dict[str, Any]:
    return dict(energy=energy, query_map=qm, key_map=km, value_map=vm, out_proj=out, heads=heads)


def attention_config(point: dict[str, Any], bidirectional: bool) -> dict[str, Any]:
    return {
        "model": {
            "hidden_size": H,
            "emb_size": 4,
            "bidirectional": bidirectional,
            "attention": {"type": "custom", **point},
        }
    }


def padded(B: int = 3, S: int = 6, width: int = 8, lengths=(6, 3, 1)) -> tuple[torch.Tensor, torch.Tensor]:
    lengths_t = torch.tensor(lengths[:B])
    mask = torch.arange(S) < lengths_t.unsqueeze(1)
    return torch.randn(B, S, width) * mask.unsqueeze(-1), mask


# ------------------------------------------------------------------ the energy x parametrization grid


@pytest.mark.parametrize("energy,qm,km,vm,out,heads,bidirectional", GRID)
def test_every_point_builds_and_behaves_or_is_refused_at_load(energy, qm, km, vm, out, heads, bidirectional):
    point = axes_of(energy, qm, km, vm, out, heads)
    K = 2 * H if bidirectional else H
    try:
        from_dict(attention_config(point, bidirectional))
    except ConfigError as err:
        message = str(err)
        named = {
            o
            for o in ("energy", "query_map", "key_map", "value_map", "heads", "dim")
            if f"{o}=" in message or f"model.attention.{o}" in message
        }
        assert len(named) >= 2, message  # both conflicting options are named
        with pytest.raises(ValueError):
            Attention(H, K, **point)  # the module refuses it too
        return
    torch.manual_seed(0)
    att = Attention(H, K, **point, max_len=5)
    memory, mask = padded(width=K)
    memory.requires_grad_(True)
    if att.stateful:  # one query a step, the state carried, as the decoder runs it
        context, weights = decode_steps(att, torch.randn(3, 4, H), memory, mask)
    else:
        context, weights = att(torch.randn(3, 4, H), att.project_keys(memory), att.project_values(memory), mask)
    assert context.shape == (3, 4, att.context_size) and weights.shape == (3, 4, 6)
    assert torch.all(weights.masked_select(~mask.unsqueeze(1)) == 0)
    assert torch.allclose(weights.sum(-1), torch.ones(3, 4), atol=1e-6)
    context.pow(2).sum().backward()
    for name, param in att.named_parameters():
        assert param.grad is not None and param.grad.abs().sum() > 0, name
    assert memory.grad[mask].abs().sum() > 0 and torch.all(memory.grad[~mask] == 0)  # padding gets no gradient


@pytest.mark.parametrize(
    "overrides,words",
    [
        (["model.attention.type=custom"], ["model.attention.type=custom", "model.attention.energy"]),
        (
            ["model.attention.energy=dot", "model.attention.key_map=identity", "model.attention.dim=64"],
            ["model.attention.energy=dot", "model.attention.query_map=linear", "model.attention.dim=64"],
        ),
        (
            [
                "model.attention.type=luong_dot",
                "model.attention.heads=3",
                "model.bidirectional=false",
                "model.hidden_size=8",
            ],
            ["model.attention.heads=3", "model.attention.dim"],
        ),
        (
            ["model.attention.type=custom", "model.attention.energy=location", "model.attention.key_map=linear"],
            ["model.attention.energy=location", "model.attention.key_map=linear"],
        ),
        (
            ["model.attention.type=custom", "model.attention.energy=location", "model.attention.max_src_len=50"],
            ["model.attention.max_src_len", "decode.max_src_len", "train.max_len"],
        ),
        (
            [
                "model.enc_self_attention.layers=1",
                "model.enc_self_attention.energy=location",
                "model.enc_self_attention.key_map=identity",
                "model.enc_self_attention.max_len=10",
            ],
            ["model.enc_self_attention.max_len", "decode.max_src_len"],
        ),
        (
            [
                "model.enc_self_attention.layers=2",
                "model.enc_self_attention.out_proj=false",
                "model.enc_self_attention.dim=64",
            ],
            ["model.enc_self_attention.value_map", "model.enc_self_attention.dim"],
        ),
        (
            ["model.dec_self_attention.enabled=true", "model.dec_self_attention.energy=uniform"],
            ["model.dec_self_attention.energy=uniform", "model.dec_self_attention.query_map"],
        ),
        (
            ["model.attention.type=custom", "model.attention.energy=uniform", "model.attention.style=luong"],
            ["model.attention.style=luong", "energy=uniform"],
        ),
    ],
)
def test_invalid_combinations_fail_at_load_naming_both_options(overrides, words) -> None:
    with pytest.raises(ConfigError) as err:
        load(None, overrides)
    for word in words:
        assert word in str(err.value)


@pytest.mark.parametrize(
    "section, switch", [("enc_self_attention", "layers=1"), ("dec_self_attention", "enabled=true")]
)
def test_self_attention_sections_are_checked_only_when_on(section: str, switch: str) -> None:
    """energy=uniform with the default linear query/key maps is refused only once the section is on."""
    bad = f"model.{section}.energy=uniform"
    off = load(None, [bad])
    assert getattr(off.model, section).energy == "uniform"  # kept as written, unchecked while off
    shapes = [[tuple(w.shape) for w in build_model(cfg.model, V_SRC, V_TGT).parameters()] for cfg in (off, load(None))]
    assert shapes[0] == shapes[1]  # and nothing of it is built: the default model's parameters
    with pytest.raises(ConfigError, match=rf"^model\.{section}\.energy=uniform .*model\.{section}\.query_map=linear"):
        load(None, [bad, f"model.{section}.{switch}"])


def test_unknown_axis_values_use_the_usual_error_style() -> None:
    with pytest.raises(ConfigError, match=r"^model\.attention\.energy: .*'bilinear'"):
        load(None, ["model.attention.energy=cosine"])
    with pytest.raises(ConfigError, match=r"model\.enc_self_attention\.layrs: unknown key.*did you mean 'layers'"):
        load(None, ["model.enc_self_attention.layrs=2"])


# ------------------------------------------------------------------ location


@pytest.mark.parametrize("max_len", [3, 6, 10])
@pytest.mark.parametrize("heads", [1, 2])
def test_location_never_weighs_positions_past_the_source(max_len: int, heads: int) -> None:
    torch.manual_seed(0)
    att = Attention(H, 8, energy="location", query_map="linear", heads=heads, max_len=max_len)
    memory, mask = padded()
    with torch.no_grad():
        att.score.location.weight.mul_(20)  # peaky scores: would put weight anywhere the mask allows
    _, weights = att(torch.randn(3, 5, H), att.project_keys(memory), att.project_values(memory), mask)
    allowed = mask & (torch.arange(6) < max_len)
    assert torch.all(weights.masked_select(~allowed.unsqueeze(1)) == 0)
    assert torch.allclose(weights.sum(-1), torch.ones(3, 5), atol=1e-6)
    w_query = torch.randn(H)  # weights come from the query alone: the keys do not matter
    a = att(w_query.expand(3, H), att.project_keys(memory), att.project_values(memory), mask)[1]
    b = att(w_query.expand(3, H), att.project_keys(memory * 3), att.project_values(memory), mask)[1]
    assert torch.equal(a, b)


# ------------------------------------------------------------------ whole models


def model(
    overrides: dict[str, Any] | None = None, attention: dict[str, Any] | None = None, cell: str = "gru", seed: int = 0
) -> Seq2Seq:
    raw = {
        "cell": cell,
        "emb_size": 8,
        "hidden_size": 8,
        "dropout": 0.0,
        "emb_dropout": 0.0,
        "attention": attention or {"type": "bahdanau"},
        **(overrides or {}),
    }
    cfg = ModelConfig.model_validate(raw)
    torch.manual_seed(seed)
    return build_model(cfg, V_SRC, V_TGT).eval()


ENC_SA = {"enc_self_attention": {"layers": 2, "heads": 2}}
DEC_SA = {"dec_self_attention": {"enabled": True, "heads": 2}}
DEC_ENERGIES = [
    {"energy": "mlp"},
    {"energy": "location", "key_map": "identity", "max_len": 4},
    {"energy": "gaussian", "value_map": "identity", "out_proj": False},
]
STYLES = [
    {"type": "bahdanau"},
    {"type": "luong_general"},
    {"type": "qkv", "input_feeding": False},
    {"type": "custom", "energy": "location", "query_map": "linear", "input_feeding": False},
]


BLOCKS = [{"norm": "post", "gate": False}, {"norm": "pre", "gate": True}]


def with_blocks(block: dict[str, Any]) -> dict[str, Any]:
    """ENC_SA and DEC_SA with the given layer norm placement and gate."""
    return {name: {**section, **block} for name, section in {**ENC_SA, **DEC_SA}.items()}


def open_gates(m: Seq2Seq, alpha: float = 0.5) -> Seq2Seq:
    """Set every ReZero gate (0 at init, where nothing flows through the block) to ``alpha``."""
    with torch.no_grad():
        for name, param in m.named_parameters():
            if name.endswith(".gate"):
                param.fill_(alpha)
    return m


@pytest.mark.parametrize("block", BLOCKS)
def test_a_gated_pre_norm_block_is_the_identity_at_init(block: dict) -> None:
    m = model(with_blocks(block), {"type": "bahdanau"})
    enc_block, dec_block = m.enc_self_attention.blocks[0], m.decoder.self_attention
    x = torch.randn(3, 5, enc_block.norm.normalized_shape[0])  # (B, S, K)
    q = torch.randn(3, dec_block.norm.normalized_shape[0])  # (B, H)
    with torch.no_grad():
        same = torch.equal(enc_block(x, None), x)
        step, _ = dec_block.step(q, dec_block.empty_memory(q, cache=True))
    assert same == block["gate"] and torch.equal(step, q) == block["gate"]


def test_a_closed_gate_still_learns_to_open() -> None:
    """At alpha = 0 no gradient reaches the block's attention, but alpha's own is not zero."""
    m = model(with_blocks(BLOCKS[1]), {"type": "bahdanau"}).train()
    src, lengths, tgt_in = batch()
    logits, _ = m(src, lengths, tgt_in)
    F.cross_entropy(logits.reshape(-1, V_TGT), torch.randint(4, V_TGT, (15,))).backward()
    gates = {name: p.grad for name, p in m.named_parameters() if name.endswith(".gate")}
    assert len(gates) == 3 and all(g is not None and g.abs() > 0 for g in gates.values())  # 2 encoder blocks, 1 decoder


@pytest.mark.parametrize("block", BLOCKS + [{"norm": "pre", "gate": False}, {"norm": "post", "gate": True}])
@pytest.mark.parametrize("attention", STYLES)
@pytest.mark.parametrize("cell", ["gru", "lstm"])
def test_self_attention_models_train_and_ignore_padding(attention: dict, cell: str, block: dict) -> None:
    m = open_gates(model(with_blocks(block), attention, cell)).train()
    src, lengths, tgt_in = batch()
    logits, weights = m(src, lengths, tgt_in)
    F.cross_entropy(logits.reshape(-1, V_TGT), torch.randint(4, V_TGT, (15,))).backward()
    for name, param in m.named_parameters():
        assert param.grad is not None and param.grad.abs().sum() > 0, name
    m.eval()
    with torch.no_grad():
        logits, weights = m(src, lengths, tgt_in)
        assert torch.all(m.encode(src, lengths).memory[src == 0] == 0)
        for i, n in enumerate(lengths.tolist()):
            alone, alone_w = m(src[i : i + 1, :n], lengths[i : i + 1], tgt_in[i : i + 1])
            assert torch.allclose(logits[i], alone[0], atol=1e-5)
            assert torch.allclose(weights[i, :, :n], alone_w[0], atol=1e-6)


@pytest.mark.parametrize("attention", STYLES)
@pytest.mark.parametrize("dec", [{}, DEC_ENERGIES[1]])
def test_decoder_self_attention_is_causal(attention: dict, dec: dict) -> None:
    m = open_gates(model({"dec_self_attention": {**DEC_SA["dec_self_attention"], **dec}}, attention))
    src, lengths, tgt_in = batch(T=6)
    with torch.no_grad():
        logits, _ = m(src, lengths, tgt_in)
        for j in range(1, 6):
            changed = tgt_in.clone()
            changed[:, j] = (changed[:, j] + 1 - 4) % (V_TGT - 4) + 4  # another real token
            other, _ = m(src, lengths, changed)
            assert torch.equal(other[:, :j], logits[:, :j])  # steps before j never see token j
            assert not torch.allclose(other[:, j:], logits[:, j:])


def steps(m: Seq2Seq, src, lengths, tgt_in) -> torch.Tensor:
    enc = m.encode(src, lengths)
    state = m.init_state(enc)
    out = []
    for t in range(tgt_in.size(1)):
        logits, state, _ = m.step(tgt_in[:, t], state, enc)
        out.append(logits)
    return torch.stack(out, 1)


@pytest.mark.parametrize("attention", STYLES)
@pytest.mark.parametrize("cache", [True, False])
@pytest.mark.parametrize("dec", [{}] + DEC_ENERGIES + [{**DEC_ENERGIES[0], **BLOCKS[0]}])
def test_step_by_step_with_or_without_cache_equals_forward(attention: dict, cache: bool, dec: dict) -> None:
    m = open_gates(model({"dec_self_attention": {**DEC_SA["dec_self_attention"], **dec}}, attention))
    m.decoder.cache_self_attention = cache
    src, lengths, tgt_in = batch()
    with torch.no_grad():
        logits, _ = m(src, lengths, tgt_in)
        slow, _ = m(src, lengths, tgt_in, fast=False)
        assert torch.allclose(logits, slow, atol=1e-5)  # the causal fast path (where it applies) == steps
        assert torch.allclose(logits, steps(m, src, lengths, tgt_in), atol=1e-5)


@pytest.mark.parametrize("attention", STYLES[:3])
def test_search_gives_the_same_result_with_and_without_cache(attention: dict) -> None:
    m = open_gates(model({**ENC_SA, **DEC_SA}, attention, seed=3))
    src, lengths, _ = batch(B=4)
    results = {}
    for cache in (True, False):
        m.decoder.cache_self_attention = cache
        results[cache] = (
            greedy(m, src, lengths, max_len_b=8),
            beam_search(m, src, lengths, beam=3, alpha=1.0, max_len_b=8, n_best=2),
        )
    for with_cache, without in zip(results[True], results[False]):
        assert torch.equal(with_cache.tokens, without.tokens)
        assert torch.allclose(with_cache.scores, without.scores, atol=1e-5)


def test_the_cache_grows_one_position_per_step_and_follows_index_select() -> None:
    m = open_gates(model(DEC_SA, {"type": "luong_general"}))
    src, lengths, tgt_in = batch()
    enc = m.encode(src, lengths)
    state = m.init_state(enc)
    for t in range(3):
        _, state, _ = m.step(tgt_in[:, t], state, enc)
        assert state.past.keys.shape[:2] == (3, t + 1) and state.past.values.shape[:2] == (3, t + 1)
    idx = torch.tensor([2, 0, 2])
    picked = state.index_select(idx)
    assert torch.equal(picked.past.keys, state.past.keys[idx])
    a, _, _ = m.step(tgt_in[idx, 3], picked, enc.index_select(idx))
    b, _, _ = m.step(tgt_in[:, 3], state, enc)
    assert torch.allclose(a, b[idx], atol=1e-6)
    m.decoder.cache_self_attention = False  # uncached: the block's inputs, re-projected every step
    state = m.init_state(enc)
    _, state, _ = m.step(tgt_in[:, 0], state, enc)
    assert state.past.keys is None and state.past.states.shape == (3, 1, 8)


# ------------------------------------------------------------------ presets


def test_presets_cover_the_issue_4_types_and_describe_themselves() -> None:
    assert tuple(PRESETS) == ATTENTION_TYPES
    rows = dict(describe_presets())
    assert rows["bahdanau"].startswith("energy=mlp, query=linear, key=linear, value=identity, out_proj=false, heads=1")
    assert set(rows) == {*ATTENTION_TYPES, "custom"}
    for line in rows.values():
        assert re.fullmatch(r"(\w+=[\w<>]+, )+style=\w+", line)


@pytest.mark.parametrize("preset", ATTENTION_TYPES)
@pytest.mark.parametrize("heads", [None, 2])
def test_each_preset_equals_its_point_written_out(preset: str, heads: int | None) -> None:
    expanded = {k: v for k, v in PRESETS[preset].items()}
    if heads:
        expanded["heads"] = heads
    named = {"type": preset, **({"heads": heads} if heads else {})}
    extra = {"bidirectional": preset not in ("luong_dot", "scaled_dot")}
    a = model(extra, named)
    b = model(extra, {"type": "custom", **expanded})
    sa, sb = a.state_dict(), b.state_dict()
    assert list(sa) == list(sb)
    assert all(torch.equal(sa[k], sb[k]) for k in sa)
    src, lengths, tgt_in = batch()
    with torch.no_grad():
        assert all(torch.equal(x, y) for x, y in zip(a(src, lengths, tgt_in), b(src, lengths, tgt_in)))
