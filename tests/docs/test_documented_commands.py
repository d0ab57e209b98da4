"""The commands that README.md and the getting-started page show are run, so the pages cannot drift
from the code.

Every fenced block tagged ``sh`` in those files runs with bash (``set -euo pipefail``), in order, in
one temporary folder per file that holds a copy of ``configs/``: later blocks build on what earlier
ones wrote, as a reader's shell would. ``nmt`` is the one of the interpreter running the tests. A
block too long for CI carries the line ``<!-- docs-test: skip (reason) -->`` directly above its
fence and is skipped by that mark, wherever it stands in the page.
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
DOCUMENTS = ("README.md", "docs/getting-started.md")
"""The pages whose ``sh`` blocks run, relative to the repository root."""

BLOCK_TIMEOUT = 600
"""Seconds after which a block counts as hung: a guard against hangs, not a claim about speed."""

FENCE = re.compile(r"^(?P<indent>\s*)(?P<fence>`{3,}|~{3,})(?P<info>.*)$")
MARK = re.compile(r"^\s*<!--\s*docs-test:\s*skip\s*\((?P<reason>.*)\)\s*-->\s*$")
SHELL_TAGS = {"bash", "shell", "console", "zsh", "shell-session", "shellsession"}
"""Tags that would hide a command from this test: commands are tagged ``sh``, output ``text``."""


class MarkupError(ValueError):
    """A page breaks the rules for its fenced blocks; the message names the file and line."""


@dataclass(frozen=True)
class Block:
    """One fenced block: where it opens (1-based line), its tag, its text and its skip reason."""

    line: int
    lang: str
    code: str
    skip: str | None


def parse_blocks(text: str, name: str) -> list[Block]:
    """Every fenced block of ``text``, checking the skip marks and the tags on the way.

    A mark is accepted only on the line directly above an ``sh`` fence and only with a reason, so
    that a mark cannot drift away from the block it was written for, or skip a block silently.
    """
    lines = text.splitlines()
    blocks: list[Block] = []
    pending: tuple[int, str] | None = None  # (line, reason) of a mark waiting for its fence
    i = 0
    while i < len(lines):
        number, line = i + 1, lines[i]
        opener = FENCE.match(line)
        if pending is not None and opener is None:
            raise MarkupError(f"{name}:{pending[0]}: a docs-test mark must stand directly above a ```sh fence")
        if opener is None:
            if "docs-test" in line:
                mark = MARK.match(line)
                if mark is None:
                    raise MarkupError(f"{name}:{number}: malformed mark; write <!-- docs-test: skip (reason) -->")
                if not mark["reason"].strip():
                    raise MarkupError(f"{name}:{number}: a docs-test skip mark needs a reason")
                pending = (number, mark["reason"].strip())
            i += 1
            continue
        fence, indent = opener["fence"], len(opener["indent"])
        lang = opener["info"].strip().split(" ")[0].strip("{}.").lower()
        if not lang or lang in SHELL_TAGS:
            raise MarkupError(
                f"{name}:{number}: fence tagged {lang or 'nothing'}; tag commands ```sh (this test runs them) "
                "and output or other text ```text"
            )
        if pending is not None and lang != "sh":
            raise MarkupError(f"{name}:{pending[0]}: a docs-test mark must stand directly above a ```sh fence")
        body: list[str] = []
        i += 1
        while i < len(lines) and not _closes(lines[i], fence):
            body.append(lines[i][indent:] if not lines[i][:indent].strip() else lines[i].lstrip())
            i += 1
        if i == len(lines):
            raise MarkupError(f"{name}:{number}: fence never closed")
        blocks.append(Block(number, lang, "\n".join(body) + "\n", pending[1] if pending else None))
        pending = None
        i += 1
    if pending is not None:
        raise MarkupError(f"{name}:{pending[0]}: a docs-test mark must stand directly above a ```sh fence")
    return blocks


def _closes(line: str, fence: str) -> bool:
    """Whether ``line`` closes a block opened by ``fence`` (same character, at least as long)."""
    stripped = line.strip()
    return stripped.startswith(fence) and set(stripped) == {fence[0]}


def shell_blocks(doc: str) -> list[Block]:
    """The ``sh`` blocks of a page (run or marked), failing the test when the page is missing."""
    path = REPO / doc
    if not path.is_file():
        pytest.fail(f"{doc} is missing: it is one of the pages whose commands this test runs")
    return [b for b in parse_blocks(path.read_text(encoding="utf-8"), doc) if b.lang == "sh"]


# --- the parser's rules ------------------------------------------------------------------------


def test_a_mark_directly_above_an_sh_fence_skips_that_block() -> None:
    page = "Text.\n\n<!-- docs-test: skip (trains for hours) -->\n```sh\nmake demo\n```\n\n```sh\nnmt --help\n```\n"
    blocks = parse_blocks(page, "page.md")
    assert [(b.skip, b.code) for b in blocks] == [("trains for hours", "make demo\n"), (None, "nmt --help\n")]


@pytest.mark.parametrize(
    ("page", "problem"),
    [
        ("<!-- docs-test: skip (slow) -->\n\n```sh\nmake demo\n```\n", "directly above"),
        ("<!-- docs-test: skip (slow) -->\nSome text.\n```sh\nmake demo\n```\n", "directly above"),
        ("<!-- docs-test: skip (slow) -->\n```text\noutput\n```\n", "directly above"),
        ("```sh\nmake demo\n```\n<!-- docs-test: skip (slow) -->\n", "directly above"),
        ("<!-- docs-test: skip () -->\n```sh\nmake demo\n```\n", "needs a reason"),
        ("<!-- docs-test: skip -->\n```sh\nmake demo\n```\n", "malformed"),
        ("```bash\nmake demo\n```\n", "tagged bash"),
        ("```\nmake demo\n```\n", "tagged nothing"),
        ("```sh\nmake demo\n", "never closed"),
    ],
)
def test_misplaced_or_empty_marks_and_hidden_commands_are_refused(page: str, problem: str) -> None:
    with pytest.raises(MarkupError, match=problem):
        parse_blocks(page, "page.md")


def test_fences_inside_a_longer_fence_and_in_lists_are_read_as_their_text() -> None:
    page = "````text\n<!-- docs-test: skip (shown, not a mark) -->\n```sh\nx\n```\n````\n1. Step:\n   ```sh\n   nmt --help\n   ```\n"
    blocks = parse_blocks(page, "page.md")
    assert [(b.lang, b.skip) for b in blocks] == [("text", None), ("sh", None)]
    assert blocks[1].code == "nmt --help\n"


# --- the pages ---------------------------------------------------------------------------------


@pytest.mark.parametrize("doc", DOCUMENTS)
def test_every_sh_block_is_run_or_marked_and_some_run(doc: str) -> None:
    """The marks are well placed (``parse_blocks`` refuses the others), every ``sh`` block is either
    marked with a reason or run below, and at least one runs, so the page cannot pass vacuously."""
    blocks = shell_blocks(doc)
    marked = [b for b in blocks if b.skip is not None]
    assert all(b.skip for b in marked)
    assert len(marked) < len(blocks), f"{doc} has no ```sh block left to run, so its test would check nothing"


@pytest.mark.slow  # runs every command of the two pages: minutes
@pytest.mark.parametrize("doc", DOCUMENTS)
def test_documented_commands_run(doc: str, tmp_path: Path) -> None:
    """Run the page's unmarked ``sh`` blocks in order; on failure show the block and its output."""
    shutil.copytree(REPO / "configs", tmp_path / "configs")
    env = dict(os.environ, PATH=f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}")
    for block in (b for b in shell_blocks(doc) if b.skip is None):
        start = time.monotonic()
        status, output = _run_block(block.code, tmp_path, env)
        if status != 0:
            pytest.fail(
                f"{doc}:{block.line}: the block exited with status {status} after "
                f"{time.monotonic() - start:.0f} s\n--- block ---\n{block.code}--- output (last 4,000 characters) ---\n"
                f"{output[-4000:]}",
                pytrace=False,
            )


def _run_block(code: str, cwd: Path, env: dict[str, str]) -> tuple[int | str, str]:
    """Exit status (or 'timeout') and combined output of ``code`` under bash; a hung block's whole
    process group is killed, so no ``nmt`` it started outlives the test."""
    proc = subprocess.Popen(
        ["bash", "-c", "set -euo pipefail\n" + code],
        cwd=cwd,
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,
    )
    try:
        output, _ = proc.communicate(timeout=BLOCK_TIMEOUT)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        output, _ = proc.communicate()
        return f"timeout ({BLOCK_TIMEOUT} s)", output
    return proc.returncode, output
