"""grow-diag-final-and (nmt/score/symmetrize.py) on small hand-made pairs.

Properties: the result lies between the intersection and the union of the two directions; it is
the one direction where both agree, nothing where both are empty; a worked example shows each of
the three steps (the intersection, growing to neighbours, final-and) and what each leaves out.
"""

from __future__ import annotations

import random

import pytest

from nmt.score.symmetrize import grow_diag_final_and, symmetrize_corpus

Links = set[tuple[int, int]]


def random_links(rng: random.Random, source_words: int, target_words: int, share: float) -> Links:
    return {(i, j) for i in range(source_words) for j in range(target_words) if rng.random() < share}


@pytest.mark.parametrize("seed", range(40))
def test_the_result_lies_between_the_intersection_and_the_union(seed: int) -> None:
    rng = random.Random(seed)
    S, T = rng.randint(1, 7), rng.randint(1, 7)
    forward, reverse = random_links(rng, S, T, 0.3), random_links(rng, S, T, 0.3)
    joined = grow_diag_final_and(forward, reverse, S, T)
    assert forward & reverse <= joined <= forward | reverse


def test_the_worked_example_grows_to_neighbours_and_adds_a_final_link_only_between_unaligned_words() -> None:
    #   forward: (0,0) (1,1) (1,2) (3,3) (4,4)     reverse: (0,0) (1,1) (2,1) (0,3)
    # 1. intersection: (0,0) (1,1)
    # 2. grow-diag from (1,1): (1,2) (target 2 unaligned) and (2,1) (source 2 unaligned); then from
    #    (1,2) its diagonal neighbour (0,3) (target 3 unaligned).  (3,3) and (4,4) touch no link.
    # 3. final-and: (3,3) no (target 3 is aligned now); (4,4) yes (both words unaligned).
    forward = {(0, 0), (1, 1), (1, 2), (3, 3), (4, 4)}
    reverse = {(0, 0), (1, 1), (2, 1), (0, 3)}
    assert grow_diag_final_and(forward, reverse, 5, 5) == {(0, 0), (1, 1), (1, 2), (2, 1), (0, 3), (4, 4)}


def test_growing_needs_a_neighbour_and_an_unaligned_word() -> None:
    diagonal = {(0, 0), (1, 1), (2, 2)}
    # the corners (0,2) and (2,0) are in the union, but all their words are aligned already
    assert grow_diag_final_and(diagonal | {(0, 2)}, diagonal | {(2, 0)}, 3, 3) == diagonal


def test_one_direction_alone_keeps_a_one_to_one_subset_of_it() -> None:
    # nothing to grow from, so only final-and acts: a link whose words are both still unaligned
    assert grow_diag_final_and({(0, 0), (0, 1), (2, 1)}, set(), 3, 2) == {(0, 0), (2, 1)}
    assert grow_diag_final_and(set(), {(1, 0), (1, 1)}, 2, 2) == {(1, 0)}


@pytest.mark.parametrize("links", [set(), {(0, 0)}, {(0, 1), (1, 0), (2, 2)}])
def test_directions_that_agree_give_their_links(links: Links) -> None:
    assert grow_diag_final_and(links, links, 3, 3) == links


def test_empty_inputs_give_empty_alignments() -> None:
    assert grow_diag_final_and(set(), set(), 0, 0) == set()
    assert grow_diag_final_and(set(), set(), 4, 3) == set()
    assert symmetrize_corpus([], [], []) == []
    assert symmetrize_corpus([set(), {(0, 0)}], [set(), {(0, 0)}], [(0, 2), (1, 1)]) == [set(), {(0, 0)}]


def test_a_link_outside_the_pair_is_refused() -> None:
    with pytest.raises(ValueError, match=r"forward link \(2, 0\) lies outside a pair of 2 x 2 words"):
        grow_diag_final_and({(2, 0)}, set(), 2, 2)
    with pytest.raises(ValueError, match="reverse link"):
        grow_diag_final_and(set(), {(0, -1)}, 2, 2)
