"""Speed options must not change results: the compiled decoder step equals the eager one, and the
larger validation batch on CUDA is picked per device without changing the config.

These tests check equality and choices, never speed (formerly test_step_speed.py)."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

from conftest import V_SRC, V_TGT, random_batch
from nmt.config import AttentionConfig, ModelConfig
from nmt.model.build import build_model


def loss_and_grads(compiled: bool, teacher_forcing: float, **attention: object) -> tuple[float, list[torch.Tensor]]:
    cfg = ModelConfig(emb_size=8, hidden_size=8, dropout=0.0, emb_dropout=0.0, attention=AttentionConfig(**attention))
    torch.manual_seed(0)
    model = build_model(cfg, V_SRC, V_TGT).train()
    if compiled:
        model.decoder.compile_step("default")
    src, lengths, tgt_in = random_batch()
    torch.manual_seed(1)  # the same teacher-forcing coins for both
    logits, _ = model(src, lengths, tgt_in, teacher_forcing=teacher_forcing, fast=False)
    loss = F.cross_entropy(logits.flatten(0, 1), tgt_in.roll(-1, 1).flatten(), reduction="sum")
    loss.backward()
    return loss.item(), [p.grad.clone() for p in model.parameters()]


@pytest.mark.parametrize(
    "attention, teacher_forcing",
    [
        (dict(type="bahdanau"), 1.0),
        (dict(type="luong_general", input_feeding=True), 0.5),  # the sampled loop: step outputs fed back
    ],
)
def test_compiled_step_matches_eager(attention: dict, teacher_forcing: float) -> None:
    torch._dynamo.reset()
    eager_loss, eager_grads = loss_and_grads(False, teacher_forcing, **attention)
    compiled_loss, compiled_grads = loss_and_grads(True, teacher_forcing, **attention)
    assert torch._dynamo.utils.counters["stats"]["unique_graphs"] >= 1  # the step really went through dynamo
    assert compiled_loss == pytest.approx(eager_loss, rel=1e-5)
    for eager, compiled in zip(eager_grads, compiled_grads):
        torch.testing.assert_close(compiled, eager, rtol=1e-4, atol=1e-6)


def test_validation_decodes_large_batches_on_cuda_only() -> None:
    from nmt.config import Config
    from nmt.training.validate import GPU_VALID_BATCH, validation_decode

    cfg = Config()
    assert validation_decode(cfg, torch.device("cpu")).batch_size == cfg.decode.batch_size
    assert validation_decode(cfg, torch.device("cuda")).batch_size == GPU_VALID_BATCH
    fixed = Config.model_validate({"train": {"valid_batch_size": 7}})
    assert validation_decode(fixed, torch.device("cuda")).batch_size == 7
    assert validation_decode(fixed, torch.device("cpu")).batch_size == 7
    assert cfg.decode.batch_size == 64  # the config itself is not changed
