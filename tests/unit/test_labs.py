"""The lab registry and where labs write: every listed lab loads, and tiny runs live apart."""

from __future__ import annotations

import pytest

from conftest import REPO, run_cli
from nmt.labs import LAB_MODULES
from nmt.labs.base import load_lab
from nmt.util.errors import UserError


def test_every_listed_lab_loads_under_its_name():
    for name in LAB_MODULES:
        lab = load_lab(name)
        assert lab.name == name and lab.title and lab.cpu_minutes > 0


def test_tiny_runs_and_tables_never_share_a_folder_with_full_size_ones():
    for name in LAB_MODULES:
        lab = load_lab(name)
        assert lab.default_runs_dir(tiny=True) != lab.default_runs_dir(tiny=False)
        assert lab.default_out(tiny=True) != lab.default_out(tiny=False)
    assert load_lab("kernel").default_runs_dir(False) == load_lab("length").default_runs_dir(False)  # shared runs


def test_a_dry_run_lists_every_run_of_every_lab_and_trains_nothing(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(REPO)  # the labs' base configs are paths in configs/
    for name in LAB_MODULES:
        runs = tmp_path / name
        code, out, err = run_cli(["lab", name, "--tiny", "--runs-dir", str(runs), "--dry-run"], capsys)
        assert code == 0, err
        *lines, total = out.splitlines()
        assert lines and all(line.startswith("train    ") and f" seed 1: {runs}/" in line for line in lines), out
        assert len(set(lines)) == len(lines)  # a run two comparisons share is listed once
        assert total == f"{len(lines)} run{'s' if len(lines) > 1 else ''}: {len(lines)} train", out
    assert not tmp_path.exists() or list(tmp_path.iterdir()) == []


def test_bad_lab_commands_are_one_line(capsys):
    with pytest.raises(UserError, match="unknown lab 'nope'"):
        load_lab("nope")
    for argv, message in ((["lab"], "name a lab"), (["lab", "beam", "--list"], "without a name")):
        code, out, err = run_cli(argv, capsys)
        assert code == 2 and out == "" and message in err and len(err.strip().splitlines()) == 1, err
