"""A grouped comparison: the same arms and seeds compared in several groups (one ``nmt compare``
folder per group, e.g. per language pair), tabulated per group and across the groups.

:func:`collect` reads one record per run from ``ROOT/<group>`` folders (each with its
``report/report.json`` and its runs' ``compare-<split>/scored.json``) and refuses groups whose
arms or baselines differ; :func:`tables` turns records into Markdown: per group, each arm's mean
BLEU over seeds ± its 95% t interval, its difference to the baseline ± the interval of the paired
differences, the paired t-test over seeds and its rank; over two or more groups, a summary (ΔBLEU
and rank per group) with Kendall's tau-b between the groups' rankings (:mod:`nmt.score.seed_stats`)
and the statistics across them (:mod:`nmt.score.across`): each arm's pooled difference with a
t interval over the groups, the groups and seed pairs where it is positive, the partial-conjunction
replicability count, Holm's adjusted p-values within each group, and Kendall's W with Friedman's
test; then the combined test per group and the power of the seed design
(:mod:`nmt.comparison.groups_noise`).  A record names its group ``pair`` (the field the published
measurements use); the tables say "pairs" alike.  ``nmt compare-groups`` and ``docs_build/pairs_table.py`` both go through here.
"""

from __future__ import annotations

import itertools
import json
import statistics
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Optional

from nmt.comparison.groups_devices import device_table, rerun_table
from nmt.comparison.groups_noise import Grouped, Record, combined_table, seed_power_lines
from nmt.comparison.groups_pooling import one_family, pools_table, widest_family
from nmt.comparison.read_back import read_report, read_scored
from nmt.config.variants import run_name
from nmt.evaluation.record import RECORD
from nmt.run import events
from nmt.run.paths import REPORT, SCORED, RunPaths, report_json
from nmt.score.across import holm, kendall_w, pooled_effect, replicability_count
from nmt.score.seed_stats import kendall_tau, mean_interval, paired_t_test
from nmt.util.errors import UserError
from nmt.util.fileio import atomic_write_bytes, read_json_lines
from nmt.util.out_paths import check_can_create
from nmt.util.owned import check_ours, claim

PAIR_ORDER = ("de-en", "en-de", "fr-en", "cs-en")
"""The default order of groups in the tables: these language pairs first, any other group after them by name."""


def variant_flops(config: Optional[str], arm_overrides: list[str]) -> float:
    """Forward FLOPs per target token of the model an arm's config builds (:mod:`nmt.model.cost`),
    at data.vocab_size on both sides: the figure depends on the architecture, not on the weights."""
    from nmt import config as config_mod
    from nmt.model.build import build_model
    from nmt.model.cost import flops_per_target_token

    cfg = config_mod.load(Path(config) if config else None, arm_overrides)
    vocab = cfg.data.vocab_size
    return flops_per_target_token(build_model(cfg.model, vocab, vocab))


def _plan(folder: Path) -> dict[str, Any]:
    """The group's report.json, every field :func:`collect` reads checked (:mod:`nmt.comparison.read_back`)."""
    return read_report(report_json(folder / REPORT), f"rerun nmt compare --runs-dir {folder}")


def run_names(folder: Path) -> dict[tuple[str, int], str]:
    """(arm, seed) -> the run folder's name, as the comparison's record names them: an arm of a sweep
    (``bahdanau model.attention.normalize=sparsemax``) trains in a folder named otherwise
    (``bahdanau_model.attention.normalize-sparsemax_s4``); empty without a record (then the arm's name)."""
    path = folder / REPORT / f"{RECORD}.json"
    if not path.is_file():
        return {}
    try:
        detail = json.loads(path.read_text(encoding="utf-8")).get("run_detail") or []
        pairs = {(str(d["arm"]), int(d["seed"])): str(d["run"]) for d in detail}
    except (ValueError, TypeError, KeyError, AttributeError, RecursionError):
        raise UserError(f"{path}: not a record nmt compare writes (run_detail); rerun nmt compare") from None
    bad = next((name for name in pairs.values() if Path(name).name != name or name in ("", ".", "..")), None)
    if bad is not None:
        raise UserError(f"{path}: run_detail names a run {bad[:80]!r} that is not a folder name; rerun nmt compare")
    return pairs


def _events(run: Path) -> list[events.Event]:
    """The run's events; a metrics.jsonl that is not one is a line naming it."""
    try:
        return events.read(run)
    except ValueError as exc:
        raise UserError(f"{str(exc)[:300]}; rerun nmt compare") from None


def check_same_arms(plans: dict[str, dict[str, Any]]) -> None:
    """Refuse, in one line, groups whose arms or baseline differ from the first group's."""
    first, *others = plans
    arms, baseline = sorted(plans[first]["arms"]), plans[first]["baseline"]
    for group in others:
        theirs, their_baseline = sorted(plans[group]["arms"]), plans[group]["baseline"]
        if theirs != arms or their_baseline != baseline:
            raise UserError(
                f"group {group} compares {', '.join(theirs)} against {their_baseline}, group {first} "
                f"{', '.join(arms)} against {baseline}: every group needs the same arms and baseline"
            )


def collect(root: Path, notes: Optional[dict[str, str]] = None) -> list[Record]:
    """One record per run of every comparison folder ``root/<group>`` (``notes`` added to each)."""
    root = Path(root)
    folders = sorted(p.parent.parent for p in root.glob(f"*/{REPORT}/{report_json(Path(REPORT)).name}"))
    if not folders:
        raise UserError(
            f"no <group>/report/report.json under {root}; run nmt compare --runs-dir {root}/<group> once per group"
        )
    reports = {folder.name: _plan(folder) for folder in folders}
    check_same_arms({group: report["plan"] for group, report in reports.items()})
    records = []
    for folder in folders:
        plan = reports[folder.name]["plan"]
        rows = reports[folder.name]["variants"]
        base_seeds = {s for r in rows if r["variant"] == plan["baseline"] for s in r["seeds"]}
        names = run_names(folder)
        for row in rows:
            overrides = [*plan["overrides"], *plan["arms"][row["variant"]]["train"]]
            for index, seed in enumerate(row["seeds"]):
                run = folder / names.get((row["variant"], seed), f"{run_name(row['variant'])}_s{seed}")
                result = read_scored(
                    RunPaths(run).compare_folder(plan["split"]) / SCORED, f"rerun nmt compare --runs-dir {folder}"
                )
                starts = events.of_kind(_events(run), events.Start)
                flops = result.get("flops_per_token")  # scores saved before it was counted: the arm's model
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
                        "p_ar": row.get("p_ar_seeds"),  # the arm's combined test, over the seeds it shares
                        "ar_seeds": [s for s in row["seeds"] if s in base_seeds],  # with the baseline
                        "updates": result["updates"],
                        "best_step": result["best_step"],
                        "params": result["params"],
                        "flops_per_token": variant_flops(plan["config"], overrides) if flops is None else flops,
                        "train_s": result["train_s"],
                        "device_name": starts[0].hardware.get("device_name") if starts else None,
                        "amp": starts[0].amp if starts else None,
                        "torch": starts[0].hardware.get("torch") if starts else None,
                        "bleu_signature": result["bleu_signature"],
                        **(notes or {}),
                    }
                )
    return records


def records_jsonl(records: list[Record]) -> str:
    """The records as JSON lines, one run a line (what :func:`read_records` reads back)."""
    return "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records)


def read_records(paths: list[Path]) -> list[Record]:
    """The records of JSON lines files, in order."""
    return [record for _, record in read_json_lines(paths)]


def _where(record: Record) -> str:
    """A run's device and code version, as its record names them."""
    return f"{record.get('device_name') or 'no device named'}, commit {record.get('commit') or 'not named'}"


def by_group(records: list[Record], order: tuple[str, ...] = PAIR_ORDER) -> Grouped:
    """records as {group: {arm: {seed: record}}}, groups in ``order`` then by name."""
    table: Grouped = {}
    for r in records:
        runs = table.setdefault(r["pair"], {}).setdefault(r["variant"], {})
        if r["seed"] in runs:  # a second run of one seed would silently replace the first
            raise UserError(
                f"{r['pair']} {r['variant']} seed {r['seed']} is in the records twice ({_where(runs[r['seed']])}; "
                f"{_where(r)}): a table holds one run per group, arm and seed"
            )
        runs[r["seed"]] = r
    ordered = sorted(table, key=lambda p: (order.index(p) if p in order else len(order), p))
    return {p: table[p] for p in ordered}


def group_rows(variants: dict[str, dict[int, Record]]) -> list[dict[str, Any]]:
    """Each arm of one group: mean ± interval, Δ to the baseline ± interval, p over seeds, rank."""
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
                "test": paired_t_test(  # on the seeds both hold: seed k of the arm against seed k of the baseline
                    [runs[s]["bleu"] for s in seeds if s in base], [base[s]["bleu"] for s in seeds if s in base]
                ),
                "baseline": variant == baseline,
                "params": first["params"],
                "mflops": first.get("flops_per_token", float("nan")) / 1e6,
            }
        )
    ranked = sorted(rows, key=lambda r: -r["bleu"].mean)
    for rank, row in enumerate(ranked, 1):
        row["rank"] = rank
    return rows


def group_table(pair: str, rows: list[dict[str, Any]], any_record: Record) -> list[str]:
    """One group's table under a line naming its split, beam, updates, seeds and config."""
    seeds = rows[0]["seeds"]
    config = f"`{any_record['config']}`" if any_record["config"] else "the default config"
    lines = [
        f"**{pair}** ({any_record['split']}, beam {any_record['beam']}, {any_record['updates']} updates, "
        f"seeds {', '.join(map(str, seeds))}; {config})",
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
    """Each arm's ΔBLEU and rank in each group, then Kendall's tau-b between the groups' rankings."""
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
    """Kendall's tau-b of the mean-BLEU rankings of ``variants`` between every two groups, and their mean."""
    tau = {}
    for a, b in itertools.combinations(pairs, 2):  # tau-b is symmetric: once per two groups
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


def across_groups(grouped: Grouped, tables: dict[str, list[dict[str, Any]]]) -> list[str]:
    """Each arm's effect pooled over the groups (:mod:`nmt.score.across`): the mean of its per-group
    differences with a t interval over the groups, the groups and seed pairs where it is positive, and
    the partial-conjunction count; Holm within each group; then Kendall's W with Friedman's test."""
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


def tables(records: list[Record], order: tuple[str, ...] = PAIR_ORDER, against: Optional[list[Record]] = None) -> str:
    """The Markdown of ``records``: one table per group (in ``order``), over two or more groups the
    summary and the statistics across them, and then the combined test per group and the power line
    (:mod:`nmt.comparison.groups_noise`) where the records hold them.  ``against``: records of the
    same groups run on another device or code version, set beside these as a block
    (:func:`~nmt.comparison.groups_devices.rerun_table`) and in no other table."""
    if not records:
        raise UserError("no runs to tabulate: the records are empty")
    grouped = by_group(records, order)
    rows = {p: group_rows(v) for p, v in grouped.items()}
    lines: list[str] = []
    for pair, variant_runs in grouped.items():
        any_record = next(iter(next(iter(variant_runs.values())).values()))
        lines += [*([""] if lines else []), *group_table(pair, rows[pair], any_record)]
    if len(rows) >= 2:  # one group has no ranking to compare with another
        lines += ["", *summary(rows), "", *across_groups(grouped, rows)]
        for part in (pools_table(grouped, rows), widest_family(rows), device_table(grouped, rows)):
            lines += ["", *part] if part else []
    else:  # one group: its own family, named, and whether its seeds' devices move its arms apart
        for part in (one_family(rows), device_table(grouped, rows)):
            lines += ["", *part] if part else []
    if against:
        block = rerun_table(grouped, by_group(against, order), rows)
        if not block:
            raise UserError("the records set against these share no group and arm with them: nothing to compare")
        lines += ["", *block]
    for part in (combined_table(grouped), seed_power_lines(grouped)):
        lines += ["", *part] if part else []
    return "\n".join(lines) + "\n"


@dataclass(frozen=True)
class GroupsResult:
    """What :func:`compare_groups` wrote: the records, their tables, and the two files."""

    records: list[Record]
    text: str
    jsonl: Path
    markdown: Path


OUT_FILES = ("groups.jsonl", "groups.md")


def compare_groups(root: Path, out: Optional[Path] = None) -> GroupsResult:
    """Collect ``root``'s groups and write ``out/groups.jsonl`` (the records) and ``out/groups.md``
    (:func:`tables`); ``out`` defaults to ``root/groups``.  The output folder is checked first."""
    if not Path(root).is_dir():
        raise UserError(f"{root}: no such folder")
    folder = Path(out) if out is not None else Path(root) / "groups"
    check_can_create(folder, "--out")
    check_ours(folder, OUT_FILES, "--out")
    records = collect(root)
    text = tables(records)
    claim(folder, OUT_FILES)
    jsonl, markdown = (folder / name for name in OUT_FILES)
    atomic_write_bytes(jsonl, records_jsonl(records).encode("utf-8"))
    atomic_write_bytes(markdown, text.encode("utf-8"))
    return GroupsResult(records, text, jsonl, markdown)
