"""Statistics across tests and groups (Holm, Kendall's W with Friedman's test, pooled effects, the
replicability count) and the paired t-test's power, against values known from the literature or
worked by hand; non-finite inputs are refused."""

import math

import pytest

from nmt.score.across import chi2_sf, holm, kendall_w, pooled_effect, ranks, replicability_count
from nmt.score.power import detectable_difference, noncentral_t_cdf, paired_power, power_line, seeds_needed
from nmt.score.seed_stats import kendall_tau, mean_interval, paired_t_test, t_two_sided_p


def test_holm_multiplies_by_the_tests_left_and_stays_monotone():
    assert holm([0.01, 0.04, 0.03, 0.005]) == pytest.approx([0.03, 0.06, 0.06, 0.02])
    assert holm([0.5]) == [0.5] and holm([0.9, 0.8]) == [1.0, 1.0]  # 2 * 0.8 is capped at 1


def test_holm_turns_scaled_dots_only_significant_result_into_none():
    """The audit's example: fr-en scaled_dot p = 0.037 among four arms' tests on that pair."""
    assert holm([0.037, 0.2, 0.3, 0.6])[0] == pytest.approx(0.148)


@pytest.mark.parametrize("x, df, p", [(3.841458820694124, 1, 0.05), (9.487729036781154, 4, 0.05), (0.0, 3, 1.0)])
def test_chi2_survival_matches_the_table(x, df, p):
    assert chi2_sf(x, df) == pytest.approx(p, abs=1e-9)


def test_kendall_w_is_one_for_identical_rankings_and_friedman_p_matches_chi2():
    same = {g: {"a": 3.0, "b": 2.0, "c": 1.0} for g in ("de-en", "fr-en", "cs-en")}
    result = kendall_w(same)
    assert result.w == pytest.approx(1.0) and result.chi2 == pytest.approx(6.0) and result.df == 2
    assert result.p == pytest.approx(math.exp(-3.0))  # chi2 with 2 df: sf(x) = exp(-x/2)
    assert result.mean_ranks == {"a": 1.0, "b": 2.0, "c": 3.0}


def test_kendall_w_of_the_audit_four_pairs_five_arms():
    """W = 0.887 over 4 groups and 5 arms gives chi2 = 4 * 4 * 0.887 and p = 0.0067 (issue 61)."""
    assert chi2_sf(4 * 4 * 0.887, 4) == pytest.approx(0.0067, abs=5e-5)


def test_kendall_w_corrects_for_ties_and_refuses_what_it_cannot_rank():
    tied = kendall_w({"x": {"a": 1.0, "b": 1.0, "c": 0.0}, "y": {"a": 1.0, "b": 1.0, "c": 0.0}})
    assert tied.w == pytest.approx(1.0)
    assert ranks([2.0, 2.0, 1.0]) == [1.5, 1.5, 3.0]
    with pytest.raises(ValueError, match="same two or more arms"):
        kendall_w({"x": {"a": 1.0, "b": 2.0}, "y": {"a": 1.0}})
    with pytest.raises(ValueError, match="not a finite number"):
        kendall_w({"x": {"a": float("nan"), "b": 2.0}, "y": {"a": 1.0, "b": 2.0}})


def test_pooled_effect_is_the_t_test_across_groups():
    pooled = pooled_effect([0.4, 0.9, 0.5, 0.45])
    assert pooled.difference.mean == pytest.approx(0.5625) and pooled.positive == 4 and pooled.groups == 4
    assert pooled.p == pytest.approx(paired_t_test([0.4, 0.9, 0.5, 0.45], [0, 0, 0, 0]).p)


def test_replicability_count_is_the_bonferroni_partial_conjunction():
    assert replicability_count([0.001, 0.01, 0.02, 0.4]) == 3  # 4*0.001, 3*0.01, 2*0.02 <= 0.05; 1*0.4 not
    assert replicability_count([0.03, 0.02]) == 2  # 2 * 0.02 and 1 * 0.03 are both at most 0.05
    assert replicability_count([0.2, 0.3]) == 0


def test_noncentral_t_with_no_shift_is_students_t():
    for t in (0.5, 1.7, 3.0):
        assert noncentral_t_cdf(t, 4, 0.0) == pytest.approx(1.0 - t_two_sided_p(t, 4) / 2.0, abs=1e-6)


def test_power_of_the_paired_t_test_matches_known_values():
    assert paired_power(1.0, 1.0, 10) == pytest.approx(0.803, abs=0.001)  # Cohen's d = 1, n = 10
    assert paired_power(0.0, 1.0, 10) == pytest.approx(0.05, abs=1e-4)  # no effect: the level


def test_the_audit_s_detectable_differences_and_seed_counts():
    """Spread 0.72 BLEU: three seeds detect 2.35, five 1.21, ten 0.72 at 80% power (issue 61)."""
    assert [round(detectable_difference(0.72, n), 2) for n in (3, 5, 10)] == [2.35, 1.21, 0.72]
    assert seeds_needed(1.22, 0.72) == 5 and seeds_needed(1.2, 0.72) == 6 and seeds_needed(0.5, 0.72) > 10
    assert "2.35 BLEU or more with 80% power" in power_line(0.72, 3)


@pytest.mark.parametrize(
    "call",
    [
        lambda: mean_interval([1.0, float("nan")]),
        lambda: paired_t_test([1.0, 2.0], [1.0, float("inf")]),
        lambda: kendall_tau([1.0, float("nan")], [1.0, 2.0]),
    ],
)
def test_non_finite_scores_are_refused_in_one_line(call):
    """mean_interval and paired_t_test crashed on NaN deep in statistics; kendall_tau returned a number."""
    with pytest.raises(ValueError, match="not a finite number") as info:
        call()
    assert "\n" not in str(info.value)
