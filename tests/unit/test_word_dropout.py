"""Word dropout: which tokens it replaces, how often, and that only training sees it."""

import pytest
import torch

from conftest import V_SRC, V_TGT, random_batch
from nmt.config import ModelConfig
from nmt.data.tokenizer import BOS, PAD, UNK
from nmt.model.build import build_model
from nmt.model.word_dropout import word_dropout


def test_zero_probability_returns_the_ids_and_draws_nothing() -> None:
    ids = torch.randint(4, 50, (3, 7))
    state = torch.get_rng_state()
    assert word_dropout(ids, 0.0) is ids
    assert torch.equal(torch.get_rng_state(), state)  # runs without it stay bit-identical


@pytest.mark.parametrize("p", [0.1, 0.3])
def test_replaces_real_tokens_at_rate_p_never_padding_nor_the_first_column(p: float) -> None:
    torch.manual_seed(0)
    ids = torch.randint(4, 50, (400, 60))
    ids[:, 0] = BOS
    ids[:, 40:] = PAD
    out = word_dropout(ids, p, skip_first=True)
    changed = out != ids
    assert torch.all(out[changed] == UNK)
    assert not changed[:, 40:].any() and not changed[:, 0].any()
    rate = changed[:, 1:40].float().mean().item()
    assert abs(rate - p) < 0.01  # 15,600 draws: a standard error near 0.004


def model(src_p: float, tgt_p: float):
    torch.manual_seed(0)
    cfg = ModelConfig(
        emb_size=8, hidden_size=12, dropout=0.0, emb_dropout=0.0, src_word_dropout=src_p, tgt_word_dropout=tgt_p
    )
    return build_model(cfg, V_SRC, V_TGT)


@pytest.mark.parametrize("src_p, tgt_p", [(0.5, 0.0), (0.0, 0.5)])
def test_only_training_forwards_see_it(src_p: float, tgt_p: float) -> None:
    src, src_len, tgt_in = random_batch()
    plain, dropped = model(0.0, 0.0), model(src_p, tgt_p)
    plain.eval(), dropped.eval()
    torch.testing.assert_close(dropped(src, src_len, tgt_in)[0], plain(src, src_len, tgt_in)[0])
    plain.train(), dropped.train()
    torch.manual_seed(1)
    assert not torch.allclose(dropped(src, src_len, tgt_in)[0], plain(src, src_len, tgt_in)[0])
