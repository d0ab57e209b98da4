"""Batch layout, token budgets, and the reproducible length-bucketed sampler."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch

from nmt.data.batching import Batch, BatchSampler, collate, padding_ratio
from nmt.data.dataset import EncodedSplit, load_split
from nmt.data.prepare import load_prepared
from nmt.data.tokenizer import BOS, EOS, PAD
from nmt.util.errors import ConfigError


def random_split(n: int, seed: int = 0, longest: int = 80) -> EncodedSplit:
    """Random ids with a long-tailed length distribution, including empty sentences."""
    rng = np.random.default_rng(seed)
    src_len = np.minimum(rng.geometric(1 / 15, n) - 1, longest)
    tgt_len = np.minimum(rng.geometric(1 / 15, n) - 1, longest)
    return EncodedSplit.from_sequences(
        [rng.integers(4, 100, k).tolist() for k in src_len], [rng.integers(4, 100, k).tolist() for k in tgt_len]
    )


def test_collate_layout() -> None:
    split = EncodedSplit.from_sequences([[10, 11, 12], []], [[20], [21, 22, 23]])
    batch = collate(split, [1, 0])
    assert batch.src.tolist() == [[PAD, PAD, PAD], [10, 11, 12]]
    assert batch.src_len.tolist() == [0, 3]
    assert batch.tgt_in.tolist() == [[BOS, 21, 22, 23], [BOS, 20, PAD, PAD]]
    assert batch.tgt_out.tolist() == [[21, 22, 23, EOS], [20, EOS, PAD, PAD]]
    assert batch.tgt_len.tolist() == [4, 2]
    assert batch.index.tolist() == [1, 0]
    assert all(t.dtype == torch.long for t in vars(batch).values())
    assert batch.src_mask.tolist() == [[False, False, False], [True, True, True]]
    assert batch.n_src_tokens == 3 and batch.n_tgt_tokens == 6 and len(batch) == 2
    assert batch.padding_ratio == pytest.approx(1 - 9 / 14)


def test_all_empty_sources_still_give_one_column() -> None:
    batch = collate(EncodedSplit.from_sequences([[], []], [[5], []]), [0, 1])
    assert batch.src.shape == (2, 1) and batch.src_len.tolist() == [0, 0]


def test_collate_truncates_to_max_len() -> None:
    split = EncodedSplit.from_sequences([list(range(4, 14))], [list(range(4, 20))])
    batch = collate(split, [0], max_len=5)
    assert batch.src.tolist() == [[4, 5, 6, 7, 8]]
    assert batch.tgt_out.tolist() == [[4, 5, 6, 7, 8, EOS]] and batch.tgt_len.tolist() == [6]


def test_to_device_keeps_every_field() -> None:
    batch = collate(EncodedSplit.from_sequences([[5]], [[6]]), [0]).to("cpu")
    assert isinstance(batch, Batch) and batch.tgt_in.tolist() == [[BOS, 6]]


@pytest.mark.parametrize("max_tokens", [64, 500, 4096])
def test_token_budget_and_coverage(max_tokens: int) -> None:
    split = random_split(3000)
    sampler = BatchSampler(
        split.src_lengths, split.tgt_lengths, max_tokens=max_tokens, batch_size=None, shuffle=True, seed=7
    )
    for epoch in (0, 1):
        batches = sampler.batches(epoch)
        assert sorted(i for b in batches for i in b) == list(range(len(split)))
        for b in batches:
            batch = collate(split, b)
            cost = len(b) * max(batch.src.size(1), batch.tgt_out.size(1))
            assert cost <= max_tokens or len(b) == 1, f"{len(b)} sentences cost {cost} > {max_tokens}"
    assert sampler.n_batches(0) == len(sampler.batches(0)) == len(sampler)


def test_oversized_sentence_sits_alone() -> None:
    split = EncodedSplit.from_sequences([[5] * 3, [5] * 50, [5] * 3], [[6] * 3, [6] * 3, [6] * 3])
    sampler = BatchSampler(split.src_lengths, split.tgt_lengths, max_tokens=20, batch_size=None, shuffle=False, seed=0)
    assert sorted(sampler.batches(0)) == [[0, 2], [1]]


def test_batches_are_a_pure_function_of_seed_and_epoch() -> None:
    split = random_split(2000)

    def make(seed: int) -> BatchSampler:
        return BatchSampler(
            split.src_lengths, split.tgt_lengths, max_tokens=800, batch_size=None, shuffle=True, seed=seed
        )

    a, b = make(1), make(1)
    assert a.batches(3) == b.batches(3)
    assert a.batches(3) != a.batches(4)
    assert a.batches(3) != make(2).batches(3)
    a.batches(4)
    assert a.batches(3) == b.batches(3), "asking for another epoch first must not change epoch 3"


def test_fixed_batch_size_and_unshuffled_order() -> None:
    split = random_split(103)
    sampler = BatchSampler(split.src_lengths, split.tgt_lengths, max_tokens=None, batch_size=10, shuffle=False, seed=0)
    batches = sampler.batches(0)
    assert [len(b) for b in batches] == [10] * 10 + [3]
    order = [i for b in batches for i in b]
    keys = [(split.tgt_lengths[i], split.src_lengths[i]) for i in order]
    assert keys == sorted(keys) and sampler.batches(5) == batches


def test_sampler_clips_lengths_like_collate() -> None:
    split = EncodedSplit.from_sequences([[5] * 100] * 4, [[6] * 100] * 4)
    sampler = BatchSampler(
        split.src_lengths, split.tgt_lengths, max_tokens=40, batch_size=None, shuffle=False, seed=0, max_len=9
    )
    assert sampler.batches(0) == [[0, 1, 2, 3]]  # 4 rows x (9 + 1) target columns = 40 cells


@pytest.mark.parametrize(
    "kwargs",
    [
        {"max_tokens": None, "batch_size": None},
        {"max_tokens": 100, "batch_size": 10},
        {"max_tokens": 0, "batch_size": None},
    ],
)
def test_sampler_settings_are_checked(kwargs: dict) -> None:
    with pytest.raises(ConfigError):
        BatchSampler(np.ones(3), np.ones(3), shuffle=True, seed=0, **kwargs)


def test_padding_ratio_matches_the_batches() -> None:
    split = random_split(500)
    batches = BatchSampler(
        split.src_lengths, split.tgt_lengths, max_tokens=600, batch_size=None, shuffle=True, seed=3
    ).batches(0)
    tensors = [collate(split, b) for b in batches]
    pad = sum(t.src.numel() + t.tgt_out.numel() - t.n_src_tokens - t.n_tgt_tokens for t in tensors)
    cells = sum(t.src.numel() + t.tgt_out.numel() for t in tensors)
    assert padding_ratio(batches, split.src_lengths, split.tgt_lengths) == pytest.approx(pad / cells)


def test_multi30k_padding_is_low(multi30k_prepared: Path) -> None:
    _, src_tok, tgt_tok = load_prepared(multi30k_prepared)
    train = load_split(multi30k_prepared, "train", "de", "en", src_tok, tgt_tok)
    sampler = BatchSampler(train.src_lengths, train.tgt_lengths, max_tokens=4096, batch_size=None, shuffle=True, seed=1)
    batches = sampler.batches(0)
    assert padding_ratio(batches, train.src_lengths, train.tgt_lengths) < 0.10
    random_order = np.random.default_rng(0).permutation(len(train))
    unsorted = [random_order[i : i + 150].tolist() for i in range(0, len(train), 150)]
    assert padding_ratio(unsorted, train.src_lengths, train.tgt_lengths) > 0.3


def test_length_curriculum_starts_short_then_covers_everything():
    rng = np.random.default_rng(0)
    src = rng.integers(1, 60, size=500)
    tgt = rng.integers(1, 60, size=500)
    sampler = BatchSampler(src, tgt, max_tokens=400, batch_size=None, shuffle=True, seed=3, curriculum_epochs=2)
    seen = [sorted(i for b in sampler.batches(e) for i in b) for e in range(3)]
    assert len(seen[0]) == 500 // 3 and len(seen[1]) == 2 * 500 // 3 and seen[2] == list(range(500))
    longest_first = max(tgt[i] for i in seen[0])
    assert longest_first <= np.sort(tgt)[len(seen[0])]  # only the short end of the corpus
