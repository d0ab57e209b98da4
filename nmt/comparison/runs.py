"""What ``nmt compare`` does with each run folder: reuse a finished run of the same config, resume
an unfinished one, train a new one, or refuse to replace work of another config or files nmt did
not write; and the training of one run."""

from __future__ import annotations

import logging
import shutil
import signal
from dataclasses import dataclass
from pathlib import Path
from typing import Optional

from nmt import config as config_mod
from nmt.comparison.plan import Plan, run_overrides
from nmt.config import saved as saved_configs
from nmt.config.arms import Arm
from nmt.config.saved import SPEED_ONLY
from nmt.run import events
from nmt.run import folder as rundir
from nmt.run.paths import RunPaths, is_score_cache
from nmt.util.errors import Interrupted, UserError

log = logging.getLogger(__name__)


def completed(run_dir: Path) -> Optional[events.Stop]:
    """The stop event of a run that trained to its end (not interrupted, not started again
    since) and has a best checkpoint; None for an unfinished run or none at all."""
    ends = [e for e in events.read(run_dir) if isinstance(e, (events.Start, events.Stop))]
    last = ends[-1] if ends else None
    if not isinstance(last, events.Stop) or last.reason == "interrupted":
        return None
    return last if RunPaths(run_dir).best.is_file() else None


def _trained_config(run_dir: Path) -> Optional[config_mod.Config]:
    """The config a run was trained with, read as a saved run is read on resume (an option added
    since takes its old value); None without one, or with one this version cannot read."""
    saved = RunPaths(run_dir).config
    if not saved.is_file():
        return None
    try:
        return config_mod.load(saved, saved=True)
    except UserError:
        return None


def in_plan_folder(trained: config_mod.Config, cfg: config_mod.Config) -> config_mod.Config:
    """``trained``, the saved config of the run found at ``cfg.runs_dir/cfg.name``, with ``cfg``'s runs_dir.

    The folder is the run's place, not the spelling of it: a saved runs_dir is the path training was
    given, relative to the folder it was started from, so ``cmpB``, ``/abs/path/cmpB`` and ``../cmpB``
    from a subfolder are one folder, and the saved spelling resolved from today's folder says nothing
    (it names another folder whenever the command runs from elsewhere).  The plan found the run in
    its own runs_dir, which is all a place can tell.  A folder moved or renamed since (its runs with
    it) holds the same runs too: nothing in a run refers to its runs_dir by path (``--resume`` and
    scoring read the folder they are given), so they are reused or resumed where they are now.
    Every other option is still compared.
    """
    return trained.model_copy(update={"runs_dir": cfg.runs_dir})


def differences(a: config_mod.Config, b: config_mod.Config) -> list[str]:
    """The dotted option names whose values differ between two configs."""
    return [change.key for change in saved_configs.changes(a, b)]


@dataclass(frozen=True)
class RunAction:
    """What the comparison does with one run (see :func:`run_action`), and why, for the log."""

    overrides: list[str]
    run_dir: Path
    action: str  # reuse, resume, train, replace, kept or refused
    note: str = ""


def run_action(plan: Plan, arm: Arm, seed: int, steps: int) -> RunAction:
    """One run's overrides, folder and what the comparison does with it.

    "reuse": a finished run of this config, up to inert options (a run that differs only in
    :data:`SPEED_ONLY` options is reused, and the note says how); "resume": an unfinished run of
    this config (same rule) with a last checkpoint, which training continues from it; "train": an
    empty or absent folder; "replace": an unfinished run of another config or without a last
    checkpoint, or with ``plan.force`` a finished one of another config, which training
    overwrites; "kept": a finished run of another config, which only ``--force`` replaces;
    "refused": files nmt did not write, which training will not touch.  The run's folder is the
    plan's however runs_dir was spelled, when it trained or now (:func:`in_plan_folder`).
    """
    overrides = run_overrides(plan, arm, seed, steps)
    cfg = config_mod.load(plan.config, overrides)
    run_dir = Path(cfg.runs_dir) / cfg.name
    try:
        replaceable = rundir.check_replaceable(run_dir, overwrite=True, also_ours=is_score_cache)
    except UserError:
        return RunAction(overrides, run_dir, "refused", "not an nmt run: training will not touch it")
    if not replaceable:
        return RunAction(overrides, run_dir, "train")
    stop, trained = completed(run_dir), _trained_config(run_dir)
    trained = in_plan_folder(trained, cfg) if trained is not None else None
    changed = (
        [c.key for c in saved_configs.changes(trained, cfg, saved_configs.SAME_TRAINING)]
        if trained
        else [RunPaths(run_dir).config.name]
    )
    if stop is None:
        if changed or not RunPaths(run_dir).last.is_file():
            return RunAction(overrides, run_dir, "replace", "unfinished")
        return RunAction(overrides, run_dir, "resume", f"unfinished; resumed from {RunPaths(run_dir).last.name}")
    if trained is not None and not changed and (stop.step >= steps or stop.reason == "early_stopping"):
        speed = [
            f"train.{k} was {getattr(trained.train, k)}, not {getattr(cfg.train, k)}"
            for k in SPEED_ONLY
            if getattr(trained.train, k) != getattr(cfg.train, k)
        ]
        note = f"{', '.join(speed)} (speed and logging only, not the model)" if speed else ""
        return RunAction(overrides, run_dir, "reuse", note)
    shown = ", ".join(changed[:4]) + (f" and {len(changed) - 4} more" if len(changed) > 4 else "")
    note = f"finished with another {shown}" if changed else f"finished after {stop.step} updates, not {steps}"
    return RunAction(overrides, run_dir, "replace" if plan.force else "kept", note)


def planned_actions(plan: Plan, steps: int) -> dict[tuple[str, int], RunAction]:
    """What happens to each run folder of the plan, keyed by (run stem, seed): arms that differ only
    in decoding options share one."""
    actions: dict[tuple[str, int], RunAction] = {}
    for arm in plan.arms:
        for seed in plan.seeds:
            if (arm.run_stem, seed) not in actions:
                actions[arm.run_stem, seed] = run_action(plan, arm, seed, steps)
    return actions


def check_finished_work(actions: list[RunAction]) -> None:
    """Refuse, before anything trains, a plan that would delete files nmt did not write, or
    replace finished runs of another config without ``--force`` (listed, the first few)."""
    for act in actions:
        if act.action == "refused":
            rundir.check_replaceable(act.run_dir, overwrite=True, also_ours=is_score_cache)  # raises, saying why
    kept = [a for a in actions if a.action == "kept"]
    if kept:
        listed = ", ".join(str(a.run_dir) for a in kept[:3]) + (f" and {len(kept) - 3} more" if len(kept) > 3 else "")
        raise UserError(
            f"{len(kept)} finished run(s) of another config would be trained again and replaced: "
            f"{listed} ({kept[0].note}); give --force to replace them, or another --runs-dir"
        )


def drop_stale_scores(actions: list[RunAction]) -> None:
    """Remove the score caches (``compare-<split>/``, ``lab-beam-<split>/``) of the runs about to be
    trained again: they score the model being replaced, and training replaces only what it wrote."""
    for act in actions:
        if act.action == "replace" and act.run_dir.is_dir():
            for entry in act.run_dir.iterdir():
                if is_score_cache(entry):
                    shutil.rmtree(entry)


def train_run(plan: Plan, act: RunAction, label: str, seed: int, steps: int, progress: bool) -> Path:
    """Train one arm and seed (or reuse its finished run, or resume its unfinished one); returns the
    run directory."""
    from nmt.training.entry import run_training

    if act.action == "reuse":
        log.info(
            "%s seed %d: reusing the finished run %s%s",
            label,
            seed,
            act.run_dir,
            f"; its {act.note}" if act.note else "",
        )
        return act.run_dir
    if act.action == "resume":
        log.info("%s seed %d: resuming the unfinished run %s (%d updates in all)", label, seed, act.run_dir, steps)
        outcome = run_training(None, [], resume=act.run_dir, progress=progress)
    else:
        log.info("%s seed %d: training %d updates into %s", label, seed, steps, act.run_dir)
        outcome = run_training(plan.config, act.overrides, overwrite=True, progress=progress)
    if outcome.exit_code:  # stopped by a signal: the run is saved; the same command goes on
        name = signal.Signals(outcome.exit_code - 128).name
        raise Interrupted(
            outcome.exit_code - 128,
            f"stopped by {name}: {act.run_dir} saved its last checkpoint; the same command resumes the comparison",
        )
    return act.run_dir
