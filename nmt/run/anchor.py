"""A run's relative data paths, read from the folder the run was started in.

A config's ``data.root`` (``data`` by default) and ``data.mirror`` are usually relative, and
mean the folder ``nmt train`` ran in.  A run resumed, or a checkpoint read, from another folder
(``nmt train --resume ../other/runs/x``, ``nmt eval --checkpoint /abs/runs/x/checkpoints/best.pt``)
would otherwise look for its corpus under the *current* folder and prepare a second copy there.
The run folder itself says where it was started: it is ``<start>/<runs_dir>/<name>`` whenever
``runs_dir`` is relative, so ``<start>`` is what remains of the run folder's absolute path after
those components.  :func:`anchor_data` rewrites the relative data paths onto that folder; where the
run folder does not end in ``runs_dir/name`` (an absolute ``runs_dir``, a moved or renamed run,
a checkpoint copied out of its run) it leaves the config as it is, so the paths mean the current
folder, as they always did.
"""

from __future__ import annotations

import logging
import os
from pathlib import Path
from typing import Optional

from nmt.config import Config

log = logging.getLogger(__name__)


def started_in(cfg: Config, run_dir: Path) -> Optional[Path]:
    """The folder the run in ``run_dir`` was started in (absolute), or None where its path does
    not show it (an absolute ``runs_dir``, or a folder not named ``<runs_dir>/<name>``)."""
    runs_dir = Path(os.path.normpath(cfg.runs_dir))
    if runs_dir.is_absolute():
        return None
    tail = [part for part in (*runs_dir.parts, cfg.name) if part != "."]
    if ".." in tail:
        return None
    parts = Path(os.path.abspath(run_dir)).parts
    if len(parts) <= len(tail) or list(parts[-len(tail) :]) != tail:
        return None
    return Path(*parts[: -len(tail)])


def anchor_data(cfg: Config, run_dir: Path) -> Config:
    """``cfg`` with its relative ``data.root`` and ``data.mirror`` made absolute against the folder
    the run was started in, when that is not the current folder (logged); else ``cfg`` itself."""
    start = started_in(cfg, run_dir)
    if start is None or start == Path.cwd():  # both absolute, as os.getcwd and os.path.abspath give them
        return cfg
    update = {
        key: str(start / value)
        for key in ("root", "mirror")
        if (value := getattr(cfg.data, key)) is not None and not Path(value).is_absolute()
    }
    if not update:
        return cfg
    log.info(
        "%s was started in %s: its relative data paths are read from there (%s)",
        run_dir,
        start,
        ", ".join(f"data.{key}={value}" for key, value in update.items()),
    )
    return cfg.model_copy(update={"data": cfg.data.model_copy(update=update)})
