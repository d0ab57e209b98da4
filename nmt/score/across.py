"""Statistics over several tests or several groups: Holm's correction, pooled effects across language
pairs, Kendall's W with Friedman's test, and a replicability count.

A comparison of k arms against a baseline runs k tests; read one by one at 0.05, some will pass by
chance.  Holm (1979) controls the chance of any false rejection in the family: sort the p-values,
multiply the i-th smallest by (k - i + 1), and keep each adjusted value at least as large as the
one before it.

Over several groups (language pairs, datasets), three questions:

- **how large is an arm's effect, pooled?**  The mean over groups of the arm's mean difference
  from the baseline, with a Student's t interval across the groups (the groups are the sample);
- **do the groups rank the arms alike?**  Kendall's coefficient of concordance W (0: no
  agreement, 1: identical rankings) with Friedman's chi-square test, chi2 = m (n - 1) W on n - 1
  degrees of freedom for m groups ranking n arms (Demšar 2006).  Averaging Kendall's tau over pairs
  of groups has no such distribution: each ranking enters several taus;
- **on how many groups does the effect hold?**  The partial conjunction count of Benjamini and
  Heller (2008), as Dror et al. (2017, TACL) apply it to NLP over datasets: with the groups'
  p-values sorted, p^(u/N) = (N - u + 1) p_(u) tests "the effect holds in at least u of the N
  groups"; the count is the largest u whose test, and every smaller u's, rejects at alpha.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Optional

from nmt.score.seed_stats import LEVEL, Interval, check_finite, mean_interval, t_two_sided_p


def holm(p_values: Sequence[float]) -> list[float]:
    """Holm's step-down adjusted p-values, in the order given (each in [0, 1])."""
    ps = check_finite(p_values, "holm")
    if any(p < 0.0 or p > 1.0 for p in ps):
        raise ValueError("holm: p-values lie between 0 and 1")
    order = sorted(range(len(ps)), key=lambda i: ps[i])
    adjusted = [0.0] * len(ps)
    running = 0.0
    for rank, i in enumerate(order):
        running = max(running, min(1.0, (len(ps) - rank) * ps[i]))
        adjusted[i] = running
    return adjusted


def _gamma_series(a: float, x: float) -> float:
    """The regularized lower incomplete gamma P(a, x) by its series (x < a + 1)."""
    term = total = 1.0 / a
    n = a
    for _ in range(1000):
        n += 1.0
        term *= x / n
        total += term
        if abs(term) < abs(total) * 1e-16:
            break
    return total * math.exp(-x + a * math.log(x) - math.lgamma(a))


def _gamma_fraction(a: float, x: float) -> float:
    """The regularized upper incomplete gamma Q(a, x) by its continued fraction (x >= a + 1)."""
    tiny = 1e-300
    b = x + 1.0 - a
    c, d = 1.0 / tiny, 1.0 / b
    h = d
    for i in range(1, 1000):
        an = -i * (i - a)
        b += 2.0
        d = an * d + b
        d = 1.0 / (d if abs(d) > tiny else tiny)
        c = b + an / c
        c = c if abs(c) > tiny else tiny
        h *= d * c
        if abs(d * c - 1.0) < 1e-16:
            break
    return math.exp(-x + a * math.log(x) - math.lgamma(a)) * h


def chi2_sf(x: float, df: int) -> float:
    """P(X >= x) for a chi-square variable with ``df`` degrees of freedom."""
    if x <= 0.0:
        return 1.0
    a, half = df / 2.0, x / 2.0
    return 1.0 - _gamma_series(a, half) if half < a + 1.0 else _gamma_fraction(a, half)


def ranks(values: Sequence[float], descending: bool = True) -> list[float]:
    """Rank 1 for the best (largest when ``descending``); ties share the mean of their ranks."""
    order = sorted(range(len(values)), key=lambda i: -values[i] if descending else values[i])
    out = [0.0] * len(values)
    i = 0
    while i < len(order):
        j = i
        while j + 1 < len(order) and values[order[j + 1]] == values[order[i]]:
            j += 1
        for k in range(i, j + 1):
            out[order[k]] = (i + j) / 2.0 + 1.0
        i = j + 1
    return out


@dataclass(frozen=True)
class Concordance:
    """Kendall's W of m groups ranking n arms, with Friedman's chi-square test."""

    w: float
    chi2: float
    df: int
    p: float
    groups: int
    arms: int
    mean_ranks: dict[str, float]


def kendall_w(scores: Mapping[str, Mapping[str, float]]) -> Concordance:
    """Kendall's W (ties corrected) and Friedman's test for ``scores[group][arm]``, the higher the
    better; every group must score the same arms."""
    groups = list(scores)
    if len(groups) < 2:
        raise ValueError("kendall_w needs two or more groups")
    arms = list(scores[groups[0]])
    if len(arms) < 2 or any(sorted(scores[g]) != sorted(arms) for g in groups):
        raise ValueError("kendall_w needs every group to score the same two or more arms")
    m, n = len(groups), len(arms)
    table = [ranks(check_finite([scores[g][a] for a in arms], f"kendall_w ({g})")) for g in groups]
    sums = [sum(row[j] for row in table) for j in range(n)]
    mean_sum = m * (n + 1) / 2.0
    s = sum((r - mean_sum) ** 2 for r in sums)
    ties = 0.0
    for row in table:
        for value in set(row):
            t = row.count(value)
            ties += t**3 - t
    denominator = m * m * (n**3 - n) - m * ties
    w = 12.0 * s / denominator if denominator > 0 else float("nan")
    chi2 = m * (n - 1) * w
    return Concordance(w, chi2, n - 1, chi2_sf(chi2, n - 1), m, n, {a: sums[j] / m for j, a in enumerate(arms)})


@dataclass(frozen=True)
class Pooled:
    """An arm's effect pooled over groups: the mean of its per-group mean differences from the
    baseline, the interval and t-test across groups, and the groups where the difference is positive."""

    difference: Interval
    p: Optional[float]
    positive: int
    groups: int


def pooled_effect(per_group: Sequence[float], level: float = LEVEL) -> Pooled:
    """The effect over groups from one mean difference per group (``arm - baseline``)."""
    diffs = check_finite(per_group, "pooled_effect")
    interval = mean_interval(diffs, level)
    p: Optional[float] = None
    if len(diffs) >= 2:
        sd = statistics.stdev(diffs)
        if sd == 0.0:
            p = 1.0 if interval.mean == 0.0 else 0.0
        else:
            p = t_two_sided_p(interval.mean / (sd / math.sqrt(len(diffs))), len(diffs) - 1)
    return Pooled(interval, p, sum(d > 0 for d in diffs), len(diffs))


def replicability_count(p_values: Sequence[float], alpha: float = 0.05) -> int:
    """On how many of the N groups the effect holds: the largest u such that the Bonferroni partial
    conjunction tests (N - u' + 1) p_(u') <= alpha for every u' <= u (Benjamini and Heller 2008)."""
    ps = sorted(check_finite(p_values, "replicability_count"))
    count = 0
    for u, p in enumerate(ps, start=1):
        if (len(ps) - u + 1) * p > alpha:
            break
        count = u
    return count
