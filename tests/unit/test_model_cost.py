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
