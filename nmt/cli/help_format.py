"""How ``--help`` reads: each paragraph of a command's docstring wrapped to the terminal as one, and
no type column for on/off flags.

Typer keeps the line breaks of a docstring, and rich then wraps each source line again at the
terminal's width, which leaves ragged half-lines; joining the lines of each paragraph lets rich
wrap it once.  Typer also prints ``<bool>`` beside every flag, which says nothing a flag does not.
"""

from __future__ import annotations

import inspect
from typing import Any, Optional

import click
import typer
from typer.core import TyperOption


def reflowed(doc: str) -> str:
    """``doc`` with the lines of each paragraph joined by spaces; paragraphs stay apart."""
    paragraphs = inspect.cleandoc(doc).split("\n\n")
    return "\n\n".join(" ".join(line.strip() for line in p.splitlines() if line.strip()) for p in paragraphs)


def reflow_commands(app: typer.Typer) -> None:
    """Give every command of ``app`` (and of its sub-apps) its docstring, reflowed, as its help."""
    for command in app.registered_commands:
        doc = command.help or (command.callback.__doc__ if command.callback else None)
        if doc:
            command.help = reflowed(doc)
    for group in app.registered_groups:
        if group.typer_instance is not None:
            reflow_commands(group.typer_instance)


def _type_unless_flag(original: Any) -> Any:
    def display_type_rich(self: TyperOption, ctx: click.Context) -> Optional[str]:
        return None if self.is_flag else original(self, ctx)

    return display_type_rich


def hide_flag_types() -> None:
    """No ``<bool>`` type beside on/off flags in the help of every command.

    Only where typer has the hook (``TyperOption.display_type_rich``, which older versions lack): an older typer
    the package accepts keeps its own type column, and the command line still starts.
    """
    original = getattr(TyperOption, "display_type_rich", None)
    if original is not None and not getattr(original, "_nmt_flags_hidden", False):
        TyperOption.display_type_rich = _type_unless_flag(original)  # type: ignore[method-assign]
        TyperOption.display_type_rich._nmt_flags_hidden = True  # type: ignore[attr-defined]
