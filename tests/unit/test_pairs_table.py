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
