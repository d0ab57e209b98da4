"""Training throughput of every attention variant on real batches of a prepared corpus.

For each variant the model is built from the config with that attention, and
``--steps`` full updates (forward, label-smoothed cross-entropy, backward, clip,
optimizer step) are timed after ``--warmup`` untimed ones, on the first batches of
epoch 0's shuffled order: the same batches for every variant (collated and moved to
the device before the clock starts; one batch per update, ``train.accumulate`` is
ignored).  The timing is :func:`nmt.training.timing.time_updates`, which ``nmt compare
--time-updates`` uses too.  Each variant runs in a fresh subprocess (``--one VARIANT``) so that its
``peak_rss_mb`` is its own.  One JSON line per variant on stdout, logs on stderr.

Variants are an attention type (``none bahdanau luong_dot luong_general luong_concat
scaled_dot qkv gaussian``) with optional suffixes: ``+feed`` input feeding on (off
otherwise, so Luong variants take the fast path), ``+lstm`` LSTM cells, ``-fast``
the step-by-step decoder path forced (``fast=False``).  luong_dot and scaled_dot get
``model.bidirectional=false`` (recorded in ``overrides``).  ``transformer`` is the
Transformer (``model.arch=transformer``, the ``model.transformer`` options of the config or
their defaults, transformer_small); the config's RNN-only options are dropped for it.

Commands behind the README figures (from the repository root)::

    python scripts/bench_train.py                      # configs/demo.yaml, all 12 variants
    python scripts/bench_train.py --no-keep-memory     # the same without keep_freed_memory()
    python scripts/bench_train.py --quick              # `make bench`: 3 variants, 10 updates
    python scripts/bench_train.py --config configs/multi30k_de_en_best.yaml --variants bahdanau,transformer

Another corpus: the same with ``--config`` (e.g. a Multi30k config) and ``--set k=v``.
"""

from __future__ import annotations

import argparse
import logging
import re
import subprocess
import sys
from dataclasses import dataclass
from typing import Any, Optional

import _bench_common as common
from nmt import config as config_mod
from nmt.config import Config
from nmt.config.attention_space import ATTENTION_PRESETS, ATTENTION_TYPES, SAME_SIZE_ENERGIES
from nmt.config.model_sections import RNN_ONLY
from nmt.data.pipeline import load_corpus
from nmt.training.timing import time_updates
from nmt.util import runtime, threads
from nmt.util.errors import UserError

log = logging.getLogger("bench_train")
SCRIPT = "bench_train.py"
TRANSFORMER = "transformer"
DEFAULT_VARIANTS = (*ATTENTION_TYPES, "luong_general+feed", "luong_general-fast", "bahdanau+lstm", TRANSFORMER)
QUICK_VARIANTS = ("none", "bahdanau", "luong_general")
SUFFIXES = ("+feed", "+lstm", "-fast")


@dataclass(frozen=True)
class Variant:
    """A named model variant: the config overrides it implies and the decoder path it asks for."""

    name: str
    attention: str
    overrides: tuple[str, ...]
    fast: Optional[bool]  # passed to Seq2Seq.forward: None = automatic, False = step path forced


def parse_variant(name: str) -> Variant:
    """'luong_general+feed' -> Variant; unknown parts are a UserError that lists the options."""
    if name.strip() == TRANSFORMER:
        return Variant(TRANSFORMER, TRANSFORMER, ("model.arch=transformer",), None)
    base, *suffixes = re.split(r"(?=[+-])", name.strip())
    bad = [s for s in suffixes if s not in SUFFIXES]
    if base not in ATTENTION_TYPES or bad:
        raise UserError(
            f"unknown variant '{name}': expected {TRANSFORMER} or one of {', '.join(ATTENTION_TYPES)}, "
            f"optionally followed by {', '.join(SUFFIXES)}"
        )
    overrides = [
        f"model.attention.type={base}",
        f"model.attention.input_feeding={'true' if '+feed' in suffixes else 'false'}",
    ]
    if "+lstm" in suffixes:
        overrides.append("model.cell=lstm")
    point = ATTENTION_PRESETS[base]
    if point["energy"] in SAME_SIZE_ENERGIES and point["query_map"] == point["key_map"] == "identity":
        # unprojected queries and keys are compared directly, so their sizes must agree
        overrides.append("model.bidirectional=false")
    return Variant(name, base, tuple(overrides), False if "-fast" in suffixes else None)


def load_config(args: argparse.Namespace, variant: Optional[Variant] = None) -> Config:
    """The config file, then --set overrides, then the variant's own overrides.

    For the Transformer the file's RNN-only model options are dropped first (the config
    refuses them beside model.arch=transformer).
    """
    overrides = [*args.set, *(variant.overrides if variant else ())]
    if variant is None or variant.attention != TRANSFORMER:
        return config_mod.load(args.config, overrides)
    raw = config_mod.read_yaml(args.config)
    raw["model"] = {k: v for k, v in (raw.get("model") or {}).items() if k not in RNN_ONLY}
    for assignment in overrides:
        config_mod.apply_override(raw, assignment)
    return config_mod.from_dict(raw)


def bench_variant(args: argparse.Namespace, variant: Variant, keep_memory: bool) -> dict[str, Any]:
    """Build, warm up and time one variant (:func:`nmt.training.timing.time_updates`); returns its JSON record."""
    cfg = load_config(args, variant)
    threads.configure(args.threads or cfg.train.threads)
    device = runtime.select_device(args.device)
    amp = runtime.amp_dtype(device, args.amp)
    corpus = load_corpus(cfg.data, splits=("train",), progress=True)
    timing = time_updates(
        cfg, corpus, updates=args.steps, warmup=args.warmup, device=device, amp=amp, fast=variant.fast
    )
    log.info("%s: loss per token %.3f -> %.3f", variant.name, timing.loss_first, timing.loss_last)

    m, t, rnn = cfg.model, cfg.train, cfg.model.arch == "rnn"
    record = {
        "bench": "train",
        "variant": variant.name,
        "arch": m.arch,
        "attention": m.attention.type if rnn else "multi-head scaled dot",
        "style": m.attention.resolved_style if rnn else None,
        "input_feeding": m.attention.input_feeding and rnn,
        "fast_path": timing.fast_path,
        "cell": m.cell if rnn else None,
        "bidirectional": m.bidirectional and rnn,
        "overrides": list(variant.overrides),
        "params": timing.params,
        "target_tokens_per_s": round(timing.tokens_per_second, 1),
        "ms_per_update": round(1000 * timing.seconds_per_update, 2),
        "updates": args.steps,
        "warmup": args.warmup,
        "tokens": timing.tokens,
        "config": args.config,
        "set": list(args.set),
        "max_tokens": t.max_tokens,
        "amp": runtime.amp_name(amp),
        "compile": t.compile,
        "peak_rss_mb": common.peak_rss_mb(),
        "isolated": args.one is not None,
    }
    if timing.peak_gpu_mb is not None:
        record["peak_gpu_mb"] = timing.peak_gpu_mb
    return {**record, **common.environment(device, keep_memory)}


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--config",
        default="configs/demo.yaml",
        help="Experiment YAML whose data, model and train sections are used (default: configs/demo.yaml).",
    )
    parser.add_argument(
        "--set",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="Config override, e.g. --set train.max_tokens=3000 (repeatable).",
    )
    parser.add_argument(
        "--variants",
        default=None,
        help="Comma-separated variants (default: all 12; with --quick: " + ",".join(QUICK_VARIANTS) + ").",
    )
    parser.add_argument("--steps", type=int, default=None, help="Timed updates per variant (default: 50; --quick: 10).")
    parser.add_argument(
        "--warmup", type=int, default=None, help="Untimed updates before them (default: 5; --quick: 2)."
    )
    parser.add_argument(
        "--amp",
        choices=("auto", "off", "bf16", "fp16"),
        default="auto",
        help="Mixed precision on CUDA (auto = bf16 where supported); always off on CPU (default: auto).",
    )
    parser.add_argument(
        "--one",
        metavar="VARIANT",
        default=None,
        help="Run only this variant in this process (what the parent runs per subprocess).",
    )
    parser.add_argument(
        "--in-process",
        action="store_true",
        help="Run all variants in this process (faster start; peak_rss_mb is then cumulative).",
    )
    common.add_common_options(parser, f"variants {','.join(QUICK_VARIANTS)}, 2 warm-up and 10 timed updates")
    return parser


def main(argv: Optional[list[str]] = None) -> None:
    argv = sys.argv[1:] if argv is None else list(argv)
    args = build_parser().parse_args(argv)
    keep_memory = common.start(args)
    names = common.parse_list(args.variants) if args.variants else QUICK_VARIANTS if args.quick else DEFAULT_VARIANTS
    args.steps = args.steps if args.steps is not None else (10 if args.quick else 50)
    args.warmup = args.warmup if args.warmup is not None else (2 if args.quick else 5)
    if args.steps < 1 or args.warmup < 0:
        common.fail(SCRIPT, f"--steps must be at least 1 and --warmup at least 0 (got {args.steps}, {args.warmup})")
    try:
        variants = [parse_variant(n) for n in ([args.one] if args.one else names)]
        for variant in variants:  # check every combination before spending time on any
            load_config(args, variant)
        if args.one or args.in_process:
            for variant in variants:
                common.emit(bench_variant(args, variant, keep_memory))
            return
    except UserError as exc:
        common.fail(SCRIPT, str(exc))
    failed = []
    for variant in variants:  # a fresh process each, so peak memory is per variant
        proc = subprocess.run([sys.executable, __file__, *argv, "--one", variant.name])
        if proc.returncode != 0:
            failed.append(variant.name)
    if failed:
        common.fail(SCRIPT, f"variant(s) failed: {', '.join(failed)} (see the messages above)")


if __name__ == "__main__":
    main()
