"""nmt compare --jobs: runs trained side by side, each in a process of its own, equal the runs
trained in turn; a failure or a stop signal reaches every run, and a plan the machine cannot hold is
refused before anything starts."""

from __future__ import annotations

import json
import signal
import sys
import time
from types import SimpleNamespace

import pytest

from conftest import run_cli, train_losses
from test_compare import compare_args


def test_more_jobs_than_the_machine_holds_are_refused_before_anything_starts(tmp_path, toy_files, capsys, monkeypatch):
    from nmt.comparison.jobs import MEMORY_PER_JOB, jobs_ceiling, machine_jobs_ceiling

    assert jobs_ceiling(cores=64, memory=4 * MEMORY_PER_JOB) == 4  # memory bounds it
    assert jobs_ceiling(cores=2, memory=1 << 40) == 2 and jobs_ceiling(cores=8, memory=0) == 1  # cores; at least 1
    monkeypatch.setattr("nmt.comparison.command.train_side_by_side", lambda *a: pytest.fail("runs were started"))
    _, files = toy_files
    too_many = machine_jobs_ceiling() + 1
    for command in (
        compare_args(tmp_path, files, "--variants", "bahdanau", "--steps", "5"),
        ["lab", "beam", "--tiny", "--out", str(tmp_path / "many")],
    ):
        argv = [*command, "--jobs", str(too_many), "--runs-dir", str(tmp_path / "many")]
        code, printed, err = run_cli(argv, capsys)
        assert code == 2 and printed == "" and len(err.strip().splitlines()) == 1, err
        assert f"--jobs {too_many}: this machine trains at most {too_many - 1} run(s) at once" in err
    assert not (tmp_path / "many").exists()


def test_runs_trained_side_by_side_equal_the_runs_trained_in_turn(tmp_path, toy_files, capsys):
    """--jobs 2 trains each run in an nmt train process of its own, two at a time: the same losses
    and scores as one after another in this process, a log per run, and a rerun reuses them all."""
    _, files = toy_files
    plan = ["--variants", "bahdanau,none", "--seeds", "1", "--steps", "12", "--beam", "1", "--set", "train.threads=1"]
    results = {}
    for jobs in ("1", "2"):
        root = tmp_path / f"jobs{jobs}"
        code, _out, err = run_cli(compare_args(root, files, *plan, "--jobs", jobs), capsys)
        assert code == 0, err
        runs = root / "cmp"
        report = json.loads((runs / "report" / "report.json").read_text())["variants"]
        losses = {name: train_losses(runs / f"{name}_s1") for name in ("bahdanau", "none")}
        results[jobs] = ({r["variant"]: (r["bleu"], r["chrf"], r["updates"]) for r in report}, losses)
    assert results["2"] == results["1"] and all(len(losses) > 0 for losses in results["1"][1].values())
    logs = tmp_path / "jobs2" / "cmp" / "logs"
    assert sorted(p.name for p in logs.iterdir()) == ["bahdanau_s1.log", "none_s1.log"]
    assert not (tmp_path / "jobs1" / "cmp" / "logs").exists()
    code, out, _err = run_cli(compare_args(tmp_path / "jobs2", files, *plan, "--jobs", "2", "--dry-run"), capsys)
    assert code == 0 and {line.split()[0] for line in out.strip().splitlines()} == {"reuse"}


def test_a_run_that_fails_side_by_side_is_named_with_its_log(tmp_path, toy_files, capsys, monkeypatch):
    from nmt.comparison import jobs as compare_jobs

    failing = [sys.executable, "-c", "import sys; print('no room on the device'); sys.exit(3)"]
    monkeypatch.setattr(compare_jobs, "train_command", lambda plan, act: failing)
    _, files = toy_files
    plan = ["--variants", "bahdanau", "--seeds", "1", "--steps", "5", "--jobs", "2"]
    code, _out, err = run_cli(compare_args(tmp_path, files, *plan), capsys)
    assert code == 2 and len(err.strip().splitlines()) == 1
    assert "bahdanau_s1 failed (exit status 3): no room on the device" in err and "logs/bahdanau_s1.log" in err


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM])
def test_a_stop_signal_is_passed_on_once_to_every_run_side_by_side(tmp_path, toy_files, capsys, monkeypatch, signum):
    """The parent's Ctrl-C (or SIGTERM) reaches each running process as one SIGINT (SIGTERM), so each
    saves its run; the comparison ends as nmt train does, 128 + the signal, with one line that names
    the runs saved and the command that resumes them."""
    from nmt.comparison import jobs as compare_jobs

    saved = tmp_path / "saved"
    saved.mkdir()
    child = (
        "import signal, sys, time, pathlib\n"
        "def stop(signum, _):\n"
        f"    pathlib.Path({str(saved)!r}, sys.argv[1]).write_text(signal.Signals(signum).name)\n"
        "    sys.exit(128 + signum)\n"
        "signal.signal(signal.SIGINT, stop)\n"
        "signal.signal(signal.SIGTERM, stop)\n"
        f"pathlib.Path({str(saved)!r}, sys.argv[1] + '.started').write_text('')\n"
        "time.sleep(60)\n"
    )
    monkeypatch.setattr(
        compare_jobs, "train_command", lambda plan, act: [sys.executable, "-c", child, act.run_dir.name]
    )
    ticks = []

    def sleep(seconds: float) -> None:  # the parent's signal, once both children are ready for it
        ticks.append(seconds)
        deadline = time.monotonic() + 30
        while len(list(saved.glob("*.started"))) < 2 and time.monotonic() < deadline:
            time.sleep(0.05)
        signal.raise_signal(signum)
        raise KeyboardInterrupt  # what Python's own SIGINT handler raises

    monkeypatch.setattr(compare_jobs, "time", SimpleNamespace(sleep=sleep))
    _, files = toy_files
    plan = ["--variants", "bahdanau,none", "--seeds", "1", "--steps", "5", "--jobs", "2"]
    code, _out, err = run_cli(compare_args(tmp_path, files, *plan), capsys)
    name = signal.Signals(signum).name
    assert code == 128 + signum and len(ticks) == 1, err
    got = {p.name: p.read_text() for p in saved.iterdir() if not p.name.endswith(".started")}
    assert got == {"bahdanau_s1": name, "none_s1": name}  # SIGTERM passed on as SIGTERM, not SIGINT
    assert len(err.strip().splitlines()) == 1 and err.startswith(f"nmt: stopped by {name}: the runs in training "), err
    assert "(bahdanau_s1, none_s1) saved their last checkpoint" in err
    assert f"resumes the comparison: nmt compare --runs-dir {tmp_path / 'cmp'} --no-progress " in err
    assert err.rstrip().endswith(" --jobs 2"), err


def test_runs_that_need_one_corpus_prepared_two_ways_are_not_trained_side_by_side(tmp_path, toy_files, capsys):
    """A data.vocab_size sweep re-prepares one folder per run: side by side, one run would rewrite
    the corpus another is reading, so --jobs 2 refuses it in one line before anything trains."""
    _, files = toy_files
    plan = ["--sweep", "data.vocab_size=90,100", "--seeds", "1", "--steps", "5", "--jobs", "2"]
    code, _out, err = run_cli(compare_args(tmp_path, files, *plan), capsys)
    assert code == 2 and len(err.strip().splitlines()) == 1 and "prepared two ways" in err
    assert not (tmp_path / "cmp" / "logs").exists()
