"""Paired approximate randomization (AR) over sacreBLEU's per-segment statistics.

AR asks how often randomly swapping the two systems' outputs, segment by segment, gives a
score difference at least as large as the real one (Noreen 1989; Riezler and Maxwell 2005).

Why not ``sacrebleu --paired-ar``: sacreBLEU (2.x, after multeval) counts only trials whose
difference is *strictly* larger than the observed one. Every trial ties with the observed
difference when the systems are identical, and most do when they differ in a handful of
segments, so sacreBLEU then reports the smallest p-value it can, 1/(R+1), and calls two
identical systems significantly different. Here ties count as "at least as large", as in the
textbook test; everything else (a fair coin per segment, the two-sided absolute difference,
p = (c + 1) / (R + 1)) is sacreBLEU's procedure, on the same sufficient statistics.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from sacrebleu.metrics.base import Metric

# Trials are drawn in blocks so that R x N masks stay small for long test sets.
TRIALS_PER_BLOCK = 512
# Scores are sums of integer counts, so a tie is exact; the slack only absorbs rounding.
TIE_TOLERANCE = 1e-9


def segment_statistics(metric: Metric, hyps: Sequence[str], refs: Sequence[str]) -> np.ndarray:
    """(N, K) sufficient statistics of each of N segments; a corpus score is a function of their sum.

    Uses sacreBLEU's own extraction (as its significance tests do), so the scores computed
    from these sums equal ``metric.corpus_score``.
    """
    return np.asarray(metric._extract_corpus_statistics(list(hyps), [list(refs)]), dtype=np.float64)


def _score(metric: Metric, totals: np.ndarray) -> float:
    """The corpus score of summed statistics (K,)."""
    return float(metric._compute_score_from_stats(totals.tolist()).score)


def score_from_statistics(metric: Metric, stats: np.ndarray) -> float:
    """The corpus score of (N, K) segment statistics, equal to ``metric.corpus_score``."""
    return _score(metric, stats.sum(axis=0))


def paired_ar_p_value(metric: Metric, baseline: np.ndarray, system: np.ndarray, trials: int, seed: int) -> float:
    """Two-sided AR p-value of the difference between two systems' corpus scores.

    `baseline` and `system` are (N, K) statistics of the same N segments (see
    :func:`segment_statistics`). Each trial swaps every segment between the systems with
    probability 1/2; only segments whose statistics differ can change a score, so only they
    are drawn. A system identical to the baseline gets p = 1.
    """
    if baseline.shape != system.shape:
        raise ValueError(f"statistics of different shapes: {baseline.shape} vs {system.shape}")
    if trials < 1:
        raise ValueError(f"trials must be positive, got {trials}")
    differ = np.flatnonzero((baseline != system).any(axis=1))
    if differ.size == 0:
        return 1.0
    base_total, sys_total = baseline.sum(axis=0), system.sum(axis=0)  # (K,)
    observed = abs(_score(metric, base_total) - _score(metric, sys_total))
    gain = system[differ] - baseline[differ]  # (D, K): what swapping each segment moves
    rng = np.random.default_rng(seed)
    at_least = 0
    for start in range(0, trials, TRIALS_PER_BLOCK):
        block = min(TRIALS_PER_BLOCK, trials - start)
        swap = rng.integers(2, size=(block, differ.size)).astype(np.float64)  # (R, D)
        moved = swap @ gain  # (R, K)
        for a, b in zip(base_total + moved, sys_total - moved):
            if abs(_score(metric, a) - _score(metric, b)) >= observed - TIE_TOLERANCE:
                at_least += 1
    return (at_least + 1) / (trials + 1)


def stratified_ar_p_value(
    metric: Metric, baselines: Sequence[np.ndarray], systems: Sequence[np.ndarray], trials: int, seed: int
) -> float:
    """Two-sided AR p-value over optimizer replicates: both kinds of noise in one test (Clark et al. 2011).

    ``baselines[r]`` and ``systems[r]`` are the (N, K) statistics of replicate r (a training seed) of
    each system on the same N segments.  The statistic is the difference of the mean corpus score
    over replicates; each trial swaps every segment of every replicate between the systems with
    probability 1/2, swaps staying within their replicate (the stratum), as MultEval does.  Ties count
    as at least as large (see the module docstring); systems identical in every replicate get p = 1.
    """
    if len(baselines) != len(systems) or not baselines:
        raise ValueError(
            f"give the same number (>= 1) of replicates per system, got {len(baselines)} and {len(systems)}"
        )
    if any(b.shape != s.shape for b, s in zip(baselines, systems)):
        raise ValueError("a replicate's statistics differ in shape between the systems")
    if trials < 1:
        raise ValueError(f"trials must be positive, got {trials}")
    strata = []  # per replicate: (totals of each system, the rows that differ, what swapping them moves)
    for base, system in zip(baselines, systems):
        differ = np.flatnonzero((base != system).any(axis=1))
        strata.append((base.sum(axis=0), system.sum(axis=0), system[differ] - base[differ]))
    if all(gain.shape[0] == 0 for *_, gain in strata):
        return 1.0

    def gap(pairs: list[tuple[np.ndarray, np.ndarray]]) -> float:
        return abs(float(np.mean([_score(metric, a) - _score(metric, b) for a, b in pairs])))

    observed = gap([(a, b) for a, b, _ in strata])
    rng = np.random.default_rng(seed)
    at_least = 0
    for _ in range(trials):
        pairs = []
        for base_total, sys_total, gain in strata:
            moved = rng.integers(2, size=gain.shape[0]).astype(np.float64) @ gain  # (K,)
            pairs.append((base_total + moved, sys_total - moved))
        if gap(pairs) >= observed - TIE_TOLERANCE:
            at_least += 1
    return (at_least + 1) / (trials + 1)
