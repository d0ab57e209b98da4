"""How `nmt data prepare` and one epoch of `nmt train` scale with the corpus: 30k to 3M pairs.

For each size N (``--sizes``, default 30k, 300k and 3M pairs, up to 100 times Multi30k's
29k) the script writes N synthetic English-German pairs as a local TSV file, then runs, each
as its own child process with the ``nmt`` command line:

1. ``nmt data prepare local --force``: reading the TSV, cleaning, writing the splits and
   training the joint SentencePiece model (on at most ``data.input_sentence_size`` sampled
   lines);
2. ``nmt train`` for one epoch (``train.max_epochs=1``, no time budget, one validation at
   the end, on ``--valid`` pairs): encoding and caching the ids, batching, the epoch itself.

The model is deliberately TINY (one GRU layer of ``--hidden`` units each side, embeddings
of the same size, Luong dot attention on its fast path, a small vocabulary), so the time
measured is that of the data path (reading, cleaning, SentencePiece, encoding, batching,
collating) and the per-update overhead, not the arithmetic of a real model: the figures say
whether that path stays linear and within memory, not how long real training takes.

Each child's peak resident memory comes from ``os.wait4`` (its own ``ru_maxrss``), so the
prepare and the train figure are separate. One JSON line per size on stdout::

    {"bench": "scale", "pairs": ..., "prepare_s": ..., "prepare_s_per_pair": ...,
     "prepare_peak_rss_mb": ..., "train_s": ..., "train_s_per_pair": ..., "train_peak_rss_mb": ...,
     "train_loop_s": ..., "train_loop_s_per_pair": ..., "generate_s": ..., "device": ...,
     "device_name": ..., "cpus": ..., "load_avg_1m": ..., "date": ..., ...}

``train_s`` is the whole `nmt train` process (start-up, encoding the ids, the epoch and its
validation); ``train_loop_s`` is the epoch and its validation alone, from the run's
metrics.jsonl (start-up includes some 10-15 s of imports and the validation some seconds of
decoding 200 sentences, fixed costs that make the smallest size look slower per pair).
``generate_s`` is writing the TSV (cached in ``--work-dir`` between runs, so 0 when reused)
and is not part of any figure.

Commands behind the README figures (from the repository root)::

    python scripts/bench_scale.py                          # 30k, 300k, 3M pairs (about an hour on 2 cores)
    python scripts/bench_scale.py --sizes 30000,300000     # the two smaller sizes only
    python scripts/bench_scale.py --quick                  # a few hundred pairs: does it run?
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch

import _bench_common as common
from nmt import config as config_mod
from nmt.data import synthetic
from nmt.run.paths import RunPaths
from nmt.util import runtime

log = logging.getLogger("bench_scale")
SCRIPT = "bench_scale.py"
REPO = Path(__file__).resolve().parents[1]
DEFAULT_SIZES = (30_000, 300_000, 3_000_000)
QUICK_SIZES = (300,)
CHUNK = 10_000  # pairs per generator seed: the pool grows in chunks, so a larger size extends a smaller one
SEED = 1


@dataclass(frozen=True)
class Child:
    """What one child process cost: exit status, wall-clock seconds, peak resident MiB."""

    returncode: int
    seconds: float
    peak_rss_mb: float


def run_child(args: Sequence[str], log_path: Path) -> Child:
    """Run ``python -m nmt ARGS`` (stdout and stderr into ``log_path``) and measure it alone.

    ``os.wait4`` returns the rusage of exactly this child, so its ``ru_maxrss`` (KiB on Linux)
    is the child's own peak, not the largest of every child so far as RUSAGE_CHILDREN is.
    """
    with open(log_path, "w", encoding="utf-8") as out:
        start = time.perf_counter()
        proc = subprocess.Popen([sys.executable, "-m", "nmt", *args], cwd=REPO, stdout=out, stderr=subprocess.STDOUT)
        _, status, usage = os.wait4(proc.pid, 0)
        seconds = time.perf_counter() - start
    proc.returncode = os.waitstatus_to_exitcode(status)  # reaped here, so Popen must not wait again
    return Child(proc.returncode, seconds, round(usage.ru_maxrss / 1024, 1))


def _pool_state(pool: Path) -> tuple[int, int]:
    """(whole chunks, their bytes) already in the pool file, from the sidecar written after each."""
    meta = pool.with_suffix(".json")
    if not (pool.is_file() and meta.is_file()):
        return 0, 0
    info = json.loads(meta.read_text(encoding="utf-8"))
    if info.get("chunk") != CHUNK or info.get("seed") != SEED:
        return 0, 0
    return int(info["chunks"]), int(info["bytes"])


def grow_pool(pool: Path, pairs: int) -> float:
    """Make ``pool`` (``en<TAB>de`` lines) hold at least ``pairs`` pairs; seconds spent.

    Chunk ``i`` holds the generator's pairs for seed ``split_seed(SEED, "train.i")``, so the
    pool is the same on every machine, and a smaller or interrupted pool is extended, never
    regenerated. Memory stays at one chunk.
    """
    have, size = _pool_state(pool)
    want = -(-pairs // CHUNK)
    if want <= have:
        return 0.0
    start = time.perf_counter()
    with open(pool, "ab") as f:
        f.truncate(size)  # a chunk an interrupted run began after the last recorded one
    for i in range(have, want):
        pairs_i = synthetic.generate_pairs(CHUNK, synthetic.split_seed(SEED, f"train.{i}"))
        with open(pool, "ab") as f:
            f.write("".join(f"{en}\t{de}\n" for en, de in pairs_i).encode("utf-8"))
            size = f.tell()
        meta = {"chunk": CHUNK, "seed": SEED, "chunks": i + 1, "bytes": size}
        pool.with_suffix(".json").write_text(json.dumps(meta), encoding="utf-8")
        if (i + 1) % 10 == 0 or i + 1 == want:
            log.info("generated %d of %d pairs", (i + 1) * CHUNK, want * CHUNK)
    return time.perf_counter() - start


def write_corpus(work: Path, pairs: int, valid: int) -> tuple[Path, Path, float]:
    """``work/corpus-N/{train,valid}.tsv``: the first ``pairs`` pool pairs and ``valid`` held-out
    pairs from their own seed; returns the two paths and the seconds spent generating."""
    pool = work / "pool.tsv"
    seconds = grow_pool(pool, pairs)
    folder = work / f"corpus-{pairs}"
    folder.mkdir(parents=True, exist_ok=True)
    train, held_out = folder / "train.tsv", folder / "valid.tsv"
    with open(pool, "rb") as src, open(train, "wb") as dst:
        for _, line in zip(range(pairs), src):
            dst.write(line)
    rows = synthetic.generate_pairs(valid, synthetic.split_seed(SEED, "valid"))
    held_out.write_text("".join(f"{en}\t{de}\n" for en, de in rows), encoding="utf-8", newline="\n")
    return train, held_out, seconds


def data_overrides(work: Path, pairs: int, train: Path, valid: Path, vocab_size: int) -> list[str]:
    """The ``data.*`` settings, the same for prepare and train (so train reuses the prepared folder)."""
    files = json.dumps({"train": [str(train)], "valid": [str(valid)]})
    return [
        "data.corpus=local",
        "data.src=en",
        "data.tgt=de",
        f"data.root={work / f'data-{pairs}'}",
        f"data.local_files={files}",
        f"data.vocab_size={vocab_size}",
    ]


def train_overrides(work: Path, pairs: int, args: argparse.Namespace) -> list[str]:
    """A tiny one-layer GRU with Luong dot attention on its fast path, one epoch, one validation."""
    h = args.hidden
    return [
        f"name=scale-{pairs}",
        f"runs_dir={work / 'runs'}",
        "model.cell=gru",
        f"model.emb_size={h}",
        f"model.hidden_size={h}",
        "model.bidirectional=false",
        "model.dropout=0.0",
        "model.emb_dropout=0.0",
        "model.attention.type=luong_dot",
        "model.attention.input_feeding=false",
        "train.max_epochs=1",
        f"train.max_tokens={args.max_tokens}",
        "train.valid_every=0",
        "train.tensorboard=false",
        "train.log_every=1000",
        f"train.threads={args.threads}",
        f"train.device={args.device}",
    ]


def sets(overrides: Sequence[str]) -> list[str]:
    return [arg for item in overrides for arg in ("--set", item)]


def measure(work: Path, pairs: int, args: argparse.Namespace) -> dict[str, Any]:
    """Generate, prepare and train one epoch at ``pairs`` pairs; the JSON record of that size."""
    train, valid, generate_s = write_corpus(work, pairs, args.valid)
    data = data_overrides(work, pairs, train, valid, args.vocab_size)
    logs = work / "logs"
    logs.mkdir(exist_ok=True)
    log.info("%d pairs: nmt data prepare", pairs)
    prepare = run_child(["data", "prepare", "local", "--force", *sets(data)], logs / f"prepare-{pairs}.log")
    check_child("nmt data prepare", prepare, logs / f"prepare-{pairs}.log")
    prepared = config_mod.load(None, data).data.prepared_dir  # data/local/en-de/<key of the files>
    manifest = json.loads((prepared / "manifest.json").read_text(encoding="utf-8"))
    log.info("%d pairs: nmt train, one epoch", pairs)
    trained = run_child(
        ["train", "--overwrite", *sets([*data, *train_overrides(work, pairs, args)])], logs / f"train-{pairs}.log"
    )
    check_child("nmt train", trained, logs / f"train-{pairs}.log")
    loop_s = training_loop_seconds(RunPaths(work / "runs" / f"scale-{pairs}").metrics)
    record = {
        "bench": "scale",
        "pairs": pairs,
        "train_pairs": manifest["splits"]["train"]["pairs"],
        "prepare_s": round(prepare.seconds, 3),  # ms: the per-pair figure below stays within 1% of it
        "prepare_s_per_pair": prepare.seconds / pairs,
        "prepare_peak_rss_mb": prepare.peak_rss_mb,
        "train_s": round(trained.seconds, 3),
        "train_s_per_pair": trained.seconds / pairs,
        "train_peak_rss_mb": trained.peak_rss_mb,
        "train_loop_s": round(loop_s, 3),
        "train_loop_s_per_pair": loop_s / pairs,
        "generate_s": round(generate_s, 2),
        "vocab_size": args.vocab_size,
        "hidden": args.hidden,
        "max_tokens": args.max_tokens,
        "spm_input_sentence_size": manifest["spm"]["input_sentence_size"],
        "load_avg_1m_after": round(os.getloadavg()[0], 2),
    }
    if not args.keep:
        for path in (train.parent, work / f"data-{pairs}", work / "runs" / f"scale-{pairs}"):
            shutil.rmtree(path, ignore_errors=True)
    return record


def training_loop_seconds(metrics: Path) -> float:
    """Seconds from the first update to the stop (the epoch and its one validation), from the
    run's ``stop`` event: ``train_s`` less the start-up (imports, encoding the ids, batching)."""
    events = [json.loads(line) for line in metrics.read_text(encoding="utf-8").splitlines() if line.strip()]
    return float(next(e["elapsed_s"] for e in reversed(events) if e["event"] == "stop"))


def check_child(what: str, child: Child, log_path: Path) -> None:
    """Stop with one line (exit 1) naming the child's log when it failed."""
    if child.returncode != 0:
        lines = log_path.read_text(encoding="utf-8", errors="replace").strip().splitlines()
        last = lines[-1] if lines else "no output"
        print(f"{SCRIPT}: error: {what} exited {child.returncode} ({last}); see {log_path}", file=sys.stderr)
        sys.exit(1)


def machine(args: argparse.Namespace) -> dict[str, Any]:
    """Where the figures were taken: CPU or GPU model, cores, load when the run began, the date."""
    info = runtime.hardware(runtime.select_device(args.device))
    info["threads"] = args.threads  # the children's train.threads, not this process's
    return {**info, "load_avg_1m": round(os.getloadavg()[0], 2), "nice": os.nice(0), "date": time.strftime("%Y-%m-%d")}


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog=SCRIPT, description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--sizes",
        default=",".join(map(str, DEFAULT_SIZES)),
        metavar="N,N,...",
        help="Training pairs per measurement (default: 30000,300000,3000000).",
    )
    parser.add_argument("--quick", action="store_true", help=f"One tiny size ({QUICK_SIZES[0]} pairs): does it run?")
    parser.add_argument("--valid", type=int, default=200, metavar="N", help="Validation pairs (default: 200).")
    parser.add_argument("--vocab-size", type=int, default=1000, help="data.vocab_size (default: 1000).")
    parser.add_argument("--hidden", type=int, default=16, help="Embedding and GRU size (default: 16).")
    parser.add_argument(
        "--max-tokens",
        type=int,
        default=32000,
        help="train.max_tokens: large, so per-update overheads weigh little (default: 32000).",
    )
    parser.add_argument("--threads", type=int, default=1, help="train.threads of the child (default: 1).")
    parser.add_argument("--device", choices=("auto", "cpu", "cuda"), default="cpu", help="train.device (default: cpu).")
    parser.add_argument(
        "--work-dir",
        type=Path,
        default=REPO / "build" / "bench_scale",
        help="Where the generated text (kept, reused), the prepared data and the runs go (default: build/bench_scale).",
    )
    parser.add_argument("--keep", action="store_true", help="Keep each size's prepared folder and run.")
    args = parser.parse_args(argv)
    try:
        args.sizes = list(QUICK_SIZES) if args.quick else common.parse_list(args.sizes, int)
    except ValueError:
        common.fail("bench_scale", f"--sizes {args.sizes!r}: expected comma-separated whole numbers")
    for name in ("valid", "vocab_size", "hidden", "max_tokens"):
        if getattr(args, name) < 1:
            common.fail("bench_scale", f"--{name.replace('_', '-')} must be positive")
    if not args.sizes or min(args.sizes) < 1:
        common.fail("bench_scale", "--sizes must list at least one positive number of pairs")
    if args.threads < 0:
        common.fail("bench_scale", "--threads must be 0 (automatic) or more")
    return args


def main(argv: Sequence[str] | None = None) -> None:
    args = parse_args(argv)
    logging.basicConfig(level=logging.INFO, stream=sys.stderr, format="%(name)s: %(message)s")
    if args.device == "cuda" and not torch.cuda.is_available():
        common.fail("bench_scale", "--device cuda: no CUDA device here")
    work = args.work_dir.resolve()
    work.mkdir(parents=True, exist_ok=True)
    env = machine(args)
    for pairs in args.sizes:
        common.emit({**measure(work, pairs, args), **env})


if __name__ == "__main__":
    main()
