"""Reading what ``nmt train`` and ``nmt eval`` leave in a run folder, for ``nmt report`` and the scripts.

``metrics.jsonl`` holds one event per line (:mod:`nmt.run.events`: start, train, valid, stop); an
evaluation folder (``nmt eval --out FOLDER``) holds ``report.json``; ``checkpoints/best.pt``
rebuilds the model.  One reader, so the command and the scripts agree on what a run folder is
and fail on a bad one with the same one-line :class:`~nmt.util.errors.UserError`.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Optional

from nmt.run import events
from nmt.run.paths import RunPaths, report_json
from nmt.util.errors import UserError


def read_run_events(run_dir: Path) -> list[events.Event]:
    """Every event of ``run_dir/metrics.jsonl``, typed.

    Raises UserError naming the path when ``run_dir`` is not a folder, has no metrics.jsonl
    (``events.read`` alone would return an empty log, which reads as a run that did nothing)
    or holds a line that is not an event.
    """
    run_dir = Path(run_dir)
    if not run_dir.is_dir():
        raise UserError(f"{run_dir}: not a folder (expected a run folder such as runs/<name>)")
    path = RunPaths(run_dir).metrics
    if not path.is_file():
        raise UserError(f"{path} not found (not a run folder written by nmt train?)")
    try:
        return events.read(run_dir)
    except (ValueError, UnicodeDecodeError) as exc:
        raise UserError(str(exc)) from None


def read_eval(folder: Path) -> Optional[dict[str, Any]]:
    """The one system scored in ``folder/report.json`` (BLEU, chrF, signatures) with the split,
    checkpoint step and checkpoints (several: an ensemble) it came from; None when the folder has
    no report, so a run scored with greedy search only still reports."""
    path = report_json(folder)
    if not path.is_file():
        return None
    try:
        report = json.loads(path.read_text(encoding="utf-8"))
        (system,) = report["systems"].values()
        info = report["info"]
    except (ValueError, KeyError, TypeError, AttributeError) as exc:
        raise UserError(f"{path}: not a report of one system written by nmt eval --checkpoint ({exc})") from None
    checkpoints = info["checkpoints"] if "checkpoints" in info else [info.get("checkpoint")]  # older reports
    return {**system, "split": info.get("split"), "step": info.get("step"), "checkpoints": checkpoints}


def checkpoint_parameters(path: Path) -> int:
    """Trainable parameters of the model a checkpoint rebuilds, each shared tensor counted once
    (for runs logged before the start event recorded them)."""
    import torch

    from nmt.decode.inference import load_checkpoint
    from nmt.model.build import count_parameters

    return count_parameters(load_checkpoint(path, torch.device("cpu")).model)
