"""The power of the paired t-test over seeds: the smallest difference a design can detect, and the
seeds a chosen difference needs.

A comparison with n seeds tests the n differences ``d_k = arm_k - baseline_k`` (seed k of both
arms) against 0, two-sided at level alpha.  If the true mean difference is delta and the
differences spread with standard deviation sigma, the statistic follows a noncentral t with n - 1
degrees of freedom and noncentrality ``delta * sqrt(n) / sigma``; the power is the probability that
it lands beyond the critical value.  That probability is integrated here over the chi-square
variable of the t's denominator (no scipy):

    P(T <= t) = integral over v of Phi(t * sqrt(v / df) - ncp) * chi2_pdf(v; df) dv.

Say before the runs what a design can find: with sigma = 0.72 BLEU, three seeds detect about
2.3 BLEU at 80% power, five seeds 1.2, ten 0.72 (``nmt compare --dry-run`` prints this line).
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from typing import Optional

from nmt.score.seed_stats import t_quantile

POWER = 0.8
"""The power a design is sized for (the usual 80%)."""
ALPHA = 0.05
"""The two-sided level of the test."""
BLEU_RANGE = (0.01, 100.0)
"""The spreads and target differences a power line takes, in BLEU: below 0.01 is finer than any BLEU is
reported (the line would print 0.00), above 100 more than BLEU can differ."""
_POINTS = 4000  # Simpson's rule on the chi-square variable: far more than the 4 digits reported need


def _phi(x: float) -> float:
    return 0.5 * math.erfc(-x / math.sqrt(2.0))


def _chi2_pdf(v: float, df: int) -> float:
    if v <= 0.0:
        return 0.0
    k = df / 2.0
    return math.exp((k - 1.0) * math.log(v) - v / 2.0 - k * math.log(2.0) - math.lgamma(k))


def noncentral_t_cdf(t: float, df: int, ncp: float) -> float:
    """P(T <= t) for a noncentral t with ``df`` degrees of freedom and noncentrality ``ncp``."""
    upper = df + 40.0 * math.sqrt(2.0 * df) + 60.0
    step = upper / _POINTS
    total = 0.0
    for i in range(_POINTS + 1):
        v = i * step
        weight = 1.0 if i in (0, _POINTS) else (4.0 if i % 2 else 2.0)
        total += weight * _phi(t * math.sqrt(v / df) - ncp) * _chi2_pdf(v, df)
    return total * step / 3.0


def pooled_spread(samples: Sequence[Sequence[float]]) -> Optional[float]:
    """The pooled standard deviation of several samples (each arm's per-seed differences to the
    baseline): the root of their variances averaged with weights n - 1, the sigma the power of a
    paired test depends on.  Samples of fewer than two values are left out; None when none is left
    or the spread is 0."""
    kept = [list(x) for x in samples if len(x) >= 2]
    df = sum(len(x) - 1 for x in kept)
    if df == 0:
        return None
    variance = sum((len(x) - 1) * statistics.variance(x) for x in kept) / df
    return math.sqrt(variance) if variance > 0.0 else None


def paired_power(delta: float, sigma: float, seeds: int, alpha: float = ALPHA) -> float:
    """The power of the two-sided paired t-test over ``seeds`` seeds to find a true difference ``delta``."""
    if seeds < 2 or sigma <= 0.0:
        raise ValueError("paired_power needs 2 or more seeds and a positive spread")
    df = seeds - 1
    critical = t_quantile(1.0 - alpha, df)
    ncp = abs(delta) * math.sqrt(seeds) / sigma
    return 1.0 - noncentral_t_cdf(critical, df, ncp) + noncentral_t_cdf(-critical, df, ncp)


def detectable_difference(sigma: float, seeds: int, power: float = POWER, alpha: float = ALPHA) -> float:
    """The smallest true difference the paired t-test over ``seeds`` seeds finds with ``power``."""
    low, high = 0.0, sigma
    while paired_power(high, sigma, seeds, alpha) < power:
        high *= 2.0
    for _ in range(60):
        mid = (low + high) / 2.0
        low, high = (mid, high) if paired_power(mid, sigma, seeds, alpha) < power else (low, mid)
    return high


SEEDS_SEARCHED = 1000
"""The most seeds :func:`seeds_needed` tries; a difference that needs more is said to need more."""


def seeds_needed(
    delta: float, sigma: float, power: float = POWER, alpha: float = ALPHA, most: int = SEEDS_SEARCHED
) -> Optional[int]:
    """The fewest seeds with which the paired t-test finds ``delta`` with ``power``; None when even
    ``most`` seeds do not (the answer is then "more than ``most``", never ``most`` itself).

    The power grows with the seeds, so the count is found by bisection."""
    if delta == 0.0:
        raise ValueError("seeds_needed: no number of seeds detects a difference of 0")
    if paired_power(delta, sigma, most, alpha) < power:
        return None
    low, high = 1, most  # the power of ``low`` seeds is short of ``power`` (one seed has no test), ``high``'s is not
    while high - low > 1:
        mid = (low + high) // 2
        low, high = (low, mid) if paired_power(delta, sigma, mid, alpha) >= power else (mid, high)
    return high


def power_line(sigma: float, seeds: int, target: float | None = None) -> str:
    """One sentence for a report: what ``seeds`` seeds can detect at 80% power given a spread
    ``sigma`` of the per-seed differences, and, with ``target``, the seeds that difference needs."""
    found = detectable_difference(sigma, seeds)
    line = (
        f"with {seeds} seeds and a spread of {sigma:.2f} BLEU between seeds' differences, the paired t-test "
        f"finds a true difference of {found:.2f} BLEU or more with {POWER:.0%} power (alpha {ALPHA})"
    )
    if target is not None:
        needed = seeds_needed(target, sigma)
        count = f"more than {SEEDS_SEARCHED:,}" if needed is None else f"{needed:,}"
        line += f"; a difference of {target:.2f} needs {count} seeds"
    return line
