"""The entry point of ``nmt train``: resolve the run (fresh or resumed), claim its folder, train.

Apart from :mod:`nmt.training.loop` (the :class:`~nmt.training.loop.Trainer`),
:mod:`nmt.training.run_start` (the checks and the folder, torch-free for the CLI) and
:mod:`nmt.training.select_model` (``train.select``, the last step), which it joins.
"""

from __future__ import annotations

import contextlib
from collections.abc import Sequence
from pathlib import Path
from typing import Optional

from nmt.run import checkpoint as ckpt
from nmt.run import selection
from nmt.run.anchor import anchor_data
from nmt.run.paths import RunPaths
from nmt.training import distributed
from nmt.training.loop import Trainer
from nmt.training.results import RunOutcome
from nmt.training.run_start import ConfigSource, claim_run, resolve_run, write_config
from nmt.training.select_model import select_at_end
from nmt.training.user_code import check_user_code
from nmt.util import torchrun


def run_training(
    config: ConfigSource,
    overrides: Sequence[str],
    resume: Optional[Path] = None,
    overwrite: bool = False,
    progress: bool = True,
    interactive: bool = False,
) -> RunOutcome:
    """Entry point of ``nmt train`` and ``nmt.train``: a fresh run from a config, or a resumed one.

    ``config``: a YAML path, or the config itself (a mapping or a Config) from the library;
    ``interactive``: called from Python, where a second Ctrl-C raises KeyboardInterrupt
    (:class:`~nmt.training.signals.StopSignals`).

    Under torchrun every rank calls this; only rank 0 creates or changes files, and it holds
    the run directory's lock (:class:`nmt.run.folder.RunLock`) until the run ends.
    """
    torchrun.check_environment()  # the library's callers too: WORLD_SIZE without RANK is one line, not a KeyError
    cfg, run_dir = resolve_run(config, overrides, resume)
    check_user_code(cfg)  # a registered attention or schedule, before the run's folder is touched
    with distributed.process_group(cfg.train.device) as dist, contextlib.ExitStack() as held:
        dist.on_main(lambda: claim_run(cfg, run_dir, resume is None, overwrite, held))
        if resume is None:
            trainer = Trainer(cfg, run_dir, progress, dist, interactive=interactive)
        else:
            saved = ckpt.load(RunPaths(run_dir).last)  # a bad file fails before data loads
            # Relative data paths mean the folder the run started in, not this one (config.yaml keeps them as given).
            trainer = Trainer(anchor_data(cfg, run_dir), run_dir, progress, dist, interactive=interactive)
            trainer.restore(saved)
            if dist.is_main:
                selection.retire(RunPaths(run_dir).selection, saved.state.step)  # chosen among older checkpoints
            if overrides and dist.is_main:
                write_config(cfg, run_dir)
        outcome = trainer.fit()
        # The last step of a finished run: train.select (other ranks wait at the group's closing barrier).
        if dist.is_main and not outcome.exit_code:
            outcome = select_at_end(outcome, cfg, run_dir, trainer.device)
        return outcome
