"""The tools a recipe runs (nmt select, nmt diagnose) live in the package: a wheel-like copy of it,
run away from the checkout (no scripts/, no tests/ on the path), has the commands and the functions."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

from setuptools import find_packages

REPO = Path(__file__).resolve().parents[2]


def _wheel_like(site: Path) -> Path:
    """The modules a wheel of the checkout holds (the packages setuptools finds, as pyproject.toml
    names them), copied into ``site``: a subpackage without ``__init__.py`` would be left out here too."""
    for package in find_packages(str(REPO), include=["nmt*"]):
        folder = site.joinpath(*package.split("."))
        folder.mkdir(parents=True)
        for module in REPO.joinpath(*package.split(".")).glob("*.py"):
            shutil.copy2(module, folder / module.name)
    return site


def _run(site: Path, cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(site)}
    return subprocess.run([sys.executable, *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=120)


def test_the_commands_and_functions_work_from_an_installed_copy(tmp_path: Path) -> None:
    site = _wheel_like(tmp_path / "site")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    code = (
        "import nmt, sys; "
        f"assert nmt.__file__.startswith({str(site)!r}), nmt.__file__; "
        "from nmt import select, fit_gap, attention_health, Selection, FitGap, AttentionHealth; "
        "assert 'torch' not in sys.modules, 'importing the functions imported torch'; "
        "print(select.__name__, fit_gap.__name__, attention_health.__name__)"
    )
    imported = _run(site, elsewhere, "-c", code)
    assert imported.returncode == 0, imported.stderr
    assert imported.stdout.split() == ["select", "fit_gap", "attention_health"]
    for argv, words in (
        (["select", "--help"], "--last"),
        (["diagnose", "--help"], "fit-gap"),
        (["diagnose", "fit-gap", "--help"], "--train-pairs"),
        (["diagnose", "attention", "--help"], "--variants"),
    ):
        shown = _run(site, elsewhere, "-m", "nmt", *argv)
        assert shown.returncode == 0 and words in shown.stdout, (argv, shown.stderr)
