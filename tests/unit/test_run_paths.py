"""The run folder's layout in one object (nmt.run.paths), and no module but it spelling the names."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

import nmt
from nmt.run import checkpoint as ckpt
from nmt.run import events
from nmt.run import paths as P
from nmt.run.folder import RunLock, is_run
from nmt.run.paths import RunPaths, is_trainer_checkpoint, report_json, run_of_checkpoint


def test_every_path_lies_inside_its_run(tmp_path: Path) -> None:
    run = RunPaths(tmp_path / "runs" / "toy")
    files = [
        run.config,
        run.metrics,
        run.lock,
        run.best,
        run.last,
        run.step(7),
        run.tensorboard,
        run.attention_map(7),
        run.tokenizer("src"),
        run.tokenizer("tgt"),
        run.eval_folder(),
        run.eval_folder(ensemble=True),
        run.report_eval("greedy"),
        run.report_eval("beam5"),
        run.compare_folder("test"),
        run.selection,
        run.average(5),
    ]
    assert all(f.parent == run.root or run.root in f.parents for f in files)
    assert len(set(files)) == len(files)  # no two roles share a path
    assert run.best.parent == run.last.parent == run.step(1).parent == run.checkpoints


def test_step_files_sort_by_update_and_name_the_same_step() -> None:
    run = RunPaths(Path("r"))
    steps = [3, 20, 100, 1_000_000]
    assert sorted(run.step(s).name for s in steps) == [run.step(s).name for s in steps]
    assert run.step(120).stem == run.attention_map(120).stem  # a heat map is found by its checkpoint's step
    assert ckpt.step_path(Path("r"), 120) == run.step(120)


def test_a_checkpoint_leads_back_to_its_run(tmp_path: Path) -> None:
    run = RunPaths(tmp_path / "toy")
    for file in (run.best, run.last, run.step(5)):
        assert RunPaths.of_checkpoint(file) == run and run_of_checkpoint(file) == run.root
    assert run_of_checkpoint(tmp_path / "avg.pt") is None


def test_trainer_checkpoints_are_the_names_training_writes(tmp_path: Path) -> None:
    run = RunPaths(tmp_path / "toy")
    assert all(is_trainer_checkpoint(p) for p in (run.best, run.last, run.step(1), run.step(9_999_999)))
    assert not is_trainer_checkpoint(run.checkpoints / "avg.pt")
    assert not is_trainer_checkpoint(tmp_path / "best.pt")  # not in a checkpoints folder


def test_the_writers_use_the_paths(tmp_path: Path) -> None:
    run = RunPaths(tmp_path / "toy")
    run.root.mkdir()
    events.append(run.root, events.Stop(reason="max_steps", step=1, epoch=1, elapsed_s=0.5, best=None))
    assert run.metrics.is_file() and events.read(run.root)[0].step == 1
    with RunLock(run.root):
        assert run.lock.is_file()
    assert not is_run(run.root)  # metrics without config.yaml: not a run
    run.config.write_text("name: toy\n")
    assert is_run(run.root)
    assert report_json(run.eval_folder()).name == f"{P.REPORT}.json"


LAYOUT_NAMES = {
    P.CONFIG,
    P.METRICS,
    P.LOCK,
    P.BEST,
    P.LAST,
    P.TENSORBOARD,
    P.EVAL_ENSEMBLE,
    *P.REPORT_EVALS.values(),
    f"{P.REPORT}.json",
    f"{P.REPORT}.md",
    P.SCORED,
    P.SELECTION,
}


def _spelled(path: Path) -> list[str]:
    """String constants of a module that are exactly a name of the run folder's layout."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    return [
        node.value
        for node in ast.walk(tree)
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value in LAYOUT_NAMES
    ]


@pytest.mark.parametrize("module", sorted(Path(nmt.__file__).parent.rglob("*.py")), ids=lambda p: p.name)
def test_no_module_but_the_paths_spells_the_layout(module: Path) -> None:
    if module == Path(P.__file__):
        return
    assert _spelled(module) == [], f"{module}: name the file through nmt.run.paths.RunPaths"


def test_the_check_catches_a_spelled_name(tmp_path: Path) -> None:
    bad = tmp_path / "bad.py"
    bad.write_text('def f(run):\n    return run / "checkpoints" / "best.pt"\n')
    assert _spelled(bad) == ["best.pt"]
