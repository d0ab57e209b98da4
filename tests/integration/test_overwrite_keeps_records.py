"""``nmt train --overwrite`` starts a run over, and deletes only what nmt itself wrote there.

Before: it deleted ``test_reads.jsonl`` (the count of test reads started again at zero, although the
model trained again is chosen after those reads) and ``selection.json`` with its test reads, and any
file named like a temporary (``.best.pt.<digits>.<hex>.tmp``), whatever it held and whoever was
writing it.  Now the records of test reads stay (the choice in selection.json retired, as on resume),
and a temporary is deleted only when its name is exactly one nmt gives, it is a plain file, and its
writer is gone; any other is named, and the run is not touched.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import toy_overrides
from nmt.run import selection
from nmt.run.folder import check_replaceable, clear
from nmt.run.paths import TEST_READS, RunPaths
from nmt.run.test_reads import log_read, read_counts
from nmt.training.entry import run_training
from nmt.util.errors import UserError


def _dead_pid() -> int:
    done = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    return int(done.stdout)


def _run(tmp_path: Path) -> RunPaths:
    """A run folder as training leaves it, without training (config, metrics, checkpoints)."""
    run = RunPaths(tmp_path / "run")
    run.checkpoints.mkdir(parents=True)
    run.config.write_text("name: run\n", encoding="utf-8")
    run.metrics.write_text("", encoding="utf-8")
    run.last.write_bytes(b"a checkpoint")
    return run


def _chosen(run: RunPaths) -> dict:
    record = selection.empty()
    record["chosen"] = {"name": "last", "checkpoint": "checkpoints/last.pt", "rule": "r", "settings": {}}
    record["tests"].append({"split": "test", "read": 1, "name": "last", "bleu": 1.0, "time": "t"})
    selection.write(run.selection, record)
    return record


def test_overwrite_keeps_the_count_of_test_reads(tmp_path: Path, toy_files) -> None:
    _, files = toy_files
    overrides = toy_overrides(tmp_path, files, train__max_steps=1)
    run_training(None, overrides, progress=False)
    run = RunPaths(tmp_path / "runs" / "toy")
    log_read(run.root, "test", "nmt eval", [run.best])
    record = _chosen(run)
    assert read_counts(run.root) == {"test": 2}
    run_training(None, overrides, overwrite=True, progress=False)
    assert read_counts(run.root) == {"test": 2}  # the reads before the retrain still count
    kept = selection.read(run.selection)
    assert kept is not None and kept["chosen"] is None and kept["tests"] == record["tests"]
    assert kept["earlier"][-1]["retired"].endswith("(--overwrite)")
    assert run.chosen == run.best  # the run stands for its new best.pt
    assert [json.loads(line)["event"] for line in run.metrics.read_text().splitlines()].count("start") == 1


def test_clear_keeps_the_records_and_deletes_the_rest(tmp_path: Path) -> None:
    run = _run(tmp_path)
    log_read(run.root, "test", "nmt eval", [])
    _chosen(run)
    clear(run.root)
    assert sorted(p.name for p in run.root.iterdir()) == sorted([TEST_READS, run.selection.name])
    assert read_counts(run.root) == {"test": 2}


def test_a_selection_json_nmt_did_not_write_is_refused_before_anything_is_deleted(tmp_path: Path) -> None:
    run = _run(tmp_path)
    run.selection.write_text("my notes", encoding="utf-8")
    with pytest.raises(UserError, match="not a record nmt select wrote"):
        check_replaceable(run.root, overwrite=True)
    with pytest.raises(UserError, match="not a record nmt select wrote"):
        clear(run.root)
    assert run.last.read_bytes() == b"a checkpoint" and run.selection.read_text() == "my notes"


def test_only_nmts_own_temporaries_of_gone_writers_are_deleted(tmp_path: Path) -> None:
    run = _run(tmp_path)
    stale = run.checkpoints / f".best.pt.{_dead_pid()}.0badcafe.tmp"
    stale.write_bytes(b"a killed write's leftover")
    assert check_replaceable(run.root, overwrite=True) is True
    theirs = {
        "live": run.checkpoints / f".last.pt.{os.getppid()}.0badcafe.tmp",  # a writer still running
        "short hex": run.checkpoints / f".best.pt.{_dead_pid()}.ab.tmp",  # not a name nmt gives
        "not a trainer file": run.checkpoints / f".avg.pt.{_dead_pid()}.0badcafe.tmp",
        "top level": run.root / f".notes.txt.{_dead_pid()}.0badcafe.tmp",
    }
    for why, path in theirs.items():
        path.write_text("someone's file")
        with pytest.raises(UserError, match=f"also holds .*{path.name}.*which nmt train did not write"):
            check_replaceable(run.root, overwrite=True)
        assert path.read_text() == "someone's file", why
        path.unlink()
    link = run.checkpoints / f".best.pt.{_dead_pid()}.0badcafe.tmp"
    stale.unlink()
    link.symlink_to(tmp_path / "precious")
    (tmp_path / "precious").write_text("mine")
    with pytest.raises(UserError, match="which nmt train did not write"):
        check_replaceable(run.root, overwrite=True)
    link.unlink()
    stale.write_bytes(b"a killed write's leftover")
    clear(run.root)
    assert not stale.exists() and not run.checkpoints.exists() and (tmp_path / "precious").read_text() == "mine"
