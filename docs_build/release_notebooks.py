"""The student versions of the exercise notebooks, generated from their sources by nbgrader's own steps.

An exercise notebook is written once, in ``notebooks/source/``, with its answers and its grader's
tests in it, marked the way nbgrader marks them (Jupyter's autograding tool, used by courses that
grade notebooks):

- an answer lies between ``### BEGIN SOLUTION`` and ``### END SOLUTION`` in a cell whose metadata
  says ``"nbgrader": {"solution": true, ...}``;
- a test cell (``"grade": true``, with its points and a ``grade_id`` naming it) may hold tests the
  student does not see, between ``### BEGIN HIDDEN TESTS`` and ``### END HIDDEN TESTS``.

This script applies nbgrader's ``ClearSolutions`` and ``ClearHiddenTests`` preprocessors (the steps of
``nbgrader generate_assignment`` that write the student version) and clears the outputs, then writes
each result to ``notebooks/`` under the source's name: the notebook a class and the site get.  An
answer becomes nbgrader's stub, ``# YOUR CODE HERE`` and ``raise NotImplementedError()``, so the
student version stops at the first cell that needs the answer; the visible tests stay.  The cells'
nbgrader metadata stays too, so a course that uses nbgrader can take ``notebooks/source/`` as its
source folder and grade submissions with its own ``nbgrader autograde``.

Why not ``nbgrader generate_assignment`` itself: it needs a course folder and a gradebook database,
and writes one folder per assignment; the two preprocessors are the part that decides what a student
sees, run here on the files as they are, so the student versions sit beside the other notebooks.

    python docs_build/release_notebooks.py            # write notebooks/NN_*.ipynb from notebooks/source/
    python docs_build/release_notebooks.py --check    # exit 1 where a student version is not what its source gives

nbgrader comes with the ``teach`` extra (``pip install -e '.[teach]'``; ``make install`` includes it).
"""

from __future__ import annotations

import argparse
import copy
import sys
from pathlib import Path
from typing import Any, Optional

import nbformat

REPO = Path(__file__).resolve().parent.parent
SOURCE = REPO / "notebooks" / "source"
RELEASE = REPO / "notebooks"


def without_answers(nb: Any) -> Any:
    """``nb`` (nbformat, version 4) with every answer replaced by nbgrader's stub and the hidden tests
    removed, in place; its outputs stay (the site's copy of an executed exercise keeps them)."""
    try:
        from nbgrader.preprocessors import ClearHiddenTests, ClearSolutions
    except ImportError:
        raise SystemExit(
            "release_notebooks: nbgrader is not installed: pip install -e '.[teach]' (make install includes it)"
        ) from None
    for step in (ClearSolutions(), ClearHiddenTests()):
        nb, _ = step.preprocess(nb, {})
    return nb


def student_version(source: Any) -> Any:
    """The notebook ``source`` (nbformat, version 4) as a student gets it: :func:`without_answers`
    and no outputs.  ``source`` itself is left as it was."""
    from nbgrader.preprocessors import ClearOutput

    nb, _ = ClearOutput().preprocess(without_answers(copy.deepcopy(source)), {})
    for cell in nb.cells:
        if cell.cell_type == "code":
            cell.execution_count = None
    return nb


def render(nb: Any) -> str:
    """The notebook's file text, as nbformat writes it."""
    return nbformat.writes(nb) + "\n"


def released(path: Path) -> tuple[Path, str]:
    """(where the student version of the source ``path`` goes, its text)."""
    return RELEASE / path.name, render(student_version(nbformat.read(path, as_version=4)))


def main(argv: Optional[list[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--check",
        action="store_true",
        help="Write nothing; exit 1 naming each student version that differs from what its source gives.",
    )
    args = parser.parse_args(argv)
    sources = sorted(SOURCE.glob("*.ipynb"))
    if not sources:
        parser.error(f"no notebook in {SOURCE}")
    stale = []
    for path in sources:
        target, text = released(path)
        if args.check:
            if not target.is_file() or target.read_text(encoding="utf-8") != text:
                stale.append(target.relative_to(REPO))
            continue
        target.write_text(text, encoding="utf-8")
        print(f"{path.relative_to(REPO)} -> {target.relative_to(REPO)}")
    if stale:
        names = ", ".join(str(p) for p in stale)
        print(
            f"release_notebooks: {names} not generated from notebooks/source/: run python docs_build/release_notebooks.py"
        )
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
