"""Attention variants across language pairs: one table per pair, a summary, and whether rankings carry over.

Two steps, so that a table can be finished over several sittings from the JSON lines it is made of:

1. ``--collect DIR``: DIR holds one ``nmt compare --runs-dir DIR/<pair>`` folder per language pair
   (each with its report/report.json and its runs' compare-<split>/scored.json); one JSON line per
   run (pair, variant, seed, BLEU, chrF, updates, parameters, forward FLOPs per target token, the
   run's own training seconds, the device it trained on, the sacreBLEU signature) is written to
   ``--out``.
2. ``FILE.jsonl ...``: the tables, in Markdown on stdout.  Per pair: each variant's mean BLEU over
   seeds ± its 95% t interval, its difference to the baseline ± the interval of the paired
   differences, the paired t-test over seeds, and its rank.  Then a summary (each variant's ΔBLEU
   and rank per pair), Kendall's tau-b between the pairs' rankings by mean BLEU
   (:mod:`nmt.score.seed_stats`), and the statistics across pairs (:mod:`nmt.score.across`): each
   variant's pooled difference with its interval over the pairs, where it is positive, the
   partial-conjunction count, Holm's adjusted p-values within each pair, and Kendall's W with
   Friedman's test.

Commands (from the repository root)::

    python docs_build/pairs_table.py --collect runs/pairs --out docs/measurements/pairs_DATE_MACHINE.jsonl \\
        --note machine=H100 --note commit=HASH
    python docs_build/pairs_table.py docs/measurements/pairs_DATE_MACHINE.jsonl

``--module FILE.py`` (with ``--collect``) imports a module that registers an attention the runs
used (docs/adding_an_attention.md).
"""

from __future__ import annotations

import argparse
import itertools
import json
import statistics
import sys
from pathlib import Path
from typing import Any

from nmt.run import events
from nmt.score.across import holm, kendall_w, pooled_effect, replicability_count
from nmt.score.seed_stats import kendall_tau, mean_interval, paired_t_test

SCRIPT = "pairs_table.py"
PAIR_ORDER = ("de-en", "en-de", "fr-en", "cs-en")


def variant_flops(config: str, arm_overrides: list[str]) -> float:
    """Forward FLOPs per target token of the model an arm's config builds (:mod:`nmt.model.cost`),
    at data.vocab_size on both sides: the figure depends on the architecture, not on the weights."""
    from nmt import config as config_mod
    from nmt.model.build import build_model
    from nmt.model.cost import flops_per_target_token

    cfg = config_mod.load(Path(config), arm_overrides)
    vocab = cfg.data.vocab_size
    return flops_per_target_token(build_model(cfg.model, vocab, vocab))


def collect(root: Path, notes: dict[str, str]) -> list[dict[str, Any]]:
    """One record per run of every comparison folder under ``root``."""
    records = []
    folders = sorted(p.parent.parent for p in root.glob("*/report/report.json"))
    if not folders:
        sys.exit(
            f"{SCRIPT}: error: no <pair>/report/report.json under {root}; run nmt compare --runs-dir {root}/<pair>"
        )
    for folder in folders:
        report = json.loads((folder / "report" / "report.json").read_text(encoding="utf-8"))
        plan = report["plan"]
        for row in report["variants"]:
            flops = variant_flops(plan["config"], [*plan["overrides"], *plan["arms"][row["variant"]]["train"]])
            for index, seed in enumerate(row["seeds"]):
                run = folder / f"{row['variant']}_s{seed}"
                scored = json.loads((run / f"compare-{plan['split']}" / "scored.json").read_text(encoding="utf-8"))
                result = scored["result"]
                starts = events.of_kind(events.read(run), events.Start)
                records.append(
                    {
                        "pair": folder.name,
                        "config": plan["config"],
                        "variant": row["variant"],
                        "seed": seed,
                        "baseline": plan["baseline"],
                        "split": plan["split"],
                        "beam": result["beam"],
                        "bleu": round(result["bleu"], 4),
                        "chrf": round(result["chrf"], 4),
                        "p_bootstrap": None if row["p_values"] is None else row["p_values"][index],
                        "updates": result["updates"],
                        "best_step": result["best_step"],
                        "params": result["params"],
                        "flops_per_token": result.get("flops_per_token", flops),
                        "train_s": result["train_s"],
                        "device_name": starts[0].hardware.get("device_name") if starts else None,
                        "amp": starts[0].amp if starts else None,
                        "torch": starts[0].hardware.get("torch") if starts else None,
                        "bleu_signature": result["bleu_signature"],
                        **notes,
                    }
                )
    return records


def by_pair(records: list[dict[str, Any]]) -> dict[str, dict[str, dict[int, dict[str, Any]]]]:
    """records as {pair: {variant: {seed: record}}}, pairs in PAIR_ORDER then by name."""
    table: dict[str, dict[str, dict[int, dict[str, Any]]]] = {}
    for r in records:
        table.setdefault(r["pair"], {}).setdefault(r["variant"], {})[r["seed"]] = r
    order = sorted(table, key=lambda p: (PAIR_ORDER.index(p) if p in PAIR_ORDER else len(PAIR_ORDER), p))
    return {p: table[p] for p in order}


def pair_rows(variants: dict[str, dict[int, dict[str, Any]]]) -> list[dict[str, Any]]:
    """Each variant of one pair: mean ± interval, Δ to the baseline ± interval, p over seeds, rank."""
    baseline = next(r["baseline"] for runs in variants.values() for r in runs.values())
    base = variants[baseline]
    rows = []
    for variant, runs in variants.items():
        seeds = sorted(runs)
        first = runs[seeds[0]]
        rows.append(
            {
                "variant": variant,
                "seeds": seeds,
                "bleu": mean_interval([runs[s]["bleu"] for s in seeds]),
                "test": paired_t_test([runs[s]["bleu"] for s in seeds], [base[s]["bleu"] for s in seeds if s in base]),
                "baseline": variant == baseline,
                "params": first["params"],
                "mflops": first.get("flops_per_token", float("nan")) / 1e6,
            }
        )
    ranked = sorted(rows, key=lambda r: -r["bleu"].mean)
    for rank, row in enumerate(ranked, 1):
        row["rank"] = rank
    return rows


def pair_table(pair: str, rows: list[dict[str, Any]], any_record: dict[str, Any]) -> list[str]:
    seeds = rows[0]["seeds"]
    lines = [
        f"**{pair}** ({any_record['split']}, beam {any_record['beam']}, {any_record['updates']} updates, "
        f"seeds {', '.join(map(str, seeds))}; `{any_record['config']}`)",
        "",
        "| variant | parameters | MFLOPs/token | BLEU (mean ± 95% CI) | ΔBLEU (± 95% CI) | p (paired t, seeds) | rank |",
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    for r in rows:
        delta = "baseline" if r["baseline"] else r["test"].difference.cell(sign=True)
        p = "" if r["baseline"] or r["test"].p is None else f"{r['test'].p:.3f}"
        lines.append(
            f"| {r['variant']} | {r['params']:,} | {r['mflops']:.2f} | {r['bleu'].cell()} | {delta} | {p} | {r['rank']} |"
        )
    return lines


def summary(tables: dict[str, list[dict[str, Any]]]) -> list[str]:
    """Each variant's ΔBLEU and rank on each pair, then Kendall's tau-b between the pairs' rankings."""
    pairs = list(tables)
    variants = [r["variant"] for r in next(iter(tables.values()))]
    cells = {p: {r["variant"]: r for r in rows} for p, rows in tables.items()}
    lines = ["| variant | " + " | ".join(f"{p} ΔBLEU (rank)" for p in pairs) + " | mean rank |"]
    lines.append("| --- |" + " ---: |" * (len(pairs) + 1))
    for v in variants:
        parts = []
        for p in pairs:
            r = cells[p].get(v)
            if r is None:
                parts.append("")
                continue
            delta = "baseline" if r["baseline"] else f"{r['test'].difference.mean:+.2f}"
            parts.append(f"{delta} ({r['rank']})")
        ranks = [cells[p][v]["rank"] for p in pairs if v in cells[p]]
        lines.append(f"| {v} | " + " | ".join(parts) + f" | {statistics.fmean(ranks):.2f} |")
    lines += ["", *tau_table(pairs, variants, cells, "all variants")]
    if "none" in variants and len(variants) > 3:  # none is last everywhere: the ranking among attentions alone
        lines += [
            "",
            *tau_table(pairs, [v for v in variants if v != "none"], cells, "attention variants only (none left out)"),
        ]
    return lines


def tau_table(pairs: list[str], variants: list[str], cells: dict[str, dict[str, Any]], what: str) -> list[str]:
    """Kendall's tau-b of the mean-BLEU rankings of ``variants`` between every two pairs, and their mean."""

    tau = {}
    for a, b in itertools.combinations(pairs, 2):  # tau-b is symmetric: once per two pairs
        shared = [v for v in variants if v in cells[a] and v in cells[b]]
        tau[a, b] = tau[b, a] = kendall_tau(
            [cells[a][v]["bleu"].mean for v in shared], [cells[b][v]["bleu"].mean for v in shared]
        )
    lines = [f"| Kendall's tau-b, {what} | " + " | ".join(pairs) + " |", "| --- |" + " ---: |" * len(pairs)]
    for a in pairs:
        lines.append(f"| {a} | " + " | ".join("" if a == b else f"{tau[a, b]:+.2f}" for b in pairs) + " |")
    taus = [tau[a, b] for a, b in itertools.combinations(pairs, 2)]
    if taus:
        lines += [
            "",
            f"Mean Kendall's tau-b, {what}, over the {len(taus)} pairs of language pairs: {statistics.fmean(taus):+.2f}",
        ]
    return lines


def across_pairs(
    grouped: dict[str, dict[str, dict[int, dict[str, Any]]]], tables: dict[str, list[dict[str, Any]]]
) -> list[str]:
    """Each variant's effect pooled over the pairs (:mod:`nmt.score.across`): the mean of its per-pair
    differences with a t interval over the pairs, the pairs and seed pairs where it is positive, and
    the partial-conjunction count; Holm within each pair; then Kendall's W with Friedman's test."""
    pairs = list(tables)
    cells = {p: {r["variant"]: r for r in rows} for p, rows in tables.items()}
    variants = [r["variant"] for r in next(iter(tables.values()))]
    lines = [
        f"| variant | pooled ΔBLEU (95% CI over {len(pairs)} pairs) | p (t, {len(pairs) - 1} df) | pairs with Δ > 0 "
        "| seed pairs with Δ > 0 | pairs where it holds (partial conjunction, α 0.05) "
        f"| Holm p per pair ({', '.join(pairs)}) |",
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    holm_by_pair = {}
    for p in pairs:
        tested = [
            v for v in variants if v in cells[p] and not cells[p][v]["baseline"] and cells[p][v]["test"].p is not None
        ]
        holm_by_pair[p] = dict(zip(tested, holm([cells[p][v]["test"].p for v in tested])))
    for v in variants:
        shared = [p for p in pairs if v in cells[p]]
        if not shared or cells[shared[0]][v]["baseline"]:
            continue
        effect = pooled_effect([cells[p][v]["test"].difference.mean for p in shared])
        baseline = next(r["variant"] for r in tables[shared[0]] if r["baseline"])
        seed_pairs = [
            grouped[p][v][s]["bleu"] - grouped[p][baseline][s]["bleu"]
            for p in shared
            for s in grouped[p][v]
            if s in grouped[p][baseline]
        ]
        count = replicability_count([cells[p][v]["test"].p for p in shared if cells[p][v]["test"].p is not None])
        p_cell = "-" if effect.p is None else f"{effect.p:.3f}"
        holms = ", ".join(f"{holm_by_pair[p].get(v, float('nan')):.3f}" for p in shared)
        lines.append(
            f"| {v} | {effect.difference.cell(sign=True)} | {p_cell} | {effect.positive} of {effect.groups} "
            f"| {sum(d > 0 for d in seed_pairs)} of {len(seed_pairs)} | {count} | {holms} |"
        )
    means = {p: {v: cells[p][v]["bleu"].mean for v in variants} for p in pairs if all(v in cells[p] for v in variants)}
    if len(means) >= 2:
        w = kendall_w(means)
        lines += [
            "",
            f"Kendall's W, all variants: {w.w:.3f} (Friedman chi-square {w.chi2:.2f}, {w.df} df, p = {w.p:.4f}); mean "
            "ranks " + ", ".join(f"{v} {r:.2f}" for v, r in sorted(w.mean_ranks.items(), key=lambda kv: kv[1])),
        ]
        if "none" in variants and len(variants) > 3:
            attention = kendall_w({p: {v: m for v, m in row.items() if v != "none"} for p, row in means.items()})
            lines += [
                "",
                f"Kendall's W, attention variants only (none left out): {attention.w:.3f} "
                f"(Friedman chi-square {attention.chi2:.2f}, {attention.df} df, p = {attention.p:.4f})",
            ]
    return lines


def tables(records: list[dict[str, Any]]) -> str:
    grouped = by_pair(records)
    rows = {p: pair_rows(v) for p, v in grouped.items()}
    lines: list[str] = []
    for pair, variant_runs in grouped.items():
        any_record = next(iter(next(iter(variant_runs.values())).values()))
        lines += pair_table(pair, rows[pair], any_record) + [""]
    lines += summary(rows)
    if len(rows) >= 2:
        lines += ["", *across_pairs(grouped, rows)]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("jsonl", nargs="*", type=Path, help="JSON lines written by --collect, to tabulate.")
    parser.add_argument("--collect", type=Path, help="Folder of nmt compare folders, one per language pair.")
    parser.add_argument("--out", type=Path, help="With --collect: the JSON lines file to write.")
    parser.add_argument("--note", action="append", default=[], help="KEY=VALUE added to every collected line.")
    parser.add_argument(
        "--module", action="append", default=[], help="A module registering an attention the runs used (nmt --module)."
    )
    args = parser.parse_args(argv)
    if args.collect:
        from nmt.util.registry import allow

        allow(args.module)  # the arms' configs name its attention: their model is built to count FLOPs
        if args.out is None:
            sys.exit(f"{SCRIPT}: error: --collect needs --out FILE.jsonl")
        notes = dict(n.split("=", 1) for n in args.note)
        records = collect(args.collect, notes)
        args.out.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records), encoding="utf-8")
        print(f"wrote {len(records)} runs to {args.out}", file=sys.stderr)
        return
    if not args.jsonl:
        sys.exit(f"{SCRIPT}: error: give JSON lines files to tabulate, or --collect DIR --out FILE")
    records = [
        json.loads(line) for path in args.jsonl for line in path.read_text(encoding="utf-8").splitlines() if line
    ]
    sys.stdout.write(tables(records))


if __name__ == "__main__":
    main()
