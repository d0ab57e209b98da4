"""The training loss: summed token cross-entropy with label smoothing, blind to padding.

A stand-in model returns fixed logits, so the loss is checked against an independent
computation from those logits alone.  Label smoothing is the mixture
``(1 - eps) * (-log p(y)) + eps * mean over the vocabulary of (-log p(v))``: the reference gets
``1 - eps + eps / V`` of the target mass and every other word ``eps / V``.
"""

from __future__ import annotations

from typing import Optional

import pytest
import torch
from torch import Tensor, nn

from nmt.data.batching import Batch
from nmt.data.tokenizer import BOS, EOS, PAD, UNK
from nmt.training.loss import batch_loss

B, T, V = 3, 5, 11
TGT_LEN = torch.tensor([5, 2, 3])  # scored positions per sentence, EOS included


class FixedLogits(nn.Module):
    """A model whose output ignores its input: the logits given, and what it was called with."""

    def __init__(self, logits: Tensor) -> None:
        super().__init__()
        self.logits = logits
        self.calls: list[dict] = []

    def forward(
        self, src: Tensor, src_len: Tensor, tgt_in: Tensor, teacher_forcing: float = 1.0, fast: Optional[bool] = None
    ) -> tuple[Tensor, Tensor]:
        self.calls.append(dict(src=src, src_len=src_len, tgt_in=tgt_in, teacher_forcing=teacher_forcing, fast=fast))
        return self.logits, torch.zeros(src.size(0), tgt_in.size(1), src.size(1))


def make_batch(seed: int = 0) -> Batch:
    """Targets y_1..y_n EOS, PAD after them (no reference is PAD itself)."""
    g = torch.Generator().manual_seed(seed)
    tgt_out = torch.randint(4, V, (B, T), generator=g)
    tgt_out[torch.arange(B), TGT_LEN - 1] = EOS
    tgt_out[torch.arange(T) >= TGT_LEN.unsqueeze(1)] = PAD
    tgt_in = torch.cat([torch.full((B, 1), BOS), tgt_out[:, :-1]], dim=1)
    tgt_in[torch.arange(T) >= TGT_LEN.unsqueeze(1)] = PAD
    src = torch.randint(4, V, (B, 4), generator=g)
    return Batch(
        src=src,
        src_len=torch.full((B,), 4),
        tgt_in=tgt_in,
        tgt_out=tgt_out,
        tgt_len=TGT_LEN.clone(),
        index=torch.arange(B),
    )


def random_logits(seed: int = 1) -> Tensor:
    return 3 * torch.randn(B, T, V, generator=torch.Generator().manual_seed(seed))


def loss_of(logits: Tensor, batch: Batch, eps: float) -> Tensor:
    return batch_loss(
        FixedLogits(logits), batch, label_smoothing=eps, teacher_forcing=1.0, device=torch.device("cpu"), amp=None
    )


def expected(logits: Tensor, batch: Batch, eps: float) -> float:
    """Sum over real target positions of (1 - eps) * NLL + eps * mean_v(-log p_v), in float64."""
    total = 0.0
    for b in range(B):
        for t in range(int(batch.tgt_len[b])):
            logp = torch.log_softmax(logits[b, t].double(), dim=-1)
            nll = -logp[batch.tgt_out[b, t]].item()
            uniform = -logp.mean().item()
            total += (1 - eps) * nll + eps * uniform
    return total


@pytest.mark.parametrize("eps", [0.0, 0.1, 0.5])
def test_loss_is_the_smoothed_nll_summed_over_real_tokens(eps: float) -> None:
    logits, batch = random_logits(), make_batch()
    assert loss_of(logits, batch, eps).item() == pytest.approx(expected(logits, batch, eps), rel=1e-5)


def test_without_smoothing_only_the_reference_probability_counts() -> None:
    """eps = 0: moving probability between two wrong words (PAD and UNK are never references) leaves
    the loss as it is; with eps > 0 the uniform part sees the change."""
    logits, batch = random_logits(), make_batch()
    assert not torch.isin(batch.tgt_out[batch.tgt_out != PAD], torch.tensor([PAD, UNK])).any()
    moved = logits.clone()
    pair = logits[..., [PAD, UNK]]
    moved[..., [PAD, UNK]] = torch.logsumexp(pair, -1, keepdim=True) - torch.log(torch.tensor(2.0))  # both at the mean
    assert torch.allclose(torch.logsumexp(moved, -1), torch.logsumexp(logits, -1), atol=1e-5)  # same normalizer
    assert loss_of(moved, batch, 0.0).item() == pytest.approx(loss_of(logits, batch, 0.0).item(), rel=1e-5)
    assert loss_of(moved, batch, 0.1).item() != pytest.approx(loss_of(logits, batch, 0.1).item(), rel=1e-5)


def test_smoothing_is_the_cross_entropy_with_a_smoothed_target() -> None:
    """The same number as -sum_v q(v) log p(v) with q = (1 - eps) one-hot + eps / V."""
    eps, logits, batch = 0.2, random_logits(), make_batch()
    q = torch.full((B, T, V), eps / V).scatter_add_(2, batch.tgt_out.unsqueeze(2), torch.full((B, T, 1), 1 - eps))
    per_token = -(q * torch.log_softmax(logits, -1)).sum(-1)  # (B, T)
    assert torch.allclose(q.sum(-1), torch.ones(B, T))
    want = per_token[batch.tgt_out != PAD].sum().item()
    assert loss_of(logits, batch, eps).item() == pytest.approx(want, rel=1e-5)


@pytest.mark.parametrize("eps", [0.0, 0.1])
def test_padding_contributes_nothing(eps: float) -> None:
    logits, batch = random_logits(), make_batch()
    pad = batch.tgt_out == PAD
    assert pad.any()
    noisy = logits.clone()
    noisy[pad] = 100 * torch.randn(int(pad.sum()), V)
    assert loss_of(noisy, batch, eps).item() == pytest.approx(loss_of(logits, batch, eps).item(), rel=1e-6)
    silent = make_batch()
    silent.tgt_out[:] = PAD  # a batch of nothing but padding scores zero
    assert loss_of(logits, silent, eps).item() == 0.0


@pytest.mark.parametrize("eps", [0.0, 0.1])
def test_loss_is_a_sum_over_sentences(eps: float) -> None:
    """Not a mean: the caller normalizes over a whole update, so a batch's loss is its rows' total."""
    logits, batch = random_logits(), make_batch()
    rows = []
    for b in range(B):
        one = Batch(**{name: value[b : b + 1] for name, value in vars(batch).items()})
        rows.append(loss_of(logits[b : b + 1], one, eps).item())
    assert loss_of(logits, batch, eps).item() == pytest.approx(sum(rows), rel=1e-5)


def test_the_model_gets_the_batch_and_the_decoding_options() -> None:
    batch, model = make_batch(), FixedLogits(random_logits())
    batch_loss(
        model, batch, label_smoothing=0.1, teacher_forcing=0.25, device=torch.device("cpu"), amp=None, fast=False
    )
    (call,) = model.calls
    assert call["src"] is batch.src and call["src_len"] is batch.src_len and call["tgt_in"] is batch.tgt_in
    assert call["teacher_forcing"] == 0.25 and call["fast"] is False


def test_loss_has_a_gradient_only_at_real_positions() -> None:
    logits, batch = random_logits().requires_grad_(True), make_batch()
    loss_of(logits, batch, 0.1).backward()
    real = (batch.tgt_out != PAD).unsqueeze(2).expand(-1, -1, V)
    assert torch.all(logits.grad[~real] == 0) and torch.all(logits.grad[real] != 0)
