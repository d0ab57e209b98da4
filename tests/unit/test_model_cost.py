"""FLOPs per target token, counted from the model's matrix products."""

import pytest
import torch

from nmt.config import AttentionConfig, ModelConfig
from nmt.model.build import build_model
from nmt.model.cost import flops_per_target_token


def model(tgt_vocab: int, attention: str = "bahdanau", hidden: int = 32):
    torch.manual_seed(0)
    cfg = ModelConfig(
        emb_size=hidden, hidden_size=hidden, tie_embeddings=True, attention=AttentionConfig(type=attention)
    )
    return build_model(cfg, 500, tgt_vocab)


def test_the_output_layer_costs_two_flops_per_weight_and_target_token():
    # a tied output layer projects the 32-wide embedding space onto the vocabulary: 2 * 32 * V per token
    assert flops_per_target_token(model(2000)) - flops_per_target_token(model(1000)) == 2 * 32 * 1000


def test_attention_costs_more_per_token_as_the_source_grows_and_none_costs_less():
    bahdanau, none = model(1000), model(1000, "none")
    assert flops_per_target_token(bahdanau, 32, 16) > flops_per_target_token(bahdanau, 16, 16)
    assert flops_per_target_token(none, 16, 16) < flops_per_target_token(bahdanau, 16, 16)
    assert flops_per_target_token(model(1000, hidden=64)) > flops_per_target_token(bahdanau)


def test_counting_leaves_the_model_as_it_was():
    m = model(1000).train()
    flops_per_target_token(m)
    assert m.training and all(p.grad is None for p in m.parameters())
    assert flops_per_target_token(m.eval()) == pytest.approx(flops_per_target_token(m))


def test_the_additive_energy_s_v_product_is_counted():
    """torch's counter has no formula for aten.mv, so Bahdanau's v^T tanh(W s + U h) went uncounted:
    by hand it costs 2 * len(v) FLOPs per source position and target token."""
    from torch.utils.flop_counter import FlopCounterMode

    from nmt.data.tokenizer import BOS

    m, src_len, tgt_len = model(1000).eval(), 16, 16
    (v,) = [p for name, p in m.named_parameters() if name.endswith(".v")]
    src = torch.full((1, src_len), 5)
    tgt = torch.full((1, tgt_len), 5)
    tgt[0, 0] = BOS
    with torch.no_grad(), FlopCounterMode(display=False) as plain:
        m(src, torch.tensor([src_len]), tgt)
    missing = flops_per_target_token(m, src_len, tgt_len) - plain.get_total_flops() / tgt_len
    assert missing == 2 * v.numel() * src_len
