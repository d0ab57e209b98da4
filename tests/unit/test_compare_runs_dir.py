"""``nmt compare --runs-dir`` names a folder, not a spelling: the runs that ``--runs-dir cmpB``
finished are the runs of ``--runs-dir /abs/.../cmpB`` and of ``--runs-dir ../cmpB`` from a
subfolder, and of the folder after it moved.  They were "finished with another runs_dir", kept,
and with ``--force`` trained again and replaced.  Checked without training: the finished runs are
written by hand as training leaves them."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from nmt import config as C
from nmt.comparison.plan import Plan, run_overrides
from nmt.comparison.runs import run_action
from nmt.run import events
from nmt.run.paths import RunPaths
from nmt.util.fileio import atomic_write_bytes

STEPS = 5


def _plan(runs_dir: Path, force: bool = False) -> Plan:
    return Plan(config=None, variants=["bahdanau"], seeds=[1], steps=STEPS, runs_dir=runs_dir, force=force)


def _finish(plan: Plan) -> Path:
    """A finished run of the plan's one arm and seed, as ``nmt compare`` would have trained it."""
    (arm,) = plan.arms
    cfg = C.load(plan.config, run_overrides(plan, arm, 1, STEPS))
    run_dir = Path(cfg.runs_dir) / cfg.name
    paths = RunPaths(run_dir)
    paths.checkpoints.mkdir(parents=True)
    atomic_write_bytes(paths.config, C.dump(cfg).encode("utf-8"))
    events.append(run_dir, events.Start(step=0, epoch=0, elapsed_s=0.0))
    events.append(run_dir, events.Stop(reason="max_steps", step=STEPS, epoch=1, elapsed_s=1.0, best=1.0))
    paths.best.write_bytes(b"a checkpoint")
    return run_dir


def _unfinish(run_dir: Path) -> None:
    """The run as a killed training leaves it: started again, with a last checkpoint."""
    events.append(run_dir, events.Start(step=STEPS, epoch=1, elapsed_s=1.0))
    RunPaths(run_dir).last.write_bytes(b"a checkpoint")


def _action(plan: Plan) -> str:
    (arm,) = plan.arms
    act = run_action(plan, arm, 1, STEPS)
    return f"{act.action} {act.note}".strip()


@pytest.fixture()
def finished(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Runs that ``--runs-dir cmpB`` finished, from ``tmp_path``; the current folder is ``tmp_path``."""
    monkeypatch.chdir(tmp_path)
    _finish(_plan(Path("cmpB")))
    assert _action(_plan(Path("cmpB"))) == "reuse"
    return tmp_path


@pytest.mark.parametrize("force", [False, True])
def test_an_absolute_runs_dir_reuses_the_runs_of_its_relative_spelling(finished: Path, force: bool) -> None:
    assert _action(_plan(finished / "cmpB", force)) == "reuse"
    (finished / "sub").mkdir()
    assert _action(_plan(Path("sub/../cmpB"), force)) == "reuse"


def test_a_relative_runs_dir_from_a_subfolder_reuses_them(finished: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (finished / "sub").mkdir()
    monkeypatch.chdir(finished / "sub")
    assert _action(_plan(Path("../cmpB"))) == "reuse"


def test_runs_finished_by_an_absolute_runs_dir_are_reused_by_a_relative_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    _finish(_plan(tmp_path / "cmpA"))
    assert _action(_plan(Path("cmpA"))) == "reuse"


def test_a_moved_folder_holds_the_same_runs(finished: Path) -> None:
    """Moved (or renamed) with its runs, the folder still holds them: its runs_dir spelling is history."""
    shutil.move(finished / "cmpB", finished / "moved" / "cmpC")
    assert _action(_plan(Path("moved/cmpC"))) == "reuse"
    assert _action(_plan(finished / "moved" / "cmpC")) == "reuse"


def test_another_folder_without_those_runs_trains_its_own(finished: Path) -> None:
    assert _action(_plan(Path("cmpD"))) == "train"
    assert os.listdir(finished / "cmpB")  # untouched


def test_another_option_still_tells_runs_apart(finished: Path) -> None:
    plan = Plan(**{**_plan(finished / "cmpB").__dict__, "overrides": ["train.lr=0.5"]})
    assert _action(plan) == "kept finished with another train.lr"


def test_an_unfinished_run_is_resumed_however_the_folder_is_spelled(finished: Path) -> None:
    """It was "replace" (trained again from scratch, its updates lost)."""
    _unfinish(finished / "cmpB" / "bahdanau_s1")
    assert _action(_plan(finished / "cmpB")).startswith("resume")
