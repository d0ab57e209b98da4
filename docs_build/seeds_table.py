"""Single models, checkpoint averages and ensembles of one setting over several seeds.

A *setting* is a name prefix ``PREFIX`` whose seeds trained into ``PREFIX_s1``, ``PREFIX_s2``,
... and whose ensembles were scored into ``PREFIX_ens``.  For every candidate (``best``: each
seed's best.pt; ``avg_last5`` / ``avg_best5``: each seed's ``nmt average --last 5`` /
``--best 5``; ``ens-best``, ``ens-avg_last5``: the seeds decoded together) the script reads
``eval-<candidate>-<split>/report.json``, written by::

    nmt eval --checkpoint CKPT [--checkpoint CKPT ...] --split SPLIT --beam 5 --out RUN/eval-<candidate>-<split>

and prints one JSON line per (setting, candidate, split) with the mean, the sample standard
deviation and the values over seeds (an ensemble is one value).  ``--markdown`` prints the
README table.  Selection is by the valid column only; test columns are reported, never used.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from pathlib import Path
from typing import Any, Optional

from nmt.evaluation import run_files
from nmt.util.errors import UserError

SCRIPT = "seeds_table.py"
PER_SEED = ("best", "avg_last5", "avg_best5")
ENSEMBLES = ("best", "avg_last5")


def seed_runs(prefix: Path) -> list[Path]:
    """``PREFIX_s<n>`` folders, by seed."""
    runs = sorted(prefix.parent.glob(prefix.name + "_s*"), key=lambda p: int(p.name.rsplit("_s", 1)[1]))
    if not runs:
        sys.exit(f"{SCRIPT}: error: no runs {prefix}_s<seed>")
    return runs


def read_eval(folder: Path) -> Optional[dict[str, Any]]:
    """The one system scored in ``folder/report.json`` (:func:`nmt.evaluation.run_files.read_eval`);
    None without a report; a malformed report ends the script with one line."""
    try:
        return run_files.read_eval(folder)
    except UserError as exc:
        sys.exit(f"{SCRIPT}: error: {exc}")


def summary(values: list[float]) -> dict[str, Any]:
    return {
        "mean": round(statistics.fmean(values), 2),
        "sd": round(statistics.stdev(values), 2) if len(values) > 1 else None,
        "values": [round(v, 2) for v in values],
    }


def rows(prefix: Path, splits: list[str]) -> list[dict[str, Any]]:
    """One row per candidate and split of the setting ``prefix``; candidates never scored are left out."""
    out = []
    candidates = [(c, seed_runs(prefix), c) for c in PER_SEED]
    candidates += [(f"ens-{c}", [Path(f"{prefix}_ens")], c) for c in ENSEMBLES]
    for name, folders, folder_tag in candidates:
        for split in splits:
            found = [read_eval(f / f"eval-{folder_tag}-{split}") for f in folders]
            scores = [s for s in found if s is not None]
            if len(scores) < len(found):
                continue
            out.append(
                {
                    "bench": "seeds",
                    "setting": prefix.name,
                    "candidate": name,
                    "split": split,
                    "members": len(scores[0]["checkpoints"]),
                    "bleu": summary([s["bleu"] for s in scores]),
                    "chrf": summary([s["chrf"] for s in scores]),
                    "bleu_signature": scores[0]["bleu_signature"],
                }
            )
    return out


def markdown(table: list[dict[str, Any]], splits: list[str]) -> str:
    def cell(row: Optional[dict[str, Any]]) -> str:
        if row is None:
            return "n/a"
        b = row["bleu"]
        return f"{b['mean']:.2f}" + (f" ± {b['sd']:.2f}" if b["sd"] is not None else "")

    index = {(r["setting"], r["candidate"], r["split"]): r for r in table}
    keys = list(dict.fromkeys((r["setting"], r["candidate"]) for r in table))
    lines = [
        "| setting | candidate | " + " | ".join(f"{s} BLEU (beam 5)" for s in splits) + " |",
        "| --- | --- | " + " | ".join("---" for _ in splits) + " |",
    ]
    for setting, candidate in keys:
        cells = [cell(index.get((setting, candidate, s))) for s in splits]
        lines.append(f"| {setting} | {candidate} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("settings", nargs="+", type=Path, help="Setting prefixes, e.g. runs/m30k_base.")
    parser.add_argument("--splits", default="valid,test2016", help="Comma-separated splits (default valid,test2016).")
    parser.add_argument("--markdown", action="store_true", help="Print a Markdown table instead of JSON lines.")
    args = parser.parse_args()
    splits = [s for s in args.splits.split(",") if s]
    table = [row for prefix in args.settings for row in rows(prefix, splits)]
    if not table:
        sys.exit(f"{SCRIPT}: error: no eval-<candidate>-<split>/report.json under {', '.join(map(str, args.settings))}")
    if args.markdown:
        print(markdown(table, splits))
    else:
        for row in table:
            print(json.dumps(row))


if __name__ == "__main__":
    main()
