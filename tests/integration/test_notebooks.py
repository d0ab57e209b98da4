"""The notebooks of notebooks/: each runs from top to bottom in its smoke setting, and none is
committed with outputs.

The smoke setting (``NMT_NOTEBOOK=smoke``) trains tiny models on the embedded synthetic corpus for
a few updates, so a whole notebook takes seconds; its cells assert on what the library returned.
Each runs in a kernel of this interpreter, in a temporary folder, so nothing lands in the repository.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient

from conftest import REPO

NOTEBOOKS = sorted((REPO / "notebooks").glob("*.ipynb"))
CELL_TIMEOUT = 300
"""Seconds after which a cell counts as hung: a guard, not a claim about speed (the machine is shared)."""


def smoke_environment() -> dict[str, str]:
    """The kernel's environment: the smoke setting, this checkout's nmt first on the path, no display."""
    path = os.pathsep.join(p for p in (str(REPO), os.environ.get("PYTHONPATH", "")) if p)
    return {"NMT_NOTEBOOK": "smoke", "PYTHONPATH": path, "MPLBACKEND": "module://matplotlib_inline.backend_inline"}


def test_the_six_notebooks_are_there_in_order():
    assert [p.name[:3] for p in NOTEBOOKS] == [f"{i:02d}_" for i in range(1, 7)], [p.name for p in NOTEBOOKS]


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_no_notebook_is_committed_with_outputs(path: Path):
    nb = json.loads(path.read_text(encoding="utf-8"))
    for i, cell in enumerate(nb["cells"]):
        if cell["cell_type"] == "code":
            assert cell.get("outputs") == [] and cell.get("execution_count") is None, f"{path.name} cell {i}"
    assert "widgets" not in nb["metadata"], path.name


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_the_first_cell_only_installs_nmt_where_it_is_missing(path: Path):
    first = nbformat.read(path, as_version=4).cells[0]
    assert first.cell_type == "code", path.name
    assert "import nmt" in first.source and "except ImportError" in first.source, first.source
    # the URL comes from NMT_REPOSITORY, or the cell stops in one line: no made-up address to replace
    assert "nmt-attention @ git+{os.environ['NMT_REPOSITORY']}\"" in first.source, first.source
    assert 'raise ImportError("nmt is not installed: set NMT_REPOSITORY' in first.source, first.source


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_the_first_cell_stops_in_one_line_when_the_install_gave_no_nmt(path: Path, monkeypatch: pytest.MonkeyPatch):
    """%pip install reports a failure and returns: the cell went on, and the next cell failed with
    ModuleNotFoundError, far from the cause.  Run as IPython runs it, with an install that installs nothing."""
    from IPython.core.inputtransformer2 import TransformerManager

    source = TransformerManager().transform_cell(nbformat.read(path, as_version=4).cells[0].source)
    magics: list[tuple[str, str]] = []

    class FailedInstall:
        def run_line_magic(self, name: str, line: str, _stack_depth: int = 1) -> None:
            magics.append((name, line))  # pip printed its error; nothing was installed

    monkeypatch.setitem(sys.modules, "nmt", None)  # `import nmt` raises ImportError, as where it is missing
    monkeypatch.setenv("NMT_REPOSITORY", "https://example.invalid/nmt")
    with pytest.raises(SystemExit) as stopped:
        exec(compile(source, path.name, "exec"), {"get_ipython": FailedInstall})
    assert [name for name, _ in magics] == ["pip"], magics
    message = str(stopped.value.code)
    assert "\n" not in message and message.startswith("nmt did not install from https://example.invalid/nmt: "), message


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_a_notebook_runs_in_its_smoke_setting(path: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    """Twice in one folder, as a class re-runs it: the second run retrains its runs with
    overwrite=True, which refuses a run folder holding anything training did not write, so the
    notebook keeps its reports out of its runs; and its smoke runs never share a folder with the
    class setting's (runs_dir runs/smoke), which a re-run in the smoke setting would delete."""
    for key, value in smoke_environment().items():
        monkeypatch.setenv(key, value)  # the kernel inherits this process's environment
    class_run = tmp_path / "runs" / "notebook_first_model" / "notes.txt"  # a class-setting run's name
    class_run.parent.mkdir(parents=True)
    class_run.write_text("the 9-minute class model")
    for _ in range(2):
        nb = nbformat.read(path, as_version=4)
        client = NotebookClient(
            nb, timeout=CELL_TIMEOUT, kernel_name="python3", resources={"metadata": {"path": str(tmp_path)}}
        )
        client.execute()  # raises CellExecutionError, with the cell and its traceback, when a cell fails
    assert class_run.read_text() == "the 9-minute class model"
    assert not (tmp_path / "evaluations").exists(), "the smoke setting writes only under runs/smoke"
    code = [cell for cell in nb.cells if cell.cell_type == "code"]
    assert all(cell.execution_count for cell in code), "every cell ran"
    assert any(o.get("output_type") == "display_data" and "image/png" in o.get("data", {}) for o in code[-1].outputs)
    assert nb.cells[-1].cell_type == "markdown", "a notebook ends in one sentence on its figure"
    assert (tmp_path / "runs").is_dir() and (tmp_path / "data").is_dir(), "runs and corpora go to the temporary folder"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_the_site_shows_an_executed_copy_of_each_notebook_labelled_with_its_setting(path: Path):
    """docs/notebooks/ holds what scripts/execute_notebooks.py wrote: the notebook's own cells (so an
    edited notebook needs a new copy), a first cell naming the setting, date, command and machine."""
    copy = nbformat.read(REPO / "docs" / "notebooks" / path.name, as_version=4)
    run = copy.metadata["nmt_execution"]
    assert run["setting"] in ("smoke", "class") and run["command"].startswith("python scripts/execute_notebooks.py")
    label = copy.cells[0].source
    assert f"**{run['setting']} setting**" in label and run["date"] in label and run["machine"] in label, label
    if run["setting"] == "smoke":
        assert "say nothing about translation" in label
    source = nbformat.read(path, as_version=4)
    assert [c.source for c in copy.cells[1:]] == [c.source for c in source.cells], f"run {run['command']} again"
