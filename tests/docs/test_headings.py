"""Headings hold no ``$`` maths.  The site's table of contents and the page titles are made from the
heading's text, where no equation is drawn: notebook 03's contents showed
``Teacher forcing with probability $p$``.  Say it in words in a heading; keep the maths for the prose.
(tests/browser/test_site.py checks the same of the built site.)"""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
PAGES = sorted((REPO / "docs").rglob("*.md"))
NOTEBOOKS = sorted((REPO / "notebooks").glob("*.ipynb")) + sorted((REPO / "docs" / "notebooks").glob("*.ipynb"))
HEADING = re.compile(r"^ {0,3}#{1,6}(?:\s|$)")


def headings_with_maths(markdown: str) -> list[str]:
    """The ATX headings of ``markdown`` (outside fenced code) that hold a ``$``, with their line numbers."""
    found, fence = [], ""
    for number, line in enumerate(markdown.splitlines(), 1):
        marker = re.match(r"^ {0,3}(`{3,}|~{3,})", line)
        if marker and (not fence or marker[1].startswith(fence)):
            fence = "" if fence else marker[1][:3]
            continue
        if not fence and HEADING.match(line) and "$" in line:
            found.append(f"{number}: {line.strip()}")
    return found


def notebook_markdown(text: str) -> list[str]:
    """The sources of a notebook's Markdown cells."""
    cells = json.loads(text)["cells"]
    return ["".join(cell["source"]) for cell in cells if cell["cell_type"] == "markdown"]


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(REPO / "docs")))
def test_no_heading_of_a_docs_page_holds_maths(page: Path) -> None:
    assert headings_with_maths(page.read_text(encoding="utf-8")) == []


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: str(p.relative_to(REPO)))
def test_no_heading_of_a_notebook_holds_maths(path: Path) -> None:
    found = [h for cell in notebook_markdown(path.read_text(encoding="utf-8")) for h in headings_with_maths(cell)]
    assert found == []


def test_the_check_finds_maths_in_headings_and_nowhere_else() -> None:
    page = "# Title\n\nText with $p$.\n\n## BLEU by $p$\n\n```sh\n# echo $HOME\n```\n   ### $\\alpha$ again\n#hashtag $x$\n"
    assert headings_with_maths(page) == ["5: ## BLEU by $p$", "10: ### $\\alpha$ again"]


def test_the_check_finds_notebook_03_as_it_was() -> None:
    old = subprocess.run(
        ["git", "show", "0d44c72:notebooks/03_teacher_forcing.ipynb"], capture_output=True, text=True, cwd=REPO
    )
    if old.returncode != 0:
        pytest.skip("the repository's history is not here")
    found = [h for cell in notebook_markdown(old.stdout) for h in headings_with_maths(cell)]
    assert found == ["1: ## Teacher forcing with probability $p$", "1: ## BLEU by $p$, greedy and beam"]
