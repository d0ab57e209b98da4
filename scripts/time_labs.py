"""Time ``nmt lab NAME --size SIZE`` for each lab, one after the other, each from scratch.

Each lab gets a runs folder of its own under --runs-root (so no lab reuses another's runs, as the
labs "matrices" and "kernel" do by default) and writes its table, figure and numbers to
--out-root/NAME/SIZE (docs/labs/NAME/class holds the committed class-size ones).  The corpus is
prepared once first and timed alone, since every lab after the first finds it prepared.  One line of
JSON per measurement on stdout (wall seconds, the command, the machine, the date)::

    python scripts/time_labs.py --size class --mirror ../shared/data/multi30k --out-root docs/labs \\
        | tee -a docs/measurements/labs_class_$(date +%F)_cpu.jsonl

Run it on an otherwise idle machine: the times are what a class would wait.
"""

from __future__ import annotations

import argparse
import datetime
import json
import shlex
import subprocess
import sys
import time
from pathlib import Path

from nmt.labs import LAB_MODULES
from nmt.util.runtime import machine


def timed(argv: list[str], log: Path) -> tuple[float, int]:
    """Run ``argv`` with its output in ``log``; its wall seconds and exit status."""
    log.parent.mkdir(parents=True, exist_ok=True)
    start = time.perf_counter()
    with log.open("w", encoding="utf-8") as handle:
        status = subprocess.run(argv, stdout=handle, stderr=subprocess.STDOUT).returncode
    return time.perf_counter() - start, status


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("labs", nargs="*", default=list(LAB_MODULES), help="labs to time (default: all)")
    parser.add_argument("--size", default="class", choices=("tiny", "class", "full"))
    parser.add_argument("--mirror", type=Path, help="raw Multi30k files (nmt lab --mirror)")
    parser.add_argument("--out-root", type=Path, default=Path("runs/labs-timed"), help="NAME/SIZE go here")
    parser.add_argument("--runs-root", type=Path, default=Path("runs/labs-timed-runs"), help="NAME/ go here")
    args = parser.parse_args()
    nmt = [sys.executable, "-m", "nmt"]
    mirror = ["--mirror", str(args.mirror)] if args.mirror else []
    base = {"date": datetime.date.today().isoformat(), "machine": machine(), "size": args.size}
    if args.size != "tiny":
        data_root = args.runs_root / "data"
        prepare = [
            *nmt,
            "data",
            "prepare",
            "multi30k",
            "--pair",
            "de-en",
            "--config",
            "configs/multi30k_de_en_class.yaml",
            "--set",
            f"data.root={data_root}",
            *mirror,
        ]
        seconds, status = timed(prepare, args.runs_root / "logs" / "prepare.log")
        print(
            json.dumps(
                {
                    **base,
                    "step": "data prepare",
                    "wall_s": round(seconds, 1),
                    "exit": status,
                    "command": shlex.join(prepare[2:]),
                }
            ),
            flush=True,
        )
    for name in args.labs:
        out = args.out_root / name / args.size
        argv = [
            *nmt,
            "lab",
            name,
            "--size",
            args.size,
            *mirror,
            "--out",
            str(out),
            "--runs-dir",
            str(args.runs_root / name),
            "--no-progress",
        ]
        seconds, status = timed(argv, args.runs_root / "logs" / f"{name}.log")
        print(
            json.dumps(
                {
                    **base,
                    "lab": name,
                    "wall_s": round(seconds, 1),
                    "wall_min": round(seconds / 60, 2),
                    "exit": status,
                    "command": "nmt " + shlex.join(argv[3:]),
                }
            ),
            flush=True,
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
