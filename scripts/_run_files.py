"""Reading run folders for the scripts: :mod:`nmt.evaluation.run_files` with a script's way of failing.

The package's reader (also behind ``nmt report``) raises :class:`~nmt.util.errors.UserError`;
a script ends instead with one line, ``<script>: error: <message>``, as its own option
errors do.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any, Optional

from nmt.evaluation import run_files
from nmt.evaluation.run_files import checkpoint_parameters
from nmt.run import events
from nmt.util.errors import UserError

__all__ = ["checkpoint_parameters", "read_eval", "read_events"]


def read_events(run_dir: Path, script: str) -> list[events.Event]:
    """Every event of ``run_dir/metrics.jsonl`` (typed, :mod:`nmt.run.events`); a missing or
    unreadable file ends ``script`` with one line."""
    try:
        return run_files.read_run_events(run_dir)
    except UserError as exc:
        sys.exit(f"{script}: error: {exc}")


def read_eval(folder: Path, script: Optional[str] = None) -> Optional[dict[str, Any]]:
    """The one system scored in ``folder/report.json`` (see :func:`nmt.evaluation.run_files.read_eval`);
    None without a report; a malformed report ends ``script`` with one line."""
    try:
        return run_files.read_eval(folder)
    except UserError as exc:
        sys.exit(f"{script or Path(sys.argv[0]).name}: error: {exc}")
