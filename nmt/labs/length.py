"""Lab "length": BLEU by source length with and without attention, in the design of Bahdanau et al.
(2015, figure 2), on long pairs made of joined captions.

The paper trained an encoder-decoder without attention (RNNencdec) and one with it (RNNsearch),
each on sentences of up to 30 and up to 50 words, and drew test BLEU against source length up to
60 words: the models without attention lose BLEU as sentences grow, RNNsearch-50 holds.  Multi30k's
captions stop near 30 words, so this lab joins consecutive captions (``data.join_captions``,
:mod:`nmt.data.join`: groups of 1 to 6 captions, up to about 70 words) in every split, caps the
training pairs at 30 and at 50 words (``data.max_len``, a sweep: one prepared folder per cap), and
trains ``none`` and ``bahdanau`` under each cap for the same number of updates: four runs, four
curves, ten-word buckets up to 60+.  Joined captions are not natural long sentences (no clause
structure across the joins), only more content to carry through the encoder.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from nmt.comparison.plan import Plan
from nmt.comparison.scores import p_cell, score_run
from nmt.config.arms import Sweep
from nmt.labs.base import Lab, LabContext, LabResult
from nmt.labs.variant_runs import MIN_BUCKET, bucket_sizes, drawn_buckets, lab_seeds
from nmt.run.paths import report_json
from nmt.score.metrics import bleu_by_length
from nmt.util.plots import bucket_start

JOIN_CAPTIONS = 6
"""Captions joined into one pair at most: the test split's 1,000 captions become 287 pairs of 1 to 6."""

CAPS = ("30", "50")
"""The training conditions' length caps in words (``data.max_len``), the paper's RNN*-30 and RNN*-50."""

CLASS_CAPS = ("50",)
"""At class size one cap: two runs, without and with attention, fit the class hour; four do not."""

VARIANTS = ["none", "bahdanau"]
"""Without attention (the paper's RNNencdec) and with Bahdanau's additive attention (RNNsearch)."""

STEPS = 1200
"""Updates per run at full size, the same for all four runs."""

CLASS_STEPS = 400
"""Updates per run at class size (the class-size config learns more per update); 250 gave 11.4 BLEU
with attention on the joined test split, too little to show a length effect (2026-11-28)."""

SEEDS = [1]
"""One seed per condition: the gap the paper's figure shows is many BLEU wide on long sentences."""


def arm_name(label: str) -> str:
    """'bahdanau data.max_len=50' -> 'bahdanau, ≤50 words' (the figure's and table's name of a run)."""
    variant, _, cap = label.partition(" data.max_len=")
    return f"{variant}, ≤{cap} words" if cap else variant


def paper_plan(ctx: LabContext) -> Plan:
    """The lab's comparison: :data:`VARIANTS` × the caps (:data:`CLASS_CAPS` at class size) on captions
    joined in groups of up to :data:`JOIN_CAPTIONS`; the paired tests against ``none`` at the largest cap."""
    config, overrides = ctx.base()
    caps = CLASS_CAPS if ctx.size == "class" else CAPS
    return Plan(
        config=config,
        variants=list(VARIANTS),
        seeds=lab_seeds(ctx, SEEDS),
        steps=ctx.steps(STEPS, CLASS_STEPS),
        baseline=f"none data.max_len={caps[-1]}",
        sweeps=[Sweep("data.max_len", caps)],
        split=ctx.score_split,
        beam=None,
        runs_dir=ctx.runs_dir,
        overrides=[*overrides, f"data.join_captions={JOIN_CAPTIONS}"],
        force=ctx.force,
    )


def table(rows: list[dict[str, Any]], sizes: dict[str, int], baseline: str) -> str:
    """The Markdown table: one row per run, test BLEU, the paired test against the baseline, and BLEU
    per source-length bucket (every bucket, drawn or not)."""
    buckets = sorted(sizes, key=bucket_start)
    header = [
        "model",
        "BLEU",
        f"p vs {arm_name(baseline)}",
        *(f"length {b} ({sizes[b]} pair{'' if sizes[b] == 1 else 's'})" for b in buckets),
    ]
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    for row in rows:
        cells = [f"{row['bleu_by_length'][b]:.2f}" if b in row["bleu_by_length"] else "n/a" for b in buckets]
        lines.append(
            f"| {arm_name(row['variant'])} | {row['bleu']:.2f} | {p_cell(row['p_values'])} | "
            + " | ".join(cells)
            + " |"
        )
    return "\n".join(lines) + (
        f"\n\nTest BLEU at beam {rows[0]['beam']} on the joined test split (captions joined in groups of 1 to "
        f"{JOIN_CAPTIONS}), one seed per model.  p: sacreBLEU's paired bootstrap against "
        f"{arm_name(baseline)}.  Source length in words; the figure leaves out buckets of fewer than "
        f"{MIN_BUCKET} pairs.  Each run's best checkpoint by greedy validation BLEU on the joined validation split."
    )


def length_ratios(plan: Plan) -> dict[str, dict[str, float]]:
    """Each run's output length over the reference length per source-length bucket (BLEU's tokens,
    :func:`nmt.score.metrics.bleu_by_length`), from its saved test translations: below 1, BLEU's
    brevity penalty is what a bucket's score loses to translations that stop early."""
    from nmt.labs.matrices import split_lines

    ratios = {}
    for arm in plan.arms:
        run_dir = plan.runs_dir / f"{arm.run_stem}_s{plan.seeds[0]}"
        scored = score_run(run_dir, plan, arm)  # saved by ctx.compare: read back
        sources, _ = split_lines(run_dir, plan.split)
        rows = bleu_by_length([len(s.split()) for s in sources], scored["hyps"], scored["refs"])
        ratios[arm.label] = {row["bucket"]: row["ratio"] for row in rows}
    return ratios


def ratio_table(ratios: dict[str, dict[str, float]], sizes: dict[str, int]) -> str:
    """Output length / reference length per run and bucket, as a Markdown table."""
    buckets = sorted(sizes, key=bucket_start)
    lines = ["| model | " + " | ".join(f"length {b}" for b in buckets) + " |", "|" + "---|" * (len(buckets) + 1)]
    for label, by_bucket in ratios.items():
        cells = [f"{by_bucket[b]:.2f}" if b in by_bucket else "n/a" for b in buckets]
        lines.append(f"| {arm_name(label)} | " + " | ".join(cells) + " |")
    return "\n".join(lines) + (
        "\n\nOutput length over reference length per bucket (sacreBLEU's tokens): below 1 the translations "
        "are too short, and BLEU's brevity penalty takes its share of the bucket's score."
    )


def plot(rows: list[dict[str, Any]], buckets: list[str], path: Path) -> Path:
    """BLEU against source length, one line per run: without attention dashed, the larger cap darker."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    from nmt.util.fileio import atomic_write

    fig = Figure(figsize=(7.0, 4.5), layout="constrained")
    FigureCanvasAgg(fig)
    ax = fig.add_subplot()
    for row in rows:
        name = arm_name(row["variant"])
        shown = [(i, row["bleu_by_length"][b]) for i, b in enumerate(buckets) if b in row["bleu_by_length"]]
        largest = row["variant"].endswith(f"={CAPS[-1]}")
        ax.plot(
            [i for i, _ in shown],
            [v for _, v in shown],
            marker="o",
            markersize=4,
            label=name,
            color="black" if name.startswith("none") else "C0",
            linestyle="--" if name.startswith("none") else "-",
            linewidth=2.2 if largest else 1.2,
            alpha=1.0 if largest else 0.6,
        )
    ax.set_xticks(range(len(buckets)), labels=buckets)
    ax.set(
        xlabel=f"source length (words); buckets of {MIN_BUCKET} pairs or more",
        ylabel="test BLEU (joined test2016)",
        title="BLEU by source length, trained on pairs of up to 30 or 50 words",
    )
    ax.set_ylim(bottom=0)
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=8)
    with atomic_write(path) as handle:
        fig.savefig(handle, format="png", dpi=150)
    return path


def plans(ctx: LabContext) -> list[Plan]:
    """The four runs of the paper's design (two at class size)."""
    return [paper_plan(ctx)]


def run(ctx: LabContext) -> LabResult:
    """Train (or reuse) the runs, score the joined test split, then write the figure and return the table."""
    (plan,) = plans(ctx)
    out = ctx.runs_dir / "report-length"
    ctx.compare(plan, out=out)
    rows = json.loads(report_json(out).read_text(encoding="utf-8"))["variants"]
    sizes = bucket_sizes(plan)
    figure = plot(rows, drawn_buckets(sizes), ctx.out / "length.png")
    ratios = length_ratios(plan)
    keep = ("variant", "bleu", "per_seed_bleu", "bleu_by_length", "p_values", "params", "beam", "train_min")
    return LabResult(
        table=table(rows, sizes, plan.reference) + "\n\n" + ratio_table(ratios, sizes),
        figure=figure,
        numbers={
            "steps": plan.steps,
            "seeds": plan.seeds,
            "split": plan.split,
            "join_captions": JOIN_CAPTIONS,
            "caps": [int(c) for c in plan.sweeps[0].values],
            "baseline": plan.reference,
            "bucket_sizes": sizes,
            "runs": [
                {"name": arm_name(row["variant"]), **{k: row[k] for k in keep}, "length_ratio": ratios[row["variant"]]}
                for row in rows
            ],
        },
    )


LAB = Lab(
    name="length",
    title="Attention against none by sentence length (Bahdanau et al. 2015, figure 2)",
    # Measured on 2026-11-28 with --jobs 2 (docs/labs/length.md): the four runs, their scoring and the figure
    # took 44 minutes of wall time, the first 10 beside a third training run.
    cpu_minutes=44,
    # class_minutes: wall time of `python scripts/time_labs.py --size class length` on 2026-11-28 (2 idle
    # cores, the lab from scratch; docs/measurements/labs_class_2026-11-28_cpu.jsonl): two runs of 400 updates
    class_minutes=8.8,
    run=run,
    plans=plans,
    runs_group="length",
)
