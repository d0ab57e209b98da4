"""Decoding rules on plain tensors: n-gram blocking, sampling filters and draws, coverage penalty."""

import math

import pytest
import torch

from conftest import repeats_an_ngram
from nmt.data.tokenizer import PAD
from nmt.decode.rules import Sampling, block_repeated_ngrams, coverage_penalty


@pytest.mark.parametrize("n", [1, 2, 3])
def test_blocking_bans_exactly_the_tokens_that_repeat_an_ngram(n):
    """Brute force: y is banned iff prefix + [y] holds an n-gram twice (the prefix holds none)."""
    gen = torch.Generator().manual_seed(n)
    V, rows = 8, []
    while len(rows) < 40:  # prefixes over a small alphabet without a repeated n-gram yet
        seq = torch.randint(3, V, (int(torch.randint(0, 9, (1,), generator=gen)),), generator=gen).tolist()
        if not repeats_an_ngram(seq, n):
            rows.append(seq)
    for seq in rows:
        scores = torch.zeros(1, V)
        block_repeated_ngrams(scores, torch.tensor([seq], dtype=torch.long).view(1, -1), n)
        for y in range(3, V):
            assert (scores[0, y] == -math.inf) == repeats_an_ngram(seq + [y], n), (seq, y)


def test_blocking_works_on_a_batch_at_once():
    prefix = torch.tensor([[5, 6, 7, 5, 6], [5, 6, 7, 8, 6], [4, 4, 4, PAD, PAD]])
    scores = torch.zeros(3, 10)
    block_repeated_ngrams(scores, prefix, 3)
    scores[:, PAD] = 0.0  # PAD (never allowed in a search) is where non-matches point; look past it
    assert (scores[0] == -math.inf).nonzero().view(-1).tolist() == [7]  # "5 6" -> 7 would repeat "5 6 7"
    assert (scores[1] == -math.inf).nonzero().view(-1).tolist() == []  # "8 6" never seen before
    assert (scores[2] == -math.inf).nonzero().view(-1).tolist() == []  # a finished row: nothing to block


def test_sampling_filter_keeps_top_k():
    logits = torch.randn(6, 50, generator=torch.Generator().manual_seed(0))
    kept = torch.isfinite(Sampling(top_k=7).filter(logits))
    assert (kept.sum(1) == 7).all()
    assert torch.equal(kept, torch.zeros_like(kept).scatter(1, logits.topk(7, 1).indices, True))


@pytest.mark.parametrize("p", [0.05, 0.5, 0.9, 0.999])
def test_sampling_filter_keeps_the_smallest_nucleus(p):
    logits = torch.randn(6, 50, generator=torch.Generator().manual_seed(1)) * 2
    kept = torch.isfinite(Sampling(top_p=p).filter(logits))
    probs = logits.softmax(1)
    for row in range(6):
        order = probs[row].argsort(descending=True)
        mass = probs[row][order].cumsum(0)
        size = int((mass < p).sum()) + 1  # the first prefix that reaches p
        assert set(kept[row].nonzero().view(-1).tolist()) == set(order[:size].tolist())


def test_temperature_scales_logits_and_forbidden_tokens_stay_forbidden():
    logits = torch.randn(3, 9)
    logits[:, 0] = -math.inf
    out = Sampling(temperature=0.5).filter(logits)
    torch.testing.assert_close(out[:, 1:], logits[:, 1:] / 0.5)
    assert (out[:, 0] == -math.inf).all()


def test_draws_are_seeded_follow_the_distribution_and_top_k_1_is_argmax():
    logits = torch.log(torch.tensor([[0.6, 0.3, 0.1, 0.0]])).repeat(20000, 1)

    def draw(seed, **kw):
        return Sampling(generator=torch.Generator().manual_seed(seed), **kw).draw(logits)

    assert torch.equal(draw(3), draw(3))
    assert not torch.equal(draw(3), draw(4))
    freq = torch.bincount(draw(5), minlength=4).float() / 20000
    torch.testing.assert_close(freq, torch.tensor([0.6, 0.3, 0.1, 0.0]), atol=0.02, rtol=0)
    assert (draw(6, top_k=1) == 0).all()
    assert (draw(7, top_p=0.5) == 0).all()  # 0.6 alone reaches 0.5


def test_coverage_penalty_is_gnmt_formula_and_zero_when_all_covered():
    cov = torch.tensor([[1.0, 2.5, 1.0], [0.5, 1.0, 0.25]])
    pen = coverage_penalty(cov, 0.2)
    assert pen[0] == 0.0
    assert pen[1].item() == pytest.approx(0.2 * (math.log(0.5) + math.log(0.25)))
    assert coverage_penalty(torch.zeros(1, 2), 1.0).item() == pytest.approx(2 * math.log(1e-6))  # finite floor
