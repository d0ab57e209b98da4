"""BLEU of a group of test sentences, averaged over seeds, with a bootstrap interval over the sentences.

A bucket of BLEU by length is a small test set of its own (tens to hundreds of sentences), so its
score moves with the sentences that happen to fall into it as much as with the model.  The interval
here resamples the bucket's sentences with replacement (Koehn 2004's bootstrap, by sacreBLEU's
sufficient statistics: :func:`nmt.score.significance.segment_statistics`); every seed's run is
scored on the same resample, since all of them translated the same sentences, and the seeds' scores
are averaged.  It says how far the bucket's sentences leave the mean uncertain, not how far another
seed would move it: the seeds' own spread is reported beside it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from sacrebleu.metrics.bleu import BLEU

from nmt.score.significance import score_from_statistics


@dataclass(frozen=True)
class SeedMeanInterval:
    """The seed-mean score of a group of sentences, its percentile interval, and each seed's score."""

    mean: float
    low: float
    high: float
    per_seed: tuple[float, ...]
    ratio: float  # output length over reference length (BLEU's tokens), summed over the seeds


def seed_mean_interval(
    metric: BLEU, stats: Sequence[np.ndarray], resamples: int, seed: int, level: float = 0.95
) -> SeedMeanInterval:
    """The mean over seeds of the corpus BLEU of the same N sentences, with a ``level`` percentile
    bootstrap interval over those sentences.

    ``stats`` holds one (N, K) array of segment statistics per seed, row i of every array the same
    sentence.  Each of ``resamples`` draws picks N sentence indices with replacement, scores every
    seed on them and averages; the interval is the draws' central ``level`` range.
    """
    if not stats:
        raise ValueError("give the statistics of at least one seed")
    n = stats[0].shape[0]
    if n == 0:
        raise ValueError("give the statistics of at least one sentence")
    if any(s.shape != stats[0].shape for s in stats):
        raise ValueError(f"every seed needs statistics of the same sentences, got {[s.shape for s in stats]}")
    if resamples < 1 or not 0.0 < level < 1.0:
        raise ValueError(f"resamples must be positive and level in (0, 1), got {resamples} and {level}")
    per_seed = tuple(score_from_statistics(metric, s) for s in stats)
    rng = np.random.default_rng(seed)
    counts = np.stack([np.bincount(rng.integers(n, size=n), minlength=n) for _ in range(resamples)])  # (R, N)
    draws = np.zeros(resamples)
    for s in stats:
        totals = counts @ s  # (R, K): each resample's summed statistics
        draws += [score_from_statistics(metric, row[None, :]) for row in totals]
    draws /= len(stats)
    tail = (1.0 - level) / 2 * 100
    low, high = np.percentile(draws, [tail, 100 - tail])
    lengths = sum(s[:, :2].sum(axis=0) for s in stats)  # BLEU's first two statistics: output, reference length
    return SeedMeanInterval(
        mean=float(np.mean(per_seed)),
        low=float(low),
        high=float(high),
        per_seed=per_seed,
        ratio=float(lengths[0] / lengths[1]) if lengths[1] else 0.0,
    )
