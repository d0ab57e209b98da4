"""What the benchmarks share: common options, the environment record, peak memory, one-line errors, output.

Each benchmark prints one JSON object per measurement on stdout and logs on stderr, so
``python scripts/bench_x.py ... > results.jsonl`` keeps only the measurements.
"""

from __future__ import annotations

import argparse
import json
import logging
import resource
import sys
from typing import Any, NoReturn

import torch

from nmt.util import runtime

log = logging.getLogger("bench")


def add_common_options(parser: argparse.ArgumentParser, quick_help: str) -> None:
    """Options every benchmark takes; ``quick_help`` says what --quick does in this script."""
    parser.add_argument(
        "--device",
        choices=("auto", "cpu", "cuda"),
        default="auto",
        help="Where to run: auto = CUDA when present, else CPU (default: auto).",
    )
    parser.add_argument(
        "--threads",
        type=int,
        default=0,
        metavar="N",
        help="Torch intra-op CPU threads; 0 = one per core other processes leave free, "
        "re-checked every few seconds (bench_train: the config's train.threads) (default: 0).",
    )
    parser.add_argument(
        "--no-keep-memory",
        action="store_true",
        help="Do not call nmt.util.runtime.keep_freed_memory(), to measure what it saves "
        "(glibc then returns freed tensor memory to the OS after every step).",
    )
    parser.add_argument("--quick", action="store_true", help=f"A short run for `make bench`: {quick_help}.")


def start(args: argparse.Namespace) -> bool:
    """First thing in main(): allocator settings and stderr logging; returns keep_memory."""
    keep = False if args.no_keep_memory else runtime.keep_freed_memory()
    logging.basicConfig(level=logging.INFO, stream=sys.stderr, format="%(name)s: %(message)s")
    if not args.no_keep_memory and not keep:
        log.warning("keep_freed_memory() did not take (not glibc, or MALLOC_* set); keep_memory=false")
    return keep


def fail(script: str, message: str) -> NoReturn:
    """One line on stderr and exit status 2, for mistakes in the command line or its inputs."""
    print(f"{script}: error: {message}", file=sys.stderr)
    sys.exit(2)


def one_line_parser(script: str, description: str) -> argparse.ArgumentParser:
    """An argument parser whose command-line mistakes end in one line on stderr and exit 2, like the
    script's own checks (:func:`fail`)."""

    class OneLineParser(argparse.ArgumentParser):
        def error(self, message: str) -> NoReturn:
            fail(script, message)

    return OneLineParser(description=description)


def check_min_seconds(script: str, seconds: float) -> None:
    """``--min-seconds`` of the decoding benchmarks: 0 (one pass) or more, else a one-line exit."""
    if seconds < 0:
        fail(script, f"--min-seconds must be 0 or more (got {seconds:g})")


def parse_list(text: str, kind: type = str) -> list[Any]:
    """'1,5' -> [1, 5]; empty items are ignored."""
    return [kind(item.strip()) for item in text.split(",") if item.strip()]


def environment(device: torch.device, keep_memory: bool) -> dict[str, Any]:
    """The settings a figure depends on besides the benchmark's own parameters."""
    return {"keep_memory": keep_memory, **runtime.hardware(device)}


def peak_rss_mb() -> float:
    """High-water mark of this process's resident memory in MiB (Linux reports KiB)."""
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return round(peak / (2**20 if sys.platform == "darwin" else 2**10), 1)


def emit(record: dict[str, Any]) -> None:
    """Print one measurement as one JSON line, flushed so parent processes see it at once."""
    print(json.dumps(record), flush=True)
