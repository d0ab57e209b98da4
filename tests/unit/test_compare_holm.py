"""nmt compare reports Holm-adjusted p-values beside the raw ones, names the family, and says what
its design could detect (the power line)."""

import pytest

from nmt.comparison.scores import add_holm, difference_spread, table_rows


def _row(variant, p, per_seed):
    return {
        "variant": variant,
        "p_seeds": p,
        "per_seed_bleu": per_seed,
        "p_values": None if p is None else [0.5],
        "params": 1,
        "updates": 10,
        "train_min": 1.0,
        "bleu": 30.0,
        "chrf": 50.0,
        "delta_bleu": 0.0,
        "bleu_by_length": {},
    }


def test_holm_adjusts_over_the_arms_tested_against_the_baseline():
    rows = [
        _row("bahdanau", None, {1: 30.0, 2: 31.0, 3: 30.5}),
        _row("scaled_dot", 0.037, {1: 29.0, 2: 29.5, 3: 30.5}),
        _row("qkv", 0.2, {1: 31.0, 2: 31.0, 3: 30.0}),
        _row("none", 0.001, {1: 20.0, 2: 21.0, 3: 20.0}),
    ]
    add_holm(rows)
    assert [r["p_seeds_holm"] for r in rows] == [None, pytest.approx(0.074), pytest.approx(0.2), pytest.approx(0.003)]
    table = table_rows(rows)
    assert table[0]["p seeds (Holm)"] == "baseline" and table[1]["p seeds (Holm)"] == "0.074"


def test_the_spread_of_differences_pools_the_arms_variances():
    rows = [
        _row("base", None, {1: 30.0, 2: 31.0}),
        _row("a", 0.5, {1: 31.0, 2: 31.0}),
        _row("b", 0.5, {1: 30.0, 2: 33.0}),
    ]
    # differences: a: +1, 0 (variance 0.5); b: 0, +2 (variance 2): pooled sqrt(1.25)
    assert difference_spread(rows, "base") == pytest.approx(1.25**0.5)
    assert difference_spread([_row("base", None, {1: 30.0})], "base") is None
    # none beside attention arms is left out (a gap of another size); alone beside the baseline it counts
    none = _row("none", 0.01, {1: 20.0, 2: 25.0})
    assert difference_spread([*rows, none], "base") == pytest.approx(1.25**0.5)
    assert difference_spread([rows[0], none], "base") == pytest.approx(2.0**0.5 * 2)  # 20 - 30, 25 - 31: sd 2.83
