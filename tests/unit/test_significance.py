"""Tests for nmt.score.significance: approximate randomization over sacreBLEU statistics."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from sacrebleu.metrics import BLEU, CHRF, TER
from sacrebleu.metrics.base import Metric

from nmt.score.significance import (
    paired_ar_p_value,
    score_from_statistics,
    segment_statistics,
    stratified_ar_p_value,
)

WORDS = ["red", "green", "blue", "small", "large", "old", "young", "happy", "quiet", "fast"]


def _corpus(n: int) -> list[str]:
    """n distinct sentences, long enough to have 4-gram matches."""
    return [f"the {WORDS[i % 10]} {WORDS[(i * 3) % 10]} dog number {i} runs across the wide field" for i in range(n)]


def _garble(sentence: str) -> str:
    return " ".join(reversed(sentence.split()))


def _half_garbled(refs: list[str], seed: int) -> list[str]:
    """A system that garbles a random half of the sentences."""
    picked = np.random.default_rng(seed).random(len(refs)) < 0.5
    return [_garble(r) if p else r for r, p in zip(refs, picked)]


@pytest.mark.parametrize("metric", [BLEU(), CHRF(), TER()], ids=["bleu", "chrf", "ter"])
def test_score_from_statistics_equals_corpus_score(metric: Metric) -> None:
    refs = _corpus(12)
    hyps = _half_garbled(refs, seed=1)
    stats = segment_statistics(metric, hyps, refs)
    assert stats.shape[0] == len(refs)
    assert score_from_statistics(metric, stats) == pytest.approx(metric.corpus_score(hyps, [refs]).score)


def test_ties_count_as_at_least_as_large() -> None:
    """Systems differing in one segment: every swap gives the same |difference| as observed, so
    the difference is no evidence at all (p = 1), however large that one segment's effect."""
    refs = _corpus(30)
    one_off = list(refs)
    one_off[0] = _garble(refs[0])
    metric = BLEU()
    base, system = segment_statistics(metric, refs, refs), segment_statistics(metric, one_off, refs)
    assert paired_ar_p_value(metric, base, system, trials=100, seed=3) == 1.0
    assert paired_ar_p_value(metric, base, base, trials=100, seed=3) == 1.0


def test_p_value_range_and_seed() -> None:
    refs = _corpus(40)
    metric = CHRF()
    base = segment_statistics(metric, _half_garbled(refs, seed=1), refs)
    system = segment_statistics(metric, _half_garbled(refs, seed=2), refs)
    p = paired_ar_p_value(metric, base, system, trials=300, seed=5)
    assert 1 / 301 <= p <= 1.0
    assert paired_ar_p_value(metric, base, system, trials=300, seed=5) == p
    # The test is two-sided: which system is the baseline does not matter.
    assert paired_ar_p_value(metric, system, base, trials=300, seed=5) == pytest.approx(p)
    with pytest.raises(ValueError, match="shapes"):
        paired_ar_p_value(metric, base, system[:-1], trials=10, seed=5)
    with pytest.raises(ValueError, match="trials"):
        paired_ar_p_value(metric, base, system, trials=0, seed=5)


def _noisy(sentence: str, seed: int) -> str:
    """The sentence with about a third of its words replaced by words of the corpus."""
    rng = np.random.default_rng(seed)
    return " ".join(str(rng.choice(WORDS)) if rng.random() < 0.35 else w for w in sentence.split())


@pytest.mark.parametrize("damage", ["garble", "noise"])
def test_matches_exact_randomization(damage: str) -> None:
    """With 8 differing segments all 2^8 swaps can be enumerated: the exact p-value. Monte Carlo
    AR estimates it; counting only strictly larger differences (as sacreBLEU does) would not,
    since many swaps give the observed difference exactly."""
    refs = _corpus(20)
    hurt = (lambda i, r: _garble(r)) if damage == "garble" else (lambda i, r: _noisy(r, seed=i))
    base = [hurt(i, r) if i < 5 else r for i, r in enumerate(refs)]  # damaged 0-4
    system = [hurt(i, r) if 5 <= i < 8 else r for i, r in enumerate(refs)]  # damaged 5-7
    metric = BLEU()
    a, b = segment_statistics(metric, base, refs), segment_statistics(metric, system, refs)
    observed = abs(score_from_statistics(metric, a) - score_from_statistics(metric, b))
    at_least = 0
    for pattern in itertools.product([False, True], repeat=8):
        swap = np.zeros(len(refs), dtype=bool)
        swap[:8] = pattern
        pa, pb = np.where(swap[:, None], b, a), np.where(swap[:, None], a, b)
        at_least += abs(score_from_statistics(metric, pa) - score_from_statistics(metric, pb)) >= observed - 1e-9
    exact = at_least / 2**8
    assert 0.05 < exact < 0.95  # a real question, not a foregone answer
    assert paired_ar_p_value(metric, a, b, trials=4000, seed=9) == pytest.approx(exact, abs=0.04)


def test_stratified_ar_of_identical_replicates_is_1_and_of_one_replicate_is_the_paired_test() -> None:
    metric = BLEU()
    refs = _corpus(40)
    worse = [r.replace("dog", "cat") if i % 3 else r for i, r in enumerate(refs)]
    other = [r.replace("field", "meadow") if i % 4 else r for i, r in enumerate(refs)]
    base, system = segment_statistics(metric, worse, refs), segment_statistics(metric, other, refs)
    assert stratified_ar_p_value(metric, [base, system], [base, system], 100, 1) == 1.0
    paired = paired_ar_p_value(metric, base, system, 4000, 3)
    assert stratified_ar_p_value(metric, [base], [system], 4000, 3) == pytest.approx(paired, abs=0.03)


def test_stratified_ar_matches_the_exact_randomization_distribution_of_a_tiny_case() -> None:
    """Two replicates with two differing segments each: 16 equally likely swap patterns, enumerated."""
    metric = BLEU()
    refs = _corpus(6)
    a1 = [r.replace("dog", "cat") if i < 2 else r for i, r in enumerate(refs)]
    b1 = refs
    a2 = refs
    b2 = [r.replace("field", "road") if i in (3, 4) else r for i, r in enumerate(refs)]
    stats = [segment_statistics(metric, h, refs) for h in (a1, b1, a2, b2)]
    bases, systems = [stats[0], stats[2]], [stats[1], stats[3]]

    def gap(swaps: tuple[int, ...]) -> float:
        means = []
        for r, rows in enumerate(((0, 1), (3, 4))):
            a, b = bases[r].copy(), systems[r].copy()
            for row, swap in zip(rows, swaps[2 * r : 2 * r + 2]):
                if swap:
                    a[row], b[row] = systems[r][row], bases[r][row]
            means.append(score_from_statistics(metric, a) - score_from_statistics(metric, b))
        return abs(float(np.mean(means)))

    observed = gap((0, 0, 0, 0))
    patterns = list(itertools.product((0, 1), repeat=4))
    exact = sum(gap(p) >= observed - 1e-9 for p in patterns) / len(patterns)
    assert stratified_ar_p_value(metric, bases, systems, 20000, 5) == pytest.approx(exact, abs=0.015)


def test_stratified_ar_finds_a_difference_every_replicate_shows_and_refuses_unequal_replicates() -> None:
    metric = BLEU()
    refs = _corpus(60)
    bad = [" ".join(r.split()[::-1]) for r in refs]
    near = [r if i % 2 else " ".join(r.split()[:-1]) for i, r in enumerate(refs)]
    base = [segment_statistics(metric, h, refs) for h in (bad, bad)]
    system = [segment_statistics(metric, h, refs) for h in (refs, near)]
    assert stratified_ar_p_value(metric, base, system, 500, 7) < 0.01
    with pytest.raises(ValueError, match="same number"):
        stratified_ar_p_value(metric, base, system[:1], 10, 7)
