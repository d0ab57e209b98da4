"""Time to quality: the updates and wall time at which greedy validation BLEU first reaches given levels.

Trains ``--config`` the way ``nmt train`` does (a fresh run in ``runs_dir/<name>``, one
process, CPU or CUDA), validating every ``--valid-every`` updates so that the BLEU curve is
sampled finely enough to time, and stops at the first of: ``--steps`` updates, ``--minutes``
of wall clock, the config's own limits, or the highest level reached.  Then it reads the run's
``metrics.jsonl`` and prints one JSON line per level and a final ``{"event": "done"}`` line on
stdout; logs go to stderr.

A level's ``step`` and ``elapsed_s`` are those of the first validation whose greedy BLEU is
at least the level: ``elapsed_s`` is the trainer's wall clock at that update, so it holds the
updates and all earlier validations but not the decoding of that validation itself.  Hardware
(device, its name, cores, threads, torch) is what the trainer recorded in its ``start`` event.

Command behind the README's time-to-quality figures (data prepared first, see the config)::

    python scripts/bench_time_to_quality.py --config configs/multi30k_de_en_best.yaml --levels 20 25 30 35

Each validation decodes the whole validation split greedily (unless ``train.valid_max_sentences``
is set), so a smaller ``--valid-every`` gives a finer curve but more time spent validating.
"""

from __future__ import annotations

import argparse
import logging
import sys
from collections.abc import Callable
from itertools import pairwise
from pathlib import Path
from typing import Any, Optional

import _bench_common as common
from nmt import config as config_mod
from nmt.config import Config, DataConfig
from nmt.evaluation.run_files import read_run_events
from nmt.run import events
from nmt.run import folder as rundir
from nmt.training.loop import Trainer
from nmt.training.results import RunOutcome
from nmt.training.run_start import open_run_dir
from nmt.training.validate import Validation
from nmt.util import runtime
from nmt.util.errors import UserError

SCRIPT = "bench_time_to_quality"
DEFAULT_CONFIG = "configs/multi30k_de_en_best.yaml"
DEFAULT_LEVELS = (20.0, 25.0, 30.0, 35.0)
DEFAULT_VALID_EVERY = 100
HARDWARE_KEYS = ("device", "device_name", "cpus", "threads", "torch", "amp")
STOP_REASON = "quality_reached"


def quality_reached(target: float) -> Callable[[Validation], Optional[str]]:
    """The trainer's extra stop rule (its ``should_stop``): stop once a validation's greedy BLEU reaches ``target``."""
    return lambda result: STOP_REASON if result.bleu >= target else None


def has_valid_split(data: DataConfig) -> bool:
    """Whether the config's corpus comes with a validation split to score BLEU on."""
    if data.corpus == "synthetic":
        return data.synthetic_sizes.get("valid", 0) > 0
    if data.corpus == "local":
        return bool(data.local_files.get("valid"))
    if data.corpus == "hub":
        return bool(data.hub_splits.get("valid"))
    return True  # multi30k always has one


def check_levels(levels: list[float]) -> Optional[str]:
    """What is wrong with ``levels``, or None: they must be BLEU values in (0, 100], strictly increasing."""
    if not levels:
        return "--levels needs at least one BLEU level, e.g. --levels 20 25 30 35"
    if any(not 0 < level <= 100 for level in levels):
        return f"--levels must lie in (0, 100] (got {' '.join(f'{x:g}' for x in levels)})"
    if any(b <= a for a, b in pairwise(levels)):
        return f"--levels must be strictly increasing (got {' '.join(f'{x:g}' for x in levels)})"
    return None


def script_overrides(args: argparse.Namespace, base: Config) -> list[str]:
    """The --set overrides this script adds after the user's own, so that its options win."""
    valid_every = args.valid_every or base.train.valid_every or DEFAULT_VALID_EVERY
    overrides = [f"name={args.name or base.name + '_ttq'}", f"train.valid_every={valid_every}"]
    for key, value in (
        ("runs_dir", args.runs_dir),
        ("train.max_steps", args.steps),
        ("train.time_budget_min", args.minutes),
        ("train.device", args.device),
        ("train.threads", args.threads),
    ):
        if value is not None:
            overrides.append(f"{key}={value}")
    return overrides


def checked_config(args: argparse.Namespace) -> Config:
    """The run's config after every check that needs no training; a problem ends the script (exit 2)."""
    for option, value in (("--steps", args.steps), ("--minutes", args.minutes), ("--valid-every", args.valid_every)):
        if value is not None and value <= 0:
            common.fail(SCRIPT, f"{option} must be positive (got {value:g})")
    if args.threads is not None and args.threads < 0:
        common.fail(SCRIPT, f"--threads must be 0 (follow the free cores) or more (got {args.threads})")
    problem = check_levels(args.levels)
    if problem:
        common.fail(SCRIPT, problem)
    try:
        base = config_mod.load(args.config, args.set)
        cfg = config_mod.load(args.config, [*args.set, *script_overrides(args, base)])
        if not has_valid_split(cfg.data):
            common.fail(
                SCRIPT,
                f"{args.config}: data.corpus={cfg.data.corpus} has no 'valid' split to measure "
                f"BLEU on (see data.synthetic_sizes, data.local_files or data.hub_splits)",
            )
        runtime.select_device(cfg.train.device)  # cuda without a GPU: refused before the run folder exists
        run_dir = Path(cfg.runs_dir) / cfg.name
        if rundir.is_run(run_dir) and not args.overwrite:
            common.fail(SCRIPT, f"{run_dir} already holds a run; add --overwrite to replace it or --name to keep it")
        rundir.check_replaceable(run_dir, args.overwrite)
    except UserError as exc:
        common.fail(SCRIPT, str(exc))
    return cfg


def train(cfg: Config, target: float, overwrite: bool) -> tuple[Path, RunOutcome]:
    """A fresh one-process run as ``nmt train`` makes it, stopping also at ``target`` (:func:`quality_reached`)."""
    run_dir = Path(cfg.runs_dir) / cfg.name
    rundir.check_replaceable(run_dir, overwrite)  # refuse a foreign folder before the lock file goes in
    with rundir.RunLock(run_dir):
        open_run_dir(cfg, run_dir, overwrite)
        trainer = Trainer(cfg, run_dir, sys.stderr.isatty(), should_stop=quality_reached(target))
        return run_dir, trainer.fit()


def records(log: list[events.Event], levels: list[float], config: str, run_dir: Path) -> list[dict[str, Any]]:
    """One record per level, then the summary, from a finished run's metrics.jsonl events."""
    start = events.of_kind(log, events.Start)[0]
    stop = events.of_kind(log, events.Stop)[-1]
    valid = events.of_kind(log, events.Valid)
    head = {"bench": "time_to_quality", "config": config}
    hardware = {k: start.amp if k == "amp" else start.hardware.get(k) for k in HARDWARE_KEYS}
    rows = []
    for level in levels:
        first = next((e for e in valid if e.bleu >= level), None)
        rows.append(
            {
                **head,
                "level": level,
                "reached": first is not None,
                **{k: getattr(first, k) if first else None for k in ("step", "elapsed_s", "bleu")},
                **hardware,
            }
        )
    best = max(valid, key=lambda e: e.bleu, default=None)  # the first of equals
    rows.append(
        {
            **head,
            "event": "done",
            "run_dir": str(run_dir),
            "best_bleu": best.bleu if best else None,
            "best_step": best.step if best else None,
            "steps": stop.step,
            "epochs": stop.epoch,
            "elapsed_s": stop.elapsed_s,
            "stop_reason": stop.reason,
            "validations": len(valid),
            "levels_reached": sum(1 for r in rows if r["reached"]),
            "params": start.params,
            **hardware,
        }
    )
    return rows


def build_parser() -> argparse.ArgumentParser:
    parser = common.one_line_parser(SCRIPT, __doc__.split("\n\n")[0])
    parser.add_argument(
        "--config", default=DEFAULT_CONFIG, help=f"Experiment YAML to train (default: {DEFAULT_CONFIG})."
    )
    parser.add_argument(
        "--levels",
        type=float,
        nargs="*",
        default=list(DEFAULT_LEVELS),
        metavar="BLEU",
        help="Greedy validation BLEU levels, strictly increasing (default: 20 25 30 35).",
    )
    parser.add_argument(
        "--steps",
        type=int,
        default=None,
        metavar="N",
        help="Stop after N updates (train.max_steps; default: the config's).",
    )
    parser.add_argument(
        "--minutes",
        type=float,
        default=None,
        metavar="M",
        help="Stop after M minutes of wall clock (train.time_budget_min; default: the config's).",
    )
    parser.add_argument(
        "--valid-every",
        type=int,
        default=None,
        metavar="N",
        help=f"Validate every N updates (train.valid_every; default: the config's if set, else {DEFAULT_VALID_EVERY}).",
    )
    parser.add_argument(
        "--device", choices=("auto", "cpu", "cuda"), default=None, help="train.device (default: the config's)."
    )
    parser.add_argument(
        "--threads",
        type=int,
        default=None,
        metavar="N",
        help="train.threads, torch CPU threads; 0 = one per core other processes leave free (default: the config's).",
    )
    parser.add_argument(
        "--set",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="Config override, e.g. --set train.lr=0.001 (repeatable; the options above win).",
    )
    parser.add_argument("--runs-dir", default=None, help="Folder for the run (default: the config's runs_dir).")
    parser.add_argument("--name", default=None, help="Run name (default: the config's name + '_ttq').")
    parser.add_argument("--overwrite", action="store_true", help="Replace an earlier run of the same name.")
    return parser


def main(argv: Optional[list[str]] = None) -> None:
    args = build_parser().parse_args(argv)
    cfg = checked_config(args)
    runtime.keep_freed_memory()  # as nmt train does, before the first large tensor
    logging.basicConfig(level=logging.INFO, stream=sys.stderr, format="%(name)s: %(message)s")
    try:
        run_dir, outcome = train(cfg, args.levels[-1], args.overwrite)
    except UserError as exc:
        common.fail(SCRIPT, str(exc))
    logging.getLogger(SCRIPT).info("%s", outcome.summary)
    try:
        run_events = read_run_events(run_dir)
    except UserError as exc:
        sys.exit(f"{SCRIPT}: error: {exc}")
    for record in records(run_events, args.levels, args.config, run_dir):
        common.emit(record)
    if outcome.exit_code:
        sys.exit(outcome.exit_code)


if __name__ == "__main__":
    main()
