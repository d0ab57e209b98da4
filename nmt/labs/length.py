"""Lab "length": BLEU by source sentence length for every attention variant and for none.

Bahdanau et al. (2015, figure 2) showed that an encoder-decoder without attention loses BLEU
as sentences grow, while the attention model holds up on long ones.  This lab trains every
variant of :data:`nmt.config.variants.VARIANTS` (``none`` included) for the same number of
updates and scores each on the test set, so the figure shows that curve for
every energy in the design space.  The labs "matrices" and "kernel" read the same runs through
:func:`variant_plan`, so the run folders of all three match.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Optional

from nmt.comparison.plan import Plan
from nmt.comparison.scores import p_cell, score_run
from nmt.config.variants import VARIANTS
from nmt.labs.base import Lab, LabContext, LabResult
from nmt.run.paths import report_json
from nmt.util.plots import bucket_start

VARIANT_STEPS = 600
"""Updates per run at full size: the same for every variant, so the comparison is at equal training."""

CLASS_VARIANT_STEPS = 250
"""Updates per run at class size, shared by the labs "length", "matrices" and "kernel" (the class-size
config learns more per update: 31 validation BLEU at update 500, docs/measurements/class_2026-11-27_cpu.jsonl)."""

CLASS_VARIANTS = ["none", "bahdanau"]
"""The variants of this lab at class size: the figure's two curves, without and with attention."""

VARIANT_SEEDS = [1]
"""One seed per variant at full size.  The eleven runs took 66 minutes on the reference machine
(2 cores) with ``--jobs 2`` (2026-11-27), so the lab fits one sitting; a second seed would double
that.  How far a second seed moves a run of this size was measured by the comparison of every
variant in docs/results.md (600 updates, two seeds: test BLEU standard deviations of 0.04 to 2.48),
so one seed reads large gaps (none against attention) and not the ordering of attention variants a
BLEU apart; the paired test against ``none`` in the table says which differences this seed's
translations show."""

BASELINE = "none"
"""The encoder-decoder without attention: the reference of the paired tests and the emphasized line."""


def lab_seeds(ctx: LabContext, full: list[int]) -> list[int]:
    """The seeds at this size: ``full``, or its first seed alone at the tiny size, where a run tests
    the code path (a second seed would double the tests' time and show nothing new), and at class
    size, where a second seed would not fit in the class hour."""
    return list(full) if ctx.size == "full" else list(full[:1])


def variant_plan(ctx: LabContext, variants: Optional[list[str]] = None, seeds: Optional[list[int]] = None) -> Plan:
    """The comparison of ``variants`` (default: all of :data:`VARIANTS`, in its order) over ``seeds``
    (default :data:`VARIANT_SEEDS`, the first alone at the tiny size) that the labs "length",
    "matrices" and "kernel" share.

    Every run is the lab's base config with the variant's overrides, trained for
    ``ctx.steps(VARIANT_STEPS, CLASS_VARIANT_STEPS)`` updates into ``ctx.runs_dir``; the folder of a run depends only
    on the variant and the seed, so any subset of variants or seeds reuses the same folders.  The
    test split is scored at the config's beam (5 at full size: Bahdanau et al. also translated
    with a beam search); the baseline of the paired tests is ``none`` when it is compared, else
    the first variant.
    """
    config, overrides = ctx.base()
    chosen = list(variants) if variants is not None else list(VARIANTS)
    return Plan(
        config=config,
        variants=chosen,
        seeds=list(seeds) if seeds is not None else lab_seeds(ctx, VARIANT_SEEDS),
        steps=ctx.steps(VARIANT_STEPS, CLASS_VARIANT_STEPS),
        baseline=BASELINE if BASELINE in chosen else None,
        split=ctx.score_split,
        beam=None,
        runs_dir=ctx.runs_dir,
        overrides=overrides,
        force=ctx.force,
    )


MIN_BUCKET = 20
"""Sentences a length bucket needs before a figure draws it or a table calls it "the longest": BLEU over
a handful of sentences is noise (test2016 has 34 sources of 20-29 words and one of 30-39)."""


def drawn_buckets(sizes: dict[str, int]) -> list[str]:
    """The buckets holding at least :data:`MIN_BUCKET` sentences, shortest first (the largest bucket
    alone when none does, as on a tiny test split)."""
    least = min(MIN_BUCKET, max(sizes.values()))
    return sorted((b for b, n in sizes.items() if n >= least), key=bucket_start)


def bucket_sizes(plan: Plan) -> dict[str, int]:
    """Sentences per source-length bucket of the plan's test split (the same for every run)."""
    arm, seed = plan.arms[0], plan.seeds[0]
    scored = score_run(plan.runs_dir / f"{arm.run_stem}_s{seed}", plan, arm)  # saved by ctx.compare: read back
    return {row["bucket"]: row["n"] for row in scored["by_length"]}


def table(rows: list[dict[str, Any]], sizes: dict[str, int], seeds: list[int]) -> str:
    """The Markdown table: one row per variant, BLEU over the test set (with its spread over seeds when
    there are several), the paired test against the baseline, and BLEU per length bucket."""
    buckets = sorted(sizes, key=bucket_start)
    header = ["variant", "BLEU", f"p vs {BASELINE}", *(f"length {b} ({sizes[b]} sent.)" for b in buckets)]
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    for row in rows:
        bleu = f"{row['bleu']:.2f}" + (f" ± {row['bleu_sd']:.2f}" if len(seeds) > 1 else "")
        cells = [f"{row['bleu_by_length'][b]:.2f}" if b in row["bleu_by_length"] else "n/a" for b in buckets]
        lines.append(f"| {row['variant']} | {bleu} | {p_cell(row['p_values'])} | " + " | ".join(cells) + " |")
    over = "mean ± standard deviation over seeds; per bucket, the mean" if len(seeds) > 1 else f"seed {seeds[0]}"
    return "\n".join(lines) + (
        f"\n\nTest BLEU at beam {rows[0]['beam']}, {over}.  p: sacreBLEU's "
        f"paired bootstrap against {BASELINE} (one per seed).  Source length in words; the figure leaves out "
        f"buckets of fewer than {MIN_BUCKET} sentences.  The best checkpoint of each run by greedy validation BLEU."
    )


def plot(rows: list[dict[str, Any]], buckets: list[str], seeds: list[int], path: Path) -> Path:
    """BLEU against source length, one line per variant, the model without attention in bold black."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    from nmt.util.fileio import atomic_write

    fig = Figure(figsize=(8.0, 4.5), layout="constrained")
    FigureCanvasAgg(fig)
    ax = fig.add_subplot()
    colors = iter(f"C{i}" for i in range(len(rows)))
    for row in rows:
        shown = [(i, row["bleu_by_length"][b]) for i, b in enumerate(buckets) if b in row["bleu_by_length"]]
        style: dict[str, Any] = (
            {"color": "black", "linewidth": 2.8, "linestyle": "--", "zorder": 3}
            if row["variant"] == BASELINE
            else {"color": next(colors), "linewidth": 1.2, "alpha": 0.85}
        )
        ax.plot([i for i, _ in shown], [v for _, v in shown], marker="o", markersize=3, label=row["variant"], **style)
    ax.set_xticks(range(len(buckets)), labels=buckets)
    ax.set(
        xlabel=f"source length (words); buckets of {MIN_BUCKET} sentences or more",
        ylabel="test BLEU, mean over seeds" if len(seeds) > 1 else f"test BLEU, seed {seeds[0]}",
        title="BLEU by source length",
    )
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=7, loc="center left", bbox_to_anchor=(1.01, 0.5))
    with atomic_write(path) as handle:
        fig.savefig(handle, format="png", dpi=150)
    return path


def plans(ctx: LabContext) -> list[Plan]:
    """Every variant (:data:`CLASS_VARIANTS` at class size), at the seeds of :data:`VARIANT_SEEDS`."""
    return [variant_plan(ctx, variants=CLASS_VARIANTS if ctx.size == "class" else None)]


def run(ctx: LabContext) -> LabResult:
    """Train (or reuse) every variant, score the test split, then write the figure and return the table."""
    (plan,) = plans(ctx)
    out = ctx.runs_dir / "report-length"
    ctx.compare(plan, out=out)
    rows = json.loads(report_json(out).read_text(encoding="utf-8"))["variants"]
    sizes = bucket_sizes(plan)
    figure = plot(rows, drawn_buckets(sizes), plan.seeds, ctx.out / "length.png")
    keep = ("variant", "bleu", "bleu_sd", "per_seed_bleu", "bleu_by_length", "p_values", "params", "beam", "train_min")
    return LabResult(
        table=table(rows, sizes, plan.seeds),
        figure=figure,
        numbers={
            "steps": plan.steps,
            "seeds": plan.seeds,
            "split": plan.split,
            "baseline": plan.reference,
            "bucket_sizes": sizes,
            "variants": [{k: row[k] for k in keep} for row in rows],
        },
    )


LAB = Lab(
    name="length",
    title="Attention against none by sentence length (Bahdanau et al. 2015, figure 2)",
    # Measured on 2026-11-27 with --jobs 2: the eleven runs (600 updates each, validations and data
    # preparation included) and their test2016 scoring took 66 minutes of wall time.  One run at a time
    # with 2 threads trains about as fast (bench_train: 605-660 ms per update alone with 2 threads,
    # 1,062-1,069 with 1; two runs of 1 thread side by side took ~1.2 s per update each).
    cpu_minutes=70,
    # class_minutes: wall time of `python scripts/time_labs.py --size class` on 2026-11-27 (2 cores, the
    # lab from scratch in a runs folder of its own; docs/measurements/labs_class_2026-11-27_cpu.jsonl)
    class_minutes=6.6,
    run=run,
    plans=plans,
    runs_group="variants",
)
