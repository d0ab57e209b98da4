"""Each read of a test split with a run's models is counted in the run folder, and shown by nmt report."""

from __future__ import annotations

import json

from conftest import run_cli, toy_overrides
from nmt.run.paths import TEST_READS
from nmt.run.test_reads import read_counts
from nmt.training.entry import run_training


def test_eval_counts_each_test_read_not_valid_and_report_shows_the_counts(tmp_path, toy_files, capsys):
    _, files = toy_files
    run_training(None, toy_overrides(tmp_path, files, train__max_steps=4, train__valid_every=4), progress=False)
    run = tmp_path / "runs" / "toy"
    checkpoint = str(run / "checkpoints" / "best.pt")
    for split, out in (("test", "e1"), ("test", "e2"), ("valid", "e3")):
        args = ["eval", "--checkpoint", checkpoint, "--split", split, "--beam", "1", "--out", str(tmp_path / out)]
        code, _out, err = run_cli(args, capsys)
        assert code == 0, err
    assert read_counts(run) == {"test": 2}
    lines = [json.loads(line) for line in (run / TEST_READS).read_text(encoding="utf-8").splitlines()]
    assert [(r["split"], r["reader"], r["checkpoints"]) for r in lines] == [("test", "nmt eval", [checkpoint])] * 2
    code, _out, err = run_cli(["report", str(run), "--out", str(tmp_path / "report")], capsys)
    assert code == 0, err
    assert "- toy: test read 2 times" in (tmp_path / "report" / "report.md").read_text(encoding="utf-8")
    record = json.loads((tmp_path / "report" / "record.json").read_text(encoding="utf-8"))
    assert record["test_reads"] == {"toy": {"test": 2}}
