"""Statistics over training seeds: Student's t intervals, the paired t-test and Kendall's tau.

A paired bootstrap (:mod:`nmt.score.significance`) resamples the sentences of one run's
translations, so it says nothing of how much a score moves between training runs.  With
several seeds per arm, the seeds themselves are the sample (Clark et al. 2011: at least three
runs per system):

- the mean of an arm's scores with a 95% confidence interval ``mean ± t(0.975, n-1) · s / √n``
  (Student's t, ``s`` the sample standard deviation of the n seeds);
- the paired t-test of an arm against the baseline: seed k of both arms shares its data order
  (not its initial weights, which differ between arms of different shapes), so the n differences ``d_k = arm_k - baseline_k`` are tested against 0 with
  ``t = mean(d) / (s_d / √n)``, n - 1 degrees of freedom, two-sided;
- Kendall's tau-b between two rankings of the same arms (on two language pairs, say): +1 when
  they order every pair of arms alike, -1 when they reverse it, about 0 when unrelated.

The t distribution is computed here (regularized incomplete beta by its continued fraction),
so this needs no scipy.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Optional

LEVEL = 0.95
"""Confidence level of every interval over seeds."""


def _beta_fraction(a: float, b: float, x: float) -> float:
    """Continued fraction of the incomplete beta function (modified Lentz), for x < (a+1)/(a+b+2)."""
    tiny, c, d = 1e-300, 1.0, 1.0 - (a + b) * x / (a + 1.0)
    d = 1.0 / (d if abs(d) > tiny else tiny)
    total = d
    for m in range(1, 300):
        for numerator in (
            m * (b - m) * x / ((a + 2 * m - 1) * (a + 2 * m)),
            -(a + m) * (a + b + m) * x / ((a + 2 * m) * (a + 2 * m + 1)),
        ):
            d = 1.0 + numerator * d
            d = 1.0 / (d if abs(d) > tiny else tiny)
            c = 1.0 + numerator / c
            c = c if abs(c) > tiny else tiny
            total *= c * d
        if abs(c * d - 1.0) < 1e-15:
            break
    return total


def incomplete_beta(a: float, b: float, x: float) -> float:
    """The regularized incomplete beta function I_x(a, b), for 0 <= x <= 1."""
    if x <= 0.0 or x >= 1.0:
        return 0.0 if x <= 0.0 else 1.0
    log_front = math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b) + a * math.log(x) + b * math.log1p(-x)
    if x < (a + 1.0) / (a + b + 2.0):
        return math.exp(log_front) * _beta_fraction(a, b, x) / a
    return 1.0 - math.exp(log_front) * _beta_fraction(b, a, 1.0 - x) / b


def t_two_sided_p(t: float, df: float) -> float:
    """P(|T| >= |t|) for Student's t with ``df`` degrees of freedom."""
    if math.isinf(t):
        return 0.0
    return incomplete_beta(df / 2.0, 0.5, df / (df + t * t))


def t_quantile(level: float, df: int) -> float:
    """The t with P(|T| <= t) = ``level`` (0.95 -> the 97.5th percentile), by bisection."""
    low, high = 0.0, 1.0
    while t_two_sided_p(high, df) > 1.0 - level:
        high *= 2.0
    for _ in range(200):
        mid = (low + high) / 2.0
        low, high = (mid, high) if t_two_sided_p(mid, df) > 1.0 - level else (low, mid)
    return (low + high) / 2.0


@dataclass(frozen=True)
class Interval:
    """A mean over seeds with its confidence interval ``mean ± half`` (half is None below 2 seeds)."""

    mean: float
    half: Optional[float]
    n: int

    def cell(self, digits: int = 2, sign: bool = False) -> str:
        """``35.24 ± 1.12`` (no ± for a single seed); ``sign``: ``+0.56 ± 1.86`` for a difference."""
        return with_half(self.mean, self.half, digits, sign)


def with_half(value: float, half: Optional[float], digits: int = 2, sign: bool = False) -> str:
    """A table cell ``value ± half``, or the value alone where there is no interval (one seed)."""
    text = f"{value:+.{digits}f}" if sign else f"{value:.{digits}f}"
    return text if half is None else f"{text} ± {half:.{digits}f}"


def check_finite(values: Sequence[float], what: str) -> list[float]:
    """``values`` as floats, or a ValueError naming the first that is not a finite number (a NaN
    score would otherwise give a number that means nothing, or a crash deep in ``statistics``)."""
    out = []
    for i, value in enumerate(values):
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
            raise ValueError(f"{what}: value {i} is {value!r}, not a finite number")
        out.append(float(value))
    return out


def mean_interval(values: Sequence[float], level: float = LEVEL) -> Interval:
    """The mean of ``values`` with its Student's t interval at ``level``."""
    if not values:
        raise ValueError("mean_interval needs at least one value")
    values = check_finite(values, "mean_interval")
    n, mean = len(values), statistics.fmean(values)
    if n < 2:
        return Interval(mean, None, n)
    return Interval(mean, t_quantile(level, n - 1) * statistics.stdev(values) / math.sqrt(n), n)


@dataclass(frozen=True)
class PairedTest:
    """An arm against the baseline over the same seeds: the mean difference, its interval, the p-value."""

    difference: Interval
    p: Optional[float]  # two-sided; None below 2 seeds


def paired_t_test(arm: Sequence[float], baseline: Sequence[float], level: float = LEVEL) -> PairedTest:
    """The paired t-test of ``arm`` against ``baseline`` (value k of both from seed k)."""
    if len(arm) != len(baseline):
        raise ValueError(f"paired_t_test needs as many values in both ({len(arm)} and {len(baseline)})")
    arm, baseline = check_finite(arm, "paired_t_test (arm)"), check_finite(baseline, "paired_t_test (baseline)")
    diffs = [a - b for a, b in zip(arm, baseline)]
    interval = mean_interval(diffs, level)
    if len(diffs) < 2:
        return PairedTest(interval, None)
    sd = statistics.stdev(diffs)
    if sd == 0.0:
        return PairedTest(interval, 1.0 if interval.mean == 0.0 else 0.0)
    t = interval.mean / (sd / math.sqrt(len(diffs)))
    return PairedTest(interval, t_two_sided_p(t, len(diffs) - 1))


def welch_p(first: Sequence[float], second: Sequence[float]) -> Optional[float]:
    """Welch's (1947) two-sided t-test of equal means for two independent samples of unequal
    variances, with the Welch-Satterthwaite degrees of freedom; None below two values in either or
    without spread in both."""
    a, b = check_finite(first, "welch_p (first)"), check_finite(second, "welch_p (second)")
    if len(a) < 2 or len(b) < 2:
        return None
    va, vb = statistics.variance(a) / len(a), statistics.variance(b) / len(b)
    if va + vb == 0.0:
        return None
    t = (statistics.fmean(b) - statistics.fmean(a)) / math.sqrt(va + vb)
    df = (va + vb) ** 2 / (va**2 / (len(a) - 1) + vb**2 / (len(b) - 1))
    return t_two_sided_p(t, df)


def kendall_tau(x: Sequence[float], y: Sequence[float]) -> float:
    """Kendall's tau-b of two scorings of the same items (ties counted as neither order)."""
    if len(x) != len(y) or len(x) < 2:
        raise ValueError("kendall_tau needs two scorings of the same two or more items")
    x, y = check_finite(x, "kendall_tau (x)"), check_finite(y, "kendall_tau (y)")
    concordant = discordant = ties_x = ties_y = 0
    for i in range(len(x)):
        for j in range(i + 1, len(x)):
            dx, dy = x[i] - x[j], y[i] - y[j]
            if dx == 0 and dy == 0:
                continue
            if dx == 0:
                ties_x += 1
            elif dy == 0:
                ties_y += 1
            elif (dx > 0) == (dy > 0):
                concordant += 1
            else:
                discordant += 1
    pairs_x = concordant + discordant + ties_y  # pairs that x orders
    pairs_y = concordant + discordant + ties_x  # pairs that y orders
    if pairs_x == 0 or pairs_y == 0:
        return float("nan")
    return (concordant - discordant) / math.sqrt(pairs_x * pairs_y)
