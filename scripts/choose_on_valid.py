"""Pick a run's model on validation, then read the test split once: best.pt or the average of the last N.

The rule of configs/multi30k_de_en_gpu_reg.yaml: average the last ``--last`` validated
checkpoints (``nmt average``), translate the validation split with best.pt and with the
average (beam ``--beam``), keep the one with the higher validation BLEU (best.pt on a tie), and
translate ``--test`` with that one alone.  Each step is the nmt command a shell would run, so the
files land where they would by hand: ``RUN/checkpoints/avg_lastN.pt`` and
``RUN/eval-{best,avg_lastN}-{split}-b{beam}/``.

Command (from the repository root, after ``nmt train`` wrote RUN)::

    python scripts/choose_on_valid.py runs/multi30k_de_en_gpu_reg --last 5 --beam 5 --test test2016

One JSON line per evaluation on stdout (``event``: ``valid`` for each candidate, ``chosen``,
then ``test``), logs of the nmt commands on stderr.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

from nmt.run.paths import RunPaths, report_json


def nmt(*args: str) -> None:
    """One nmt command in a process of its own, its output on stderr; a failure ends the script."""
    done = subprocess.run([sys.executable, "-m", "nmt", *args], stdout=sys.stderr, check=False)
    if done.returncode != 0:
        sys.exit(f"choose_on_valid.py: nmt {' '.join(args)} exited with status {done.returncode}")


def evaluate(run: Path, checkpoint: Path, name: str, split: str, beam: int) -> dict[str, Any]:
    """BLEU, chrF and the length ratio of one checkpoint on one split, from the report.json nmt eval writes."""
    out = run / f"eval-{name}-{split}-b{beam}"
    nmt("eval", "--checkpoint", str(checkpoint), "--split", split, "--beam", str(beam), "--out", str(out))
    (system,) = json.loads(report_json(out).read_text(encoding="utf-8"))["systems"].values()
    scores = {key: system[key] for key in ("bleu", "chrf", "length_ratio")}
    return {"checkpoint": str(checkpoint), "split": split, "beam": beam, **scores}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("run", type=Path, help="Run folder written by nmt train.")
    parser.add_argument("--last", type=int, default=5, help="Checkpoints to average (default: 5).")
    parser.add_argument("--beam", type=int, default=5, help="Beam size for every evaluation (default: 5).")
    parser.add_argument("--valid", default="valid", help="Split the choice is made on (default: valid).")
    parser.add_argument(
        "--test",
        default="test2016",
        help="Split read once with the chosen model (default: test2016); 'none' reads no test split, to compare "
        "configurations on validation before any of them is read on test.",
    )
    args = parser.parse_args(argv)
    paths = RunPaths(args.run)
    if not paths.best.is_file():
        sys.exit(f"choose_on_valid.py: {paths.best} not found; train the run first")
    avg_name = f"avg_last{args.last}"
    average = paths.checkpoints / f"{avg_name}.pt"
    # --force: a second call (--test none first, then --test SPLIT) replaces this script's own average
    nmt("average", str(args.run), "--last", str(args.last), "-o", str(average), "--force")
    scores = {}
    for name, checkpoint in (("best", paths.best), (avg_name, average)):
        scores[name] = evaluate(args.run, checkpoint, name, args.valid, args.beam)
        print(json.dumps({"event": "valid", "model": name, **scores[name]}), flush=True)
    chosen = avg_name if scores[avg_name]["bleu"] > scores["best"]["bleu"] else "best"
    print(json.dumps({"event": "chosen", "model": chosen, "rule": f"higher {args.valid} BLEU"}), flush=True)
    if args.test == "none":
        return
    test = evaluate(args.run, Path(scores[chosen]["checkpoint"]), chosen, args.test, args.beam)
    print(json.dumps({"event": "test", "model": chosen, **test}), flush=True)


if __name__ == "__main__":
    main()
