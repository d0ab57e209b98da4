"""The exercise notebooks (07, 09): written once with answers and hidden tests in notebooks/source/, in
nbgrader's marks, and given to students as the versions in notebooks/ that docs_build/release_notebooks.py
generates.  A student version holds no answer and no hidden test and stops until answered; a wrong
answer fails a test that says what is wrong (a plain dot product for the scaled cosine, a key not
transposed, a threshold that ignores the support), a torch error included; the lecturer's copy, answered,
passes every test (and runs whole in tests/integration/test_notebooks.py)."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient
from nbclient.exceptions import CellExecutionError

from conftest import REPO

sys.path.insert(0, str(REPO / "docs_build"))
import release_notebooks  # after the path insert

SOURCES = sorted((REPO / "notebooks" / "source").glob("*.ipynb"))
CELL_TIMEOUT = 300
ANSWER = re.compile(r"(?P<indent>[ \t]*)### BEGIN SOLUTION\n.*?### END SOLUTION\n", re.S)


def nbgrader(cell) -> dict:
    return cell.metadata.get("nbgrader", {})


def test_the_exercise_notebooks_have_a_lecturers_copy_each():
    assert [p.name[:3] for p in SOURCES] == ["07_", "09_"]


def test_the_student_versions_are_what_the_sources_give():
    """Edit notebooks/source/, then run docs_build/release_notebooks.py: a student version edited by
    hand, or left behind its source, fails here."""
    assert release_notebooks.main(["--check"]) == 0


@pytest.mark.parametrize("source", SOURCES, ids=lambda p: p.stem)
def test_a_student_version_holds_no_answer_and_no_hidden_test(source: Path):
    lecturers = nbformat.read(source, as_version=4)
    students = nbformat.read(REPO / "notebooks" / source.name, as_version=4)
    assert [c.source for c in lecturers.cells if "### BEGIN SOLUTION" in c.source], "the source holds its answer"
    assert [c.source for c in lecturers.cells if "### BEGIN HIDDEN TESTS" in c.source], "and hidden tests"
    text = "\n".join(c.source for c in students.cells)
    assert "BEGIN SOLUTION" not in text and "HIDDEN TESTS" not in text
    assert "raise NotImplementedError()" in text  # nbgrader's stub where the answer was
    for cell in lecturers.cells:  # every answer cell and test cell is marked for nbgrader
        if "### BEGIN SOLUTION" in cell.source:
            assert nbgrader(cell).get("solution") is True and nbgrader(cell).get("grade_id")
        if "### BEGIN HIDDEN TESTS" in cell.source:
            assert nbgrader(cell).get("grade") is True and nbgrader(cell).get("points", 0) > 0
    students_answer = next(c for c in students.cells if nbgrader(c).get("solution"))
    for answer in ANSWER.finditer(next(c.source for c in lecturers.cells if nbgrader(c).get("solution"))):
        written = [line.strip() for line in answer.group(0).splitlines()[1:-1] if line.strip()]
        assert written and not any(line in students_answer.source for line in written)


def run_until_graded(nb, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Run the notebook's cells up to and including its first test cell, in the smoke setting."""
    monkeypatch.setenv("NMT_NOTEBOOK", "smoke")
    monkeypatch.setenv("PYTHONPATH", str(REPO))
    monkeypatch.setenv("MPLBACKEND", "agg")
    first_test = next(i for i, c in enumerate(nb.cells) if nbgrader(c).get("grade"))
    nb.cells = nb.cells[: first_test + 1]
    client = NotebookClient(
        nb, timeout=CELL_TIMEOUT, kernel_name="python3", resources={"metadata": {"path": str(tmp_path)}}
    )
    client.execute()


def answered(source: Path, lines: str):
    """The lecturer's copy with its answer replaced by ``lines`` (indented as the answer was)."""
    nb = nbformat.read(source, as_version=4)
    cell = next(c for c in nb.cells if nbgrader(c).get("solution"))

    def replace(match: re.Match) -> str:
        return "".join(f"{match['indent']}{line}\n" for line in lines.splitlines())

    cell.source = ANSWER.sub(replace, cell.source)
    return nb


@pytest.mark.parametrize("source", SOURCES, ids=lambda p: p.stem)
def test_a_student_version_stops_at_its_test_cell_until_answered(
    source: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    nb = nbformat.read(REPO / "notebooks" / source.name, as_version=4)
    with pytest.raises(CellExecutionError) as stopped:
        run_until_graded(nb, tmp_path, monkeypatch)
    assert stopped.value.ename == "NotImplementedError", stopped.value
    failed = next(c for c in nb.cells if c.cell_type == "code" and any(o.output_type == "error" for o in c.outputs))
    assert nbgrader(failed).get("grade"), "the test cell stops, not a cell before it"
    assert not list(tmp_path.glob("runs/**/metrics.jsonl")), "nothing trained"


WRONG = {
    "07_plain_dot": ("07", "scores = g * (q @ k.transpose(-1, -2))", "a plain dot product q . k does not"),
    "07_no_transpose": (
        "07",
        "scores = g * (F.normalize(q, dim=-1) @ F.normalize(k, dim=-1))",
        "every query against every key: forward(q (2, 2, 3, 4), k (2, 2, 5, 4)) failed",
    ),
    "07_no_temperature": (
        "07",
        "scores = F.normalize(q, dim=-1) @ F.normalize(k, dim=-1).transpose(-1, -2)",
        "scores equal to g cos(q_t, k_i)",  # passes the visible tests: a hidden one finds it
    ),
    "09_every_key": ("09", "tau = (z.sum(dim=-1, keepdim=True) - 1) / z.size(-1)", "sums to 1 over each row"),
    "09_one_tau": ("09", "tau = z.amax(dim=-1, keepdim=True) - 1", "sums to 1 over each row"),
    "09_flat_tau": ("09", "tau = (z.sum() - 1) / z.numel()", "tau of shape (B, h, T, 1)"),
}


@pytest.mark.parametrize("case", sorted(WRONG))
def test_a_wrong_answer_fails_a_test_that_names_what_is_wrong(
    case: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    prefix, lines, named = WRONG[case]
    source = next(p for p in SOURCES if p.name.startswith(prefix))
    with pytest.raises(CellExecutionError) as failed:
        run_until_graded(answered(source, lines), tmp_path, monkeypatch)
    assert failed.value.ename == "AssertionError", failed.value
    assert named in failed.value.evalue, failed.value.evalue


@pytest.mark.parametrize("source", SOURCES, ids=lambda p: p.stem)
def test_the_answer_passes_every_test_hidden_ones_included(
    source: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    nb = nbformat.read(source, as_version=4)
    run_until_graded(nb, tmp_path, monkeypatch)
    graded = next(c for c in nb.cells if nbgrader(c).get("grade"))
    assert "pass the tests" in "".join(o.get("text", "") for o in graded.outputs) or "passes the tests" in "".join(
        o.get("text", "") for o in graded.outputs
    )
