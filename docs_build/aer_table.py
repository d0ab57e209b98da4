"""Alignment error on the RWTH gold set: one Markdown table from the JSON lines of scripts/align_rwth.py.

One row per attention read of a variant (an RNN's attention, heads averaged or one head; a
Transformer's decoder layer, heads averaged or one head), over its seeds: AER, precision and recall
in %, and test2016 BLEU, each the mean ± the half-width of its 95% Student's t interval
(``nmt.score.seed_stats.mean_interval``; one run: the value alone).  Then the diagonal baseline and
eflomal's rows (each direction and each join of the two, per tokenization), over their runs.  A row
says which attention it reads and, with ``*``, that it is what ``nmt align`` reads by default (at
the step that predicts each word, pieces summed): lines of another reading or merge rule
(``--readings``, ``--merges``) say theirs.  The corpus a model was trained on comes from its line
(``corpus``; Multi30k for lines written before the field), the BLEU column from its ``<split>_bleu``
field, and where the lines carry ``seen_aer`` (``--seen-src``/``--seen-tgt``) a column gives the AER
on the links whose words the training text holds.

    python docs_build/aer_table.py docs/measurements/align_rwth_DATE_MACHINE.jsonl [more.jsonl ...]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any, Optional

from nmt.score.seed_stats import mean_interval
from nmt.util.errors import UserError
from nmt.util.fileio import read_json_lines

SCRIPT = "aer_table.py"
TOKENS = {"whitespace": "whitespace tokens", "punct": "punctuation split off"}
"""How eflomal's rows name scripts/align_rwth.py's --eflomal-tokens."""
CORPORA = {"multi30k": "Multi30k", "europarl": "the Europarl sample", "tatoeba": "Tatoeba"}
"""How a row names the corpus a model or eflomal was trained on."""


def header(records: list[dict[str, Any]]) -> list[str]:
    """The table's head: AER on seen words where the lines hold it, BLEU of the split they name."""
    seen = any(r.get("seen_aer") is not None for r in records)
    split = bleu_key(records)[: -len("_bleu")]
    names = ["aligner", "attention read", "trained on", "runs", "AER %"]
    names += ["AER % (seen words)"] if seen else []
    names += ["precision %", "recall %", f"{split} BLEU"]
    return ["| " + " | ".join(names) + " |", "| --- | --- | --- | --- |" + " ---: |" * (len(names) - 4)]


def bleu_key(records: list[dict[str, Any]]) -> str:
    """The ``<split>_bleu`` field the model lines carry (test2016_bleu where none does)."""
    keys = sorted({k for r in records for k in r if k.endswith("_bleu")})
    return keys[0] if keys else "test2016_bleu"


def corpus(r: dict[str, Any]) -> str:
    """The corpus a line's model or eflomal was trained on, by name (Multi30k where the line does not say)."""
    name = r.get("corpus") or ("europarl" if "europarl" in str(r.get("train", "")) else "multi30k")
    return CORPORA.get(name, name)


def reading(r: dict[str, Any]) -> str:
    """Which attention a model line reads, in words; ``*`` marks nmt align's default reading."""
    head = "heads averaged" if r.get("head") is None else f"head {r['head']}"
    if r.get("arch") == "transformer":
        what = f"decoder layer {r['layer']} of {r['layers']} (from 0), {head}"
    elif (r.get("heads") or 1) > 1:
        what = f"its attention ({r['heads']} heads), {head}"
    else:
        what = "its attention"
    if r.get("reading", "predict") != "predict":
        what += ", read where the word is input"
    if r.get("merge", "sum") != "sum":
        what += f", pieces merged by {r['merge']}"
    return what + (" *" if r.get("default", True) else "")


def cell(values: list[Optional[float]], scale: float = 100.0) -> str:
    """Mean ± 95% half-width of ``values`` × ``scale`` to one decimal; empty without values."""
    kept = [v * scale for v in values if v is not None]
    if not kept:
        return ""
    interval = mean_interval(kept)
    return f"{interval.mean:.1f}" if interval.half is None else f"{interval.mean:.1f} ± {interval.half:.1f}"


def rows(records: list[dict[str, Any]]) -> list[str]:
    """The table's rows: models by (variant, reading, updates), then the diagonal, then eflomal."""
    seen = any(r.get("seen_aer") is not None for r in records)
    split = bleu_key(records)
    groups: dict[tuple[Any, ...], list[dict[str, Any]]] = {}
    for r in records:
        if r.get("aligner") == "nmt":
            key: tuple[Any, ...] = ("nmt", r["variant"], reading(r), r.get("updates") or r.get("step"), corpus(r))
        elif r.get("aligner") == "diagonal":
            key = ("diagonal",)
        else:
            key = ("eflomal", r["variant"], r.get("train_tokens"), corpus(r))
        groups.setdefault(key, []).append(r)
    order = {"nmt": 0, "diagonal": 1, "eflomal": 2}
    lines = []
    for key, group in sorted(groups.items(), key=lambda kv: order[kv[0][0]]):  # stable: first seen within a kind
        metrics = [cell([r["aer"] for r in group])]
        metrics += [cell([r.get("seen_aer") for r in group])] if seen else []
        metrics += [cell([r["precision"] for r in group]), cell([r["recall"] for r in group])]
        if key[0] == "nmt":
            seeds = sorted(r["seed"] for r in group if r.get("seed") is not None)
            if len(set(seeds)) < len(seeds):  # one run read twice (two files holding it) would count twice
                sys.exit(f"{SCRIPT}: error: {key[1]} ({key[2]}): a seed occurs twice in {seeds}; give each run once")
            runs = f"seed{'s' * (len(seeds) > 1)} {', '.join(map(str, seeds))}"
            bleu = cell([r.get(split) for r in group], scale=1.0)
            label, trained = f"{key[1]} attention", f"{corpus(group[0])} de-en, {key[3]} updates"
            if any(r.get("updates") and r.get("step") not in (None, r["updates"]) for r in group):
                # a checkpoint before the last one was chosen on validation for some seeds
                steps = ", ".join(str(r.get("step")) for r in sorted(group, key=lambda r: r.get("seed") or 0))
                trained += f" (checkpoints chosen on validation: {steps})"
            lines.append(f"| {label} | {key[2]} | {trained} | {runs} | {' | '.join(metrics)} | {bleu} |")
        elif key[0] == "diagonal":
            lines.append(f"| diagonal (reads no words) | | nothing | {len(group)} | {' | '.join(metrics)} | |")
        else:
            tokens = (key[2] or "whitespace").split(",")[0]  # align_rwth --eflomal-tokens
            trained = f"{corpus(group[0])} + the 508 pairs, {TOKENS.get(tokens, tokens + ' tokens')}"
            lines.append(f"| {key[1]} | | {trained} | {len(group)} | {' | '.join(metrics)} | |")
    return lines


def main(argv: Optional[list[str]] = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("jsonl", nargs="+", type=Path, help="JSON lines written by scripts/align_rwth.py.")
    args = parser.parse_args(argv)
    try:
        records = [record for _, record in read_json_lines(args.jsonl)]
    except UserError as exc:
        sys.exit(f"{SCRIPT}: error: {exc}")
    if not records:
        sys.exit(f"{SCRIPT}: error: the files hold no lines")
    sys.stdout.write("\n".join([*header(records), *rows(records)]) + "\n")


if __name__ == "__main__":
    main()
