"""Statistics over seeds against textbook values of Student's t and hand-counted rankings."""

import itertools
import math
import random
import statistics

import pytest

from nmt.score.seed_stats import (
    incomplete_beta,
    kendall_tau,
    mean_interval,
    paired_t_test,
    t_quantile,
    t_two_sided_p,
)


@pytest.mark.parametrize(
    ("df", "quantile"), [(1, 12.7062), (2, 4.3027), (4, 2.7764), (10, 2.2281), (30, 2.0423), (1000, 1.9623)]
)
def test_t_quantiles_are_the_tables(df, quantile):
    assert t_quantile(0.95, df) == pytest.approx(quantile, abs=1e-4)


@pytest.mark.parametrize(("t", "df", "p"), [(2.0, 5, 0.10191), (1.0, 1, 0.5), (3.0, 2, 0.09547), (0.0, 7, 1.0)])
def test_two_sided_p_values_are_the_tables(t, df, p):
    assert t_two_sided_p(t, df) == pytest.approx(p, abs=1e-4)
    assert t_two_sided_p(-t, df) == pytest.approx(p, abs=1e-4)


def test_incomplete_beta_is_symmetric_and_monotone():
    xs = [i / 20 for i in range(21)]
    values = [incomplete_beta(2.5, 0.5, x) for x in xs]
    assert values[0] == 0.0 and values[-1] == 1.0
    assert all(a <= b for a, b in itertools.pairwise(values))
    for x in xs:
        assert incomplete_beta(2.5, 0.5, x) == pytest.approx(1 - incomplete_beta(0.5, 2.5, 1 - x), abs=1e-12)


def test_one_seed_has_no_interval_and_no_p_value():
    single = mean_interval([35.24])
    assert single.half is None and single.cell() == "35.24"
    assert paired_t_test([36.0], [35.0]).p is None


def test_interval_is_t_times_the_standard_error():
    values = [36.5, 34.38, 34.83]
    interval = mean_interval(values)
    assert interval.mean == pytest.approx(statistics.fmean(values))
    assert interval.half == pytest.approx(4.3027 * statistics.stdev(values) / math.sqrt(3), abs=1e-3)
    assert interval.cell() == f"{interval.mean:.2f} ± {interval.half:.2f}"


def test_intervals_cover_the_mean_about_95_percent_of_the_time():
    rng = random.Random(0)
    hits = 0
    for _ in range(2000):
        sample = [rng.gauss(10.0, 2.0) for _ in range(3)]
        interval = mean_interval(sample)
        hits += abs(interval.mean - 10.0) <= interval.half
    assert 0.93 < hits / 2000 < 0.97


def test_paired_test_sees_a_consistent_shift_that_unpaired_noise_hides():
    baseline = [30.0, 35.0, 40.0]
    arm = [30.5, 35.6, 40.4]  # +0.5 on every seed, under a spread of 5 between seeds
    test = paired_t_test(arm, baseline)
    assert test.difference.mean == pytest.approx(0.5)
    assert test.p == pytest.approx(t_two_sided_p(0.5 / (0.1 / math.sqrt(3)), 2)) and test.p < 0.05
    assert paired_t_test(baseline, baseline).p == 1.0


def test_kendall_tau_counts_concordant_pairs():
    assert kendall_tau([1, 2, 3, 4], [10, 20, 30, 40]) == 1.0
    assert kendall_tau([1, 2, 3, 4], [4, 3, 2, 1]) == -1.0
    assert kendall_tau([1, 2, 3, 4], [1, 2, 4, 3]) == pytest.approx(4 / 6)  # one of six pairs swapped
    assert kendall_tau([1, 1, 2], [1, 2, 3]) == pytest.approx(2 / math.sqrt(2 * 3))  # tau-b with a tie in x
