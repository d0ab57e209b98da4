"""docs_build/pairs_table.py: per-pair intervals, the summary and Kendall's tau from JSON lines."""

import importlib
import json

import pytest

from nmt.comparison.groups import check_same_arms
from nmt.util.errors import UserError

pairs_table = importlib.import_module("pairs_table")  # docs_build/ is on sys.path (tests/conftest.py)


def record(pair: str, variant: str, seed: int, bleu: float) -> dict:
    return {
        "pair": pair,
        "config": f"configs/{pair}.yaml",
        "variant": variant,
        "seed": seed,
        "baseline": "bahdanau",
        "split": "test2016",
        "beam": 5,
        "bleu": bleu,
        "updates": 600,
        "params": 1000,
        "flops_per_token": 2.5e6,
    }


def test_rankings_that_agree_give_tau_one_and_a_reversal_minus_one(tmp_path, capsys):
    scores = {"bahdanau": 30.0, "qkv": 31.0, "none": 20.0, "scaled_dot": 29.0}
    lines = [record("de-en", v, s, b + 0.1 * s) for v, b in scores.items() for s in (1, 2, 3)]
    lines += [record("fr-en", v, s, b + 10 + 0.1 * s) for v, b in scores.items() for s in (1, 2, 3)]
    lines += [record("cs-en", v, s, -b + 0.1 * s) for v, b in scores.items() for s in (1, 2, 3)]
    path = tmp_path / "pairs.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in lines))
    pairs_table.main([str(path)])
    page = capsys.readouterr().out
    assert "| de-en |  | +1.00 | -1.00 |" in page  # fr-en ranks alike, cs-en in reverse
    # the shift of 0.1 per seed is the same in both arms: the paired differences have no spread
    assert "| qkv | 1,000 | 2.50 | 31.20 ± 0.25 | +1.00 ± 0.00 | 0.000 | 1 |" in page
    assert "| none | -10.00 (4) | -10.00 (4) | +10.00 (1) | 3.00 |" in page
    assert "attention variants only (none left out)" in page


def test_the_pages_statistics_across_pairs_come_from_the_json_lines(tmp_path, capsys):
    """Pooled effects, the partial-conjunction count, Holm within each pair and Kendall's W, printed
    by the command the pairs page cites (issue 61, item 3)."""
    scores = {"bahdanau": 30.0, "qkv": 31.0, "none": 20.0, "scaled_dot": 29.0}
    noise = {1: 0.0, 2: 0.3, 3: -0.2}
    lines = [
        record(pair, v, s, b + shift + (noise[s] if v != "bahdanau" else 0.0))
        for pair, shift in (("de-en", 0.0), ("fr-en", 5.0), ("cs-en", -3.0))
        for v, b in scores.items()
        for s in (1, 2, 3)
    ]
    path = tmp_path / "pairs.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in lines))
    pairs_table.main([str(path)])
    page = capsys.readouterr().out
    # qkv is +1 + mean(noise) = +1.033 on every pair: no spread across pairs, positive on all three
    assert "| qkv | +1.03 ± 0.00 | 0.000 | 3 of 3 | 9 of 9 |" in page
    assert "Kendall's W, all variants: 1.000 (Friedman chi-square 9.00, 3 df, p = 0.0293)" in page


@pytest.mark.parametrize("change", [{"arms": {"bahdanau": {}, "qkv": {}}}, {"baseline": "none"}])
def test_groups_of_other_arms_or_another_baseline_are_refused_in_one_line(change):
    plan = {"arms": {"bahdanau": {}, "none": {}}, "baseline": "bahdanau"}
    check_same_arms({"de-en": plan, "fr-en": {**plan, "arms": {"none": {}, "bahdanau": {}}}})  # order aside: alike
    with pytest.raises(UserError, match="fr-en") as refusal:
        check_same_arms({"de-en": plan, "fr-en": {**plan, **change}})
    assert "\n" not in str(refusal.value)


def test_the_combined_test_is_tabulated_per_pair_with_holm_and_the_power_line_from_the_seed_spread(tmp_path, capsys):
    """Issue 61, items 4 and 5 on the pairs page: the comparisons' approximate randomization over
    replicates, carried by the records, raw and Holm-adjusted within a pair; and the detectable
    difference from the spread of per-seed differences (none left out of the spread)."""
    scores = {"bahdanau": 30.0, "qkv": 31.0, "none": 20.0}
    noise = {1: 0.0, 2: 1.0, 3: -1.0}  # qkv's differences: 1, 2, 0 -> standard deviation 1.0
    p_ar = {"qkv": 0.02, "none": 0.01}
    lines = [
        {**record(pair, v, s, b + (noise[s] if v == "qkv" else 0.0)), "p_ar": p_ar.get(v), "ar_seeds": [1, 2, 3]}
        for pair in ("de-en", "fr-en")
        for v, b in scores.items()
        for s in (1, 2, 3)
    ]
    lines += [{**record("cs-en", v, s, b), "p_ar": None} for v, b in scores.items() for s in (1, 2, 3)]
    path = tmp_path / "pairs.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in lines))
    pairs_table.main([str(path)])
    page = capsys.readouterr().out
    assert "| variant | de-en p AR, seeds 1, 2, 3 (Holm) | fr-en p AR, seeds 1, 2, 3 (Holm) |" in page  # cs-en: none
    assert "| none | 0.0100 (0.0200) | 0.0100 (0.0200) |" in page  # Holm over the two tests: 2 x 0.01
    assert "| qkv | 0.0200 (0.0200) | 0.0200 (0.0200) |" in page  # the larger p: max(0.02, 0.02)
    # qkv has spread 1 on de-en and fr-en and 0 on cs-en: pooled sqrt(mean(1, 1, 0)) = 0.82
    assert "spread 0.82 BLEU" in page
    assert "3 seeds 2.67" in page  # 0.82 x 3.27, the audit's ratio 2.35 / 0.72 at three seeds


def test_one_seed_gives_no_power_line_and_records_without_the_combined_test_no_table(tmp_path, capsys):
    lines = [record(pair, v, 1, b) for pair in ("de-en", "fr-en") for v, b in (("bahdanau", 30.0), ("qkv", 31.0))]
    path = tmp_path / "pairs.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in lines))
    pairs_table.main([str(path)])
    page = capsys.readouterr().out
    assert "Power:" not in page and "p AR" not in page
