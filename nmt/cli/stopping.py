"""How a long command that saves its work ends on a stop signal: one line and 128 + the signal.

Typer turns a ``KeyboardInterrupt`` escaping a command into a silent exit 130, whatever the signal,
so ``nmt compare`` and ``nmt lab`` end inside the command instead: an
:class:`~nmt.util.errors.Interrupted` (their runs saved) says what was saved and the command that goes
on, and exits 128 + its signal (143 for SIGTERM), as ``nmt train`` does; a bare Ctrl-C elsewhere says
``interrupted`` and exits 130.
"""

from __future__ import annotations

import shlex
import sys
from collections.abc import Iterator
from contextlib import contextmanager

import typer

from nmt.util.errors import Interrupted


def command_line(ctx: typer.Context) -> str:
    """The ``nmt ...`` command being run, quoted for a shell (the arguments :func:`nmt.cli.main` got)."""
    argv = (ctx.find_root().obj or {}).get("argv")
    return shlex.join(["nmt", *(sys.argv[1:] if argv is None else argv)])


@contextmanager
def saved_on_stop(ctx: typer.Context) -> Iterator[None]:
    """Run the block of the command of ``ctx``; a stop signal ends it in one line on stderr (see the module)."""
    try:
        yield
    except Interrupted as stop:
        typer.echo(f"nmt: {stop.what}: {command_line(ctx)}", err=True)
        raise typer.Exit(128 + stop.signum) from None
    except KeyboardInterrupt:
        typer.echo("nmt: interrupted", err=True)
        raise typer.Exit(130) from None
