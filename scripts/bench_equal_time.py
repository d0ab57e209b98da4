"""Equal training time: two or more configs (an RNN and a Transformer) trained for the same minutes, side by side.

For each seed, every config's run starts at once as its own ``nmt train`` process with
``train.time_budget_min`` set to ``--minutes`` and ``--threads`` threads, so the arms of one seed
share the cores evenly and see the same load; the time budget counts validation too.  When they
have all stopped, each run's model is chosen on validation and the test split is read once
(``nmt select RUN --last N --beam B --test SPLIT``, the arms again side by side), and one JSON
line per run goes to stdout: the config, its architecture, the seed, the updates and minutes the
run made, why it stopped, its parameters, the chosen model and its validation BLEU, the test BLEU,
chrF and length ratio, which reading of the test split that was, the hardware it trained on, the
commit of the code as the runs started, and the learning curve (``valid_curve``: update, minutes,
greedy validation BLEU and learning rate of every validation).  Logs go to stderr.

A seed whose runs have all finished (each metrics.jsonl ends with a stop) with the settings asked
for is not trained again, and a run whose current choice has read the test split is not read
again, so the same command finishes what an interrupted sitting began.  Where one run of a seed is
unfinished, every run of that seed is trained again from the start (``nmt train --overwrite``): a
run alone on the cores would not have its rival's load.  A run trained again keeps its earlier
test reads in its selection.json, and its line says which reading of the split it reports
(``test_read``).  A finished run trained with other settings (another config, ``--minutes``,
``--threads`` or ``--set``) is refused rather than reported under these.  Each run's training log
goes to RUNS_DIR/NAME.log and its commit and settings to RUNS_DIR/NAME.json, beside the run folder
(which nmt train keeps for its own files).

Issue 73's question 5, the RNN against the Transformer at equal time on Tatoeba::

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
from pathlib import Path
from typing import Any, Optional

import _bench_common as common
from nmt import config as config_mod
from nmt.comparison.runs import completed
from nmt.config.saved import changes
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


def sidecar_path(run_dir: Path) -> Path:
    """Where this script notes what a run's JSON line needs that the run does not hold: the commit, the
    settings, the arms trained beside it (RUNS_DIR/NAME.json)."""
    return run_dir.with_name(f"{run_dir.name}.json")


def run_overrides(args: argparse.Namespace, seed: int, config: Path) -> list[str]:
    """The --set list of one arm and seed: the user's, then this script's (the time budget alone ends a
    run: no update or epoch cap; the choice on validation is nmt select's, made once with the test read)."""
    return [
        *args.set,
        f"train.seed={seed}",
        f"train.threads={args.threads}",
        f"train.time_budget_min={args.minutes:g}",
        "train.max_steps=null",
        "train.max_epochs=100000",
        "train.select=best",
        f"name={run_name(config, seed)}",
        f"runs_dir={args.runs_dir}",
    ]


def check_settings(run_dir: Path, config: Path, overrides: list[str]) -> None:
    """Refuse a finished run trained with settings other than ``config`` and ``overrides``."""
    differ = [c.key for c in changes(config_mod.load(run_dir / "config.yaml"), config_mod.load(config, overrides))]
    if differ:
        raise UserError(
            f"{run_dir} was trained with other settings ({', '.join(differ)} differ from {config} and these "
            "options): give another --runs-dir, or delete the run to train it again"
        )


def test_read(run_dir: Path, split: str) -> Optional[dict[str, Any]]:
    """The reading of ``split`` made with the run's current choice (the last in its selection.json); None
    before a choice or a reading.  A run trained again keeps its earlier reads, numbered on (``read``)."""
    record = record_file.read(run_dir / "selection.json")
    if record is None or record["chosen"] is None:
        return None
    reads = [entry for entry in record["tests"] if entry.get("split") == split]
    return reads[-1] if reads else None


def side_by_side(commands: dict[str, list[str]], logs: Path, what: str) -> None:
    """Run ``commands`` (by run name) at once, each one's output in ``logs/NAME.log`` (appended); a failure
    ends the script naming the run and quoting the last line of its log."""
    logs.mkdir(parents=True, exist_ok=True)
    procs = {}
    for name, command in commands.items():
        with open(logs / f"{name}.log", "a", encoding="utf-8") as out:
            procs[name] = subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT, text=True)
    failed = [name for name, proc in procs.items() if proc.wait() != 0]
    if failed:
        tail = (logs / f"{failed[0]}.log").read_text(encoding="utf-8").strip().splitlines()
        common.fail(
            SCRIPT, f"{what} of {failed[0]} failed: {tail[-1] if tail else 'no output'} (log: {logs}/{failed[0]}.log)"
        )


def train_command(args: argparse.Namespace, config: Path, seed: int) -> list[str]:
    """``nmt train`` of one arm and seed, from the start."""
    sets = [x for item in run_overrides(args, seed, config) for x in ("--set", item)]
    return [sys.executable, "-m", "nmt", "train", "--config", str(config), *sets, "--no-progress", "--overwrite"]


def select_command(args: argparse.Namespace, run_dir: Path) -> list[str]:
    """``nmt select`` of one run: the choice on validation, then one reading of the test split."""
    options = ["--last", str(args.last), "--beam", str(args.beam), "--test", args.test]
    return [sys.executable, "-m", "nmt", "select", str(run_dir), *options]


def line(args: argparse.Namespace, config: Path, seed: int, run_dir: Path) -> dict[str, Any]:
    """The JSON line of one finished and tested run."""
    sidecar = json.loads(note.read_text(encoding="utf-8")) if (note := sidecar_path(run_dir)).is_file() else {}
    log_events = events.read(run_dir)
    start = events.of_kind(log_events, events.Start)[0]
    stop = events.of_kind(log_events, events.Stop)[-1]
    record = record_file.read(run_dir / "selection.json")
    test = test_read(run_dir, args.test)
    if record is None or record["chosen"] is None or test is None:
        raise UserError(f"{run_dir}: no choice or no reading of {args.test} in its selection.json")
    chosen = record["chosen"]
    valid: dict[str, Any] = next((c for c in chosen.get("candidates", []) if c.get("name") == chosen["name"]), {})
    cfg = config_mod.load(run_dir / "config.yaml")
    return {
        "bench": "equal_time",
        "config": str(config),
        "arch": cfg.model.arch,
        "seed": seed,
        "minutes_budget": cfg.train.time_budget_min,
        "side_by_side": sidecar.get("side_by_side"),
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
        "commit": sidecar.get("commit"),
        "valid_curve": [
            [v.step, round(v.elapsed_s / 60, 2), round(v.bleu, 2), v.lr]
            for v in events.of_kind(log_events, events.Valid)
        ],
    }


def parse_seeds(text: str) -> list[int]:
    """``1,2,3`` as a list of distinct whole numbers; a mistake ends the script."""
    try:
        seeds = common.parse_list(text, int)
    except ValueError:
        common.fail(SCRIPT, f"--seeds: give comma-separated whole numbers, e.g. 1,2,3 (got {text!r})")
    if not seeds or len(set(seeds)) != len(seeds):
        common.fail(SCRIPT, f"--seeds: give each seed once, at least one ({text!r})")
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
            cfg = config_mod.load(config, run_overrides(args, seeds[0], config))
        except UserError as exc:
            common.fail(SCRIPT, str(exc))
        if cfg.train.keep_last < args.last:
            common.fail(SCRIPT, f"{config}: train.keep_last is {cfg.train.keep_last}; --last {args.last} needs as many")
    return seeds


def build_parser() -> argparse.ArgumentParser:
    parser = common.one_line_parser(SCRIPT, __doc__.split("\n\n")[0])
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


def train_seed(args: argparse.Namespace, seed: int, runs: dict[Path, Path]) -> None:
    """Every arm of ``seed`` trained at once from the start, then each run's sidecar written."""
    for run in runs.values():
        sidecar_path(run).unlink(missing_ok=True)  # a failure below leaves no note of the runs it replaced
    log.info("seed %d: training %s side by side for %g minutes", seed, ", ".join(map(str, runs)), args.minutes)
    commit = git_commit()  # the code the runs import as they start, not whatever the checkout holds when they end
    side_by_side(
        {run.name: train_command(args, config, seed) for config, run in runs.items()}, args.runs_dir, "training"
    )
    sidecar = {"commit": commit, "side_by_side": len(runs), "minutes": args.minutes, "threads": args.threads}
    for run in runs.values():
        sidecar_path(run).write_text(json.dumps(sidecar) + "\n", encoding="utf-8")


def main(argv: list[str] | None = None) -> None:
    args = build_parser().parse_args(argv)
    logging.basicConfig(level=logging.INFO, stream=sys.stderr, format="%(name)s: %(message)s")
    seeds = check(args)
    for seed in seeds:
        runs = {config: args.runs_dir / run_name(config, seed) for config in args.configs}
        try:
            if all(completed(run) is not None for run in runs.values()):
                for config, run in runs.items():
                    check_settings(run, config, run_overrides(args, seed, config))
            else:
                train_seed(args, seed, runs)
            untested = {run.name: run for run in runs.values() if test_read(run, args.test) is None}
            if untested:
                log.info(
                    "seed %d: choosing on validation and reading %s once: %s", seed, args.test, ", ".join(untested)
                )
                side_by_side(
                    {name: select_command(args, run) for name, run in untested.items()}, args.runs_dir, "selection"
                )
            for config, run in runs.items():
                print(json.dumps(line(args, config, seed, run)), flush=True)
        except UserError as exc:
            common.fail(SCRIPT, str(exc))


if __name__ == "__main__":
    main()
