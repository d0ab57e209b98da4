"""What an attention does to repeated and dropped words: BLEU, the length ratio and repeated n-grams per run.

Reads the test translations an ``nmt compare`` left in each run folder (``compare-<split>/scored.json``)
and prints one JSON line per run: BLEU, the length ratio (hypothesis / reference words in BLEU's
tokens: below 1, words were dropped or sentences cut short), and the share of translations holding a
repeated 2-gram and 3-gram (words translated twice), beside the references' own shares (the
references repeat n-grams too). ``--table`` reads such lines back and prints the mean per variant over
its seeds as a markdown table.

    python scripts/coverage_effects.py runs/state_cpu/de-en/*_s[456] > effects.jsonl
    python scripts/coverage_effects.py --table effects.jsonl
"""

from __future__ import annotations

import argparse
import json
import re
import statistics
import sys
from pathlib import Path

from sacrebleu.metrics import BLEU

from nmt.score.repetition import repeated_ngram_rate

RUN = re.compile(r"^(?P<variant>.+)_s(?P<seed>\d+)$")


def measure(run: Path, split: str) -> dict:
    """The numbers of one run folder's translations of ``split``."""
    scored = json.loads((run / f"compare-{split}" / "scored.json").read_text(encoding="utf-8"))["result"]
    hyps, refs = scored["hyps"], scored["refs"]
    bleu = BLEU().corpus_score(hyps, [refs])
    match = RUN.match(run.name)
    return {
        "run": run.name,
        "variant": match["variant"] if match else run.name,
        "seed": int(match["seed"]) if match else None,
        "split": split,
        "bleu": round(float(scored["bleu"]), 2),
        "length_ratio": round(bleu.sys_len / bleu.ref_len, 4),
        "repeated_2gram_pct": round(repeated_ngram_rate(hyps, 2), 2),
        "repeated_3gram_pct": round(repeated_ngram_rate(hyps, 3), 2),
        "reference_repeated_2gram_pct": round(repeated_ngram_rate(refs, 2), 2),
        "reference_repeated_3gram_pct": round(repeated_ngram_rate(refs, 3), 2),
        "sentences": len(hyps),
    }


def table(lines: list[dict]) -> str:
    """Mean over seeds per variant, in the order the variants first appear."""
    keys = ("bleu", "length_ratio", "repeated_2gram_pct", "repeated_3gram_pct")
    variants = list(dict.fromkeys(line["variant"] for line in lines))
    seeds = sorted({line["seed"] for line in lines if line["seed"] is not None})
    out = [
        f"seeds {', '.join(map(str, seeds))}; references: repeated 2-gram "
        f"{lines[0]['reference_repeated_2gram_pct']:.1f}%, 3-gram {lines[0]['reference_repeated_3gram_pct']:.1f}%",
        "",
        "| variant | BLEU | length ratio | repeated 2-gram (% of sentences) | repeated 3-gram (%) |",
        "| --- | ---: | ---: | ---: | ---: |",
    ]
    for variant in variants:
        rows = [line for line in lines if line["variant"] == variant]
        mean = {k: statistics.mean(r[k] for r in rows) for k in keys}
        out.append(
            f"| {variant} | {mean['bleu']:.2f} | {mean['length_ratio']:.3f} | "
            f"{mean['repeated_2gram_pct']:.2f} | {mean['repeated_3gram_pct']:.2f} |"
        )
    return "\n".join(out)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("runs", nargs="+", type=Path, help="run folders of a comparison (or, with --table, JSON lines)")
    parser.add_argument("--split", default="test2016", help="the split the comparison translated (default test2016)")
    parser.add_argument("--table", action="store_true", help="read JSON lines and print the mean per variant")
    args = parser.parse_args(argv)
    if args.table:
        lines = [
            json.loads(line) for path in args.runs for line in path.read_text(encoding="utf-8").splitlines() if line
        ]
        print(table(lines))
        return 0
    for run in args.runs:
        print(json.dumps(measure(run, args.split)), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
