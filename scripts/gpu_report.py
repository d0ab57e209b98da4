"""One GPU, a few minutes: training throughput, time to quality and decoding speed, as JSON lines and a table.

Commands (from the repository root; DIR holds the raw Multi30k files, gzip, upstream names)::

    python scripts/gpu_report.py --mirror DIR      # one GPU, about 9 minutes (--minutes)
    python scripts/gpu_report.py --tiny            # the same code paths on CPU in seconds (in the tests)

What it does, in this order, within ``--minutes`` of wall clock (default 9):

1. prepares Multi30k de-en from DIR (reused when ``--data-root`` already holds it);
2. training throughput, eager, at the sizes of configs/multi30k_de_en_gpu.yaml (bahdanau on the
   step path, luong_general on its fast path) and configs/multi30k_de_en_transformer_gpu.yaml (the
   Transformer): for each, one untimed pass over ``--steps`` batches (cuDNN, the allocator, and in
   step 5 compilation and CUDA graphs), then the timed pass over the same batches; this phase ends
   at 18% of the budget, a measurement still running then is stopped;
3. configs/multi30k_de_en_gpu.yaml trained for ``--updates`` updates, or until 64% of the budget
   is spent, validating every ``--valid-every`` updates (and at epoch ends far from one); then its
   best checkpoint translates test2016 greedily and with beam 5;
4. decoding speed of that checkpoint on test2016 for each ``--beams`` x ``--batch-sizes`` (batch
   size 1 on the first ``--batch1-sentences`` sentences), largest batches first, until 72%;
5. training throughput of bahdanau with ``train.compile`` default, then reduce-overhead (CUDA
   graphs), each in an even part of the time left: last, because compiling takes long and a
   failed CUDA graph capture may spoil the process for what would follow (skipped on a CPU,
   where compiling takes minutes, unless ``--cpu-compile``).

Every line on stdout is one JSON object, also appended to ``OUT/report.jsonl`` (``--out-dir``; a
new report replaces an older one there), and ``OUT/report.md`` (the tables for the README) is
rewritten after each line; logs go to stderr.  The training run is ``OUT/runs/gpu_report_train``
(its best.pt is what steps 3 and 4 decode with); the prepared corpus goes under ``--data-root``.
Lines, by their ``event``:

- ``hardware``: device and its name, GPU memory, CPU cores, torch, CUDA and cuDNN versions, the
  date (UTC) and this command; every later line repeats device, device_name, torch and cuda;
- ``data``: the prepared corpus and its split sizes;
- ``throughput`` (steps 2 and 5): ``target_tokens_per_s`` and ``ms_per_update`` of the timed pass,
  ``untimed_pass_s`` (compilation included), ``compile``, ``fast_path``, ``amp`` (autocast dtype),
  ``peak_gpu_mb`` (torch.cuda.max_memory_allocated over the measurement, reset before it) and
  ``peak_rss_mb`` (the process's high-water mark so far);
- ``time_to_bleu``: per ``--levels`` value, the first validation whose greedy BLEU reached it:
  its update ``step`` and the trainer's ``elapsed_s`` (updates and earlier validations);
- ``training``: updates done, ``elapsed_s``, best validation BLEU and its step, why it stopped;
- ``test_bleu``: test2016 BLEU and chrF of the best checkpoint, greedy (beam 1) and beam 5;
- ``decode``: ``sentences_per_s`` and ``output_tokens_per_s`` of one beam and batch size (fp32);
- ``error``: a measurement that failed (its error type and message); the report goes on;
- ``skipped``: a measurement not run (no time left in its share, compile on a CPU, an earlier failure);
- ``done``: the wall time, last.

The exit status is 0 whatever failed: failures are lines of the report.
"""

from __future__ import annotations

import argparse
import functools
import logging
import shlex
import sys
import time
from pathlib import Path
from typing import Any, Optional

import torch

import _bench_common as common
import _gpu_report_measure as measure
import bench_decode
import bench_time_to_quality
from _gpu_report_budget import MIN_SECONDS, Budget, attempt
from _gpu_report_table import Report
from nmt.run.paths import RunPaths
from nmt.util import runtime
from nmt.util.errors import UserError

log = logging.getLogger("gpu_report")
SCRIPT = "gpu_report.py"
GPU_CONFIG = "configs/multi30k_de_en_gpu.yaml"
TRANSFORMER_CONFIG = "configs/multi30k_de_en_transformer_gpu.yaml"
EAGER = (
    measure.Throughput("bahdanau", GPU_CONFIG, "bahdanau", "off"),
    measure.Throughput("luong_general", GPU_CONFIG, "luong_general", "off"),
    measure.Throughput("transformer", TRANSFORMER_CONFIG, "transformer", "off"),
)
COMPILED = (  # last: a compilation may take long, and a failed CUDA graph capture may spoil the process
    measure.Throughput("bahdanau", GPU_CONFIG, "bahdanau", "default"),
    measure.Throughput("bahdanau", GPU_CONFIG, "bahdanau", "reduce-overhead"),
)
# Shares of --minutes: the eager throughput phase ends at EAGER_END; training leaves the last
# DECODE_SHARE + COMPILE_SHARE, the test translations and decoding speed the last COMPILE_SHARE.
EAGER_END, DECODE_SHARE, COMPILE_SHARE = 0.18, 0.08, 0.28
SETUP_SECONDS = 5.0  # of the training share, for loading the corpus and building the model
TINY = [  # the embedded synthetic corpus and models a few thousand parameters large
    "data.corpus=synthetic",
    "data.src=en",
    "data.tgt=de",
    "data.vocab_size=200",
    "data.synthetic_sizes={train: 1500, valid: 24, test: 24}",
    "data.synthetic_max_words=10",
    "train.max_tokens=500",
]
TINY_RNN = ["model.emb_size=32", "model.hidden_size=32", "model.enc_layers=1"]
TINY_TRANSFORMER = [
    "model.transformer.d_model=32",
    "model.transformer.heads=2",
    "model.transformer.ff_size=64",
    "model.transformer.enc_layers=1",
    "model.transformer.dec_layers=1",
    "train.warmup_steps=10",
]
# option: (default, --tiny default)
DEFAULTS: dict[str, tuple[Any, Any]] = {
    "minutes": (9.0, 2.0),
    "device": ("auto", "cpu"),
    "steps": (80, 4),
    "updates": (2000, 30),
    "valid_every": (200, 10),
    "batch1_sentences": (100, 4),
    "min_seconds": (bench_decode.MIN_SECONDS, 0.2),
    "out_dir": (Path("runs/gpu_report"), Path("runs/gpu_report_tiny")),
}


def overrides_for(args: argparse.Namespace, arch: str, device: torch.device) -> list[str]:
    """--set lines every config of the report gets: data place, device, threads, --tiny sizes, --set."""
    out = [f"data.root={args.data_root}", f"train.device={device.type}"]
    if args.mirror:
        out.append(f"data.mirror={args.mirror}")
    if args.threads is not None:
        out.append(f"train.threads={args.threads}")
    if args.tiny:
        out += TINY + (TINY_TRANSFORMER if arch == "transformer" else TINY_RNN)
    return out + list(args.set)


def run_throughput(
    report: Report, args: argparse.Namespace, budget: Budget, device: torch.device, compiled: bool
) -> None:
    """Phases 2 and 5: one ``throughput`` line per entry of :data:`EAGER` (until ``EAGER_END``) or
    :data:`COMPILED` (each an even part of the time left)."""
    specs = COMPILED if compiled else EAGER
    for i, spec in enumerate(specs):
        if compiled and device.type == "cpu" and not args.cpu_compile:
            report.skipped("throughput", spec.label, "torch.compile takes minutes on a CPU; --cpu-compile runs it")
            continue
        seconds = budget.left() / (len(specs) - i) if compiled else budget.left(EAGER_END)
        overrides = overrides_for(args, "transformer" if spec.variant == "transformer" else "rnn", device)
        run = functools.partial(measure.measure_throughput, spec, overrides, args.steps, device)
        attempt(report, "throughput", spec.label, seconds, run)
        if compiled:
            torch._dynamo.reset()  # drop compiled code and CUDA graph pools before the next one
        measure.fresh_memory(device)


def run_training(report: Report, args: argparse.Namespace, budget: Budget, device: torch.device) -> None:
    """Phase 3: train the GPU config, then score its best checkpoint on the test split.

    The trainer stops itself at ``train.time_budget_min`` (checked after every update and
    validation); the time limit around it, half the reserve later, is for a validation that overruns.
    """
    seconds = budget.left(1 - DECODE_SHARE - COMPILE_SHARE)
    overrides = overrides_for(args, "rnn", device)

    def train() -> list[dict[str, Any]]:  # the config is built in the attempt: its errors are reported
        minutes = max(seconds - SETUP_SECONDS, MIN_SECONDS) / 60
        cfg = measure.train_config(GPU_CONFIG, overrides, args.out_dir, args.updates, args.valid_every, minutes)
        return measure.train(cfg, GPU_CONFIG, args.levels, device)

    limit = seconds + budget.total * DECODE_SHARE / 2 if seconds >= MIN_SECONDS else seconds
    attempt(report, "training", f"{GPU_CONFIG}, {args.updates} updates", limit, train)
    best = best_checkpoint(args)
    for beam in (1, 5):
        if best is None:
            report.skipped("test", f"beam {beam}", "no checkpoint trained by this report")
            continue
        run = functools.partial(measure.test_bleu, best, beam, device)
        attempt(report, "test", f"beam {beam}", budget.left(1 - COMPILE_SHARE), run)


def best_checkpoint(args: argparse.Namespace) -> Optional[Path]:
    """best.pt of this report's training run; None when this report wrote none (an earlier report's
    best.pt in the same --out-dir would give its model's scores under this run's hardware line)."""
    best = RunPaths(args.out_dir / "runs" / measure.TRAIN_RUN_NAME).best
    return best if best.is_file() and best.stat().st_mtime >= args.started else None


def run_decoding(report: Report, args: argparse.Namespace, budget: Budget, device: torch.device) -> None:
    """Phase 4: one ``decode`` line per beam and batch size, largest batches first."""
    best = best_checkpoint(args)
    settings = [(beam, size) for size in sorted(args.batch_sizes, reverse=True) for beam in args.beams]
    if best is None:
        for beam, size in settings:
            report.skipped("decode", f"beam {beam}, batch {size}", "no checkpoint trained by this report")
        return
    for beam, size in settings:
        limit = args.batch1_sentences if size == 1 else None
        run = functools.partial(measure.decode_speed, best, beam, size, limit, device, args.min_seconds)
        attempt(report, "decode", f"beam {beam}, batch {size}", budget.left(1 - COMPILE_SHARE), run)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter
    )

    def default(key: str) -> str:
        full, tiny = DEFAULTS[key]
        return f"(default: {full}; --tiny: {tiny})"

    parser.add_argument(
        "--mirror",
        type=Path,
        default=None,
        metavar="DIR",
        help="Folder with the raw Multi30k files (train/val/test_2016_flickr .de/.en .gz) "
        "(default: $NMT_DATA_MIRROR, else download; unused with --tiny).",
    )
    parser.add_argument(
        "--out-dir",
        type=Path,
        default=None,
        help=f"Folder for report.jsonl, report.md and the run {default('out_dir')}.",
    )
    parser.add_argument(
        "--minutes", type=float, default=None, help=f"Wall-clock budget of the whole report {default('minutes')}."
    )
    parser.add_argument(
        "--device", choices=("auto", "cpu", "cuda"), default=None, help=f"auto = CUDA when present {default('device')}."
    )
    parser.add_argument(
        "--threads",
        type=int,
        default=None,
        metavar="N",
        help="Torch CPU threads (train.threads; 0 = one per core other processes leave free) (default: the configs').",
    )
    parser.add_argument(
        "--steps",
        type=int,
        default=None,
        metavar="N",
        help=f"Timed updates per throughput measurement, after as many untimed {default('steps')}.",
    )
    parser.add_argument(
        "--updates",
        type=int,
        default=None,
        metavar="N",
        help=f"Updates of the GPU config's training run, unless its time share ends first {default('updates')}.",
    )
    parser.add_argument(
        "--valid-every",
        type=int,
        default=None,
        metavar="N",
        help=f"Validate (greedy BLEU on the validation split) every N updates {default('valid_every')}.",
    )
    parser.add_argument(
        "--levels",
        type=float,
        nargs="+",
        default=[30.0],
        metavar="BLEU",
        help="Validation BLEU levels to time, strictly increasing (default: 30).",
    )
    parser.add_argument("--beams", default="1,5", help="Comma-separated beam sizes to time; 1 = greedy (default: 1,5).")
    parser.add_argument(
        "--batch-sizes", default="1,64,256", help="Comma-separated decoding batch sizes to time (default: 1,64,256)."
    )
    parser.add_argument(
        "--batch1-sentences",
        type=int,
        default=None,
        metavar="N",
        help=f"Test sentences decoded at batch size 1 (larger batches decode all) {default('batch1_sentences')}.",
    )
    parser.add_argument(
        "--min-seconds",
        type=float,
        default=None,
        metavar="S",
        help="Decoding: repeat each setting's pass over the test sentences until at least S seconds are "
        f"timed {default('min_seconds')}.",
    )
    parser.add_argument(
        "--data-root",
        type=Path,
        default=None,
        help="data.root: where the prepared corpus goes, reused when it matches (default: data; --tiny: OUT/data).",
    )
    parser.add_argument(
        "--set",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="Config override for every config of the report, after the script's own (repeatable), "
        "e.g. --set train.valid_max_sentences=200.",
    )
    parser.add_argument(
        "--cpu-compile",
        action="store_true",
        help="Also time the torch.compile modes on a CPU (skipped there by default: compiling takes minutes).",
    )
    parser.add_argument(
        "--tiny",
        action="store_true",
        help="The same code paths on CPU in seconds: the embedded synthetic corpus, tiny models, "
        "a few updates and sentences (what the test suite runs).",
    )
    return parser


def parse_args(argv: list[str]) -> argparse.Namespace:
    """Options with the defaults of the mode (full or --tiny) filled in and checked (exit 2 on a mistake)."""
    args = build_parser().parse_args(argv)
    for key, (full, tiny) in DEFAULTS.items():
        if getattr(args, key) is None:
            setattr(args, key, tiny if args.tiny else full)
    if args.data_root is None:
        args.data_root = args.out_dir / "data" if args.tiny else Path("data")
    try:
        args.beams = common.parse_list(args.beams, int)
        args.batch_sizes = common.parse_list(args.batch_sizes, int)
    except ValueError:
        common.fail(SCRIPT, f"--beams and --batch-sizes take comma-separated integers (got {args.beams!r})")
    numbers = [args.steps, args.updates, args.valid_every, args.batch1_sentences, *args.beams, *args.batch_sizes]
    if not args.beams or not args.batch_sizes or min(numbers) < 1 or args.minutes <= 0:
        common.fail(
            SCRIPT,
            "--minutes, --steps, --updates, --valid-every, --beams, --batch-sizes and "
            "--batch1-sentences must be positive",
        )
    common.check_min_seconds(SCRIPT, args.min_seconds)
    problem = bench_time_to_quality.check_levels(args.levels)
    if problem:
        common.fail(SCRIPT, problem)
    return args


def main(argv: Optional[list[str]] = None) -> None:
    argv = sys.argv[1:] if argv is None else list(argv)
    args = parse_args(argv)
    args.started = time.time()  # what this report trains is newer than this
    budget = Budget(args.minutes)
    runtime.keep_freed_memory()  # as nmt train does, before the first large tensor
    logging.basicConfig(level=logging.INFO, stream=sys.stderr, format="%(name)s: %(message)s")
    try:
        device = runtime.select_device(args.device)
    except UserError as exc:
        common.fail(SCRIPT, str(exc))
    report = Report(args.out_dir)
    hw = report.add(measure.hardware(device, shlex.join(["python", f"scripts/{SCRIPT}", *argv]), args.minutes))
    report.context = {k: hw[k] for k in ("device", "device_name", "torch", "cuda")}
    data = attempt(
        report,
        "data",
        "prepare",
        budget.left(),
        lambda: [measure.prepare_data(GPU_CONFIG, overrides_for(args, "rnn", device))],
    )
    if data is None:
        report.skipped("all", "every measurement", "the corpus could not be prepared")
    else:
        run_throughput(report, args, budget, device, compiled=False)
        run_training(report, args, budget, device)
        run_decoding(report, args, budget, device)
        run_throughput(report, args, budget, device, compiled=True)
    failed = sum(r["event"] == "error" for r in report.records)
    skipped = sum(r["event"] == "skipped" for r in report.records)
    report.add(
        {
            "event": "done",
            "wall_s": round(budget.elapsed(), 1),
            "budget_s": budget.total,
            "errors": failed,
            "skipped": skipped,
            "out_dir": str(args.out_dir),
        }
    )
    log.info("wrote %s and %s (%d errors, %d skipped)", report.jsonl, report.md, failed, skipped)


if __name__ == "__main__":
    main()
