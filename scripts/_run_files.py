"""Reading what ``nmt train`` and ``nmt eval`` leave in a run directory, for the scripts.

``metrics.jsonl`` holds one event per line (:mod:`nmt.events`: start, train, valid, stop); an evaluation
folder (``nmt eval --out FOLDER``) holds ``report.json``; ``checkpoints/best.pt`` rebuilds
the model.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any, Optional

from nmt import events


def read_events(run_dir: Path, script: str) -> list[events.Event]:
    """Every event of ``run_dir/metrics.jsonl`` (typed, :mod:`nmt.events`); a missing or
    unreadable file ends ``script`` with one line."""
    path = Path(run_dir) / events.FILE_NAME
    if not path.is_file():
        sys.exit(f"{script}: error: {path} not found (not a run directory?)")
    try:
        return events.read(run_dir)
    except ValueError as exc:
        sys.exit(f"{script}: error: {exc}")


def read_eval(folder: Path) -> Optional[dict[str, Any]]:
    """The one system scored in ``folder/report.json`` (BLEU, chrF, signatures) with the split,
    checkpoint step and checkpoints (several: an ensemble) it came from; None when the folder has no report."""
    path = Path(folder) / "report.json"
    if not path.is_file():
        return None
    report = json.loads(path.read_text(encoding="utf-8"))
    (system,) = report["systems"].values()
    info = report["info"]
    return {**system, "split": info["split"], "step": info["step"],
            "checkpoints": info["checkpoints"] if "checkpoints" in info else [info["checkpoint"]]}  # older reports


def checkpoint_parameters(path: Path) -> int:
    """Trainable parameters of the model a checkpoint rebuilds, each shared tensor counted once."""
    import torch

    from nmt.inference import load_checkpoint
    from nmt.model.build import count_parameters

    return count_parameters(load_checkpoint(path, torch.device("cpu")).model)
