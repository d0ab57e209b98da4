"""selection.json (nmt.run.selection): the run folder stands for the chosen checkpoint, the test reads
are only appended, a file that is not the record is refused, and the names belong to the run."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from nmt.run import selection
from nmt.run.paths import RunPaths, is_trainer_checkpoint, written_by_trainer
from nmt.util.errors import UserError


def _run(tmp_path: Path) -> RunPaths:
    run = RunPaths(tmp_path / "toy")
    run.checkpoints.mkdir(parents=True)
    for path in (run.config, run.metrics, run.best, run.last, run.step(4), run.average(5)):
        path.write_text("x")
    return run


def _choose(run: RunPaths, checkpoint: Path) -> None:
    record = selection.empty()
    record["chosen"] = {"name": checkpoint.stem, "checkpoint": checkpoint.relative_to(run.root).as_posix()}
    selection.write(run.selection, record)


def test_a_run_stands_for_best_until_a_choice_and_for_the_choice_after(tmp_path: Path) -> None:
    run = _run(tmp_path)
    assert run.chosen == run.best  # no selection.json
    _choose(run, run.average(5))
    assert run.chosen == run.average(5)
    selection.retire(run.selection, step=9)  # training resumed: the choice is of older checkpoints
    assert run.chosen == run.best
    record = selection.read(run.selection)
    assert record is not None and record["chosen"] is None
    assert record["earlier"][0]["retired"] == "training resumed at update 9"


def test_a_choice_whose_checkpoint_is_gone_is_one_line_not_another_model(tmp_path: Path) -> None:
    run = _run(tmp_path)
    _choose(run, run.average(5))
    run.average(5).unlink()
    with pytest.raises(UserError, match=r"chose checkpoints/avg_last5.pt, which is not there; run nmt select"):
        _ = run.chosen


@pytest.mark.parametrize(
    "text, why",
    [
        ("notes", "not JSON"),
        ('{"format": 2, "tests": [], "earlier": []}', 'no "format": 1'),
        ('{"format": 1}', 'no "tests" and "earlier" lists'),
        ('{"format": 1, "tests": [], "earlier": [], "chosen": {"checkpoint": "../other/best.pt"}}', "outside the run"),
    ],
)
def test_a_file_of_that_name_that_is_not_the_record_is_refused(tmp_path: Path, text: str, why: str) -> None:
    run = _run(tmp_path)
    run.selection.write_text(text)
    with pytest.raises(UserError, match="not a record nmt select wrote") as refused:
        _ = run.chosen
    assert why in str(refused.value) and "\n" not in str(refused.value)
    assert run.selection.read_text() == text  # untouched


def test_selection_names_belong_to_the_run_so_overwrite_may_replace_them(tmp_path: Path) -> None:
    run = _run(tmp_path)
    _choose(run, run.average(5))
    ours, others = written_by_trainer(run.root)
    assert others == [] and run.selection in ours and run.checkpoints in ours
    (run.checkpoints / "avg.pt").write_text("a user's average")  # any other name stays the user's
    assert written_by_trainer(run.root)[1] == [run.checkpoints / "avg.pt"]
    # nmt average -o checkpoints/avg_last5.pt needs no --force: only the trainer's own names do
    assert not is_trainer_checkpoint(run.average(5))


def test_test_reads_are_counted_per_split(tmp_path: Path) -> None:
    record = selection.empty()
    record["tests"] += [{"split": "test2016"}, {"split": "test2017"}, {"split": "test2016"}]
    assert selection.test_reads(record, "test2016") == 2 and selection.test_reads(record, "valid") == 0
    path = tmp_path / "selection.json"
    selection.write(path, record)
    assert json.loads(path.read_text())["tests"] == record["tests"]
