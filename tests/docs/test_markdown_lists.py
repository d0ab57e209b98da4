"""Lists in the docs render as written: Python-Markdown (the site's renderer) nests a list only
under four spaces, and a numbered item right after an indented paragraph joins that paragraph.
Both broke the numbered steps of two lab pages (sub-bullets at three spaces became top-level
items and swallowed steps 2 and 3)."""

import re
import subprocess
from pathlib import Path

import pytest

DOCS = Path(__file__).resolve().parents[2] / "docs"
PAGES = sorted(DOCS.rglob("*.md"))


def list_problems(text: str) -> list[str]:
    """Lines that would not render as the list they look like, with their numbers: a nested item
    indented by fewer than four spaces, and a paragraph after a blank line inside a numbered list
    indented by fewer than four (it leaves the list, and the next numbered item joins it)."""
    problems, fenced, previous, in_list = [], False, "", False
    for number, line in enumerate(text.splitlines(), 1):
        if line.lstrip().startswith("```"):
            fenced = not fenced
        if fenced:
            previous = line
            continue
        indent = len(line) - len(line.lstrip())
        if re.match(r"^\d+\. ", line):
            in_list = True
        elif line.strip() and indent == 0:
            in_list = False
        if re.match(r"^ {1,3}[-*] ", line) and previous.strip() and not re.match(r"^ {0,3}[-*] ", previous):
            problems.append(f"{number}: a nested item indented by {indent} spaces (4 nest it)")
        if in_list and not previous.strip() and 0 < indent < 4 and line.strip():
            problems.append(f"{number}: a paragraph in a numbered item indented by {indent} spaces (4 keep it there)")
        previous = line
    return problems


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(DOCS)))
def test_lists_render_as_written(page: Path) -> None:
    assert list_problems(page.read_text(encoding="utf-8")) == []


def test_the_check_finds_the_lab_pages_as_they_were() -> None:
    old = subprocess.run(
        ["git", "show", "0115e00:docs/labs/teacher_forcing.md"], capture_output=True, text=True, cwd=DOCS
    )
    if old.returncode != 0:
        pytest.skip("the repository's history is not here")
    problems = list_problems(old.stdout)
    assert any("nested item indented by 3" in p for p in problems)
    assert any("paragraph in a numbered item indented by 3" in p for p in problems)
