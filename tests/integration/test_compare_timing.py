"""nmt compare --time-updates: each arm timed alone once, after its runs, in a column of its own."""

from __future__ import annotations

import json

import pytest

from conftest import run_cli
from nmt.comparison.timing import COLUMN, WARMUP
from test_compare import compare_args


def test_each_arm_is_timed_alone_once_after_its_runs(tmp_path, toy_files, capsys, monkeypatch):
    _, files = toy_files
    args = compare_args(tmp_path, files, "--variants", "bahdanau,none", "--seeds", "1,2", "--steps", "3", "--beam", "1")
    report, record = tmp_path / "cmp" / "report" / "report", tmp_path / "cmp" / "report" / "record"

    code, out, err = run_cli(args, capsys)  # no option: no timing, no column
    assert code == 0, err
    assert COLUMN not in out and COLUMN not in report.with_suffix(".md").read_text()
    assert all(
        "s_per_update_alone" not in row for row in json.loads(report.with_suffix(".json").read_text())["variants"]
    )
    assert "update_timing" not in json.loads(record.with_suffix(".json").read_text())

    from nmt.training import timing

    timed, original = [], timing.time_updates

    def counted(cfg, *args, **kwargs):
        timed.append(cfg.name)
        return original(cfg, *args, **kwargs)

    monkeypatch.setattr(timing, "time_updates", counted)
    before = (tmp_path / "cmp" / "none_s2" / "metrics.jsonl").read_text()
    code, out, err = run_cli([*args, "--time-updates", "2"], capsys)  # the finished comparison, timed now
    assert code == 0, err
    assert sorted(timed) == ["bahdanau_s1", "none_s1"]  # once per arm, not per seed
    assert (tmp_path / "cmp" / "none_s2" / "metrics.jsonl").read_text() == before  # nothing trained again
    rows = json.loads(report.with_suffix(".json").read_text())["variants"]
    assert {r["variant"] for r in rows} == {"bahdanau", "none"}
    assert all(r["s_per_update_alone"] > 0 for r in rows)
    header = next(line for line in out.splitlines() if line.startswith("| variant"))
    assert f"| {COLUMN} |" in header and header.index("MFLOPs/token") < header.index(COLUMN)
    saved = json.loads(record.with_suffix(".json").read_text())["update_timing"]
    assert saved["updates"] == 2 and saved["warmup"] == WARMUP and saved["machines"][0]["threads"] == 1
    assert f"2 timed updates after {WARMUP} warm-up ones" in report.with_suffix(".md").read_text()
    assert "seconds per update alone" in record.with_suffix(".md").read_text()

    def not_timed(*args, **kwargs):
        raise AssertionError("--dry-run timed an arm")

    monkeypatch.setattr(timing, "time_updates", not_timed)
    code, _out, err = run_cli([*args, "--time-updates", "2", "--dry-run"], capsys)
    assert code == 0, err


@pytest.mark.parametrize("extra", [[], ["--dry-run"]])
def test_a_negative_count_is_refused_in_one_line(tmp_path, toy_files, capsys, extra):
    _, files = toy_files
    args = compare_args(tmp_path, files, "--variants", "bahdanau", "--steps", "3", "--time-updates", "-1", *extra)
    code, _out, err = run_cli(args, capsys)
    assert (
        code == 2 and "time_updates=-1: give a whole number of at least 0" in err and len(err.strip().splitlines()) == 1
    )
    assert not (tmp_path / "cmp").exists()  # nothing trained


def test_the_library_takes_the_same_option(tmp_path):
    import nmt
    from nmt.util.errors import UserError

    with pytest.raises(UserError, match=r"^time_updates=-2: give a whole number of at least 0"):
        nmt.compare(None, variants="bahdanau", steps=3, runs_dir=tmp_path / "cmp", time_updates=-2)
    assert not (tmp_path / "cmp").exists()
