"""gpu_report.py's measurements, each a function that returns its JSON records.

They call the package (data, model, Trainer, decoding) and the other benchmark scripts'
functions, so the report measures the code that ``nmt train`` and ``nmt translate`` run:
training throughput is :func:`nmt.training.timing.time_updates` (what bench_train and
``nmt compare --time-updates`` time with), one decoding setting :func:`bench_decode.bench_setting`,
the time to a BLEU level :func:`bench_time_to_quality.records`.
Which measurements run, in what order and for how long is gpu_report.py's business.
"""

from __future__ import annotations

import argparse
import datetime
import functools
import gc
import importlib.metadata
import platform
import statistics
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Optional

import torch

import _bench_common as common
import bench_decode
import bench_time_to_quality
import bench_train
from nmt import config as config_mod
from nmt.config import Config
from nmt.data.pipeline import load_corpus, prepare_corpus
from nmt.decode.inference import Loaded, load_checkpoint, translate_ids
from nmt.evaluation.run_files import read_run_events
from nmt.run import events
from nmt.run import folder as rundir
from nmt.run.paths import RunPaths
from nmt.score.metrics import score
from nmt.training.loop import Trainer
from nmt.training.run_start import open_run_dir
from nmt.training.timing import time_updates
from nmt.util import runtime, threads
from nmt.util.fileio import read_lines

TRAIN_RUN_NAME = "gpu_report_train"
PACKAGES = ("numpy", "sentencepiece", "sacrebleu", "pydantic", "matplotlib", "triton")
"""Packages whose versions the hardware line records (matplotlib draws each validation's attention map)."""


def package_version(name: str) -> Optional[str]:
    """The installed version of ``name``, or None where it is not installed (nothing is imported)."""
    try:
        return importlib.metadata.version(name)
    except importlib.metadata.PackageNotFoundError:
        return None


def fresh_memory(device: torch.device) -> None:
    """Free what earlier measurements left and restart the GPU's peak counter, so each peak is its own."""
    gc.collect()
    if device.type == "cuda":
        torch.cuda.empty_cache()
        torch.cuda.reset_peak_memory_stats(device)


def peak_memory(device: torch.device) -> dict[str, Optional[float]]:
    """Peak GPU memory allocated by tensors since :func:`fresh_memory` (None on CPU), and the
    process's resident-memory high-water mark (since it started: cumulative over measurements)."""
    gpu = round(torch.cuda.max_memory_allocated(device) / 2**20, 1) if device.type == "cuda" else None
    return {"peak_gpu_mb": gpu, "peak_rss_mb": common.peak_rss_mb()}


def hardware(device: torch.device, command: str, minutes: float) -> dict[str, Any]:
    """The ``hardware`` line: what every figure of the report depends on besides its settings."""
    cuda = device.type == "cuda"
    props = torch.cuda.get_device_properties(device) if cuda else None
    return {
        "event": "hardware",
        **runtime.hardware(device),
        "cuda": torch.version.cuda,
        "cudnn": torch.backends.cudnn.version() if cuda else None,
        "gpu_memory_mb": round(props.total_memory / 2**20) if props else None,
        "compute_capability": f"{props.major}.{props.minor}" if props else None,
        "bf16": bool(cuda and torch.cuda.is_bf16_supported()),
        "python": platform.python_version(),
        "packages": {name: package_version(name) for name in PACKAGES},
        "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "command": command,
        "budget_s": 60 * minutes,
    }


def prepare_data(config: str, overrides: list[str]) -> dict[str, Any]:
    """Prepare the config's corpus (reused when already prepared with the same settings)."""
    cfg = config_mod.load(config, overrides)
    manifest = prepare_corpus(cfg.data)
    return {
        "event": "data",
        "corpus": cfg.data.corpus,
        "pair": cfg.data.pair,
        "folder": str(cfg.data.prepared_dir),
        "pairs": {split: info["pairs"] for split, info in manifest["splits"].items()},
    }


@dataclass(frozen=True)
class Throughput:
    """One training-throughput measurement: a bench_train variant of a config, compiled or not."""

    model: str  # the name in the table
    config: str
    variant: str  # a bench_train variant name
    compile: str  # train.compile: off, default or reduce-overhead

    @property
    def label(self) -> str:
        return self.model if self.compile == "off" else f"{self.model}, compile {self.compile}"


def measure_throughput(spec: Throughput, overrides: list[str], steps: int, device: torch.device) -> dict[str, Any]:
    """Steady-state training speed of ``spec`` on the first ``steps`` batches of epoch 0's order.

    One untimed pass over those batches first (torch.compile compiles, reduce-overhead records
    a CUDA graph for every batch shape it will meet, the allocator and cuDNN settle), then the
    timed pass over the same batches: :func:`nmt.training.timing.time_updates` with
    ``same_batches``.  Batches are collated and on the device before either.
    """
    variant = bench_train.parse_variant(spec.variant)
    args = argparse.Namespace(config=spec.config, set=[*overrides, f"train.compile='{spec.compile}'"])
    cfg = bench_train.load_config(args, variant)
    t = cfg.train
    threads.configure(t.threads)
    amp = runtime.amp_dtype(device, t.amp)
    corpus = load_corpus(cfg.data, splits=("train",))
    fresh_memory(device)
    timing = time_updates(
        cfg, corpus, updates=steps, warmup=steps, device=device, amp=amp, fast=variant.fast, same_batches=True
    )
    # the GPU peak over the whole measurement (model, untimed pass, timed pass), as :func:`peak_memory` gives elsewhere
    peak_gpu = None if timing.peak_gpu_mb is None else max(timing.peak_gpu_mb, timing.warmup_peak_gpu_mb or 0.0)
    return {
        "event": "throughput",
        "measurement": spec.label,
        "model": spec.model,
        "config": spec.config,
        "variant": spec.variant,
        "arch": cfg.model.arch,
        "compile": t.compile,
        "fast_path": timing.fast_path,
        "params": timing.params,
        "max_tokens": t.max_tokens,
        "updates": steps,
        "tokens": timing.tokens,
        "target_tokens_per_s": round(timing.tokens_per_second, 1),
        "ms_per_update": round(1000 * timing.seconds_per_update, 2),
        "untimed_pass_s": round(timing.warmup_seconds, 2),
        "amp": runtime.amp_name(amp),
        "peak_gpu_mb": peak_gpu,
        "peak_rss_mb": common.peak_rss_mb(),
    }


def train_config(
    config: str, overrides: list[str], out_dir: Path, updates: int, valid_every: int, minutes: float
) -> Config:
    """The config of the report's training run: ``updates`` updates or ``minutes``, whichever comes first."""
    return config_mod.load(
        config,
        [
            *overrides,
            f"name={TRAIN_RUN_NAME}",
            f"runs_dir={out_dir / 'runs'}",
            f"train.max_steps={updates}",
            f"train.time_budget_min={minutes:.4f}",
            f"train.valid_every={valid_every}",
            "train.tensorboard=false",  # not needed here, and one package fewer on the GPU machine
        ],
    )


def train(cfg: Config, config: str, levels: list[float], device: torch.device) -> list[dict[str, Any]]:
    """A fresh run as ``nmt train`` makes it (an earlier report's run is replaced); one
    ``time_to_bleu`` record per level and a ``training`` record, read back from metrics.jsonl."""
    run_dir = Path(cfg.runs_dir) / cfg.name
    fresh_memory(device)
    with rundir.RunLock(run_dir):
        open_run_dir(cfg, run_dir, overwrite=True)
        Trainer(cfg, run_dir, progress=False).fit()
    log = read_run_events(run_dir)
    *level_rows, done = bench_time_to_quality.records(log, levels, config, run_dir)
    speeds = [e.tok_s for e in events.of_kind(log, events.Train)]
    memory = peak_memory(device)
    rows = [{**row, "event": "time_to_bleu", "measurement": f"valid BLEU {row['level']:g}"} for row in level_rows]
    done = {
        **{k: v for k, v in done.items() if k != "bench"},
        "event": "training",
        "measurement": f"{config}, {cfg.train.max_steps} updates",
        "max_updates": cfg.train.max_steps,
        "time_budget_s": round(60 * (cfg.train.time_budget_min or 0), 1),
        "valid_every": cfg.train.valid_every,
        "max_tokens": cfg.train.max_tokens,
        "median_update_tok_s": round(statistics.median(speeds), 1) if speeds else None,
        "best_checkpoint": str(RunPaths(run_dir).best),
        **memory,
    }
    return [{**{k: v for k, v in row.items() if k != "bench"}, **memory} for row in rows] + [done]


@functools.lru_cache(maxsize=1)
def trained(checkpoint: Path, device: torch.device) -> Loaded:
    """The trained checkpoint, as ``nmt translate`` loads it; loaded once for all decoding measurements."""
    return load_checkpoint(checkpoint, device)


def test_split(loaded: Loaded) -> tuple[Path, Path]:
    """Source and reference files of the test split (test2016 for Multi30k, else test)."""
    src = bench_decode.default_input(loaded.config)
    return src, src.with_suffix(f".{loaded.config.data.tgt}")


def test_bleu(checkpoint: Path, beam: int, device: torch.device) -> dict[str, Any]:
    """Corpus BLEU and chrF of the whole test split, decoded with the config's batch size."""
    loaded = trained(checkpoint, device)
    src, ref = test_split(loaded)
    sentences = bench_decode.encode(loaded, read_lines(src))
    fresh_memory(device)
    with runtime.Stopwatch(device) as clock:
        results = translate_ids(loaded.model, sentences, loaded.config.decode, device, beam=beam)
    result = score([loaded.tgt_tok.decode(r.ids[0]) for r in results], read_lines(ref))
    return {
        "event": "test_bleu",
        "measurement": f"{src.stem} beam {beam}",
        "split": src.stem,
        "beam": beam,
        "bleu": round(result.bleu, 2),
        "chrf": round(result.chrf, 2),
        "bleu_signature": result.bleu_signature,
        "sentences": len(sentences),
        "batch_size": loaded.config.decode.batch_size,
        "length_penalty": loaded.config.decode.length_penalty,
        "seconds": round(clock.seconds, 2),
        "step": loaded.step,
        **peak_memory(device),
    }


def decode_speed(
    checkpoint: Path, beam: int, batch_size: int, limit: Optional[int], device: torch.device, min_seconds: float
) -> dict[str, Any]:
    """Sentences per second of one (beam, batch size) on the first ``limit`` test sentences (None: all),
    in whole passes over them until ``min_seconds`` are timed."""
    loaded = trained(checkpoint, device)
    src, _ = test_split(loaded)
    sentences = bench_decode.encode(loaded, read_lines(src)[:limit])
    fresh_memory(device)
    measured = bench_decode.bench_setting(loaded, sentences, beam, batch_size, device, min_seconds=min_seconds)
    return {
        "event": "decode",
        "measurement": f"beam {beam}, batch {batch_size}",
        **measured,
        "input": str(src),
        "step": loaded.step,
        "amp": "off",  # decoding runs in fp32 whatever train.amp says
        **peak_memory(device),
    }
