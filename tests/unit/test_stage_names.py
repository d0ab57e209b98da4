"""No file of ours names a stage by its old module path (nmt.train.*, nmt.evaluate.*).

The stages are ``nmt.training``, ``nmt.evaluation`` and ``nmt.comparison``; ``nmt.train`` and
``nmt.evaluate`` are only the library's functions.  An import of an old path fails loudly, but a
logger name, a monkeypatch target, a docstring or a page that names one would go wrong silently.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
OLD = "|".join(["train", "evaluate"])
OLD_PATH = re.compile(rf"\bnmt\.(?:{OLD})\.(?!__)[A-Za-z_]|\bnmt/(?:{OLD})/|\b(?:from|import) nmt\.(?:{OLD})\b(?! *\()")
"""A dotted module path below nmt.train or nmt.evaluate, their folders, or an import of either as a module."""
ALLOWED = {Path("tests/integration/test_api_train.py"), Path("tests/unit/test_stage_names.py")}
"""The test that imports the old paths to see each fail, and this one's examples."""


def _ours() -> list[Path]:
    folders = [
        ("nmt", "*.py"),
        ("scripts", "*.py"),
        ("docs_build", "*.py"),
        (".ci", "*.py"),
        ("tests", "*.py"),
        ("docs", "*.md"),
        ("docs", "*.ipynb"),
        ("notebooks", "*.ipynb"),
    ]
    found = [p for folder, pattern in folders for p in (REPO / folder).rglob(pattern)]
    found += [REPO / name for name in ("README.md", "mkdocs.yml", "pyproject.toml", "Makefile")]
    return sorted(p for p in found if p.is_file() and p.relative_to(REPO) not in ALLOWED)


@pytest.mark.parametrize("path", _ours(), ids=lambda p: str(p.relative_to(REPO)))
def test_no_old_stage_path(path: Path) -> None:
    lines = path.read_text(encoding="utf-8").splitlines()
    found = [f"{number}: {line.strip()}" for number, line in enumerate(lines, 1) if OLD_PATH.search(line)]
    assert found == [], f"{path}: name the stage nmt.training or nmt.evaluation (or nmt.comparison)"


@pytest.mark.parametrize(
    ("line", "old"),
    [
        ("from nmt.train.entry import run_training", True),
        ('monkeypatch.setattr("nmt.evaluate.compare.train_run", fail)', True),
        ("see nmt/evaluate/run_report.py", True),
        ("import nmt.train", True),
        ("from nmt.evaluate import run_files", True),
        ("run = nmt.train(config)", False),
        ("nmt.train.__doc__", False),
        ("nmt.evaluate(run.folder).records", False),
        ("from nmt.training.entry import run_training", False),
        ("`nmt.train`, `nmt.evaluate` and `nmt.compare`", False),
    ],
)
def test_the_check_tells_paths_from_functions(line: str, old: bool) -> None:
    assert bool(OLD_PATH.search(line)) is old
