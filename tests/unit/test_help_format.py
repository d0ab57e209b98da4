"""What ``--help`` and the progress bars look like: paragraphs wrapped once, no ``<bool>`` beside a
flag, and no progress bars where standard error is not a terminal unless asked."""

from __future__ import annotations

import io
import itertools
import re

import pytest

from conftest import run_cli
from nmt.cli import app
from nmt.cli.help_format import reflowed
from nmt.cli.options import progress_shown

COMMANDS = [[], ["train"], ["translate"], ["eval"], ["compare"], ["lab"], ["data", "prepare"], ["serve"]]


def test_a_docstring_paragraph_becomes_one_line_and_paragraphs_stay_apart() -> None:
    doc = """First line
    goes on here.

    Examples: a;
        b; c
    """
    assert reflowed(doc) == "First line goes on here.\n\nExamples: a; b; c"


@pytest.mark.parametrize("command", COMMANDS, ids=lambda c: " ".join(c) or "nmt")
def test_help_shows_no_type_beside_flags_and_wraps_each_paragraph_once(command, capsys, monkeypatch) -> None:
    monkeypatch.setenv("COLUMNS", "80")
    code, out, _err = run_cli([*command, "--help"], capsys)
    assert code == 0 and "Usage:" in out
    assert "<bool>" not in out
    # a ragged wrap leaves a short line inside a paragraph: above the first panel, a line followed by
    # one of the same paragraph must be full, its next word not fitting after it within 80 columns
    intro = out.split("╭")[0].splitlines()
    for line, following in itertools.pairwise(intro):
        if line.strip() and following.strip() and not line.strip().startswith("Usage:"):
            fits = len(line.rstrip()) + 1 + len(following.split()[0]) <= 78
            assert not fits, f"a ragged line in nmt {' '.join(command)} --help: {line!r}"


def test_every_command_help_is_its_reflowed_docstring() -> None:
    for command in app.registered_commands:
        if command.help:
            assert not re.search(r"[^\n]\n[^\n]", command.help), command.name


class _Stream(io.StringIO):
    def __init__(self, tty: bool) -> None:
        super().__init__()
        self.tty = tty

    def isatty(self) -> bool:
        return self.tty


@pytest.mark.parametrize(
    ("flag", "tty", "shown"), [(None, True, True), (None, False, False), (True, False, True), (False, True, False)]
)
def test_progress_bars_only_on_a_terminal_unless_asked(flag, tty, shown, monkeypatch) -> None:
    monkeypatch.setattr("sys.stderr", _Stream(tty))
    assert progress_shown(flag) is shown


def test_the_command_line_starts_with_a_typer_that_has_no_flag_type_hook(monkeypatch) -> None:
    # typer 0.27 (an H200 machine's) has no TyperOption.display_type_rich: nmt crashed on import there
    from nmt.cli import help_format

    class OlderTyperOption:  # the option class of a typer without the hook
        is_flag = True

    monkeypatch.setattr(help_format, "TyperOption", OlderTyperOption)
    help_format.hide_flag_types()
    assert not hasattr(OlderTyperOption, "display_type_rich")
