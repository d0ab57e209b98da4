"""The exercise notebooks (07, 09, 10): written once with answers and hidden tests in notebooks/source/, in
nbgrader's marks, and given to students as the versions in notebooks/ that docs_build/release_notebooks.py
generates.  A student version holds no answer and no hidden test and stops until answered; a wrong
answer fails a test that says what is wrong (a plain dot product for the scaled cosine, a key not
transposed, a threshold that ignores the support, padding attended, one teacher-forcing coin per batch),
a torch error included; the lecturer's copy, answered,
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
ANSWER = re.compile(r"(?P<indent>[ \t]*)### BEGIN SOLUTION\n.*?### END SOLUTION(?:\n|$)", re.S)


def nbgrader(cell) -> dict:
    return cell.metadata.get("nbgrader", {})


def test_the_exercise_notebooks_have_a_lecturers_copy_each():
    assert [p.name[:3] for p in SOURCES] == ["07_", "09_", "10_"]


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
    answers = [c for c in lecturers.cells if nbgrader(c).get("solution")]
    blanks = [c for c in students.cells if nbgrader(c).get("solution")]
    assert [nbgrader(c)["grade_id"] for c in answers] == [nbgrader(c)["grade_id"] for c in blanks]
    for answer_cell, blank in zip(answers, blanks):
        for answer in ANSWER.finditer(answer_cell.source):
            written = [line.strip() for line in answer.group(0).splitlines()[1:-1] if line.strip()]
            assert written and not any(line in blank.source for line in written)


def run_until_graded(nb, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, last: bool = False) -> None:
    """Run the notebook's cells up to and including its first test cell (``last``: its last), in the
    smoke setting."""
    (tmp_path / "nmt-class.yaml").write_text("setting: smoke\n", encoding="utf-8")
    monkeypatch.setenv("PYTHONPATH", str(REPO))
    monkeypatch.setenv("MPLBACKEND", "agg")
    tests = [i for i, c in enumerate(nb.cells) if nbgrader(c).get("grade")]
    nb.cells = nb.cells[: tests[-1 if last else 0] + 1]
    client = NotebookClient(
        nb, timeout=CELL_TIMEOUT, kernel_name="python3", resources={"metadata": {"path": str(tmp_path)}}
    )
    client.execute()


def answered(source: Path, lines: str, exercise: int = 0, block: int = 0):
    """The lecturer's copy with answer ``block`` of its ``exercise``-th answer cell replaced by ``lines``
    (indented as the answer was), the cells after that exercise's test cell left out."""
    nb = nbformat.read(source, as_version=4)
    cells = [i for i, c in enumerate(nb.cells) if nbgrader(c).get("solution")]
    cell = nb.cells[cells[exercise]]
    blocks = list(ANSWER.finditer(cell.source))
    wrong = blocks[block]
    indented = "".join(f"{wrong['indent']}{line}\n" for line in lines.splitlines())
    cell.source = cell.source[: wrong.start()] + indented + cell.source[wrong.end() :]
    test = next(i for i, c in enumerate(nb.cells) if i > cells[exercise] and nbgrader(c).get("grade"))
    nb.cells = nb.cells[: test + 1]
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
    "10_no_transpose": ("10", "return q @ k", "every query against every key: score(q (2, 1, 3, 4), k (2, 1, 5, 4))"),
    "10_padding_attended": (
        "10",
        "return scores.softmax(dim=-1)",
        "padding keys (mask False) get weight exactly 0",
        0,
        1,
    ),
    "10_softmax_over_queries": (
        "10",
        "scores = scores if allowed is None else scores.masked_fill(~allowed, torch.finfo(scores.dtype).min)\n"
        "return scores.softmax(dim=-2)",
        "padding keys (mask False) get weight exactly 0",
        0,
        1,
    ),
    "10_minus_infinity": (
        "10",
        "scores = scores if allowed is None else scores.masked_fill(~allowed, float('-inf'))\n"
        "return scores.softmax(dim=-1)",
        "a query whose keys are all padding gets finite (uniform) weights",  # a hidden test finds it
        0,
        1,
    ),
    "10_weights_unused": (
        "10",
        "return values.mean(dim=-2, keepdim=True).expand(-1, -1, 3, -1)",
        "sum_i alpha_{t,i} v_i",
        0,
        2,
    ),
    "10_always_the_reference": (
        "10",
        "return torch.stack([step(tgt_in[:, t], state)[0] for t in range(T)], dim=1)",
        "with p = 0 every position reads the argmax of the previous logits",
        1,
    ),
    "10_one_coin_per_batch": (
        "10",
        "tokens, logits = tgt_in[:, 0], []\n"
        "for t in range(T):\n"
        "    if t > 0:\n"
        "        tokens = tgt_in[:, t] if torch.rand(()) < p else logits[-1].argmax(-1)\n"
        "    out, state = step(tokens, state)\n"
        "    logits.append(out)\n"
        "return torch.stack(logits, dim=1)",
        "draw one coin per sentence",
        1,
    ),
}


@pytest.mark.parametrize("case", sorted(WRONG))
def test_a_wrong_answer_fails_a_test_that_names_what_is_wrong(
    case: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    prefix, lines, named, *where = WRONG[case]
    source = next(p for p in SOURCES if p.name.startswith(prefix))
    with pytest.raises(CellExecutionError) as failed:
        run_until_graded(answered(source, lines, *where), tmp_path, monkeypatch, last=True)
    assert failed.value.ename == "AssertionError", failed.value
    assert named in failed.value.evalue, failed.value.evalue


@pytest.mark.parametrize("source", SOURCES, ids=lambda p: p.stem)
def test_the_answer_passes_every_test_hidden_ones_included(
    source: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    nb = nbformat.read(source, as_version=4)
    run_until_graded(nb, tmp_path, monkeypatch, last=True)
    for graded in (c for c in nb.cells if nbgrader(c).get("grade")):
        printed = "".join(o.get("text", "") for o in graded.outputs)
        assert "pass the tests" in printed or "passes the tests" in printed, nbgrader(graded)["grade_id"]
