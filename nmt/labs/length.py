"""Lab "length": BLEU by source length with and without attention, in the design of Bahdanau et al.
(2015, figure 2), on real long sentences at full size and on joined captions at class size.

The paper trained an encoder-decoder without attention (RNNencdec) and one with it (RNNsearch),
each on sentences of up to 30 and up to 50 words, and drew test BLEU against source length up to
60 words: the models without attention lose BLEU as sentences grow, RNNsearch-50 holds.

At full size this lab trains that design on the Europarl sample (configs/europarl_de_en_bahdanau.yaml,
sentences of up to 40 words, so the 50-word cap keeps every pair and the 30-word cap 78% of them):
``none`` and ``bahdanau`` on the pairs of up to 30 and up to 50 words (``train.max_words``, chosen from
one prepared folder, so the four share a vocabulary as the paper's did), three seeds each, scored on
the Europarl test split in ten-word buckets up to 40+, each bucket's mean BLEU over the seeds with a
bootstrap interval over its sentences.

Multi30k's captions stop near 30 words, so the class size joins consecutive captions
(``data.join_captions``, :mod:`nmt.data.join`: groups of 1 to 6 captions, up to about 70 words) and
trains the 50-word condition alone (``data.max_len``, a folder per cap): two curves in a class hour.
Joined captions are not natural long sentences (no clause structure across the joins), only more
content to carry through the encoder.  The tiny size runs the full size's code on synthetic pairs.
"""

from __future__ import annotations

import json
import re
from dataclasses import asdict
from itertools import pairwise
from pathlib import Path
from typing import Any

from nmt.comparison.plan import Plan
from nmt.comparison.scores import BOOTSTRAP_SEED, p_cell, score_run
from nmt.config.arms import Sweep
from nmt.labs.base import Lab, LabContext, LabResult, lab_config
from nmt.labs.variant_runs import MIN_BUCKET, drawn_buckets, lab_seeds
from nmt.run.paths import report_json
from nmt.score.intervals import SeedMeanInterval, seed_mean_interval
from nmt.score.metrics import DEFAULT_LENGTH_EDGES, OPEN_END, bleu_metric, bucket_label
from nmt.score.significance import segment_statistics
from nmt.util.errors import UserError
from nmt.util.plots import bucket_start

EUROPARL_CONFIG_NAME = "europarl_de_en_bahdanau.yaml"
"""The full size's base experiment: the Europarl sample, GRU 256, Bahdanau attention."""

JOIN_CAPTIONS = 6
"""Captions joined into one pair at most (class size): the test split's 1,000 captions become 287 pairs of 1 to 6."""

CAPS: tuple[str, ...] = ("30", "50")
"""The training conditions' length caps in words, the paper's RNN*-30 and RNN*-50."""

CLASS_CAPS: tuple[str, ...] = ("50",)
"""At class size one cap: two runs, without and with attention, fit the class hour; four do not."""

TINY_CAPS: tuple[str, ...] = ("5", "8")
"""At the tiny size, caps that bite on the synthetic corpus's sentences of 3 to 8 words."""

VARIANTS = ["none", "bahdanau"]
"""Without attention (the paper's RNNencdec) and with Bahdanau's additive attention (RNNsearch)."""

STEPS = 600
"""Updates per run at full size, the same for all twelve runs (about three epochs of the Europarl sample)."""

CLASS_STEPS = 400
"""Updates per run at class size (the class-size config learns more per update); 250 gave 11.4 BLEU
with attention on the joined test split, too little to show a length effect (2026-11-28)."""

SEEDS = [1, 2, 3]
"""Seeds per condition at full size (one at class and tiny size)."""

EDGES = (0, 10, 20, 30, 40, OPEN_END)
"""Ten-word buckets to 40+ at full size: the Europarl sample's sentences stop at 40 words (the test
split's 40+ bucket holds 12, too few to draw, :data:`~nmt.labs.variant_runs.MIN_BUCKET`)."""

TINY_EDGES = (0, 4, 8, OPEN_END)
"""Four-word buckets at the tiny size, so that its synthetic sentences fill more than one."""

RESAMPLES = 1000
"""Bootstrap resamples of each bucket's sentences for its interval."""

LABEL = re.compile(r"^(?P<variant>\S+) (?:train\.max_words|data\.max_len)=(?P<cap>\d+)$")


def joined(ctx: LabContext) -> bool:
    """Whether this size trains on joined captions (class size) rather than the full size's design."""
    return ctx.size == "class"


def edges(ctx: LabContext) -> tuple[int, ...]:
    """The source-length buckets: to 40+ on Europarl, to 60+ on joined captions."""
    return ctx.pick(EDGES, DEFAULT_LENGTH_EDGES, TINY_EDGES)


def arm_name(label: str) -> str:
    """'bahdanau train.max_words=50' (or data.max_len=50) -> 'bahdanau, ≤50 words' (a run's name)."""
    found = LABEL.match(label)
    return f"{found['variant']}, ≤{found['cap']} words" if found else label


def paper_plan(ctx: LabContext) -> Plan:
    """The lab's comparison: :data:`VARIANTS` × the caps, with the paired tests against ``none`` at the
    largest cap.  Full size: the Europarl config, caps by ``train.max_words``; class size: captions
    joined in groups of up to :data:`JOIN_CAPTIONS`, caps by ``data.max_len``; tiny: the synthetic
    corpus, caps by ``train.max_words`` (:data:`TINY_CAPS`)."""
    config, overrides = ctx.base()
    if ctx.size == "full":
        config, overrides = lab_config(EUROPARL_CONFIG_NAME), [f"runs_dir={ctx.runs_dir}"]
    caps = ctx.pick(CAPS, CLASS_CAPS, TINY_CAPS)
    key = "data.max_len" if joined(ctx) else "train.max_words"
    if joined(ctx):
        overrides = [*overrides, f"data.join_captions={JOIN_CAPTIONS}"]
    return Plan(
        config=config,
        variants=list(VARIANTS),
        seeds=lab_seeds(ctx, SEEDS),
        steps=ctx.steps(STEPS, CLASS_STEPS),
        baseline=f"none {key}={caps[-1]}",
        sweeps=[Sweep(key, caps)],
        split="test2016" if joined(ctx) else "test",
        beam=None,
        runs_dir=ctx.runs_dir,
        overrides=overrides,
        force=ctx.force,
    )


def bucket_scores(plan: Plan, bounds: tuple[int, ...]) -> tuple[dict[str, int], dict[str, dict[str, SeedMeanInterval]]]:
    """Sentences per source-length bucket (words), and for each arm and bucket the BLEU of its seeds'
    saved test translations, averaged, with a bootstrap interval over the bucket's sentences."""
    from nmt.labs.matrices import split_lines

    metric = bleu_metric()
    sizes: dict[str, int] = {}
    scores: dict[str, dict[str, SeedMeanInterval]] = {}
    for arm in plan.arms:
        stats, lengths = [], []
        for seed in plan.seeds:
            run_dir = plan.runs_dir / f"{arm.run_stem}_s{seed}"
            scored = score_run(run_dir, plan, arm)  # saved by ctx.compare: read back
            stats.append(segment_statistics(metric, scored["hyps"], scored["refs"]))  # (N, K)
            lengths = [len(s.split()) for s in split_lines(run_dir, plan.split)[0]]
            if len(lengths) != len(stats[-1]):
                raise UserError(
                    f"{run_dir}: {len(stats[-1])} saved translations of {plan.split} but {len(lengths)} source "
                    "lines in its prepared corpus, which was prepared again since; run the lab with --force"
                )
        scores[arm.label] = {}
        for lo, hi in pairwise(bounds):
            members = [i for i, n in enumerate(lengths) if lo <= n < hi]
            if members:
                label = bucket_label(lo, hi)
                sizes[label] = len(members)
                scores[arm.label][label] = seed_mean_interval(
                    metric, [st[members] for st in stats], RESAMPLES, seed=BOOTSTRAP_SEED
                )
    return sizes, scores


def table(rows: list[dict[str, Any]], sizes: dict[str, int], scores: dict[str, dict[str, SeedMeanInterval]]) -> str:
    """The Markdown table: one row per model, its test BLEU (mean over seeds), the paired tests against
    the baseline, and BLEU per source-length bucket with its interval (every bucket, drawn or not)."""
    buckets = sorted(sizes, key=bucket_start)
    seeds = len(rows[0]["per_seed_bleu"])
    baseline = next(row["variant"] for row in rows if row["p_values"] is None)
    header = [
        "model",
        "BLEU" if seeds == 1 else f"BLEU (mean of {seeds} seeds)",
        f"p vs {arm_name(baseline)}" + ("" if seeds == 1 else " (per seed)"),
        *(f"length {b} ({sizes[b]} pair{'' if sizes[b] == 1 else 's'})" for b in buckets),
    ]
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    for row in rows:
        by_bucket = scores[row["variant"]]
        cells = [
            f"{by_bucket[b].mean:.2f} [{by_bucket[b].low:.1f}, {by_bucket[b].high:.1f}]" if b in by_bucket else "n/a"
            for b in buckets
        ]
        spread = "" if seeds == 1 else f" ± {row['bleu_sd']:.2f}"
        lines.append(
            f"| {arm_name(row['variant'])} | {row['bleu']:.2f}{spread} | {p_cell(row['p_values'])} | "
            + " | ".join(cells)
            + " |"
        )
    seed_words = "one seed per model" if seeds == 1 else f"{seeds} seeds per model, BLEU as mean ± standard deviation"
    return "\n".join(lines) + (
        f"\n\nTest BLEU at beam {rows[0]['beam']}, {seed_words}.  p: sacreBLEU's paired bootstrap "
        f"against {arm_name(baseline)}{'' if seeds == 1 else ', one per seed'}.  Per bucket: BLEU of the "
        f"bucket's sentences{'' if seeds == 1 else ', averaged over the seeds'}, and in brackets the 95% "
        f"interval of {RESAMPLES:,} bootstrap resamples of those sentences (every seed scored on the same "
        "resample): the uncertainty that the bucket's sentences leave, not the seeds' spread.  Source "
        f"length in words; the figure leaves out buckets of fewer than {MIN_BUCKET} pairs.  Each run's best "
        "checkpoint by greedy validation BLEU."
    )


def ratio_table(scores: dict[str, dict[str, SeedMeanInterval]], sizes: dict[str, int]) -> str:
    """Output length / reference length per model and bucket, over all seeds, as a Markdown table."""
    buckets = sorted(sizes, key=bucket_start)
    lines = ["| model | " + " | ".join(f"length {b}" for b in buckets) + " |", "|" + "---|" * (len(buckets) + 1)]
    for label, by_bucket in scores.items():
        cells = [f"{by_bucket[b].ratio:.2f}" if b in by_bucket else "n/a" for b in buckets]
        lines.append(f"| {arm_name(label)} | " + " | ".join(cells) + " |")
    return "\n".join(lines) + (
        "\n\nOutput length over reference length per bucket (sacreBLEU's tokens, all seeds together): below "
        "1 the translations are too short, and BLEU's brevity penalty takes its share of the bucket's score."
    )


def plot(
    scores: dict[str, dict[str, SeedMeanInterval]], buckets: list[str], split: str, caps: tuple[str, ...], path: Path
) -> Path:
    """BLEU against source length, one line per model with its interval shaded: without attention
    dashed, the largest of the ``caps`` darker."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    from nmt.util.fileio import atomic_write

    fig = Figure(figsize=(7.0, 4.5), layout="constrained")
    FigureCanvasAgg(fig)
    ax = fig.add_subplot()
    for label, by_bucket in scores.items():
        name = arm_name(label)
        shown = [(i, by_bucket[b]) for i, b in enumerate(buckets) if b in by_bucket]
        darker = label.endswith(f"={caps[-1]}")
        color = "black" if name.startswith("none") else "C0"
        xs = [i for i, _ in shown]
        ax.plot(
            xs,
            [v.mean for _, v in shown],
            marker="o",
            markersize=4,
            label=name,
            color=color,
            linestyle="--" if name.startswith("none") else "-",
            linewidth=2.2 if darker else 1.2,
            alpha=1.0 if darker else 0.6,
        )
        ax.fill_between(
            xs, [v.low for _, v in shown], [v.high for _, v in shown], color=color, alpha=0.12 if darker else 0.06
        )
    ax.set_xticks(range(len(buckets)), labels=buckets)
    ax.set(
        xlabel=f"source length (words); buckets of {MIN_BUCKET} pairs or more",
        ylabel=f"test BLEU ({split}), 95% bootstrap interval",
        title=f"BLEU by source length, trained on pairs of up to {' or '.join(caps)} words",
    )
    ax.set_ylim(bottom=0)
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=8)
    with atomic_write(path) as handle:
        fig.savefig(handle, format="png", dpi=150)
    return path


def plans(ctx: LabContext) -> list[Plan]:
    """The paper's design: four conditions (two at class size), each over the size's seeds."""
    return [paper_plan(ctx)]


def run(ctx: LabContext) -> LabResult:
    """Train (or reuse) the runs, score the test split, then write the figure and return the tables."""
    (plan,) = plans(ctx)
    out = ctx.runs_dir / "report-length"
    ctx.compare(plan, out=out)
    rows = json.loads(report_json(out).read_text(encoding="utf-8"))["variants"]
    sizes, scores = bucket_scores(plan, edges(ctx))
    figure = plot(scores, drawn_buckets(sizes), plan.split, plan.sweeps[0].values, ctx.out / "length.png")
    keep = (
        "variant",
        "bleu",
        "bleu_sd",
        "per_seed_bleu",
        "p_values",
        "delta_ci95",
        "p_seeds",
        "params",
        "beam",
        "train_min",
    )
    return LabResult(
        table=table(rows, sizes, scores) + "\n\n" + ratio_table(scores, sizes),
        figure=figure,
        numbers={
            "steps": plan.steps,
            "seeds": plan.seeds,
            "split": plan.split,
            "config": Path(plan.config).name if plan.config else None,
            "join_captions": JOIN_CAPTIONS if joined(ctx) else 1,
            "caps": [int(c) for c in plan.sweeps[0].values],
            "cap_option": plan.sweeps[0].key,
            "baseline": plan.reference,
            "bucket_sizes": sizes,
            "resamples": RESAMPLES,
            "runs": [
                {
                    "name": arm_name(row["variant"]),
                    **{k: row.get(k) for k in keep},
                    "buckets": {b: asdict(v) for b, v in scores[row["variant"]].items()},
                }
                for row in rows
            ],
        },
    )


LAB = Lab(
    name="length",
    title="Attention against none by sentence length (Bahdanau et al. 2015, figure 2)",
    # Measured on 2026-11-29 with --jobs 2 (docs/labs/length.md, Intel Xeon): the twelve Europarl runs took 78
    # minutes of training two at a time, their scoring and the report 22 more (partly beside other training).
    cpu_minutes=100,
    # class_minutes: wall time of `python scripts/time_labs.py --size class length` on 2026-11-28 (2 idle
    # cores, the lab from scratch; docs/measurements/labs_class_2026-11-28_cpu.jsonl): two runs of 400 updates
    class_minutes=8.8,
    run=run,
    plans=plans,
    runs_group="length",
)
