"""``nmt average``: one checkpoint whose parameters are the mean of several others'.

Averaging the parameters of the last few checkpoints of one run smooths out the noise of
the last updates (Junczys-Dowmunt et al. 2016; Vaswani et al. 2017 average the last 5
or 20).  The average is an ordinary checkpoint for translation and evaluation; it holds
no optimizer, so training cannot resume from it.

Checkpoints come as files or as run folders.  A run folder gives its step checkpoints
(``checkpoints/step*.pt``, kept by ``train.keep_last`` and ``train.keep_best``): the last
N by update, or the best N by the run's validation metric as ``metrics.jsonl`` recorded it.
"""

from __future__ import annotations

import logging
import re
from pathlib import Path
from typing import Optional, Sequence

import torch

from nmt import checkpoint as ckpt
from nmt import events
from nmt.errors import CheckpointError, UserError
from nmt.train_state import TrainState, metric_mode

log = logging.getLogger(__name__)

STEP_FILE = re.compile(r"step(\d+)\.pt")
"""Step checkpoints as training names them: ``step0001200.pt``."""


def step_checkpoints(run_dir: Path) -> dict[int, Path]:
    """A run's step checkpoints by update."""
    folder = run_dir / "checkpoints"
    found = {}
    for path in folder.glob("step*.pt") if folder.is_dir() else []:
        match = STEP_FILE.fullmatch(path.name)
        if match:
            found[int(match.group(1))] = path
    return found


def select(run_dir: Path, *, last: Optional[int] = None, best: Optional[int] = None) -> list[Path]:
    """The ``last`` latest or the ``best`` best step checkpoints of a run, oldest or best first.

    Fewer than asked for is a UserError that says how to keep more; ``best`` ranks by the
    run's ``train.metric`` in its ``metrics.jsonl`` (ties: the earlier step first).
    """
    if (last is None) == (best is None):
        raise ValueError("give exactly one of last and best")
    want = last if last is not None else best
    found = step_checkpoints(run_dir)
    if len(found) < want:
        option = "keep_last" if last is not None else "keep_best"
        raise UserError(f"{run_dir}: {len(found)} step checkpoint(s) in checkpoints/, {want} wanted; "
                        f"train with --set train.{option}={want} (or more) to keep them")
    if last is not None:
        return [found[step] for step in sorted(found)[-last:]]
    metric = ckpt.load(found[max(found)]).config["train"]["metric"]
    scores = {v.step: getattr(v, metric) for v in events.of_kind(events.read(run_dir), events.Valid)}
    missing = sorted(set(found) - set(scores))
    if missing:
        raise UserError(f"{run_dir}: metrics.jsonl has no validation for step(s) "
                        f"{', '.join(map(str, missing))}, so they cannot be ranked; use --last")
    sign = 1 if metric_mode(metric) == "min" else -1
    ranked = sorted(found, key=lambda step: (sign * scores[step], step))
    return [found[step] for step in ranked[:best]]


def resolve(inputs: Sequence[Path], *, last: Optional[int], best: Optional[int]) -> list[Path]:
    """Checkpoint files from files and run folders (a folder gives ``select(last=5)`` by default)."""
    if last is not None and best is not None:
        raise UserError("give --last or --best, not both")
    if (last is not None and last < 1) or (best is not None and best < 1):
        raise UserError("--last and --best take a number of checkpoints, 1 or more")
    paths: list[Path] = []
    for item in map(Path, inputs):
        if item.is_dir():
            paths += select(item, last=last, best=best) if (last or best) else select(item, last=5)
        elif item.is_file():
            paths.append(item)
        else:
            raise UserError(f"{item}: no such checkpoint file or run folder")
    if len(set(p.resolve() for p in paths)) != len(paths):
        raise UserError("a checkpoint is given twice; each is averaged once")
    if len(paths) < 2:
        raise UserError(f"averaging needs 2 or more checkpoints, got {len(paths)}")
    return paths


def _same_model(first: ckpt.Checkpoint, other: ckpt.Checkpoint, name: str, first_name: str) -> None:
    """Refuse a checkpoint whose model or vocabularies differ from the first one's."""
    if other.config["model"] != first.config["model"]:
        diff = sorted(k for k in first.config["model"] if first.config["model"][k] != other.config["model"].get(k))
        raise UserError(f"{name}: its model differs from {first_name}'s ({', '.join(diff)}); "
                        "only checkpoints of one architecture can be averaged")
    if other.tokenizers != first.tokenizers:
        raise UserError(f"{name}: its vocabulary differs from {first_name}'s; only checkpoints "
                        "that share the SentencePiece models can be averaged")


def average_state(states: Sequence[dict[str, torch.Tensor]]) -> dict[str, torch.Tensor]:
    """The element-wise mean of floating-point tensors (summed in float64); other tensors
    (counters) must agree and are taken as they are."""
    out = {}
    for key, first in states[0].items():
        values = [state[key] for state in states]
        if first.is_floating_point():
            total = torch.stack([v.double() for v in values]).sum(0)
            out[key] = (total / len(values)).to(first.dtype)
        elif all(torch.equal(v, first) for v in values[1:]):
            out[key] = first.clone()
        else:
            raise UserError(f"parameter {key}: non-floating values differ between checkpoints")
    return out


def average(paths: Sequence[Path]) -> ckpt.Checkpoint:
    """One checkpoint with the mean parameters of ``paths`` (config and tokenizers of the newest)."""
    loaded = [ckpt.load(p) for p in paths]
    first, first_name = loaded[0], str(paths[0])
    for path, other in zip(paths[1:], loaded[1:]):
        _same_model(first, other, str(path), first_name)
        if other.model.keys() != first.model.keys():
            raise CheckpointError(f"{path}: its parameters differ from {first_name}'s")
    newest = max(loaded, key=lambda c: c.state.step)
    return ckpt.Checkpoint(config=newest.config, model=average_state([c.model for c in loaded]),
                           tokenizers=newest.tokenizers,
                           state=TrainState(step=newest.state.step, epoch=newest.state.epoch),
                           averaged_from=[str(p) for p in paths])


def run_average(inputs: Sequence[Path], output: Path, *, last: Optional[int], best: Optional[int]) -> str:
    """``nmt average``: resolve, average, write; returns the line to print."""
    if Path(output).is_dir():
        raise UserError(f"-o {output}: is a directory; give a file name, e.g. {Path(output) / 'avg.pt'}")
    paths = resolve(inputs, last=last, best=best)
    for path in paths:
        log.info("averaging %s", path)
    ckpt.save(Path(output), average(paths))
    return f"wrote {output}: the mean of {len(paths)} checkpoints"
