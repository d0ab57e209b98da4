"""Options that several ``nmt`` commands share, defined once so their flags and help read the same."""

from __future__ import annotations

import typer

ConfigOpt = typer.Option(None, "--config", "-c", help="Experiment YAML file (defaults apply when omitted).")
SetOpt = typer.Option(None, "--set", "-s", help="Override one option, e.g. --set model.attention.type=luong_dot.")
