"""Training throughput on a quiet machine and beside a busy core, per thread setting.

Users' machines are rarely idle.  OpenMP threads that spin at barriers while waiting for a
thread whose core another process holds can make training an order of magnitude slower.  This
runs ``scripts/bench_train.py`` (one variant) once per setting on the quiet machine and once
with a "hog" process spinning on one core beside it (killed afterwards, bounded by
``--hog-seconds``), and prints one JSON line per measurement with the busy/quiet ratio.

Settings are environment assignments (``KEY=VALUE,KEY=VALUE``; ``default`` for nmt's own
defaults, which follow the cores other processes leave free); ``threads=N`` is not an
environment variable but bench_train's ``--threads N``, a fixed thread count:

    python scripts/bench_busy.py --settings default threads=2 OMP_WAIT_POLICY=PASSIVE,threads=2 --steps 40
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any, Optional

SCRIPT = "bench_busy"
BENCH_TRAIN = Path(__file__).with_name("bench_train.py")
HOG = "import time\nend = time.monotonic() + {seconds}\nwhile time.monotonic() < end:\n    pass\n"


def parse_setting(text: str) -> dict[str, str]:
    """``default`` -> {}; ``A=1,B=2`` -> {"A": "1", "B": "2"}."""
    if text == "default":
        return {}
    pairs = [item.partition("=") for item in text.split(",")]
    if any(not key or not sep for key, sep, _ in pairs):
        print(f"{SCRIPT}: error: setting {text!r}: expected default or KEY=VALUE[,KEY=VALUE]", file=sys.stderr)
        sys.exit(2)
    return {key: value for key, _, value in pairs}


def measure(setting: dict[str, str], train_args: list[str], hog_seconds: Optional[float]) -> dict[str, Any]:
    """One bench_train run under ``setting``; with a spinning hog process when ``hog_seconds``."""
    setting = dict(setting)
    if "threads" in setting:
        train_args = [*train_args, "--threads", setting.pop("threads")]
    env = {**os.environ, **setting}
    hog = None
    if hog_seconds:
        hog = subprocess.Popen([sys.executable, "-c", HOG.format(seconds=hog_seconds)])
    try:
        proc = subprocess.run(
            [sys.executable, str(BENCH_TRAIN), *train_args],
            env=env,
            capture_output=True,
            text=True,
            timeout=hog_seconds or 3600,
        )
    finally:
        if hog is not None:
            hog.kill()
            hog.wait()
    if proc.returncode != 0:
        print(proc.stderr, file=sys.stderr)
        print(f"{SCRIPT}: error: bench_train failed under {setting or 'default'}", file=sys.stderr)
        sys.exit(1)
    return json.loads(proc.stdout.strip().splitlines()[-1])


def main(argv: Optional[list[str]] = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--settings", nargs="+", default=["default"], help="Environment settings to compare (default: default)."
    )
    parser.add_argument("--variant", default="bahdanau", help="bench_train variant (default: bahdanau).")
    parser.add_argument("--config", default="configs/demo.yaml", help="Config (default: configs/demo.yaml).")
    parser.add_argument("--steps", type=int, default=20, help="Timed updates per run (default: 20).")
    parser.add_argument(
        "--hog-seconds",
        type=float,
        default=600.0,
        help="Upper bound on the hog's life; it is killed when its run ends (default: 600).",
    )
    args = parser.parse_args(argv)
    if args.steps < 1 or args.hog_seconds <= 0:
        parser.error("--steps and --hog-seconds must be positive")
    settings = [(text, parse_setting(text)) for text in args.settings]
    train_args = [
        "--variants",
        args.variant,
        "--config",
        args.config,
        "--steps",
        str(args.steps),
        "--warmup",
        "3",
        "--device",
        "cpu",
    ]
    for text, setting in settings:
        quiet = measure(setting, train_args, None)
        busy = measure(setting, train_args, args.hog_seconds)
        for hog, record in ((False, quiet), (True, busy)):
            print(
                json.dumps(
                    {
                        "bench": "busy",
                        "setting": text,
                        "hog": hog,
                        "variant": args.variant,
                        "target_tokens_per_s": record["target_tokens_per_s"],
                        "threads": record["threads"],
                        "busy_over_quiet": round(busy["target_tokens_per_s"] / quiet["target_tokens_per_s"], 3),
                        "cpus": record["cpus"],
                        "device_name": record["device_name"],
                        "torch": record["torch"],
                    }
                ),
                flush=True,
            )


if __name__ == "__main__":
    main()
