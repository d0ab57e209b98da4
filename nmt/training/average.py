"""``nmt average``: one checkpoint whose parameters are the mean of several others'.

Averaging the parameters of the last few checkpoints of one run smooths out the noise of
the last updates (Junczys-Dowmunt et al. 2016; Vaswani et al. 2017 average the last 5
or 20).  The average is an ordinary checkpoint for translation and evaluation; it holds
no optimizer, so training cannot resume from it.

Checkpoints come as files or as run folders.  A run folder gives its step checkpoints
(``checkpoints/step*.pt``): the last N validated ones (kept by ``train.keep_last``) or the
best N by the run's validation metric (kept by ``train.keep_best``), as the run's state lists them.

The output never replaces one of the checkpoints it averages; an existing file, or a name the
trainer writes (best.pt, last.pt, step files in a ``checkpoints`` folder), only with ``--force``.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Optional

import torch

from nmt.config.saved import SAME_NETWORK, changes, saved_config
from nmt.run import checkpoint as ckpt
from nmt.run.paths import RunPaths, is_trainer_checkpoint
from nmt.run.state import TrainState
from nmt.util.errors import CheckpointError, UserError
from nmt.util.fileio import stream_kind
from nmt.util.out_paths import check_can_create, check_not_link

log = logging.getLogger(__name__)


def select(run_dir: Path, *, last: Optional[int] = None, best: Optional[int] = None) -> list[Path]:
    """The ``last`` latest validated or the ``best`` best step checkpoints of a run, oldest or
    best first, as the run's own state lists them (``recent`` and ``history`` in last.pt).

    The step files are the union of both lists, so the files alone cannot tell them apart.
    Fewer than asked for is a UserError that says how to keep more.
    """
    if last is not None and best is None:
        kind, want = "last", last
    elif best is not None and last is None:
        kind, want = "best", best
    else:
        raise ValueError("give exactly one of last and best")
    saved = ckpt.load(RunPaths(run_dir).last)
    state = saved.state
    steps = state.recent[-want:] if kind == "last" else [step for _, step in state.history][:want]
    if len(steps) < want:
        raise UserError(too_few_hint(run_dir, saved.config, kind, len(steps), want))
    paths = [RunPaths(run_dir).step(step) for step in steps]
    missing = [str(p) for p in paths if not p.is_file()]
    if missing:
        raise UserError(f"{missing[0]}: listed by the run's last.pt but not found")
    return paths


def too_few_hint(run_dir: Path, config: dict[str, Any], which: str, have: int, want: int) -> str:
    """Why a run has fewer step checkpoints for ``--last``/``--best`` than wanted, and the fix.

    A run that keeps too few (``train.keep_last`` / ``keep_best`` below ``want``; ``keep_best``
    1 keeps none, best.pt holding the best) is told to keep more; one that keeps enough has
    simply not validated that often yet, and is told to train longer.
    """
    option = f"keep_{which}"
    kept = getattr(saved_config(config).train, option)
    holds = kept if which == "last" or kept > 1 else 0  # step files the setting holds at most
    if holds >= want:
        return (
            f"{run_dir}: the run has only {have} step checkpoint(s) for --{which} so far, {want} wanted "
            f"(train.{option}={kept} already keeps enough); train it longer: each validation adds one"
        )
    return (
        f"{run_dir}: the run kept {have} step checkpoint(s) for --{which}, {want} wanted; "
        f"train with --set train.{option}={max(want, 2) if which == 'best' else want} (or more)"
    )


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
    if (last or best) and not any(Path(item).is_dir() for item in inputs):
        raise UserError("--last and --best pick from run folders; give a run folder, or only checkpoint files")
    if len(set(p.resolve() for p in paths)) != len(paths):
        raise UserError("a checkpoint is given twice; each is averaged once")
    if len(paths) < 2:
        raise UserError(f"averaging needs 2 or more checkpoints, got {len(paths)}")
    return paths


def _same_model(first: ckpt.Checkpoint, other: ckpt.Checkpoint, name: str, first_name: str) -> None:
    """Refuse a checkpoint whose network or vocabularies differ from the first one's; dropout
    rates and options that build the same network (:data:`nmt.config.saved.SAME_NETWORK`) may differ."""
    diff = changes(saved_config(first.config), saved_config(other.config), SAME_NETWORK)
    if diff:
        raise UserError(
            f"{name}: its model differs from {first_name}'s "
            f"({', '.join(c.key.removeprefix('model.') for c in diff)}); "
            "only checkpoints of one architecture can be averaged"
        )
    if other.tokenizers != first.tokenizers:
        raise UserError(
            f"{name}: its vocabulary differs from {first_name}'s; only checkpoints "
            "that share the SentencePiece models can be averaged"
        )


class RunningMean:
    """The element-wise mean of state dicts added one at a time: floating tensors are summed in
    float64 and cast back; other tensors (counters) must agree and are kept as they are."""

    def __init__(self) -> None:
        self.sums: dict[str, torch.Tensor] = {}
        self.first: dict[str, torch.Tensor] = {}
        self.count = 0

    def add(self, state: dict[str, torch.Tensor], name: str = "checkpoint") -> None:
        if self.count and state.keys() != self.first.keys():
            raise CheckpointError(f"{name}: its parameters differ from the first checkpoint's")
        for key, value in state.items():
            if not value.is_floating_point():
                if self.count and not torch.equal(value, self.first[key]):
                    raise UserError(f"parameter {key}: non-floating values differ between checkpoints")
            elif self.count:
                self.sums[key] += value.double()
            else:
                self.sums[key] = value.double()
        if not self.count:
            self.first = state
        self.count += 1

    def mean(self) -> dict[str, torch.Tensor]:
        return {
            key: (self.sums[key] / self.count).to(value.dtype) if key in self.sums else value.clone()
            for key, value in self.first.items()
        }


def average_state(states: Sequence[dict[str, torch.Tensor]]) -> dict[str, torch.Tensor]:
    """The element-wise mean of ``states`` (see :class:`RunningMean`)."""
    mean = RunningMean()
    for state in states:
        mean.add(state)
    return mean.mean()


def _parameters_of(path: Path) -> ckpt.Checkpoint:
    """A checkpoint without what averaging does not use (optimizer and RNG states), let go at once."""
    saved = ckpt.load(path)
    saved.optimizer = saved.rng = saved.rng_ranks = None
    return saved


def average(paths: Sequence[Path]) -> ckpt.Checkpoint:
    """One checkpoint with the mean parameters of ``paths`` (config and tokenizers of the newest).

    Checkpoints are read one at a time and only their parameters kept, so memory holds one
    checkpoint and the running sums, however many are averaged.
    """
    mean, first_name = RunningMean(), str(paths[0])
    first = newest = _parameters_of(paths[0])
    mean.add(first.model, first_name)
    for path in paths[1:]:
        saved = _parameters_of(path)
        _same_model(first, saved, str(path), first_name)
        mean.add(saved.model, str(path))
        if saved.state.step > newest.state.step:
            newest = saved
    return ckpt.Checkpoint(
        config=newest.config,
        model=mean.mean(),
        tokenizers=newest.tokenizers,
        state=TrainState(step=newest.state.step, epoch=newest.state.epoch),
        averaged_from=[str(p) for p in paths],
    )


def check_output(output: Path, paths: Sequence[Path], force: bool) -> None:
    """Refuse an ``-o`` that would replace what it should not: one of the checkpoints being
    averaged (by any path to it, a symlink or a hard link included; even with ``force``), a
    symbolic link (even with ``force``: no output goes through one), a name the trainer owns, or
    any existing file (both only without ``force``)."""
    output = Path(output)
    if output.is_dir():
        raise UserError(f"-o {output}: is a directory; give a file name, e.g. {output / 'avg.pt'}")
    check_can_create(output, "-o", "file")  # a long name, a read-only folder, a path under a file
    if output.exists():
        same = next((p for p in paths if os.path.samefile(p, output)), None)
        if same is not None:
            raise UserError(
                f"-o {output}: is {same}, one of the checkpoints being averaged; "
                "give another file name (--force does not replace an input)"
            )
    check_not_link(output, "-o")  # replaced by a file, with --force too: no output goes through a link
    if force:
        return
    if is_trainer_checkpoint(output):
        raise UserError(
            f"-o {output}: a name the trainer writes in a run's checkpoints folder (best.pt, "
            f"last.pt, step files); give another name, e.g. {output.with_name('avg.pt')}, "
            "or --force to write it anyway"
        )
    if (output.exists() or output.is_symlink()) and stream_kind(output) is None:  # a device is written into
        raise UserError(f"-o {output}: exists; give another file name, or --force to replace it")


def run_average(
    inputs: Sequence[Path], output: Path, *, last: Optional[int], best: Optional[int], force: bool = False
) -> str:
    """``nmt average``: resolve, check the output, average, write; returns the line to print."""
    paths = resolve(inputs, last=last, best=best)
    check_output(Path(output), paths, force)
    for path in paths:
        log.info("averaging %s", path)
    ckpt.save(Path(output), average(paths))
    return f"wrote {output}: the mean of {len(paths)} checkpoints"
