"""Train and score several attention variants on the same data and budget, one JSON line each.

    python scripts/compare_attention.py --minutes 2.5

Each variant is ``nmt train`` on configs/demo.yaml with the variant's ``--set`` overrides
and a wall-clock budget of ``--minutes`` (validation included), then ``nmt eval`` with
greedy search on the test split.  Reported per variant: test BLEU and chrF, parameters,
mean training target tokens/s (from metrics.jsonl), updates and epochs done.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

from _run_files import checkpoint_parameters, read_eval, read_events
from nmt import events

SCRIPT = "compare_attention.py"
# name -> overrides on top of the base config (presets, then self-attention on top of bahdanau)
VARIANTS: dict[str, list[str]] = {
    "none": ["model.attention.type=none"],
    "bahdanau": ["model.attention.type=bahdanau"],
    "luong_dot": ["model.attention.type=luong_dot", "model.bidirectional=false"],
    "luong_general": ["model.attention.type=luong_general"],
    "luong_concat": ["model.attention.type=luong_concat"],
    "scaled_dot": ["model.attention.type=scaled_dot", "model.bidirectional=false"],
    "qkv": ["model.attention.type=qkv", "model.attention.heads=4"],
    "gaussian": ["model.attention.type=gaussian"],
    "bahdanau+enc_self": ["model.attention.type=bahdanau", "model.enc_self_attention.layers=1",
                          "model.enc_self_attention.heads=4"],
    "bahdanau+dec_self": ["model.attention.type=bahdanau", "model.dec_self_attention.enabled=true"],
}


def nmt(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "nmt", "-q", *args], capture_output=True, text=True)


def run_variant(name: str, overrides: list[str], args: argparse.Namespace) -> dict:
    run_name = f"compare_{name.replace('+', '_')}"
    sets = [*overrides, f"name={run_name}", f"train.time_budget_min={args.minutes}",
            f"runs_dir={args.runs_dir}", *args.set]
    train = nmt("train", "--config", args.config, "--overwrite", "--no-progress",
                *[x for s in sets for x in ("--set", s)])
    if train.returncode != 0:
        return {"bench": "compare_attention", "variant": name, "error": train.stderr.strip()[-300:]}
    run_dir = Path(args.runs_dir) / run_name
    evaluated = nmt("eval", "--checkpoint", str(run_dir / "checkpoints" / "best.pt"), "--split", args.split,
                    "--beam", "1", "--out", str(run_dir / "eval"))
    if evaluated.returncode != 0:
        return {"bench": "compare_attention", "variant": name, "error": evaluated.stderr.strip()[-300:]}
    score = read_eval(run_dir / "eval")
    log = read_events(run_dir, SCRIPT)
    speeds = [e.tok_s for e in events.of_kind(log, events.Train)]
    stop = events.of_kind(log, events.Stop)[0]
    params = checkpoint_parameters(run_dir / "checkpoints" / "best.pt")
    return {"bench": "compare_attention", "variant": name, "overrides": overrides, "minutes": args.minutes,
            "test_bleu_greedy": round(score["bleu"], 2), "test_chrf_greedy": round(score["chrf"], 2),
            "params": params, "train_tokens_per_s": round(sum(speeds) / max(len(speeds), 1), 1),
            "updates": stop.step, "epochs": stop.epoch, "split": args.split}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--config", default="configs/demo.yaml", help="Base experiment config.")
    parser.add_argument("--minutes", type=float, default=2.5, help="Training budget per variant (wall clock).")
    parser.add_argument("--variants", default=",".join(VARIANTS), help="Comma-separated subset of: " + ", ".join(VARIANTS))
    parser.add_argument("--split", default="test", help="Split to score with greedy search.")
    parser.add_argument("--runs-dir", default="runs", help="Where the run directories go.")
    parser.add_argument("--set", action="append", default=[], help="Extra override for every variant (repeatable).")
    args = parser.parse_args()
    for name in args.variants.split(","):
        if name not in VARIANTS:
            sys.exit(f"{SCRIPT}: error: unknown variant {name!r}; choose from {', '.join(VARIANTS)}")
        print(json.dumps(run_variant(name, VARIANTS[name], args)), flush=True)


if __name__ == "__main__":
    main()
