"""Time to quality: validation BLEU against wall-clock minutes, read from runs' metrics.jsonl.

    python scripts/plot_runs.py runs/multi30k_de_en_bahdanau runs/multi30k_de_en_none \\
        --out docs/multi30k_time_to_quality.png

Prints one JSON line per run (its curve) and writes one PNG with a line per run.  The
minutes are the trainer's own ``elapsed_s`` (wall clock of training, validation included).
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from _run_files import read_events
from nmt import events
from nmt.plots import plot_curves


def curve(run_dir: Path, metric: str) -> list[tuple[float, float]]:
    """(minutes, metric) of every validation event of one run."""
    valid = events.of_kind(read_events(run_dir, "plot_runs.py"), events.Valid)
    return [(e.elapsed_s / 60.0, float(getattr(e, metric))) for e in valid]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("runs", nargs="+", type=Path, help="Run directories holding metrics.jsonl.")
    parser.add_argument("--out", type=Path, required=True, help="PNG file to write.")
    parser.add_argument("--metric", default="bleu", choices=("bleu", "chrf", "loss", "ppl"),
                        help="Validation metric on the y axis.")
    args = parser.parse_args()
    series = {}
    for run in args.runs:
        points = curve(run, args.metric)
        series[run.name] = points
        print(json.dumps({"bench": "time_to_quality", "run": str(run), "metric": args.metric,
                          "points": [[round(m, 2), round(v, 2)] for m, v in points]}))
    plot_curves(series, args.out, xlabel="wall-clock minutes of training (validation included)",
                ylabel=f"validation {args.metric} (greedy)", title="Time to quality")


if __name__ == "__main__":
    main()
