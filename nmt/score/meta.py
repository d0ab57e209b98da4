"""Pooling one effect measured in several groups: the fixed-effect and the random-effects estimate,
side by side with the test of whether the groups differ (meta-analysis; Borenstein et al. 2009).

Each group gives an estimate d_i (an arm's mean paired difference to the baseline over seeds) and
its variance v_i (the squared standard error of that mean, s_i^2 / n_i):

- **fixed effect** (inverse variance): one true effect for every group,
  d_F = sum_i w_i d_i / sum_i w_i with w_i = 1 / v_i, SE(d_F) = 1 / sqrt(sum_i w_i);
- **heterogeneity**: Cochran's Q = sum_i w_i (d_i - d_F)^2, chi-square with k - 1 df when the groups
  share one effect; I^2 = max(0, (Q - df) / Q), the share of the spread beyond chance (Higgins and
  Thompson 2002);
- **random effects** (DerSimonian and Laird 1986): each group's true effect drawn around a mean with
  variance tau^2 = max(0, (Q - df) / (sum w - sum w^2 / sum w)); weights w*_i = 1 / (v_i + tau^2).

Both tests are z-tests (normal), as the method defines them; with few seeds per group the v_i are
themselves uncertain, so both are approximate, and a pool over k groups by the t distribution over
the groups' d_i (:func:`nmt.score.across.pooled_effect`) stays beside them.

- **blocked t** (:func:`blocked_t`): the per-seed differences with the group as a block, one
  spread pooled within the groups: the mean of the groups' means d_i, its standard error
  s sqrt(sum_i 1/n_i) / k from the pooled within-group variance s^2, and a t-test with N - k
  degrees of freedom (N differences in k groups), the test of a randomized block design.  It uses
  every seed's difference, where the t pool over the k group means has only k - 1 df.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from nmt.score.across import chi2_sf
from nmt.score.seed_stats import LEVEL, check_finite, t_quantile, t_two_sided_p

Z95 = 1.959963984540054
"""The standard normal quantile of a two-sided 95% interval."""


@dataclass(frozen=True)
class Estimate:
    """A pooled effect with its standard error, 95% interval half-width and two-sided z-test p."""

    mean: float
    se: float

    @property
    def half(self) -> float:
        return Z95 * self.se

    @property
    def p(self) -> float:
        return math.erfc(abs(self.mean / self.se) / math.sqrt(2.0)) if self.se > 0 else float(self.mean == 0.0)


@dataclass(frozen=True)
class MetaPool:
    """The fixed-effect and the random-effects pool of one effect over k groups, and Cochran's Q."""

    fixed: Estimate
    random: Estimate
    q: float
    df: int
    tau2: float

    @property
    def q_p(self) -> float:
        """p of Cochran's Q (chi-square, k - 1 df): small where the groups' effects differ."""
        return chi2_sf(self.q, self.df)

    @property
    def i2(self) -> float:
        """Higgins' I^2: the share of Q beyond what chance gives, 0 to 1."""
        return max(0.0, (self.q - self.df) / self.q) if self.q > 0 else 0.0


def meta_pool(estimates: Sequence[float], variances: Sequence[float]) -> MetaPool:
    """Pool ``estimates`` (one per group) with their ``variances`` (squared standard errors, each > 0)."""
    d = check_finite(estimates, "meta_pool estimates")
    v = check_finite(variances, "meta_pool variances")
    if len(d) != len(v) or len(d) < 2:
        raise ValueError(f"meta_pool needs one variance per estimate and two or more groups, got {len(d)} and {len(v)}")
    if min(v) <= 0:
        raise ValueError("meta_pool: every variance must be positive (a group whose seeds all agree has none)")
    w = [1.0 / x for x in v]
    total = sum(w)
    fixed = sum(wi * di for wi, di in zip(w, d)) / total
    q = sum(wi * (di - fixed) ** 2 for wi, di in zip(w, d))
    df = len(d) - 1
    tau2 = max(0.0, (q - df) / (total - sum(wi * wi for wi in w) / total))
    w_star = [1.0 / (x + tau2) for x in v]
    random = sum(wi * di for wi, di in zip(w_star, d)) / sum(w_star)
    return MetaPool(
        Estimate(fixed, 1.0 / math.sqrt(total)), Estimate(random, 1.0 / math.sqrt(sum(w_star))), q, df, tau2
    )


@dataclass(frozen=True)
class Blocked:
    """The blocked t-test of :func:`blocked_t`: the mean difference, its interval's half-width, p and df."""

    mean: float
    half: float
    p: float
    df: int


def blocked_t(groups: Sequence[Sequence[float]], level: float = LEVEL) -> Blocked:
    """The mean of the groups' mean differences and its t-test with the spread pooled within the groups
    (each group two or more differences, not all alike everywhere)."""
    samples = [check_finite(g, "blocked_t") for g in groups]
    if len(samples) < 2 or min(len(g) for g in samples) < 2:
        raise ValueError("blocked_t needs two or more groups of two or more differences each")
    means = [sum(g) / len(g) for g in samples]
    df = sum(len(g) for g in samples) - len(samples)
    within = sum((x - m) ** 2 for g, m in zip(samples, means) for x in g) / df
    mean = sum(means) / len(means)
    se = math.sqrt(within * sum(1.0 / len(g) for g in samples)) / len(samples)
    if se == 0.0:
        raise ValueError("blocked_t: the differences do not vary within any group")
    return Blocked(mean, t_quantile(level, df) * se, t_two_sided_p(mean / se, df), df)
