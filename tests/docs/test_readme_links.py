"""Every relative link of README.md reaches a file, and every anchor a heading, as GitHub renders them.

``mkdocs build --strict`` checks the links between the pages under docs/, but the README is not one
of them: it is read on GitHub and in the package metadata, so its links are checked here.
"""

from __future__ import annotations

import re
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
LINK = re.compile(r"!?\[[^\]]*\]\((?P<target>[^)\s]+)(?:\s+\"[^\"]*\")?\)")
FENCED = re.compile(r"^(`{3,}|~{3,}).*?^\1", re.MULTILINE | re.DOTALL)
CODE_SPAN = re.compile(r"`[^`\n]+`")
HEADING = re.compile(r"^#{1,6}\s+(?P<title>.+?)\s*#*\s*$", re.MULTILINE)


def prose(text: str) -> str:
    """``text`` without fenced blocks and code spans, where brackets are code, not links."""
    return CODE_SPAN.sub("", FENCED.sub("", text))


def github_anchors(text: str) -> set[str]:
    """The anchors GitHub gives a page's headings: lower case, punctuation dropped, spaces to
    hyphens, and ``-1``, ``-2``, ... after a repeated one."""
    seen: dict[str, int] = {}
    anchors = set()
    for match in HEADING.finditer(prose(text)):
        slug = re.sub(r"[^\w\- ]", "", match["title"].strip().lower()).replace(" ", "-")
        count = seen.get(slug, 0)
        seen[slug] = count + 1
        anchors.add(slug if count == 0 else f"{slug}-{count}")
    return anchors


def broken_links(page: Path) -> list[str]:
    """The relative links of ``page`` whose file or anchor does not exist, each with the reason."""
    text = page.read_text(encoding="utf-8")
    problems = []
    for match in LINK.finditer(prose(text)):
        target = match["target"]
        if re.match(r"^[a-z][a-z0-9+.-]*:", target):  # https:, mailto:: not checked offline
            continue
        path_part, _, anchor = target.partition("#")
        linked = (page.parent / path_part).resolve() if path_part else page
        if not linked.exists():
            problems.append(f"{target}: no such file")
        elif anchor and linked.suffix == ".md" and anchor not in github_anchors(linked.read_text(encoding="utf-8")):
            problems.append(f"{target}: no heading with anchor #{anchor} in {linked.relative_to(REPO)}")
    return problems


def test_github_anchors_follow_the_headings() -> None:
    page = "# Set-up: two commands\n```sh\n# not a heading\n```\n## Results\n## Results\n"
    assert github_anchors(page) == {"set-up-two-commands", "results", "results-1"}


def test_readme_links_reach_files_and_headings() -> None:
    problems = broken_links(REPO / "README.md")
    assert not problems, "README.md links to what is not there:\n" + "\n".join(problems)
