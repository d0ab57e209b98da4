"""``nmt select --valid`` takes a validation split only (issue 70): choosing the model on a test split
made the choice on test while selection.json showed no more test reads than the one after it."""

from __future__ import annotations

from pathlib import Path

import pytest

import nmt.api
from conftest import run_cli, toy_overrides
from nmt.run.paths import RunPaths
from nmt.training.entry import run_training
from nmt.util.errors import UserError


@pytest.fixture(scope="module")
def run(tmp_path_factory, toy_files) -> Path:
    """Six updates, three validations, two step checkpoints kept: enough for --last 2."""
    root = tmp_path_factory.mktemp("select_valid")
    overrides = toy_overrides(root, toy_files[1], train__max_steps=6, train__valid_every=2, train__keep_last=2)
    run_training(None, overrides, progress=False)
    return root / "runs" / "toy"


def _files(run: Path) -> dict[Path, int]:
    return {p.relative_to(run): p.stat().st_mtime_ns for p in sorted(run.rglob("*")) if p.is_file()}


def test_the_command_refuses_to_choose_on_a_test_split(run, capsys):
    before = _files(run)
    for extra in ([], ["--test", "valid"]):
        code, out, err = run_cli(["select", str(run), "--last", "2", "--beam", "1", "--valid", "test", *extra], capsys)
        lines = err.strip().splitlines()
        assert code == 2 and out == "" and len(lines) == 1, err
        assert lines[0].startswith("nmt: error: --valid test: a test split; the choice is made on a validation split")
    assert _files(run) == before and not RunPaths(run).selection.exists()  # no average, no record


def test_the_library_refuses_it_naming_its_parameter(run):
    before = _files(run)
    with pytest.raises(UserError, match=r"^valid test: a test split; the choice is made on a validation split"):
        nmt.api.select(run, last=2, beam=1, valid="test")
    assert _files(run) == before
