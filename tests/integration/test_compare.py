"""nmt compare: fixed updates per run, means over seeds, a paired test, refusals before training."""

from __future__ import annotations

import json
import math
import statistics
from pathlib import Path

import pytest
import torch

from conftest import interrupt_at, run_cli, toy_overrides, train_losses
from nmt.comparison.plan import parse_list


def compare_args(root: Path, files: dict[str, list[str]], *extra: str) -> list[str]:
    sets = [s for s in toy_overrides(root, files) if not s.startswith(("name=", "runs_dir="))]
    return [
        "compare",
        "--runs-dir",
        str(root / "cmp"),
        "--no-progress",
        *[arg for s in sets for arg in ("--set", s)],
        *extra,
    ]


@pytest.mark.parametrize(
    "extra, message",
    [
        (["--variants", "bahdanau,nope", "--steps", "5"], "unknown variant 'nope'"),
        (["--variants", "bahdanau", "--baseline", "qkv", "--steps", "5"], "--baseline 'qkv' is not among"),
        (["--variants", "bahdanau", "--seeds", " , ", "--steps", "5"], "--seeds: give at least one"),
        (["--variants", "bahdanau", "--seeds", "1,x", "--steps", "5"], "expected comma-separated int"),
        (["--variants", "bahdanau,bahdanau", "--steps", "5"], "each may appear once"),
        (["--variants", "bahdanau"], "fixed number of updates"),
        (["--variants", "bahdanau", "--steps", "0"], "fixed number of updates"),
        (
            ["--variants", "bahdanau", "--steps", "5"]
            + [
                "--set",
                "train.schedule=cosine",
                "--set",
                "train.schedule_clock=time",
                "--set",
                "train.time_budget_min=1",
            ],
            "add --set train.schedule_clock=steps",
        ),
        (["--variants", "bahdanau", "--seeds", f"1,{2**32}", "--steps", "5"], "train.seed"),  # the second seed too
        (["--sweep", "train.teacher_forcing=1,1.0", "--steps", "5"], "are one config"),  # would train twice
        (["--variants", "bahdanau", "--sweep", "decode.length_penalty=1,1.0", "--steps", "5"], "are one config"),
    ],
)
def test_bad_plans_fail_in_one_line_before_training(tmp_path, toy_files, capsys, extra, message):
    _, files = toy_files
    code, _out, err = run_cli(compare_args(tmp_path, files, *extra), capsys)
    assert code == 2 and message in err and len(err.strip().splitlines()) == 1
    assert not (tmp_path / "cmp").exists()  # nothing trained


def test_parse_list():
    assert parse_list("a, b,c", "variants") == ["a", "b", "c"]
    assert parse_list("3,1", "seeds", int) == [3, 1]


def test_compare_two_variants_two_seeds_on_the_toy_task(tmp_path, toy_files, capsys, monkeypatch):
    _, files = toy_files
    args = compare_args(
        tmp_path, files, "--variants", "bahdanau,none", "--seeds", "1,2", "--steps", "40", "--beam", "1"
    )
    code, out, err = run_cli([*args, "--search", "none: the toy defaults"], capsys)
    assert code == 0, err
    report = json.loads((tmp_path / "cmp" / "report" / "report.json").read_text())
    rows = {r["variant"]: r for r in report["variants"]}
    assert set(rows) == {"bahdanau", "none"} and report["plan"]["steps"] == 40
    for row in rows.values():
        assert row["updates"] == 40 and row["seeds"] == [1, 2] and row["params"] > 0
        seeds = list(row["per_seed_bleu"].values())
        assert row["bleu"] == pytest.approx(sum(seeds) / 2, abs=0.011)
        assert row["bleu_by_length"]
    assert rows["bahdanau"]["p_values"] is None  # the baseline
    assert len(rows["none"]["p_values"]) == 2 and all(0 <= p <= 1 for p in rows["none"]["p_values"])
    assert rows["none"]["delta_bleu"] == pytest.approx(rows["none"]["bleu"] - rows["bahdanau"]["bleu"], abs=0.011)
    assert "| bahdanau |" in out and "| none |" in out
    # two seeds: a t interval over them (t(0.975, 1) = 12.706), and a paired t-test over seeds
    for row in rows.values():
        values = list(row["per_seed_bleu"].values())
        half = 12.7062 * statistics.stdev(values) / math.sqrt(2)
        assert row["bleu_ci95"] == pytest.approx(half, abs=0.15)  # per-seed values are rounded to 0.01
    diffs = [rows["none"]["per_seed_bleu"][s] - rows["bahdanau"]["per_seed_bleu"][s] for s in ("1", "2")]
    assert rows["none"]["delta_ci95"] == pytest.approx(12.7062 * statistics.stdev(diffs) / math.sqrt(2), abs=0.3)
    assert 0 <= rows["none"]["p_seeds"] <= 1 and rows["bahdanau"]["p_seeds"] is None
    assert 0 < rows["none"]["p_ar_seeds"] <= 1 and rows["bahdanau"]["p_ar_seeds"] is None  # both noises at once
    page = (tmp_path / "cmp" / "report" / "report.md").read_text()
    assert page.startswith("# Comparison of 2 arms: ") and "test, beam 1, 2 seeds, 40 updates" in page.splitlines()[0]
    assert "95% confidence interval" in page
    # the reproducibility record beside it
    record = json.loads((tmp_path / "cmp" / "report" / "record.json").read_text())
    assert record["runs"] == 4 and record["seeds"] == [1, 2] and record["updates_per_run"] == 40
    assert record["arm_options"] == {
        "bahdanau": ["model.attention.type=bahdanau"],
        "none": ["model.attention.type=none"],
    }
    assert record["software"]["torch"] == torch.__version__ and record["software"]["sacrebleu"]
    assert record["hardware"] and sum(h["runs"] for h in record["hardware"]) == 4
    assert record["bleu_signature"].startswith("nrefs:1") and record["train_s_total"] > 0
    # what a reader needs to rerun it: each run's valid and test scores, configs, data hashes, test settings
    detail = {d["run"]: d for d in record["run_detail"]}
    assert set(detail) == {"bahdanau_s1", "bahdanau_s2", "none_s1", "none_s2"}
    for name, d in detail.items():
        arm, seed = name.rsplit("_s", 1)
        assert d["test"]["bleu"] == pytest.approx(rows[arm]["per_seed_bleu"][seed], abs=0.006)
        assert d["valid_of_scored_checkpoint"]["step"] == d["test"]["best_step"] and len(d["config_sha256"]) == 64
        assert d["params"] == rows[arm]["params"] and d["software"]["torch"] == torch.__version__
        assert d["test_reads"] == {"test": 1}  # scored once on test, by this comparison
    assert record["resolved_configs"]["none"]["model"]["attention"]["type"] == "none"
    assert record["data"]["splits"]["train"]["pairs"] > 0 and record["data"]["sentencepiece"]
    assert record["test_settings"] == {
        "bootstrap_resamples": 1000,
        "bootstrap_seed": 12345,
        "ar_trials": 10000,
        "ar_seed": 12345,
    }
    assert record["per_seed"]["none"]["mean"] == rows["none"]["bleu"] and record["search"] == "none: the toy defaults"
    assert rows["bahdanau"]["mflops_per_token"] > rows["none"]["mflops_per_token"] > 0  # attention costs
    assert "# Reproducibility record" in (tmp_path / "cmp" / "report" / "record.md").read_text()
    # the runs differ by seed
    runs = tmp_path / "cmp"
    assert (runs / "bahdanau_s1").is_dir() and (runs / "bahdanau_s2").is_dir()
    assert (runs / "bahdanau_s1" / "checkpoints" / "best.pt").read_bytes() != (
        runs / "bahdanau_s2" / "checkpoints" / "best.pt"
    ).read_bytes()

    # a second call reuses the finished runs and their scores: nothing retrained or translated again
    before = (runs / "none_s2" / "metrics.jsonl").read_text()

    def no_translation(*args, **kwargs):
        raise AssertionError("a finished run with a saved score was translated again")

    monkeypatch.setattr("nmt.evaluation.eval_command.translate_split", no_translation)
    code, _out2, err = run_cli(args, capsys)
    assert code == 0, err
    assert (runs / "none_s2" / "metrics.jsonl").read_text() == before
    again = json.loads((tmp_path / "cmp" / "report" / "report.json").read_text())
    assert again["variants"] == report["variants"]

    # --dry-run tells reused runs from new ones and from runs another config would overwrite
    code, out3, err = run_cli(
        args[:-8] + ["--variants", "none,qkv", "--seeds", "2", "--steps", "40", "--dry-run"], capsys
    )
    assert code == 0, err
    assert [line.split()[:2] for line in out3.strip().splitlines()] == [["reuse", "none"], ["train", "qkv"]]
    code, out4, err = run_cli(args + ["--set", "model.dropout=0.25", "--dry-run"], capsys)
    assert code == 0, err
    assert {line.split()[0] for line in out4.strip().splitlines()} == {"kept"}  # only --force replaces
    assert (runs / "none_s2" / "metrics.jsonl").read_text() == before and not (runs / "qkv_s2").exists()


@pytest.mark.slow  # four comparisons of two variants
def test_a_slower_machine_gets_the_same_scores(tmp_path, toy_files, capsys):
    """One thread instead of two (half the speed) trains the same models: the budget is updates, not time."""
    _, files = toy_files
    reports = []
    for threads in (2, 1):
        runs = tmp_path / f"threads{threads}"
        args = compare_args(
            runs,
            files,
            "--variants",
            "bahdanau,luong_general",
            "--seeds",
            "3",
            "--steps",
            "30",
            "--beam",
            "1",
            "--set",
            f"train.threads={threads}",
        )
        code, _out, err = run_cli(args, capsys)
        assert code == 0, err
        reports.append(json.loads((runs / "cmp" / "report" / "report.json").read_text())["variants"])
    fast, slow = ({r["variant"]: (r["bleu"], r["chrf"], r["updates"]) for r in rows} for rows in reports)
    assert slow == fast and all(updates == 30 for _, _, updates in slow.values())
    assert any(bleu > 0 for bleu, _, _ in slow.values())  # the comparison is not trivially equal


def test_finished_runs_are_reused_across_speed_options_and_kept_without_force(tmp_path, toy_files, capsys, caplog):
    """Issue 33: another train.threads reuses the finished run (and says so); a change that makes
    another model refuses, in one line listing the run, unless --force retrains it."""
    _, files = toy_files
    args = compare_args(tmp_path, files, "--variants", "bahdanau", "--seeds", "1", "--steps", "4", "--beam", "1")
    code, _, err = run_cli(args, capsys)
    assert code == 0, err
    run = tmp_path / "cmp" / "bahdanau_s1"
    before = (run / "metrics.jsonl").read_text(), (run / "checkpoints" / "best.pt").read_bytes()
    scores = json.loads((tmp_path / "cmp" / "report" / "report.json").read_text())["variants"]

    caplog.set_level("INFO", logger="nmt.comparison.runs")
    code, _, err = run_cli(args + ["--set", "train.threads=2", "--set", "train.log_every=3"], capsys)
    assert code == 0, err
    assert ((run / "metrics.jsonl").read_text(), (run / "checkpoints" / "best.pt").read_bytes()) == before
    assert json.loads((tmp_path / "cmp" / "report" / "report.json").read_text())["variants"] == scores
    assert "reusing the finished run" in caplog.text and "train.threads was 1, not 2" in caplog.text

    changed = args + ["--set", "model.dropout=0.25"]
    code, out, err = run_cli(changed + ["--dry-run"], capsys)
    assert code == 0 and out.split()[0] == "kept" and "model.dropout" in out, err
    code, out, err = run_cli(changed, capsys)
    assert code == 2 and out == "" and len(err.strip().splitlines()) == 1, err
    assert "1 finished run(s)" in err and str(run) in err and "model.dropout" in err and "--force" in err
    assert ((run / "metrics.jsonl").read_text(), (run / "checkpoints" / "best.pt").read_bytes()) == before

    code, out, err = run_cli(changed + ["--force", "--dry-run"], capsys)
    assert code == 0 and out.split()[0] == "replace", err
    code, _, err = run_cli(changed + ["--force"], capsys)
    assert code == 0, err
    assert (run / "metrics.jsonl").read_text() != before[0]  # trained again, with the new config


def test_an_out_that_is_a_file_is_refused_before_training(tmp_path, toy_files, capsys):
    _, files = toy_files
    taken = tmp_path / "report.md"
    taken.write_text("mine\n")
    code, out, err = run_cli(
        compare_args(tmp_path, files, "--variants", "bahdanau", "--steps", "5", "--out", str(taken)), capsys
    )
    assert code == 2 and out == "" and "is not a folder" in err and len(err.strip().splitlines()) == 1, err
    assert taken.read_text() == "mine\n" and not (tmp_path / "cmp").exists()  # nothing trained


@pytest.mark.parametrize("name", ["report.md", "report.json"])
def test_a_users_report_in_out_is_refused_before_training(tmp_path, toy_files, capsys, name):
    _, files = toy_files
    out = tmp_path / "results"
    out.mkdir()
    taken = out / name
    taken.write_text("mine\n")
    code, printed, err = run_cli(
        compare_args(tmp_path, files, "--variants", "bahdanau", "--steps", "5", "--out", str(out)), capsys
    )
    assert code == 2 and printed == "" and f"{taken} was not written by nmt" in err, err
    assert len(err.strip().splitlines()) == 1 and taken.read_text() == "mine\n"
    assert not (tmp_path / "cmp").exists()  # nothing trained


def test_an_interrupted_run_is_resumed_to_the_same_losses(tmp_path, toy_files, capsys, monkeypatch):
    """A run stopped part-way (Ctrl-C, a killed session) is resumed from its last checkpoint by the
    next compare, not trained again from update 0, and ends where an uninterrupted run ends."""
    _, files = toy_files

    plan = ("--variants", "bahdanau", "--seeds", "1", "--steps", "12", "--beam", "1", "--set", "train.valid_every=4")
    whole = compare_args(tmp_path / "whole", files, *plan)
    assert run_cli(whole, capsys)[0] == 0
    reference = train_losses(tmp_path / "whole" / "cmp" / "bahdanau_s1")

    args = compare_args(tmp_path / "cut", files, *plan)
    interrupt_at(monkeypatch, 6)  # after the checkpoint of update 4: updates 5 and 6 are done again
    code, _, _ = run_cli(args, capsys)
    monkeypatch.undo()
    assert code != 0
    run = tmp_path / "cut" / "cmp" / "bahdanau_s1"
    code, out, err = run_cli(args + ["--dry-run"], capsys)
    assert code == 0 and out.split()[0] == "resume" and "unfinished" in out, err
    assert run_cli(args, capsys)[0] == 0
    starts = [e for e in map(json.loads, (run / "metrics.jsonl").read_text().splitlines()) if e["event"] == "start"]
    assert len(starts) == 2  # one training, continued: not a second run from scratch
    assert train_losses(run) == reference  # bit-for-bit, every update
    bleu = [
        json.loads((root / "cmp" / "report" / "report.json").read_text())["variants"][0]["bleu"]
        for root in (tmp_path / "whole", tmp_path / "cut")
    ]
    assert bleu[0] == bleu[1]


def test_match_params_resizes_every_other_arm_to_the_baseline_within_two_percent(tmp_path, toy_files, capsys):
    from nmt import config as config_mod
    from nmt.comparison.match import TOLERANCE, parameters

    _, files = toy_files
    args = compare_args(tmp_path, files, "--variants", "bahdanau,scaled_dot,none", "--seeds", "1", "--steps", "5")
    code, out, err = run_cli([*args, "--match-params", "bahdanau", "--dry-run"], capsys)
    assert code == 0, err
    stems = [line.split()[-1].rsplit("/", 1)[-1] for line in out.strip().splitlines()]
    assert stems == ["bahdanau_s1", "scaled_dot_match-bahdanau_s1", "none_match-bahdanau_s1"]
    sets = [s for s in toy_overrides(tmp_path, files) if not s.startswith(("name=", "runs_dir="))]
    base = parameters(config_mod.load(None, [*sets, "model.attention.type=bahdanau"]))
    unmatched = parameters(config_mod.load(None, [*sets, "model.attention.type=none"]))
    from nmt.comparison.plan import Plan

    plan = Plan(
        config=None,
        variants=["bahdanau", "scaled_dot", "none"],
        seeds=[1],
        steps=5,
        overrides=sets,
        match_params="bahdanau",
    )
    for arm in plan.arms[1:]:
        count = parameters(config_mod.load(None, [*sets, *arm.train]))
        assert abs(count - base) <= TOLERANCE * base
    assert abs(unmatched - base) > abs(parameters(config_mod.load(None, [*sets, *plan.arms[2].train])) - base)
    code, _out, err = run_cli([*args, "--match-params", "qkv", "--dry-run"], capsys)
    assert (
        code == 2
        and "--match-params 'qkv' is not among the compared arms" in err
        and len(err.strip().splitlines()) == 1
    )


def test_arms_that_match_params_made_one_config_are_refused_saying_so(tmp_path, toy_files, capsys):
    """A model.hidden_size sweep resized to one arm's parameters is that arm again: the refusal said
    "give each value once", although each value was given once."""
    _, files = toy_files
    args = compare_args(tmp_path, files, "--sweep", "model.hidden_size=64,96", "--seeds", "1", "--steps", "5")
    code, out, err = run_cli([*args, "--match-params", "model.hidden_size=64", "--dry-run"], capsys)
    assert code == 2 and out == "" and len(err.strip().splitlines()) == 1, err
    assert "--match-params 'model.hidden_size=64' resized 'model.hidden_size=96' to hidden size 64" in err, err
    assert "give each value" not in err, err
