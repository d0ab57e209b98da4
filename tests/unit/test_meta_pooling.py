"""Pooling an effect over groups (nmt.score.meta) and the tables a grouped comparison prints of it.

Properties, and the published cases they were checked on: the fixed effect is the inverse-variance
mean and equals the plain mean for equal variances; Cochran's Q is 0 for equal estimates, so random
effects equal the fixed effect there, and random effects widen the interval once the groups differ;
the blocked t-test of a randomized block design reproduces the reviewer's pair-blocked p-values of
the cosine example (0.042 and 0.035); Holm over the widest family is never below Holm within a group;
the power line states the detectable difference at Holm's first threshold too.
"""

from __future__ import annotations

import math
import re
import statistics

import pytest

from nmt.comparison.groups import tables
from nmt.score.meta import blocked_t, meta_pool
from nmt.score.seed_stats import welch_p


def test_the_fixed_effect_is_the_inverse_variance_mean() -> None:
    pool = meta_pool([1.0, 3.0], [1.0, 1.0])
    assert pool.fixed.mean == pytest.approx(2.0) and pool.fixed.se == pytest.approx(1 / math.sqrt(2))
    pool = meta_pool([1.0, 3.0], [1.0, 3.0])  # the precise group weighs three times as much
    assert pool.fixed.mean == pytest.approx((1.0 * 1 + 3.0 / 3) / (1 + 1 / 3))


def test_equal_estimates_show_no_heterogeneity_and_random_equals_fixed() -> None:
    pool = meta_pool([0.5, 0.5, 0.5], [0.1, 0.2, 0.3])
    assert pool.q == pytest.approx(0.0) and pool.tau2 == 0.0 and pool.i2 == 0.0 and pool.q_p == pytest.approx(1.0)
    assert pool.random.mean == pytest.approx(pool.fixed.mean) and pool.random.se == pytest.approx(pool.fixed.se)


def test_groups_that_differ_widen_the_random_effects_interval() -> None:
    pool = meta_pool([-2.0, 0.0, 2.0, 4.0], [0.1, 0.1, 0.1, 0.1])
    assert pool.q > 3 * pool.df and pool.q_p < 0.001 and pool.i2 > 0.9
    assert pool.random.se > 3 * pool.fixed.se and pool.random.p > pool.fixed.p


def test_the_blocked_t_test_reproduces_the_cosine_examples_pair_blocked_p_values() -> None:
    """A regression against an independent computation: a reviewer's pair-blocked test of the
    per-seed differences of docs/measurements/cosine_2026-11-28_cpu.jsonl gave 0.042 and 0.035."""
    import json
    from pathlib import Path

    path = Path(__file__).resolve().parents[2] / "docs/measurements/cosine_2026-11-28_cpu.jsonl"
    lines = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
    bleu = {(r["pair"], r["variant"], r["seed"]): r["bleu"] for r in lines}
    for arm, p in (("luong_general", 0.042), ("cosine", 0.035)):
        groups = [[bleu[pair, arm, s] - bleu[pair, "bahdanau", s] for s in (1, 2, 3)] for pair in ("de-en", "fr-en")]
        result = blocked_t(groups)
        assert result.df == 4 and round(result.p, 3) == p
        assert result.mean == pytest.approx(statistics.fmean([statistics.fmean(g) for g in groups]))


def test_no_spread_and_too_few_groups_are_refused() -> None:
    with pytest.raises(ValueError, match="two or more groups"):
        meta_pool([1.0], [1.0])
    with pytest.raises(ValueError, match="variance must be positive"):
        meta_pool([1.0, 2.0], [0.0, 1.0])
    with pytest.raises(ValueError, match="do not vary within any group"):
        blocked_t([[1.0, 1.0], [2.0, 2.0]])


def record(pair: str, variant: str, seed: int, bleu: float) -> dict:
    return {
        "pair": pair,
        "config": None,
        "variant": variant,
        "seed": seed,
        "baseline": "base",
        "bleu": bleu,
        "params": 1,
        "split": "test",
        "beam": 1,
        "updates": 10,
    }


def test_a_grouped_table_names_the_widest_family_and_the_power_at_holms_threshold() -> None:
    records = []
    for pair, shift in (("de-en", 0.0), ("en-de", 1.0)):
        for seed, noise in ((1, 0.3), (2, -0.2), (3, 0.1)):
            records += [
                record(pair, "base", seed, 30.0 + shift + noise),
                record(pair, "good", seed, 33.0 + shift + noise + 0.1 * seed),
                record(pair, "same", seed, 30.0 + shift - noise),
            ]
    text = tables(records)
    assert "| variant | blocked ΔBLEU (95% CI) |" in text and "Cochran's Q (1 df)" in text
    widest = [line for line in text.splitlines() if line.startswith("| good |") and "," in line and "±" not in line]
    within = [line for line in text.splitlines() if line.startswith("| good |") and "of 2" in line]
    assert "Holm p over all 4 tests (de-en, en-de)" in text and widest and within
    wide = [float(x) for x in widest[-1].split("|")[2].split(",")]
    narrow = [float(x) for x in within[0].split("|")[-2].split(",")]
    assert all(w >= n for w, n in zip(wide, narrow))  # a wider family never adjusts less
    assert "Below 0.05 in the widest family: good in de-en, en-de." in text
    assert "at Holm's first threshold within a pair's family of 2 tests (alpha 0.05/2 = 0.0250)" in text
    assert "; in the widest family of 4 tests (alpha 0.05/4 = 0.0125): 3 seeds " in text


def test_the_device_block_shows_an_arm_that_moves_with_the_device() -> None:
    """Seeds 1-2 on one device, 3-4 on another; "moved" loses 2 BLEU against the baseline on the second."""
    records = []
    for pair in ("de-en", "en-de", "fr-en"):
        for seed, noise in ((1, 0.2), (2, -0.1), (3, 0.15), (4, -0.05)):
            device = "gpu" if seed <= 2 else "cpu"
            for variant, bleu in (
                ("base", 30.0),
                ("steady", 31.0 + noise),
                ("moved", 31.0 - (2.0 if seed > 2 else 0.0)),
            ):
                records.append({**record(pair, variant, seed, bleu + noise), "device_name": device})
    text = tables(records)
    assert "minus on gpu (seeds 1, 2)" in text and "on cpu (seeds 3, 4)" in text
    assert "| moved | -2.00 | -2.00 | -2.00 | -2.00 ± 0.00 | - |" in text.splitlines()
    assert "| steady | +0.00 | +0.00 | +0.00 | +0.00 ± 0.00 | - |" in text.splitlines()  # its noise is the device's
    assert "Over every arm and pair (6 cells): -1.00 ± 1.15 BLEU" in text
    one_device = tables([{**r, "device_name": "cpu"} for r in records])
    unnamed = tables([{**r, "device_name": None} if r["seed"] == 1 else r for r in records])  # an older record
    assert "The device as a block" not in one_device and "The device as a block" not in unnamed


def test_welch_reproduces_the_published_two_sample_case() -> None:
    """Wikipedia's "Welch's t-test" example 1 (two samples of 15, unequal variances): t = -2.46,
    nu = 25.0, p = 0.021."""
    a1 = [27.5, 21.0, 19.0, 23.6, 17.0, 17.9, 16.9, 20.1, 21.9, 22.6, 23.1, 19.6, 19.0, 21.7, 21.4]
    a2 = [27.1, 22.0, 20.8, 23.4, 23.4, 23.5, 25.8, 22.0, 24.8, 20.2, 21.9, 22.1, 22.9, 20.5, 24.4]
    assert welch_p(a1, a2) == pytest.approx(0.021, abs=0.0005) == welch_p(a2, a1)
    assert welch_p([1.0], [2.0, 3.0]) is None and welch_p([1.0, 1.0], [2.0, 2.0]) is None


def test_a_device_block_of_one_group_tests_each_arm_by_welch_over_the_seeds() -> None:
    """One pair, seeds 1-3 on one device and 4-5 on another: "moved" is 2 BLEU worse on the second."""
    noise = {1: 0.3, 2: -0.2, 3: 0.1, 4: -0.25, 5: 0.2}
    records = [
        {**record("europarl", v, seed, bleu), "device_name": "xeon" if seed <= 3 else "epyc"}
        for seed in noise
        for v, bleu in (
            ("base", 10.0),
            ("steady", 10.5 + noise[seed]),
            ("moved", 10.5 + noise[seed] - (2.0 if seed > 3 else 0.0)),
        )
    ]
    lines = tables(records).splitlines()
    assert "| variant | europarl | over the one pair | p (Welch t over the seeds) |" in lines
    moved = next(line for line in lines if line.startswith("| moved | -2.")).split("|")
    steady = next(line for line in lines if line.startswith("| steady |")).split("|")
    assert float(moved[-2]) < 0.05 and float(steady[-2]) > 0.5  # 3 and 2 seeds: about 2 degrees of freedom


def test_a_table_of_one_group_names_its_holm_family_and_what_stays_below_005() -> None:
    records = []
    for seed, noise in ((1, 0.3), (2, -0.2), (3, 0.1)):
        records += [
            record("de-en", "base", seed, 30.0 + noise),
            record("de-en", "good", seed, 33.0 + noise + 0.1 * seed),
            record("de-en", "same", seed, 30.0 - noise),
        ]
    text = tables(records)
    raw = {
        line.split("|")[1].strip(): float(line.split("|")[6])
        for line in text.splitlines()
        if line.startswith(("| good", "| same"))
    }
    low, high = sorted(raw.values())  # Holm by hand over two tests: the smaller times 2, the larger kept
    adjusted = {name: min(1.0, 2 * low) if p == low else max(min(1.0, 2 * low), high) for name, p in raw.items()}
    family = [line for line in text.splitlines() if line.startswith("Holm's family")]
    assert len(family) == 1 and family[0].startswith(
        "Holm's family: the 2 paired t-tests over seeds of this table's arms against base; adjusted p good "
    )
    assert family[0].endswith(". Below 0.05 in this family: good.")
    shown = dict(re.findall(r"(good|same) (\d\.\d{3})", family[0]))
    assert all(abs(float(shown[name]) - q) <= 0.0015 for name, q in adjusted.items())  # raw p printed to 3 places
    two_groups = records + [record("en-de", v, s, 30.0 + s) for v in ("base", "good") for s in (1, 2)]
    assert "Holm's family:" not in tables(two_groups)  # there the widest family and the per-group column say it
