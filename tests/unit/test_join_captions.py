"""data.join_captions: consecutive pairs joined in groups of 1..N in turn, a fixed construction."""

from __future__ import annotations

from pathlib import Path

import pytest

from nmt import config as C
from nmt.data.join import fit_groups, group_sizes, join_pairs
from nmt.data.pipeline import prepare_corpus, source_info


@pytest.mark.parametrize("count,largest", [(0, 6), (1, 6), (21, 6), (25, 6), (10, 1), (7, 3)])
def test_groups_cycle_through_1_to_n_and_cover_every_pair_once(count: int, largest: int) -> None:
    sizes = group_sizes(count, largest)
    assert sum(sizes) == count and all(1 <= s <= largest for s in sizes)
    full = [s for s in sizes[:-1]]  # all but the last follow the cycle exactly
    assert full == [i % largest + 1 for i in range(len(full))]


def test_joined_pairs_are_the_captions_side_by_side_in_order() -> None:
    src = [f"s{i}" for i in range(7)]
    tgt = [f"t{i}" for i in range(7)]
    joined = join_pairs({"test": (src, tgt)}, 3)["test"]
    assert joined == (["s0", "s1 s2", "s3 s4 s5", "s6"], ["t0", "t1 t2", "t3 t4 t5", "t6"])
    assert join_pairs({"test": (src, tgt)}, 1) == {"test": (src, tgt)}


def test_a_joined_corpus_is_prepared_beside_the_plain_one_and_keeps_its_construction(tmp_path: Path) -> None:
    sets = [f"data.root={tmp_path}", "data.synthetic_sizes={train: 300, valid: 20, test: 21}", "data.vocab_size=100"]
    plain, joined = C.load(None, sets).data, C.load(None, [*sets, "data.join_captions=6"]).data
    assert joined.prepared_dir == plain.prepared_dir.with_name(plain.prepared_dir.name + "-join6-max100")
    capped = C.load(None, [*sets, "data.join_captions=6", "data.max_len=30"]).data
    assert capped.prepared_dir.name.endswith("-join6-max30")  # each training cap its own folder
    assert source_info(joined) == {**source_info(plain), "join_captions": 6, "train_groups_fit": 100}
    manifest = prepare_corpus(joined)
    assert manifest["splits"]["test"]["pairs"] == 6  # 21 = 1 + 2 + 3 + 4 + 5 + 6
    lines = (joined.prepared_dir / "test.en").read_text(encoding="utf-8").splitlines()
    assert len(lines) == 6 and len(lines[5].split()) > len(lines[0].split())


def test_a_training_group_longer_than_the_cap_is_cut_into_the_longest_runs_that_fit() -> None:
    # five captions of 10, 12, 9, 20 and 40 words in one group; cap 30
    assert fit_groups([10, 12, 9, 20, 40], [5], 30) == [2, 2, 1]  # 10+12 | 9+20 | 40 alone (filtered later)
    assert fit_groups([10, 12, 9, 20, 40], [2, 3], 30) == [2, 2, 1]  # groups are cut, never merged
    assert fit_groups([5, 5], [1, 1], 30) == [1, 1]
    lengths, sizes = [7, 13, 11, 4, 9, 30, 2], [1, 2, 4]
    for cap in (10, 20, 31, 100):
        out = fit_groups(lengths, sizes, cap)
        assert sum(out) == len(lengths)  # every caption kept, in order


def test_only_the_training_split_is_cut_to_the_cap_and_no_caption_is_lost() -> None:
    src = [" ".join(["w"] * n) for n in (10, 12, 9, 20, 8, 6, 11)]
    raw = {"train": (src, src), "test": (src, src)}
    joined = join_pairs(raw, 6, cap=25)
    assert all(len(line.split()) <= 25 for line in joined["train"][0])
    assert sum(len(line.split()) for line in joined["train"][0]) == sum(len(line.split()) for line in src)
    assert joined["test"] == join_pairs(raw, 6)["test"]  # valid and test are joined by N alone
