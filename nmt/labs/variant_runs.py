"""The runs several labs share, and the length buckets their figures draw.

The labs "matrices" and "kernel" read one run per attention variant of
:data:`nmt.config.variants.VARIANTS`, all trained for the same number of updates from the lab's
base config (:func:`variant_plan`); whichever lab runs first trains them and the other reuses them.
:func:`drawn_buckets` and :func:`bucket_sizes` are the rule every lab figure of BLEU by source
length follows: a bucket of too few sentences is listed in the table, not drawn.
"""

from __future__ import annotations

from typing import Optional

from nmt.comparison.plan import Plan
from nmt.comparison.scores import score_run
from nmt.config.variants import VARIANTS
from nmt.labs.base import LabContext
from nmt.util.plots import bucket_start

VARIANT_STEPS = 600
"""Updates per run at full size: the same for every variant, so the comparison is at equal training."""

CLASS_VARIANT_STEPS = 250
"""Updates per run at class size, shared by the labs "matrices" and "kernel" (the class-size
config learns more per update: 31 validation BLEU at update 500, docs/measurements/class_2026-11-27_cpu.jsonl)."""

VARIANT_SEEDS = [1]
"""One seed per variant at full size: the ten attention runs took 57 minutes on the reference
machine (2 cores) with ``--jobs 2`` (2026-11-27).  How far a second seed moves a run of this size
was measured by the comparison of every variant in docs/results.md (600 updates, two seeds: test
BLEU standard deviations of 0.04 to 2.48)."""

BASELINE = "none"
"""The encoder-decoder without attention: the reference of a plan's paired tests when it is compared."""

MIN_BUCKET = 20
"""Sentences a length bucket needs before a figure draws it or a table calls it "the longest": BLEU over
a handful of sentences is noise (test2016 has 34 sources of 20-29 words and one of 30-39)."""


def lab_seeds(ctx: LabContext, full: list[int]) -> list[int]:
    """The seeds at this size: ``full``, or its first seed alone at the tiny size, where a run tests
    the code path (a second seed would double the tests' time and show nothing new), and at class
    size, where a second seed would not fit in the class hour."""
    return list(full) if ctx.size == "full" else list(full[:1])


def variant_plan(ctx: LabContext, variants: Optional[list[str]] = None, seeds: Optional[list[int]] = None) -> Plan:
    """The comparison of ``variants`` (default: all of :data:`VARIANTS`, in its order) over ``seeds``
    (default :data:`VARIANT_SEEDS`, the first alone at the tiny size) that the labs "matrices" and
    "kernel" share.

    Every run is the lab's base config with the variant's overrides, trained for
    ``ctx.steps(VARIANT_STEPS, CLASS_VARIANT_STEPS)`` updates into ``ctx.runs_dir``; the folder of a run depends only
    on the variant and the seed, so any subset of variants or seeds reuses the same folders.  The
    test split is scored at the config's beam (5 at full size); the baseline of the paired tests is
    ``none`` when it is compared, else the first variant.
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
