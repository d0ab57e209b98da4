"""The power line of ``nmt compare --dry-run`` and what it takes (issue 70): a seed count past the
search is "more than 1,000", never the cap itself; ``--spread`` and ``--target`` are BLEU amounts
it can print; ``--spread-from`` reads an earlier report's per-seed BLEU only where each is a BLEU score."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import nmt
from conftest import run_cli
from nmt.score.power import SEEDS_SEARCHED, power_line, seeds_needed
from nmt.util.errors import UserError

PLAN = {"variants": ["bahdanau", "luong_dot"], "seeds": [1, 2, 3], "steps": 4}


def test_a_difference_past_the_search_needs_more_than_the_cap_not_the_cap():
    """0.04 BLEU at a spread of 0.72 needs about 2,500 seeds; the line said "needs 1000 seeds"."""
    assert seeds_needed(0.04, 0.72) is None and seeds_needed(1.22, 0.72) == 5
    line = power_line(0.72, 3, 0.04)
    assert line.endswith(f"a difference of 0.04 needs more than {SEEDS_SEARCHED:,} seeds"), line
    assert "needs 1000 seeds" not in line
    assert power_line(0.72, 3, 0.2).endswith("a difference of 0.20 needs 104 seeds")


@pytest.mark.parametrize(
    "extra, needle",
    [
        ({"spread": 1e-320}, "spread=1e-320: give a finite number from 0.01 to 100"),
        ({"spread": 0.001}, "spread=0.001: give a finite number from 0.01 to 100"),
        ({"spread": 1e308}, "spread=1e+308: give a finite number from 0.01 to 100"),
        ({"spread": 0.72, "target": 1e-320}, "target=1e-320: give a finite number from 0.01 to 100"),
    ],
)
def test_a_spread_or_target_the_line_cannot_print_is_refused(tmp_path, extra, needle):
    """--spread 1e-320 printed "a spread of 0.00 BLEU"."""
    with pytest.raises(UserError) as refused:
        nmt.compare(**PLAN, runs_dir=tmp_path / "c", dry_run=True, **extra)
    assert needle in str(refused.value) and "\n" not in str(refused.value)


def test_the_command_refuses_a_subnormal_spread_with_status_2(tmp_path, capsys):
    args = ["compare", "--variants", "bahdanau,luong_dot", "--steps", "4", "--runs-dir", str(tmp_path / "c")]
    code, out, err = run_cli([*args, "--dry-run", "--spread", "1e-320"], capsys)
    assert code == 2 and "0.00" not in out and len(err.strip().splitlines()) == 1, err
    assert "spread=1e-320: give a finite number from 0.01 to 100" in err


def earlier(tmp_path: Path, bleu: object) -> Path:
    """A report.json of an earlier comparison whose second arm's seed 2 scored ``bleu``."""
    folder = tmp_path / "earlier"
    folder.mkdir(exist_ok=True)
    rows = [
        {"variant": "bahdanau", "per_seed_bleu": {"1": 30.0, "2": 31.0, "3": 32.0}},
        {"variant": "luong_dot", "per_seed_bleu": {"1": 30.0, "2": bleu, "3": 34.0}},
    ]
    text = json.dumps({"plan": {"baseline": "bahdanau"}, "variants": rows})  # NaN and Infinity as Python writes them
    (folder / "report.json").write_text(text, encoding="utf-8")
    return folder


@pytest.mark.parametrize(
    "bleu, shown",
    [
        (float("inf"), "inf"),
        (float("-inf"), "-inf"),
        (float("nan"), "nan"),
        (-50.0, "-50.0"),
        (500.0, "500.0"),
        (True, "True"),
        (1e308, "1e+308"),
        (-1e308, "-1e+308"),
        ("32", "'32'"),
        (None, "None"),
    ],
)
def test_spread_from_a_report_whose_bleu_is_no_bleu_score_is_one_line(tmp_path, capsys, bleu, shown):
    """inf gave a spread of inf, -50 and 500 and true were taken, ±1e308 raised OverflowError, and NaN
    was said to be "two or more seeds per arm" missing."""
    folder = earlier(tmp_path, bleu)
    with pytest.raises(UserError) as refused:
        nmt.compare(**PLAN, runs_dir=tmp_path / "c", dry_run=True, spread=folder)
    message = str(refused.value)
    assert message == (
        f"{folder / 'report.json'}: variants[1].per_seed_bleu['2'] is {shown}, not a BLEU score "
        "(a finite number from 0 to 100); rerun nmt compare"
    )
    args = ["compare", "--variants", "bahdanau,luong_dot", "--steps", "4", "--runs-dir", str(tmp_path / "c")]
    code, _out, err = run_cli([*args, "--dry-run", "--spread-from", str(folder)], capsys)
    assert code == 2 and err.strip().splitlines() == [f"nmt: error: {message}"]


def test_spread_from_a_report_whose_fields_are_of_the_wrong_kind_is_one_line(tmp_path):
    folder = earlier(tmp_path, 31.0)
    report = folder / "report.json"
    for payload, needle in (
        ({"plan": {"baseline": "bahdanau"}, "variants": {"a": 1}}, "variants is {'a': 1}, not a list of arms"),
        ({"plan": {"baseline": "bahdanau"}, "variants": [3]}, "variants[0] is 3, not an arm's row"),
        ({"plan": {"baseline": "x"}, "variants": []}, "plan.baseline is 'x', none of its arms"),
        ({"plan": {"baseline": ["x"]}, "variants": []}, "plan.baseline is ['x'], none of its arms"),
        ({"plan": 1, "variants": []}, "not the report.json of an nmt compare"),
        ([1, 2], "not the report.json of an nmt compare"),
    ):
        report.write_text(json.dumps(payload), encoding="utf-8")
        with pytest.raises(UserError) as refused:
            nmt.compare(**PLAN, runs_dir=tmp_path / "c", dry_run=True, spread=folder)
        assert needle in str(refused.value) and "\n" not in str(refused.value), str(refused.value)


def test_spread_from_a_comparison_whose_seeds_agree_to_the_hundredth_is_refused(tmp_path):
    folder = earlier(tmp_path, 32.0)
    rows = [
        {"variant": "bahdanau", "per_seed_bleu": {"1": 30.0, "2": 31.0}},
        {"variant": "luong_dot", "per_seed_bleu": {"1": 30.0, "2": 31.000001}},
    ]
    (folder / "report.json").write_text(json.dumps({"plan": {"baseline": "bahdanau"}, "variants": rows}))
    with pytest.raises(UserError, match="too little to size a design by"):
        nmt.compare(**PLAN, runs_dir=tmp_path / "c", dry_run=True, spread=folder)
