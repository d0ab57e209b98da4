"""Equal training time: two or more configs (an RNN and a Transformer) trained for the same minutes, side by side.

For each seed, every config's run starts at once as its own ``nmt train`` process with
``train.time_budget_min`` set to ``--minutes`` and ``--threads`` threads, so the arms of one seed
share the cores evenly and see the same load; the time budget counts validation too.  When they
have all stopped, each run's model is chosen on validation and the test split is read once
(``nmt select RUN --last N --beam B --test SPLIT``, the arms again side by side), and one JSON
line per run goes to stdout: the config, its architecture, the seed, the updates and minutes the
run made, why it stopped, its parameters, the chosen model and its validation BLEU, the test BLEU,
chrF and length ratio, which reading of the test split that was, the hardware it trained on and
the commit of the code.  Logs go to stderr.

A finished run (its metrics.jsonl ends with a stop) is not trained again, and a test split its
selection.json already holds a reading of is not read again (the first reading is reported), so
the same command finishes what an interrupted sitting began; an unfinished run is trained again
from the start (``nmt train --overwrite``), since a resumed run's time budget would not be its
arms'.  Issue 73's question 5, the RNN against the Transformer at equal time on Tatoeba::

    python scripts/bench_equal_time.py --configs configs/tatoeba_de_en_cpu_reg.yaml \\
        configs/tatoeba_de_en_transformer_30min.yaml --seeds 1,2,3 --minutes 30 > equal_time.jsonl
    python docs_build/equal_time_table.py equal_time.jsonl
"""

from __future__ import annotations

import argparse
import json
import logging
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Optional

import _bench_common as common
from nmt import config as config_mod
from nmt.evaluation.record import git_commit
from nmt.run import events
from nmt.run import selection as record_file
from nmt.util.errors import UserError

SCRIPT = "bench_equal_time"
HARDWARE_KEYS = ("device", "device_name", "cpus", "threads", "torch")
log = logging.getLogger("bench")


def run_name(config: Path, seed: int) -> str:
    """The run folder's name: the config's file stem and the seed."""
    return f"{config.stem}_s{seed}"


def finished(run_dir: Path) -> bool:
    """Whether ``run_dir`` holds a run whose training has stopped (and was not interrupted)."""
    if not (run_dir / "metrics.jsonl").is_file():
        return False
    stop = events.last_stop(run_dir)
    return stop is not None and stop.reason != "interrupted"


def first_test_read(run_dir: Path, split: str) -> Optional[dict[str, Any]]:
    """The run's first reading of ``split`` in its selection.json; None when it was never read."""
    record = record_file.read(run_dir / "selection.json")
    reads = [entry for entry in (record or {"tests": []})["tests"] if entry.get("split") == split]
    return min(reads, key=lambda entry: entry.get("read", 0)) if reads else None


def side_by_side(commands: Sequence[list[str]], what: str) -> list[str]:
    """Run ``commands`` at once; their stdout, in order.  A failure ends the script with its last stderr line."""
    procs = [subprocess.Popen(c, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for c in commands]
    outputs = [proc.communicate() for proc in procs]
    for command, proc, (_, err) in zip(commands, procs, outputs):
        if proc.returncode != 0:
            last = err.strip().splitlines()[-1] if err.strip() else f"exit status {proc.returncode}"
            common.fail(SCRIPT, f"{what} failed ({' '.join(command[3:6])} ...): {last}")
    return [out for out, _ in outputs]


def train_command(args: argparse.Namespace, config: Path, seed: int) -> list[str]:
    """``nmt train`` of one arm and seed, with this script's settings after the user's --set."""
    sets = [
        *args.set,
        f"train.seed={seed}",
        f"train.threads={args.threads}",
        f"train.time_budget_min={args.minutes:g}",
        "train.select=best",  # the choice on validation is nmt select's, made once with the test read
        f"name={run_name(config, seed)}",
        f"runs_dir={args.runs_dir}",
    ]
    return [
        sys.executable,
        "-m",
        "nmt",
        "train",
        "--config",
        str(config),
        *[x for s in sets for x in ("--set", s)],
        "--no-progress",
        "--overwrite",
    ]


def select_command(args: argparse.Namespace, run_dir: Path) -> list[str]:
    """``nmt select`` of one run: the choice on validation, then one reading of the test split."""
    return [sys.executable, "-m", "nmt", "select", str(run_dir), "--last", str(args.last), "--beam", str(args.beam)] + [
        "--test",
        args.test,
        "--json",
    ]


def line(args: argparse.Namespace, config: Path, seed: int, run_dir: Path, commit: Optional[str]) -> dict[str, Any]:
    """The JSON line of one finished and tested run."""
    log_events = events.read(run_dir)
    start = events.of_kind(log_events, events.Start)[0]
    stop = events.of_kind(log_events, events.Stop)[-1]
    record = record_file.read(run_dir / "selection.json")
    test = first_test_read(run_dir, args.test)
    if record is None or record["chosen"] is None or test is None:
        raise UserError(f"{run_dir}: no choice or no reading of {args.test} in its selection.json")
    chosen = record["chosen"]
    valid: dict[str, Any] = next((c for c in chosen.get("candidates", []) if c.get("name") == chosen["name"]), {})
    cfg = config_mod.load(config, args.set)
    return {
        "bench": "equal_time",
        "config": str(config),
        "arch": cfg.model.arch,
        "seed": seed,
        "minutes_budget": args.minutes,
        "side_by_side": len(args.configs),
        "updates": stop.step,
        "epochs": stop.epoch,
        "minutes": round(stop.elapsed_s / 60, 2),
        "stop_reason": stop.reason,
        "params": start.params,
        "chosen": chosen["name"],
        "valid_bleu": valid.get("bleu"),
        "beam": args.beam,
        "test_split": args.test,
        "test_bleu": test.get("bleu"),
        "test_chrf": test.get("chrf"),
        "test_length_ratio": test.get("length_ratio"),
        "test_read": test.get("read"),
        **{k: start.hardware.get(k) for k in HARDWARE_KEYS},
        "commit": commit,
    }


def parse_seeds(text: str) -> list[int]:
    """``1,2,3`` as a list of distinct whole numbers; a mistake ends the script."""
    try:
        seeds = [int(part) for part in text.split(",")]
    except ValueError:
        common.fail(SCRIPT, f"--seeds: give comma-separated whole numbers, e.g. 1,2,3 (got {text!r})")
    if len(set(seeds)) != len(seeds):
        common.fail(SCRIPT, f"--seeds: a seed is given twice ({text})")
    return seeds


def check(args: argparse.Namespace) -> list[int]:
    """Every check that needs no training, and the seeds; a problem ends the script (exit 2)."""
    seeds = parse_seeds(args.seeds)
    if len(args.configs) < 2:
        common.fail(SCRIPT, "--configs: give two or more configs to set side by side")
    if len({run_name(c, 1) for c in args.configs}) != len(args.configs):
        common.fail(SCRIPT, "--configs: two configs share a file name, so their runs would share a folder")
    if args.minutes <= 0:
        common.fail(SCRIPT, f"--minutes must be positive (got {args.minutes:g})")
    if args.threads < 1:
        common.fail(SCRIPT, f"--threads must be 1 or more (got {args.threads})")
    if args.last < 2 or args.beam < 1:
        common.fail(SCRIPT, f"--last must be 2 or more and --beam 1 or more (got {args.last} and {args.beam})")
    for config in args.configs:
        try:
            cfg = config_mod.load(config, [*args.set, f"train.time_budget_min={args.minutes:g}"])
        except UserError as exc:
            common.fail(SCRIPT, str(exc))
        if cfg.train.keep_last < args.last:
            common.fail(SCRIPT, f"{config}: train.keep_last is {cfg.train.keep_last}; --last {args.last} needs as many")
    return seeds


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog=SCRIPT, description=__doc__.split("\n\n")[0])
    parser.add_argument("--configs", type=Path, nargs="+", required=True, help="Experiment YAMLs, one per arm.")
    parser.add_argument("--seeds", default="1,2,3", help="Comma-separated training seeds (default: 1,2,3).")
    parser.add_argument(
        "--minutes", type=float, default=30.0, help="Wall-clock minutes per run, validation included (default: 30)."
    )
    parser.add_argument(
        "--threads", type=int, default=1, help="Torch threads per run; the arms run at once (default: 1)."
    )
    parser.add_argument("--runs-dir", type=Path, default=Path("runs/equal-time"), help="Folder of the runs.")
    parser.add_argument("--test", default="test", help="Split read once with each chosen model (default: test).")
    parser.add_argument("--last", type=int, default=5, help="Checkpoints averaged as a candidate (default: 5).")
    parser.add_argument("--beam", type=int, default=5, help="Beam size of validation and test (default: 5).")
    parser.add_argument("--set", action="append", default=[], help="KEY=VALUE for every arm's config (repeatable).")
    return parser


def main(argv: list[str] | None = None) -> None:
    args = build_parser().parse_args(argv)
    logging.basicConfig(level=logging.INFO, stream=sys.stderr, format="%(name)s: %(message)s")
    seeds = check(args)
    commit = git_commit()
    for seed in seeds:
        runs = {config: args.runs_dir / run_name(config, seed) for config in args.configs}
        todo = [config for config, run_dir in runs.items() if not finished(run_dir)]
        if todo:
            log.info("seed %d: training %s side by side for %g minutes", seed, ", ".join(map(str, todo)), args.minutes)
            side_by_side([train_command(args, config, seed) for config in todo], "nmt train")
        untested = [run_dir for run_dir in runs.values() if first_test_read(run_dir, args.test) is None]
        if untested:
            log.info("seed %d: choosing on validation and reading %s once: %s", seed, args.test, untested)
            side_by_side([select_command(args, run_dir) for run_dir in untested], "nmt select")
        for config, run_dir in runs.items():
            try:
                print(json.dumps(line(args, config, seed, run_dir, commit)), flush=True)
            except UserError as exc:
                common.fail(SCRIPT, str(exc))


if __name__ == "__main__":
    main()
