"""Reading what ``nmt train`` and ``nmt eval`` leave in a run folder, for ``nmt report`` and the scripts.

``metrics.jsonl`` holds one event per line (:mod:`nmt.run.events`: start, train, valid, stop); an
evaluation folder (``nmt eval --out FOLDER``) holds ``report.json``; ``checkpoints/best.pt``
rebuilds the model.  One reader, so the command and the scripts agree on what a run folder is
and fail on a bad one with the same one-line :class:`~nmt.util.errors.UserError`.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
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


MAX_RUNS_FOUND = 10_000
"""Most run folders one report reads below the folders it is given."""


def find_runs(folders: Sequence[Path]) -> list[Path]:
    """Each folder that is a run (it holds metrics.jsonl), and for any other folder every run
    below it (a comparison's --runs-dir, a parent of several), in path order; hidden folders and
    the runs' own subfolders are not searched.  UserError when a folder holds no run at all."""
    found: list[Path] = []
    for folder in map(Path, folders):
        if RunPaths(folder).metrics.is_file() or not folder.is_dir():
            found.append(folder)  # a run, or a path read_run_events reports in one line
            continue
        metrics = RunPaths(folder).metrics.name
        below = sorted(
            p.parent for p in folder.rglob(metrics) if not any(x.startswith(".") for x in p.relative_to(folder).parts)
        )  # hidden folders below ``folder`` left out, not a hidden folder it lies in
        runs = set(below)
        below = [run for run in below if not any(parent in runs for parent in run.parents)]  # not a run's subfolders
        if not below:
            raise UserError(f"{folder}: no run folder (one holding metrics.jsonl) in it or below it")
        found += below
        if len(found) > MAX_RUNS_FOUND:
            raise UserError(f"more than {MAX_RUNS_FOUND:,} run folders below {folder}; give fewer folders")
    return found


def read_compare_scores(run_dir: Path) -> list[dict[str, Any]]:
    """The scores ``nmt compare`` saved in ``run_dir/compare-<split>*/scored.json``: split, beam,
    BLEU, chrF and the BLEU signature of each, in folder order (empty when compare never scored it)."""
    found = []
    for path in sorted(Path(run_dir).glob("compare-*/scored.json")):
        try:
            result = json.loads(path.read_text(encoding="utf-8"))["result"]
            found.append(
                {
                    "split": path.parent.name.removeprefix("compare-"),
                    "beam": int(result["beam"]),
                    "bleu": float(result["bleu"]),
                    "chrf": float(result["chrf"]),
                    "bleu_signature": str(result["bleu_signature"]),
                }
            )
        except (ValueError, KeyError, TypeError) as exc:
            raise UserError(f"{path}: not a score written by nmt compare ({exc})") from None
    return found


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
