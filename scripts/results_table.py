"""The results table of finished runs: training time, epochs, size, hardware and test scores.

For each run directory it reads what the repository's own commands wrote there:
``metrics.jsonl`` (from ``nmt train``: the start event's parameters and hardware, the stop
event's wall-clock minutes, epochs and updates, the validation curve) and the
``report.json`` of each evaluation folder (from ``nmt eval --out RUN/eval-greedy`` and
``--out RUN/eval-beam5``).  Prints one JSON line per run; ``--markdown`` prints the
README table instead.  Command behind the README's Multi30k table::

    python scripts/results_table.py runs/multi30k_de_en_* runs/multi30k_en_de_* --markdown

Runs trained before metrics.jsonl had a start event (parameters and hardware unrecorded)
get their parameter count from ``checkpoints/best.pt`` and hardware ``null``.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any, Optional

from _run_files import checkpoint_parameters, read_eval, read_events
from nmt import events

SCRIPT = "results_table.py"
EVALS = {"greedy": "eval-greedy", "beam5": "eval-beam5"}


def first_minutes_at(valid: list[events.Valid], bleu: float) -> Optional[float]:
    """Wall-clock minutes of the first validation with greedy BLEU >= ``bleu``."""
    return next((round(e.elapsed_s / 60, 1) for e in valid if e.bleu >= bleu), None)


def summarize(run_dir: Path) -> dict[str, Any]:
    """One row: what the run was, how long it trained, on what, and how it scored."""
    import yaml

    log = read_events(run_dir, SCRIPT)
    config = yaml.safe_load((run_dir / "config.yaml").read_text(encoding="utf-8"))
    starts, stops = events.of_kind(log, events.Start), events.of_kind(log, events.Stop)
    valid = events.of_kind(log, events.Valid)
    if not stops:
        sys.exit(f"{SCRIPT}: error: {run_dir} has no stop event (still training, or killed?)")
    stop = stops[-1]
    best = max(valid, key=lambda e: e.bleu, default=None)  # the first of equals: best.pt's
    row: dict[str, Any] = {
        "run": str(run_dir), "pair": f"{config['data']['src']}-{config['data']['tgt']}",
        "attention": ("transformer" if config["model"].get("arch") == "transformer"
                      else config["model"]["attention"]["type"]),
        "params": (starts[0].params if starts and starts[0].params is not None
                   else checkpoint_parameters(run_dir / "checkpoints" / "best.pt")),
        "hardware": ({k: starts[0].hardware.get(k) for k in ("device", "device_name", "cpus", "threads", "torch")}
                     if starts else None),
        "train_minutes": round(stop.elapsed_s / 60, 1), "epochs": stop.epoch, "updates": stop.step,
        "stop_reason": stop.reason,
        "best_valid_bleu": round(best.bleu, 2) if best else None,
        "best_valid_minutes": round(best.elapsed_s / 60, 1) if best else None,
        "minutes_to_valid_bleu_30": first_minutes_at(valid, 30.0),
    }
    for name, folder in EVALS.items():
        scores = read_eval(run_dir / folder)
        row[name] = None if scores is None else {
            "split": scores["split"], "bleu": round(scores["bleu"], 2), "chrf": round(scores["chrf"], 2),
            "bleu_signature": scores["bleu_signature"]}
    return row


def markdown(rows: list[dict[str, Any]]) -> str:
    """The README table: one line per run."""
    def score(row: dict[str, Any], name: str, key: str) -> str:
        return f"{row[name][key]:.2f}" if row[name] else "n/a"

    lines = ["| pair | attention | run | parameters | training | best validation BLEU (greedy) "
             "| test BLEU greedy | test BLEU beam 5 | test chrF beam 5 |",
             "| --- | --- | --- | --- | --- | --- | --- | --- | --- |"]
    for row in rows:
        name = Path(row["run"]).name
        lines.append(
            f"| {row['pair']} | {row['attention']} | {name} | {row['params'] / 1e6:.1f}M | "
            f"{row['train_minutes']} min, {row['epochs']} epochs | "
            f"{row['best_valid_bleu']} after {row['best_valid_minutes']} min | {score(row, 'greedy', 'bleu')} | "
            f"{score(row, 'beam5', 'bleu')} | {score(row, 'beam5', 'chrf')} |")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("runs", nargs="+", type=Path, help="Run directories (runs/<name>).")
    parser.add_argument("--markdown", action="store_true", help="Print a Markdown table instead of JSON lines.")
    args = parser.parse_args()
    rows = [summarize(run) for run in args.runs]
    if args.markdown:
        print(markdown(rows))
    else:
        for row in rows:
            print(json.dumps({"bench": "results", **row}))


if __name__ == "__main__":
    main()
