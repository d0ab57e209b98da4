"""data.join_captions: consecutive pairs joined in groups of 1..N in turn, a fixed construction."""

from __future__ import annotations

from pathlib import Path

import pytest

from nmt import config as C
from nmt.data.join import group_sizes, join_pairs
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
    assert joined.prepared_dir == plain.prepared_dir.with_name(plain.prepared_dir.name + "-join6")
    assert source_info(joined) == {**source_info(plain), "join_captions": 6}
    manifest = prepare_corpus(joined)
    assert manifest["splits"]["test"]["pairs"] == 6  # 21 = 1 + 2 + 3 + 4 + 5 + 6
    lines = (joined.prepared_dir / "test.en").read_text(encoding="utf-8").splitlines()
    assert len(lines) == 6 and len(lines[5].split()) > len(lines[0].split())
