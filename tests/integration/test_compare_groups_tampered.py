"""``nmt compare-groups`` on comparison folders whose files were edited (issue 70): a report.json or
scored.json field that is missing or of the wrong kind is one line naming the file and the field,
with status 2, instead of a KeyError, TypeError or ValueError; and nothing is written."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

import nmt
from conftest import run_cli
from nmt.util.errors import UserError

GROUPS = ("de-en", "fr-en")
SEEDS = (1, 2)


def scored(bleu: float) -> dict[str, Any]:
    return {
        "key": {},
        "result": {
            "beam": 1,
            "bleu": bleu,
            "chrf": bleu + 20.0,
            "updates": 20,
            "best_step": 20,
            "params": 1000,
            "flops_per_token": 5e5,
            "train_s": 3.0,
            "bleu_signature": "nrefs:1|case:mixed|eff:no|tok:13a|smooth:exp|version:2.6.0",
        },
    }


def write_groups(root: Path) -> None:
    """Two comparison folders of bahdanau against none over seeds 1 and 2, as nmt compare writes them."""
    for g, group in enumerate(GROUPS):
        folder = root / group
        (folder / "report").mkdir(parents=True)
        report = {
            "plan": {
                "config": None,
                "arms": {"bahdanau": {"train": [], "decode": []}, "none": {"train": ["x=1"], "decode": []}},
                "baseline": "bahdanau",
                "split": "test",
                "overrides": [],
            },
            "variants": [
                {"variant": "bahdanau", "seeds": list(SEEDS), "p_values": None, "p_ar_seeds": None},
                {"variant": "none", "seeds": list(SEEDS), "p_values": [0.01, 0.02], "p_ar_seeds": 0.01},
            ],
        }
        (folder / "report" / "report.json").write_text(json.dumps(report), encoding="utf-8")
        for variant, base in (("bahdanau", 30.0), ("none", 20.0)):
            for seed in SEEDS:
                out = folder / f"{variant}_s{seed}" / "compare-test"
                out.mkdir(parents=True)
                (out / "scored.json").write_text(json.dumps(scored(base + seed + g)), encoding="utf-8")


def edit(path: Path, change: Callable[[Any], Any]) -> None:
    data = json.loads(path.read_text(encoding="utf-8"))
    path.write_text(json.dumps(change(data)), encoding="utf-8")


def report_edit(**changes: Any) -> Callable[[Any], Any]:
    """Set the dotted fields of a report (``variants.1.seeds``) to new values."""

    def change(report: Any) -> Any:
        for dotted, value in changes.items():
            *parts, last = dotted.split("__")
            node = report
            for part in parts:
                node = node[int(part)] if isinstance(node, list) else node[part]
            node[int(last) if isinstance(node, list) else last] = value
        return report

    return change


def test_the_hand_made_groups_are_tabulated(tmp_path):
    write_groups(tmp_path)
    result = nmt.compare_groups(tmp_path, tmp_path / "out")
    assert len(result.records) == 8 and "| none |" in result.text


REPORT_CASES = [
    ({"variants__0__seeds": "12"}, "variants[0].seeds is '12', not a list of seeds"),
    ({"variants__0__seeds": [True, 2]}, "variants[0].seeds[0] is True, not a whole number"),
    ({"variants__0__seeds": [1, 1]}, "variants[0].seeds is [1, 1], not a list of distinct seeds"),
    ({"variants__1__variant": "luong"}, "variants[1].variant is 'luong', not an arm of plan.arms"),
    ({"variants__1__variant": ["none"]}, "variants[1].variant is ['none'], not an arm of plan.arms"),
    ({"variants__1__p_values": [0.01]}, "variants[1].p_values is [0.01], not null or one p-value per seed"),
    ({"variants__1__p_values": [0.01, 2.0]}, "variants[1].p_values[1] is 2.0, not a p-value"),
    ({"variants__1__p_ar_seeds": [0.01]}, "variants[1].p_ar_seeds is [0.01], not a p-value"),
    ({"variants__1": 7}, "variants[1] is 7, not an arm's row"),
    ({"variants": {"a": 1}}, "variants is {'a': 1}, not a list of arms"),
    ({"plan__arms": ["bahdanau", "none"]}, "plan.arms is ['bahdanau', 'none'], not a mapping of arms"),
    ({"plan__arms__none": {"decode": []}}, "plan.arms['none'].train is None, not a list of texts"),
    ({"plan__arms__none": ["x"]}, "plan.arms['none'] is ['x'], not an arm's settings"),
    ({"plan__baseline": 3}, "plan.baseline is 3, not one of plan.arms"),
    ({"plan__baseline": ["bahdanau"]}, "plan.baseline is ['bahdanau'], not one of plan.arms"),
    ({"plan__split": "../../elsewhere"}, "plan.split is '../../elsewhere', not a name"),
    ({"plan__split": 5}, "plan.split is 5, not a name"),
    ({"plan__overrides": "a=1"}, "plan.overrides is 'a=1', not a list of texts"),
    ({"plan__config": 5}, "plan.config is 5, not a config path or null"),
]


def run_refused(root: Path, capsys: pytest.CaptureFixture, file: Path, needle: str) -> None:
    code, out, err = run_cli(["compare-groups", str(root), "--out", str(root / "out")], capsys)
    lines = err.strip().splitlines()
    assert code == 2 and out == "" and len(lines) == 1, err
    assert lines[0].startswith(f"nmt: error: {file}: ") and needle in lines[0], lines[0]
    assert not (root / "out").exists()
    with pytest.raises(UserError) as refused:
        nmt.compare_groups(root, root / "out")
    assert needle in str(refused.value)


@pytest.mark.parametrize("changes, needle", REPORT_CASES, ids=[case[1][:40] for case in REPORT_CASES])
def test_an_edited_report_json_is_one_line_naming_its_field(tmp_path, capsys, changes, needle):
    write_groups(tmp_path)
    report = tmp_path / "fr-en" / "report" / "report.json"
    edit(report, report_edit(**changes))
    run_refused(tmp_path, capsys, report, needle)


def test_a_report_without_the_baselines_row_or_with_a_row_twice_is_one_line(tmp_path, capsys):
    write_groups(tmp_path)
    report = tmp_path / "de-en" / "report" / "report.json"
    edit(report, lambda r: {**r, "variants": r["variants"][1:]})
    run_refused(tmp_path, capsys, report, "plan.baseline is 'bahdanau', not an arm with a row in variants")
    edit(report, lambda r: {**r, "variants": [r["variants"][0]] * 2})
    run_refused(tmp_path, capsys, report, "variants is 'none', not listed once")


SCORED_CASES = [
    (lambda s: {"key": {}}, "result is None, not the run's scores"),
    (lambda s: [1], "result is None, not the run's scores"),
    (lambda s: {**s, "result": []}, "result is [], not the run's scores"),
    (
        lambda s: {**s, "result": {k: v for k, v in s["result"].items() if k != "bleu"}},
        "result.bleu is None, not a BLEU",
    ),
    (lambda s: {**s, "result": {**s["result"], "bleu": "31"}}, "result.bleu is '31', not a BLEU score"),
    (lambda s: {**s, "result": {**s["result"], "bleu": float("nan")}}, "result.bleu is nan, not a BLEU score"),
    (lambda s: {**s, "result": {**s["result"], "bleu": 1e308}}, "result.bleu is 1e+308, not a BLEU score"),
    (lambda s: {**s, "result": {**s["result"], "chrf": -3.0}}, "result.chrf is -3.0, not a BLEU score"),
    (lambda s: {**s, "result": {**s["result"], "beam": True}}, "result.beam is True, not a whole number"),
    (lambda s: {**s, "result": {**s["result"], "params": -1}}, "result.params is -1, not a whole number"),
    (lambda s: {**s, "result": {**s["result"], "updates": 2.5}}, "result.updates is 2.5, not a whole number"),
    (lambda s: {**s, "result": {**s["result"], "train_s": "x"}}, "result.train_s is 'x', not a finite number"),
    (lambda s: {**s, "result": {**s["result"], "flops_per_token": [1]}}, "result.flops_per_token is [1], not a"),
    (lambda s: {**s, "result": {**s["result"], "bleu_signature": 5}}, "result.bleu_signature is 5, not sacreBLEU"),
]


@pytest.mark.parametrize("change, needle", SCORED_CASES, ids=[case[1][:40] for case in SCORED_CASES])
def test_an_edited_scored_json_is_one_line_naming_its_field(tmp_path, capsys, change, needle):
    write_groups(tmp_path)
    path = tmp_path / "de-en" / "none_s2" / "compare-test" / "scored.json"
    edit(path, change)
    run_refused(tmp_path, capsys, path, needle)


def test_a_scored_json_that_is_no_json_or_missing_is_one_line(tmp_path, capsys):
    write_groups(tmp_path)
    path = tmp_path / "de-en" / "none_s2" / "compare-test" / "scored.json"
    path.write_bytes(b"\xff\xfe not json")
    run_refused(tmp_path, capsys, path, "not JSON")
    path.unlink()
    run_refused(tmp_path, capsys, path, "missing; rerun nmt compare")


def test_a_runs_metrics_that_are_no_events_are_one_line(tmp_path, capsys):
    write_groups(tmp_path)
    metrics = tmp_path / "de-en" / "none_s1" / "metrics.jsonl"
    metrics.write_text('{"kind": "start", "step": "x"}\n', encoding="utf-8")
    code, out, err = run_cli(["compare-groups", str(tmp_path), "--out", str(tmp_path / "out")], capsys)
    lines = err.strip().splitlines()
    assert code == 2 and out == "" and len(lines) == 1 and str(metrics) in lines[0], err
