"""Attention with a state across decoder steps (coverage, local-m) and a window (local-p, local-m) in whole
models: the state starts per sentence, follows beam search's reordering (a search in a batch equals one
sentence alone, and its scores equal forced decoding's), keeps the decoder off its fast path, and is
refused where one query per step does not hold; See et al.'s coverage loss on hand-made weights.
"""

from __future__ import annotations

import pytest
import torch
from test_search import forced_log_prob

from nmt.config import ConfigError, from_dict
from nmt.decode.beam import beam_search
from nmt.decode.greedy import greedy
from nmt.model.build import build_model
from nmt.training.loss import coverage_penalty

V = 30
STATEFUL = ("coverage", "luong_local_m")


def model_of(type_: str, **attention):
    torch.manual_seed(0)
    cfg = from_dict({"model": {"hidden_size": 16, "emb_size": 8, "attention": {"type": type_, **attention}}})
    return build_model(cfg.model, V, V).eval()


def sources() -> tuple[torch.Tensor, torch.Tensor]:
    g = torch.Generator().manual_seed(1)
    lengths = torch.tensor([9, 4, 1, 7])
    src = torch.randint(4, V, (4, 9), generator=g) * (torch.arange(9) < lengths.unsqueeze(1))
    return src, lengths


@pytest.mark.parametrize("type_", [*STATEFUL, "luong_local_p"])
def test_beam_search_in_a_batch_equals_each_sentence_alone_and_forced_decoding(type_: str) -> None:
    model, (src, src_len) = model_of(type_), sources()
    together = beam_search(model, src, src_len, beam=3, alpha=0.6, n_best=3, max_len_b=12)
    for i in range(len(src)):
        alone = beam_search(
            model, src[i : i + 1, : src_len[i]], src_len[i : i + 1], beam=3, alpha=0.6, n_best=3, max_len_b=12
        )
        assert torch.equal(together.lengths[i], alone.lengths[0])
        torch.testing.assert_close(together.log_probs[i], alone.log_probs[0], atol=1e-5, rtol=1e-5)
    for k in range(3):
        forced = forced_log_prob(model, src, src_len, together.tokens[:, k], together.lengths[:, k])
        torch.testing.assert_close(forced, together.log_probs[:, k], atol=1e-4, rtol=1e-4)


@pytest.mark.parametrize("type_", STATEFUL)
def test_a_stateful_attention_scores_a_sentence_the_same_on_every_call(type_: str) -> None:
    model, (src, src_len) = model_of(type_), sources()
    runs = [greedy(model, src, src_len, max_len_b=12).log_probs for _ in range(3)]
    assert torch.equal(runs[0], runs[1]) and torch.equal(runs[1], runs[2])


def test_the_coverage_state_is_the_sum_of_earlier_weights() -> None:
    model, (src, src_len) = model_of("coverage"), sources()
    enc = model.encode(src, src_len)
    state = model.init_state(enc)
    assert state.attention is not None and torch.equal(state.attention, torch.zeros(4, 9))
    total = torch.zeros(4, 9)
    for token in (1, 5, 6):
        _, state, weights = model.step(torch.full((4,), token), state, enc)
        total += weights
        torch.testing.assert_close(state.attention, total)
    assert torch.all(total[~enc.mask] == 0)
    reordered = state.index_select(torch.tensor([3, 3, 0]))
    torch.testing.assert_close(reordered.attention, total[[3, 3, 0]])


def test_a_stateful_attention_keeps_the_decoder_off_its_fast_path() -> None:
    plain, stateful = model_of("luong_general", input_feeding=False), model_of("luong_local_m", input_feeding=False)
    assert plain.decoder.can_run_fast and not stateful.decoder.can_run_fast
    src, src_len = sources()
    with pytest.raises(ValueError, match="fast decoder path"):
        stateful(src, src_len, torch.randint(4, V, (4, 5)), fast=True)


@pytest.mark.parametrize("type_,window", [("luong_local_m", 2), ("luong_local_p", 3)])
def test_local_attention_gives_weight_only_inside_its_window(type_: str, window: int) -> None:
    model, (src, src_len) = model_of(type_, params={"window": window}), sources()
    _, weights = model(src, src_len, torch.randint(4, V, (4, 12)))  # (B, T, S)
    assert int((weights > 0).sum(-1).max()) <= 2 * window + 1
    if type_ == "luong_local_m":  # p_t = t, kept below the sentence's length
        for t in range(12):
            p = torch.minimum(torch.tensor(t), src_len - 1)
            inside = (torch.arange(9) - p.unsqueeze(1)).abs() <= window
            assert torch.all(weights[:, t][~inside] == 0)


@pytest.mark.parametrize(
    "model,option",
    [
        ({"dec_self_attention": {"enabled": True, "energy": "coverage"}}, "model.dec_self_attention.energy=coverage"),
        ({"enc_self_attention": {"layers": 1, "energy": "local_m"}}, "model.enc_self_attention.energy=local_m"),
        ({"arch": "transformer", "transformer": {"energy": "coverage"}}, "model.transformer.energy=coverage"),
    ],
)
def test_a_stateful_energy_is_refused_outside_the_rnn_cross_attention_in_one_line(model: dict, option: str) -> None:
    with pytest.raises(ConfigError, match="carries a state across decoder steps") as caught:
        from_dict({"model": model})
    assert option in str(caught.value) and "\n" not in str(caught.value)


def test_the_coverage_loss_penalizes_attending_again_and_not_moving_on() -> None:
    again = torch.tensor([[[1.0, 0.0], [1.0, 0.0], [0.5, 0.5]]])  # (B=1, T=3, S=2)
    moving = torch.tensor([[[1.0, 0.0], [0.0, 1.0], [0.0, 0.0]]])
    real = torch.tensor([[True, True, True]])
    # step 2: min(1, c=1) = 1; step 3: min(0.5, 2) + min(0.5, 0) = 0.5
    assert float(coverage_penalty(again, real)) == pytest.approx(1.5)
    assert float(coverage_penalty(moving, real)) == 0.0
    assert float(coverage_penalty(again, torch.tensor([[True, True, False]]))) == pytest.approx(1.0)  # padding
