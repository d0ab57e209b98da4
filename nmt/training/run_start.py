"""Starting ``nmt train``: which config and run folder, the checks before anything is touched, the claim.

A fresh run takes ``--config`` and ``--set``; a resumed one takes the run's own config.yaml,
where ``--set`` may change only what :data:`nmt.config.saved.RESUME` leaves free.  Every
mistake a user can fix is raised here before data loads (:func:`check_run` runs before
torchrun starts the ranks).  Then rank 0 claims the folder (:func:`claim_run`): it refuses a
folder nmt did not write, takes the writer's lock and, for a fresh run, clears an old run
(``--overwrite``) and writes config.yaml.  The loop itself is :mod:`nmt.training.loop`.
"""

from __future__ import annotations

import contextlib
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Optional, Union

from nmt import config as config_mod
from nmt.config import Config
from nmt.config.saved import RESUME, changes
from nmt.run import folder as rundir
from nmt.run.paths import RunPaths
from nmt.training import tensorboard
from nmt.util.errors import UserError
from nmt.util.fileio import atomic_write_bytes
from nmt.util.out_paths import check_can_create

ConfigSource = Union[Path, str, Mapping[str, Any], Config, None]
"""What a fresh run starts from: a YAML path, the config as a mapping or a Config (the library's), or
None (the defaults)."""


def write_config(cfg: Config, run_dir: Path) -> None:
    """Save the resolved config as the run's config.yaml: it rebuilds the experiment."""
    atomic_write_bytes(RunPaths(run_dir).config, config_mod.dump(cfg).encode("utf-8"))


def open_run_dir(cfg: Config, run_dir: Path, overwrite: bool) -> Path:
    """Make ``run_dir`` a fresh run: clear an old run (only with ``overwrite``), write config.yaml.

    The caller holds the run's lock, so no other process writes there meanwhile.
    """
    if rundir.check_replaceable(run_dir, overwrite):
        rundir.clear(run_dir)
    RunPaths(run_dir).checkpoints.mkdir(parents=True, exist_ok=True)
    write_config(cfg, run_dir)
    return run_dir


def resolve_run(config: ConfigSource, overrides: Sequence[str], resume: Optional[Path] = None) -> tuple[Config, Path]:
    """The run's config and directory; a bad config or nothing to resume is a user error.

    On resume, the run's own config.yaml is the config: ``--config`` is refused, and ``--set``
    may change only what :data:`nmt.config.saved.RESUME` leaves free, checked here before any
    file is touched.
    """
    if resume is None:
        cfg = config_mod.load(config, overrides, import_code=True)  # the user's config to train: its code runs
        return cfg, Path(cfg.runs_dir) / cfg.name
    run_dir = Path(resume)
    paths = RunPaths(run_dir)
    if config is not None:
        raise UserError(
            f"{run_dir}: a resumed run continues with its own {paths.config}; give no config (CLI: leave out "
            "--config; Python: config=None); overrides (--set) may change train.* and decode.* options"
        )
    if not paths.last.is_file():
        raise UserError(f"{run_dir}: no {paths.last.relative_to(run_dir)} to resume from")
    saved = config_mod.load(paths.config, saved=True)
    cfg = config_mod.load(paths.config, overrides, saved=True)
    fixed = changes(saved, cfg, RESUME)
    if fixed:
        raise UserError(
            f"--resume {run_dir}: these options are fixed for the run and cannot change "
            f"({'; '.join(map(str, fixed))}); start a new run (another name) to change them"
        )
    return cfg, run_dir


def check_run(config: Optional[Path], overrides: list[str], resume: Optional[Path], overwrite: bool) -> None:
    """Raise the user errors ``nmt train`` meets before reading data (``--nproc`` checks first).

    Touches nothing: rank 0 of the relaunched run creates, clears and locks the run directory.
    """
    cfg, run_dir = resolve_run(config, overrides, resume)
    if cfg.train.tensorboard:
        tensorboard.require()
    check_can_create(run_dir, "runs_dir/name")
    if resume is None:
        rundir.check_replaceable(run_dir, overwrite)
    rundir.probe(run_dir)


def claim_run(cfg: Config, run_dir: Path, fresh: bool, overwrite: bool, held: contextlib.ExitStack) -> None:
    """Rank 0's claim on the run folder, its lock held by ``held`` until the run ends.

    A missing TensorBoard package and a foreign folder fail before any file is touched (the
    lock file included); a fresh run then clears the folder (``overwrite``) and writes config.yaml.
    """
    if cfg.train.tensorboard:
        tensorboard.require()
    check_can_create(run_dir, "runs_dir/name")  # a read-only runs_dir, a path under a file
    if fresh:
        rundir.check_replaceable(run_dir, overwrite)
    held.enter_context(rundir.RunLock(run_dir))
    if fresh:
        open_run_dir(cfg, run_dir, overwrite)
