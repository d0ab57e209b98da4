"""Lab "heads": query-key-value attention with 1, 2, 4 and 8 heads at an equal number of updates.

The ``qkv`` variant (scaled dot product over linear query, key and value maps and an output
projection W_o) is trained for each head count and two seeds, as ``nmt compare`` trains them,
and scored on test.  Heads split the mapped vectors of size A into h pieces of A/h, each with
its own softmax, and join them again; the maps keep their A x A shapes whatever h is, so the
arms differ in how the same parameters are used, not in how many there are.  The table shows
the counts, so a difference would be seen (and the text then says so).
"""

from __future__ import annotations

import json
import statistics
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from nmt.comparison.plan import Plan
from nmt.comparison.scores import p_cell
from nmt.config.arms import parse_sweep
from nmt.labs.base import Lab, LabContext, LabResult
from nmt.labs.variant_runs import lab_seeds
from nmt.run import events
from nmt.run.paths import REPORT, RunPaths, report_json
from nmt.util.fileio import atomic_write

HEADS = (1, 2, 4, 8)
CLASS_HEADS = (1, 4, 8)
TINY_HEADS = (1, 4)
SEEDS = [1, 2]
CLASS_STEPS = 250
"""Updates per run at class size: three head counts on one seed in the class hour."""
VARIANT = "qkv"
KEY = "model.attention.heads"


def _mapped_size(run_dir: Path) -> int:
    """A, the size of the mapped queries that the heads split (read from the trained model)."""
    from nmt.decode.inference import load_checkpoint
    from nmt.model.attention import Attention
    from nmt.util import runtime

    model = load_checkpoint(RunPaths(run_dir).best, runtime.select_device("cpu")).model
    attention = next(m for m in model.modules() if isinstance(m, Attention))
    assert attention.query_proj is not None, "qkv maps its queries"
    return int(attention.query_proj.out_features)


def _curve(run_dirs: list[Path]) -> list[tuple[int, float]]:
    """Greedy validation BLEU by update, the mean over seeds at the updates every seed validated."""
    by_step: dict[int, list[float]] = {}
    for run_dir in run_dirs:
        for valid in events.of_kind(events.read(run_dir), events.Valid):
            by_step.setdefault(valid.step, []).append(valid.bleu)
    return [(step, statistics.fmean(v)) for step, v in sorted(by_step.items()) if len(v) == len(run_dirs)]


def _plot(rows: list[dict[str, Any]], path: Path, split: str) -> Path:
    """Left: test BLEU mean ± sd by heads with each seed's point; right: validation curves."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(figsize=(10.0, 4.0), layout="constrained")
    FigureCanvasAgg(fig)
    left, right = fig.subplots(1, 2)
    heads = [r["heads"] for r in rows]
    left.errorbar(heads, [r["bleu"] for r in rows], yerr=[r["bleu_sd"] for r in rows], marker="o", capsize=4)
    for r in rows:
        seeds = list(r["per_seed_bleu"].values())
        left.scatter([r["heads"]] * len(seeds), seeds, color="grey", s=12, zorder=3)
    left.set_xscale("log", base=2)
    left.set_xticks(heads, labels=[str(h) for h in heads])
    left.minorticks_off()
    left.set_xlabel("heads")
    left.set_ylabel(f"BLEU ({split}), mean ± sd over seeds")
    for r in rows:
        if r["curve"]:
            steps, bleu = zip(*r["curve"])
            right.plot(steps, bleu, marker="o", markersize=3, label=f"{r['heads']} head{'s' if r['heads'] > 1 else ''}")
    right.set_xlabel("updates")
    right.set_ylabel("validation BLEU (greedy), mean over seeds")
    right.legend()
    for ax in (left, right):
        ax.grid(True, alpha=0.3)
    fig.suptitle("qkv attention: number of heads at equal updates")
    with atomic_write(path) as handle:
        fig.savefig(handle, format="png", dpi=150)
    return path


def _and(items: Sequence[int]) -> str:
    """'1, 2, 4 and 8'."""
    words = [str(i) for i in items]
    return words[0] if len(words) == 1 else f"{', '.join(words[:-1])} and {words[-1]}"


def _table(rows: list[dict[str, Any]], split: str) -> str:
    lines = [
        f"| heads | head size | parameters | {split} BLEU | per seed | p per seed vs 1 head | train min |",
        "|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for r in rows:
        seeds = ", ".join(f"{v:.2f}" for v in r["per_seed_bleu"].values())
        lines.append(
            f"| {r['heads']} | {r['head_size']} | {r['params']:,} | {r['bleu']:.2f} ± {r['bleu_sd']:.2f} | "
            f"{seeds} | {p_cell(r['p_values'])} | {r['train_min']} |"
        )
    return "\n".join(lines)


def _parameters_note(rows: list[dict[str, Any]]) -> str:
    """Whether the arms have equal parameters, and why (or which differ)."""
    counts = {r["params"] for r in rows}
    if len(counts) == 1:
        return (
            f"Every arm has {rows[0]['params']:,} parameters: h heads split the A = {rows[0]['mapped']} mapped "
            "dimensions into h pieces of A/h, and the maps W_q, W_k, W_v and W_o keep their shapes."
        )
    shown = ", ".join(f"{r['heads']} heads: {r['params']:,}" for r in rows)
    return (
        f"The arms differ in parameters ({shown}): some part of this attention has one parameter "
        "per head, so the comparison is not at equal size."
    )


def plans(ctx: LabContext) -> list[Plan]:
    """One comparison: qkv with each number of heads, over the lab's seeds."""
    config, overrides = ctx.base()
    heads = ctx.pick(HEADS, CLASS_HEADS, TINY_HEADS)
    return [
        Plan(
            config=config,
            variants=[VARIANT],
            sweeps=[parse_sweep(f"{KEY}={','.join(str(h) for h in heads)}")],
            seeds=lab_seeds(ctx, SEEDS),
            steps=ctx.steps(600, CLASS_STEPS),
            split=ctx.score_split,
            runs_dir=ctx.runs_dir,
            overrides=overrides,
            force=ctx.force,
        )
    ]


def run(ctx: LabContext) -> LabResult:
    """Train or reuse the runs, then the table, the figure and the numbers."""
    heads = ctx.pick(HEADS, CLASS_HEADS, TINY_HEADS)
    (plan,) = plans(ctx)
    split = plan.split
    ctx.compare(plan)
    report = json.loads(report_json(ctx.runs_dir / REPORT).read_text(encoding="utf-8"))
    by_label = {row["variant"]: row for row in report["variants"]}
    rows = []
    for h, arm in zip(heads, plan.arms):
        row = by_label[arm.label]
        run_dirs = [ctx.runs_dir / f"{arm.run_stem}_s{seed}" for seed in plan.seeds]
        mapped = _mapped_size(run_dirs[0])
        rows.append(
            {
                "heads": h,
                "mapped": mapped,
                "head_size": mapped // h,
                **{k: row[k] for k in ("params", "bleu", "bleu_sd", "per_seed_bleu", "p_values", "train_min")},
                "updates": row["updates"],
                "curve": _curve(run_dirs),
            }
        )
    figure = _plot(rows, ctx.out / "heads.png", split)
    table = "\n".join(
        [
            f"The {VARIANT} attention with {_and(heads)} heads, each trained for {rows[0]['updates']} updates "
            f"with seeds {_and(plan.seeds)}; {split} BLEU of each run's best checkpoint by greedy validation BLEU, "
            f"with the config's beam ({report['variants'][0]['beam']}). The p-values are the paired "
            "bootstrap test (sacreBLEU's) of each seed's translations against the 1-head run of the same seed.",
            "",
            _table(rows, split),
            "",
            _parameters_note(rows),
            "",
            f"BLEU: {report['variants'][0]['bleu_signature']}",
        ]
    )
    numbers = {
        "variant": VARIANT,
        "seeds": plan.seeds,
        "split": split,
        "updates": rows[0]["updates"],
        "beam": report["variants"][0]["beam"],
        "equal_parameters": len({r["params"] for r in rows}) == 1,
        "arms": rows,
    }
    return LabResult(table=table, figure=figure, numbers=numbers)


# cpu_minutes: 4 head counts x 2 seeds = 8 runs x 600 updates x 1.18 s per update, validations included
# (measured by the lab "beam": 1,500 Bahdanau updates in 29.5 min on 2026-11-26) = 94 min, plus scoring:
# about 100 min.
LAB = Lab(
    name="heads",
    title="Number of heads: qkv with 1, 2, 4 and 8 heads",
    cpu_minutes=100,
    # class_minutes: wall time of `python scripts/time_labs.py --size class` on 2026-11-27 (2 cores, the
    # lab from scratch in a runs folder of its own; docs/measurements/labs_class_2026-11-27_cpu.jsonl)
    class_minutes=6.5,
    run=run,
    plans=plans,
    runs_group="heads",
)
