"""The attention presets on tiny random tensors: masks, sums, shapes, batched == stepwise.

The whole energy x parametrization grid is in tests/test_design_space.py.
"""

from __future__ import annotations

import pytest
import torch

from nmt.model.attention import masked_softmax
from nmt.model.attention_check import _decode as decode_steps
from nmt.model.energies import additive_energy, gaussian_energy
from nmt.model.presets import ATTENTION_TYPES, build_preset

B, S, T, HQ, A = 3, 5, 4, 6, 8
LENGTHS = torch.tensor([5, 3, 1])


def make(type_: str, heads: int = 2):
    """An attention plus random query/memory for it; dot energies get K == H_q."""
    torch.manual_seed(0)
    key_size = HQ if type_ in ("luong_dot", "scaled_dot") else 10
    att = build_preset(type_, query_size=HQ, key_size=key_size, dim=A, heads=heads if type_ == "qkv" else 1)
    memory = torch.randn(B, S, key_size)
    mask = torch.arange(S) < LENGTHS.unsqueeze(1)
    memory = memory * mask.unsqueeze(-1)  # encoder outputs are zero at padding
    return att, memory, mask


@pytest.mark.parametrize("type_", ATTENTION_TYPES)
def test_single_query_shapes_sums_and_zero_padding(type_: str) -> None:
    att, memory, mask = make(type_)
    keys, values = att.project_keys(memory), att.project_values(memory)
    assert keys.shape[:2] == (B, S)
    context, weights = att(torch.randn(B, HQ), keys, values, mask)
    assert context.shape == (B, att.context_size) and att.context_size == memory.size(-1)
    assert weights.shape == (B, S)
    assert torch.allclose(weights.sum(-1), torch.ones(B), atol=1e-6)
    assert torch.all(weights[~mask] == 0)
    assert torch.all(weights >= 0)


@pytest.mark.parametrize("type_", ATTENTION_TYPES)
def test_batched_queries_equal_one_at_a_time(type_: str) -> None:
    att, memory, mask = make(type_)
    keys, values = att.project_keys(memory), att.project_values(memory)
    queries = torch.randn(B, T, HQ)
    context, weights = att(queries, keys, values, mask)
    assert context.shape == (B, T, memory.size(-1)) and weights.shape == (B, T, S)
    assert torch.all(weights.masked_select(~mask.unsqueeze(1)) == 0)
    for t in range(T):
        c_t, w_t = att(queries[:, t], keys, values, mask)
        assert torch.allclose(c_t, context[:, t], atol=1e-6)
        assert torch.allclose(w_t, weights[:, t], atol=1e-6)


@pytest.mark.parametrize("type_", ATTENTION_TYPES)
def test_padded_memory_does_not_leak_into_context(type_: str) -> None:
    att, memory, mask = make(type_)
    query = torch.randn(B, HQ)
    garbage = memory + 100.0 * torch.randn_like(memory) * (~mask).unsqueeze(-1)
    c1, w1 = att(query, att.project_keys(memory), att.project_values(memory), mask)
    c2, w2 = att(query, att.project_keys(garbage), att.project_values(garbage), mask)
    assert torch.allclose(c1, c2, atol=1e-5) and torch.allclose(w1, w2, atol=1e-6)


@pytest.mark.parametrize("type_", ATTENTION_TYPES)
def test_gradients_reach_every_attention_parameter(type_: str) -> None:
    att, memory, mask = make(type_)
    memory.requires_grad_(True)
    query = torch.randn(B, T, HQ, requires_grad=True)
    if att.stateful:  # the state reaches its parameters from the second step on
        context, _ = decode_steps(att, query, memory, mask)
    else:
        context, _ = att(query, att.project_keys(memory), att.project_values(memory), mask)
    context.pow(2).sum().backward()
    for name, param in att.named_parameters():
        assert param.grad is not None and param.grad.abs().sum() > 0, name
    assert memory.grad[mask].abs().sum() > 0 and torch.all(memory.grad[~mask] == 0)  # padding gets no gradient


def test_none_attention_is_the_mean_of_real_positions() -> None:
    att, memory, mask = make("none")
    context, weights = att(torch.randn(B, HQ), att.project_keys(memory), att.project_values(memory), mask)
    mean = memory.sum(1) / LENGTHS.unsqueeze(1)
    assert torch.allclose(context, mean, atol=1e-6)
    assert torch.allclose(weights, mask / LENGTHS.unsqueeze(1), atol=1e-7)


def test_energy_functions_match_their_definitions() -> None:
    q, k, v = torch.randn(2, 3, 4), torch.randn(2, 5, 4), torch.randn(4)
    direct = -0.5 * (q.unsqueeze(2) - k.unsqueeze(1)).pow(2).sum(-1)
    assert torch.allclose(gaussian_energy(q, k), direct, atol=1e-5)
    explicit = torch.einsum("btsa,a->bts", torch.tanh(q.unsqueeze(2) + k.unsqueeze(1)), v)
    assert torch.allclose(additive_energy(q, k, v), explicit, atol=1e-6)
    qh, kh, vh = torch.randn(2, 3, 4, 5), torch.randn(2, 3, 6, 5), torch.randn(3, 5)  # (B, h, T/S, D), v per head
    per_head = torch.einsum("bhtsd,hd->bhts", torch.tanh(qh.unsqueeze(3) + kh.unsqueeze(2)), vh)
    assert torch.allclose(additive_energy(qh, kh, vh), per_head, atol=1e-6)


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16, torch.float32])
def test_masked_softmax_is_safe_in_low_precision(dtype: torch.dtype) -> None:
    energy = (torch.randn(B, T, S) * 100).to(dtype)
    mask = torch.arange(S) < LENGTHS.unsqueeze(1)
    weights = masked_softmax(energy, mask)
    assert torch.isfinite(weights).all()
    assert torch.all(weights.masked_select(~mask.unsqueeze(1)) == 0)
    empty = masked_softmax(energy[:1], torch.zeros(1, S, dtype=torch.bool))  # no real position: no NaN
    assert torch.isfinite(empty).all()


def test_invalid_options_are_named() -> None:
    with pytest.raises(ValueError, match="valid options: none, bahdanau"):
        build_preset("cosine", 4, 4, 4)
    with pytest.raises(ValueError, match="heads"):
        build_preset("qkv", 4, 4, dim=6, heads=4)
    with pytest.raises(ValueError, match="needs equal query and key sizes: query 4 vs key 8"):
        build_preset("luong_dot", 4, 8)


@pytest.mark.parametrize("heads", [1, 2])
def test_scaled_bilinear_is_the_same_score_with_w_divided_by_sqrt_of_the_head_size(heads: int) -> None:
    from nmt.model.attention import Attention

    torch.manual_seed(0)
    plain = Attention(HQ, 10, energy="bilinear", heads=heads)
    scaled = Attention(HQ, 10, energy="bilinear", heads=heads, scale_bilinear=True)
    scaled.load_state_dict(plain.state_dict())  # the same W'
    query, memory = torch.randn(B, T, HQ), torch.randn(B, S, 10)
    gain = (HQ // heads) ** -0.5
    assert scaled.score.bilinear_gain == pytest.approx(gain) and plain.score.bilinear_gain == 1.0
    e_plain = plain.energy(query, plain.project_keys(memory))
    e_scaled = scaled.energy(query, scaled.project_keys(memory))
    torch.testing.assert_close(e_scaled, e_plain * gain)
    # only bilinear has a W to scale: other energies ignore the flag
    assert not hasattr(Attention(HQ, HQ, energy="dot", scale_bilinear=True).score, "bilinear_gain")


@pytest.mark.parametrize("option", ["scale_out_proj", "scale_bilinear", "scale_gaussian", "learn_scale"])
def test_configs_saved_before_an_attention_option_rebuild_the_model_without_it(option: str) -> None:
    """A saved config lacking ``option`` takes its old value (off); configs that hold it keep theirs."""
    from nmt.config import Config, fill_saved_defaults, from_dict

    old = Config().model_dump(mode="json")
    del old["model"]["attention"][option]
    assert getattr(from_dict(fill_saved_defaults(old)).model.attention, option) is False
    new = Config().model_dump(mode="json")
    assert getattr(from_dict(fill_saved_defaults(new)).model.attention, option) is True  # saved values win
    assert getattr(Config().model.attention, option) is True  # the default for new runs


def test_scaled_output_projection_divides_the_context_by_sqrt_of_the_value_size() -> None:
    from nmt.model.attention import Attention

    torch.manual_seed(0)
    axes = dict(energy="scaled_dot", value_map="linear", out_proj=True, heads=2)
    plain = Attention(HQ, HQ, **axes, dim=A)
    scaled = Attention(HQ, HQ, **axes, dim=A, scale_out_proj=True)
    scaled.load_state_dict(plain.state_dict())
    query, memory = torch.randn(B, HQ), torch.randn(B, S, HQ)
    keys, values = plain.project_keys(memory), plain.project_values(memory)
    c_plain, w_plain = plain(query, keys, values, None)
    c_scaled, w_scaled = scaled(query, scaled.project_keys(memory), values, None)
    torch.testing.assert_close(w_scaled, w_plain)  # identity query and key maps: the scores are not touched
    torch.testing.assert_close(c_scaled, c_plain * A**-0.5)  # W_o = W_o' g, b = b' g


def built_attention(type_: str, **attention: object):
    """The cross-attention of a freshly built size-32 model of attention ``type_`` (seed 0), with ``attention`` set."""
    from nmt.config import Config
    from nmt.model.build import build_model

    cfg = Config().model.model_copy(update={"hidden_size": 32, "emb_size": 32})
    cfg = cfg.model_copy(update={"attention": cfg.attention.model_copy(update={"type": type_, **attention})})
    torch.manual_seed(0)
    return build_model(cfg, 11, 13).decoder.attention


@pytest.mark.parametrize("start, ratio", [("xavier", 1.0), ("scaled", 32**-0.5)])
def test_out_proj_start_sets_where_the_scaled_projection_begins(start: str, ratio: float) -> None:
    """xavier: the scaled qkv model starts as the unscaled one; scaled: its W_o starts sqrt(A_v) times smaller."""

    def effective_out_proj(**attention: object) -> torch.Tensor:
        att = built_attention("qkv", **attention)
        return att.out_proj.weight * att.out_gain  # W_o = g W_o'

    plain = effective_out_proj(scale_out_proj=False)
    scaled = effective_out_proj(scale_out_proj=True, out_proj_start=start)
    torch.testing.assert_close(scaled, plain * ratio)
    assert plain.std() > 0.05  # Xavier over 32 x 32: std 0.177


@pytest.mark.parametrize("start, ratio", [("xavier", 1.0), ("scaled", 32**-0.5)])
def test_bilinear_start_sets_where_the_scaled_bilinear_form_begins(start: str, ratio: float) -> None:
    """xavier: luong_general with scale_bilinear starts as without it; scaled: its W starts sqrt(A) times smaller."""

    def effective_bilinear(**attention: object) -> torch.Tensor:
        att = built_attention("luong_general", **attention)
        return att.score.bilinear.weight * att.score.bilinear_gain  # W = g W'

    plain = effective_bilinear(scale_bilinear=False)
    torch.testing.assert_close(effective_bilinear(scale_bilinear=True, bilinear_start=start), plain * ratio)


def test_scaled_gaussian_maps_start_as_xavier_maps_and_keep_the_energy() -> None:
    """scale_gaussian changes how fast W_q, W_k move under Adam, not the model at initialization."""

    def energies(**attention: object) -> tuple[torch.Tensor, float]:
        att = built_attention("gaussian", **attention)
        query, memory = torch.randn(B, 1, 32), torch.randn(B, S, 64)
        return att.energy(att.project_query(query), att.project_keys(memory)), att.qk_gain

    (plain, g_plain), (scaled, g_scaled) = energies(scale_gaussian=False), energies(scale_gaussian=True)
    torch.testing.assert_close(scaled, plain)
    assert g_plain == 1.0 and g_scaled == pytest.approx(32**-0.25)


@pytest.mark.parametrize("energy", ["dot", "scaled_dot"])
def test_learned_scale_starts_at_the_plain_scores_and_multiplies_each_head_by_e_to_the_s(energy: str) -> None:
    """learn_scale: scores x e^s with one s per head, s = 0 at the start; it gets a gradient; other energies lack it."""
    from nmt.model.attention import Attention

    plain, learned = (Attention(A, A, energy=energy, heads=2, learn_scale=flag) for flag in (False, True))
    query, keys = torch.randn(B, T, A), torch.randn(B, S, A)
    torch.testing.assert_close(learned.energy(query, keys), plain.energy(query, keys))
    with torch.no_grad():
        learned.score.log_scale.copy_(torch.tensor([3.0, 2.0]).log())
    expected = plain.energy(query, keys) * torch.tensor([3.0, 2.0]).view(1, 2, 1, 1)
    torch.testing.assert_close(learned.energy(query, keys), expected)
    mask = torch.arange(S) < LENGTHS.unsqueeze(1)
    context, _ = learned(query, keys, keys, mask)
    context.pow(2).sum().backward()
    assert learned.score.log_scale.grad is not None and learned.score.log_scale.grad.abs().min() > 0
    for other in (dict(energy="mlp", query_map="linear", key_map="linear"), dict(energy=energy, key_map="linear")):
        assert (
            getattr(Attention(A, A, learn_scale=True, **other).score, "log_scale", None) is None
        )  # nothing to add, or a map scales


def test_a_luong_dot_checkpoint_saved_before_learn_scale_loads_strictly() -> None:
    """The old model had no log-scale: its saved config rebuilds exactly its parameters."""
    from nmt.config import Config, fill_saved_defaults, from_dict
    from nmt.model.build import build_model

    def model_of(raw: dict) -> torch.nn.Module:
        return build_model(from_dict(fill_saved_defaults(raw)).model, 11, 13)

    raw = Config().model_dump(mode="json")
    raw["model"].update(hidden_size=32, emb_size=32, bidirectional=False)
    raw["model"]["attention"]["type"] = "luong_dot"
    new = model_of(raw)
    del raw["model"]["attention"]["learn_scale"]
    old = model_of(raw)
    assert new.decoder.attention.score.log_scale is not None and old.decoder.attention.score.log_scale is None
    state = {k: v for k, v in new.state_dict().items() if not k.endswith("log_scale")}
    old.load_state_dict(state, strict=True)


@pytest.mark.parametrize("type_", [*ATTENTION_TYPES, "custom"])
def test_learn_scale_is_inert_for_nmt_compare_exactly_where_the_model_has_no_log_scale(type_: str) -> None:
    """without_inert_options and the built model agree on which attentions get e^s."""
    from nmt import config as C
    from nmt.config.saved import without_inert_options
    from nmt.model.build import build_model

    sets = [f"model.attention.type={type_}", "model.bidirectional=false", "model.hidden_size=32", "model.emb_size=32"]
    sets += ["model.attention.energy=dot"] if type_ == "custom" else []
    on, off = (C.load(None, sets + [f"model.attention.learn_scale={flag}"]) for flag in ("true", "false"))
    has_scale = getattr(build_model(on.model, 11, 13).decoder.attention.score, "log_scale", None) is not None
    assert has_scale == (without_inert_options(on) != without_inert_options(off))
    assert has_scale == (type_ in ("luong_dot", "scaled_dot", "custom"))
