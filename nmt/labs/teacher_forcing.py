"""Lab "teacher_forcing": a constant teacher-forcing probability against scheduled sampling.

With probability p the decoder is fed the reference token during training, otherwise its own
prediction.  p = 1 is plain teacher forcing: the model never sees its own mistakes in training,
but must live with them when it translates ("exposure bias").  Bengio et al. (2015, scheduled
sampling) start at p = 1 and lower p as training goes on, with a linear or an inverse-sigmoid
decay.  This lab trains Multi30k de-en for the same number of updates at four constant values
of p and with both schedules, two seeds each, and scores every run greedily and with beam 5.
Any p < 1 needs the step-by-step decoder path (each step waits for the previous prediction);
Bahdanau's decoder takes that path at p = 1 too (its attention reads the previous state), so
the seconds per update in the table show what feeding back the predictions adds.
"""

from __future__ import annotations

import json
import math
import statistics
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Optional

from nmt.comparison.plan import Plan
from nmt.comparison.scores import score_run
from nmt.config.arms import Arm, parse_sweep
from nmt.config.train_section import TrainConfig
from nmt.labs.base import Lab, LabContext, LabResult
from nmt.labs.variant_runs import MIN_BUCKET, bucket_sizes, drawn_buckets, lab_seeds
from nmt.run import events
from nmt.run.paths import report_json
from nmt.score.metrics import compare_systems
from nmt.score.seed_stats import with_half

STEPS = 1500
"""Updates per run at full size, the same for every setting: the issue's fixed budget."""

SEEDS = [1, 2]
"""Seeds per setting at full size (the first alone at the tiny size, :func:`lab_seeds`)."""

CONSTANT_P = ("1.0", "0.75", "0.5", "0.25")
"""The constant settings, 1.0 (plain teacher forcing) first: the reference of the paired tests."""

CLASS_STEPS = 250
"""Updates per run at class size: three settings on one seed in the class hour (7.9 minutes with their
scoring on 2026-11-27)."""

CLASS_CONSTANT_P = ("1.0", "0.5")
"""The constant settings at class size, with the linear schedule (:func:`schedules`)."""

FLOOR = 0.25
"""Where both schedules end, at the last update: the lowest constant p, so the schedules sweep
the same range of p as the constant settings, starting at 1 as Bengio et al. did."""

BEAMS = ("1", "5")
"""Greedy and beam 5, a decoding sweep: both score the same runs."""


@dataclass(frozen=True)
class Setting:
    """One row of the table: how p moves, and the plan and run folders that train it."""

    name: str
    p: str
    plan: Plan
    override: str  # the sweep point that trains it, e.g. train.teacher_forcing=0.5

    def arm(self, beam: str) -> Arm:
        """The arm of this setting that decodes with ``beam``."""
        return next(a for a in self.plan.arms if self.override in a.train and a.decode == (f"decode.beam={beam}",))

    @property
    def stem(self) -> str:
        """The run folders <stem>_s<seed>, shared by the greedy and the beam arm (named by nmt.config.arms)."""
        return self.arm(BEAMS[0]).run_stem

    def run_dirs(self) -> list[Path]:
        return [self.plan.runs_dir / f"{self.stem}_s{seed}" for seed in self.plan.seeds]


def inverse_sigmoid_k(steps: int, floor: float) -> float:
    """The k of Bengio et al.'s inverse-sigmoid decay p_i = k / (k + exp(i / k)) that reaches
    ``floor`` at update ``steps`` (p grows with k at a fixed i, so bisection finds it); one decimal."""
    low, high = 1.0, float(max(steps, 2))
    for _ in range(60):
        k = (low + high) / 2
        low, high = (k, high) if k / (k + math.exp(steps / k)) < floor else (low, k)
    return round((low + high) / 2, 1)


def constant_ps(ctx: LabContext) -> tuple[str, ...]:
    """The constant settings at this size, 1.0 first."""
    return ctx.pick(CONSTANT_P, CLASS_CONSTANT_P, CONSTANT_P)


def schedules(ctx: LabContext) -> tuple[str, ...]:
    """The schedules at this size: linear and inverse sigmoid, the linear one alone at class size."""
    both = ("linear", "inverse_sigmoid")
    return ctx.pick(both, ("linear",), both)


def _plan(ctx: LabContext, sweep: str, extra: list[str]) -> Plan:
    config, base = ctx.base()
    steps = ctx.steps(STEPS, CLASS_STEPS)
    fixed = [
        # validations at the same updates in every run, so the curves average over seeds
        f"train.valid_every={ctx.steps(150, 50, 6)}",
        # training lines close together: seconds per update measured between validations
        f"train.log_every={ctx.steps(10, 10, 1)}",
        "train.patience=null",  # a fixed budget: no early stopping
    ]
    return Plan(
        config=config,
        variants=None,
        seeds=lab_seeds(ctx, SEEDS),
        steps=steps,
        sweeps=[parse_sweep(sweep), parse_sweep(f"decode.beam={','.join(BEAMS)}")],
        split=ctx.score_split,
        runs_dir=ctx.runs_dir,
        overrides=[*base, *fixed, *extra],
        force=ctx.force,
    )


def plans(ctx: LabContext) -> list[Plan]:
    """The constant settings' comparison, then the schedules' (the same runs folder; one at class size).

    Both schedules start at p = 1 and end at :data:`FLOOR` on the last update, as Bengio et al.
    decayed p over the whole of training: the linear one over all the updates
    (``tf_decay_steps``), the inverse sigmoid with the k that puts it there.
    """
    steps = ctx.steps(STEPS, CLASS_STEPS)
    schedule = [
        "train.teacher_forcing=1.0",
        f"train.tf_min={FLOOR}",
        f"train.tf_decay_steps={steps}",
        f"train.tf_k={inverse_sigmoid_k(steps, FLOOR)}",
    ]
    return [
        _plan(ctx, f"train.teacher_forcing={','.join(constant_ps(ctx))}", []),
        _plan(ctx, f"train.tf_schedule={','.join(schedules(ctx))}", schedule),
    ]


def settings(ctx: LabContext) -> list[Setting]:
    """The table's rows: each constant p of the first plan, then the schedules of the second."""
    steps = ctx.steps(STEPS, CLASS_STEPS)
    k = inverse_sigmoid_k(steps, FLOOR)
    constant, scheduled = plans(ctx)

    from nmt.training.schedules import teacher_forcing_p  # torch: imported when the rows are built, not at import

    def p_at(kind: str, step: int) -> float:  # p of update step + 1 (the trainer reads the step counter before it)
        return teacher_forcing_p(TrainConfig(tf_schedule=kind, tf_min=FLOOR, tf_decay_steps=steps, tf_k=k), step)

    last = steps - 1
    described = {
        "linear": f"{p_at('linear', 0):.2f} → {p_at('linear', last):.2f}, linear over {steps} updates",
        "inverse_sigmoid": f"k/(k+exp(i/k)), k = {k}: "
        f"{p_at('inverse_sigmoid', 0):.2f} → {p_at('inverse_sigmoid', last):.2f}",
    }
    return [
        *(Setting(f"p = {p}", f"constant {p}", constant, f"train.teacher_forcing={p}") for p in constant_ps(ctx)),
        *(
            Setting(kind.replace("_", " "), described[kind], scheduled, f"train.tf_schedule={kind}")
            for kind in schedules(ctx)
        ),
    ]


def seconds_per_update(run_dir: Path) -> Optional[float]:
    """Training seconds per update, validation (and the checkpoints written with it) left out.

    Training lines carry the run's clock; a stretch between two of them counts only when no
    validation and no restart lies between them.  None without two such lines.
    """
    seconds, updates, last = 0.0, 0, None
    for event in events.read(run_dir):
        if isinstance(event, events.Train):
            if last is not None:
                seconds, updates = seconds + event.elapsed_s - last.elapsed_s, updates + event.step - last.step
            last = event
        elif isinstance(event, (events.Valid, events.Start)):
            last = None
    return seconds / updates if updates else None


def valid_curve(run_dirs: list[Path]) -> list[tuple[int, float]]:
    """Validation BLEU (greedy) by update, the mean over runs at the updates every run validated."""
    curves = [{e.step: e.bleu for e in events.of_kind(events.read(d), events.Valid)} for d in run_dirs]
    shared = set.intersection(*(set(c) for c in curves))
    return [(step, statistics.fmean(c[step] for c in curves)) for step in sorted(shared)]


def best_valid(run_dirs: list[Path]) -> list[float]:
    """Each run's best greedy validation BLEU: the score that picked its checkpoint (its stop line's best)."""
    best = []
    for run_dir in run_dirs:
        stop = events.last_stop(run_dir)
        assert stop is not None and stop.best is not None, f"{run_dir} has no validated stop"
        best.append(stop.best)
    return best


def chosen_on_validation(numbers: list[dict[str, Any]]) -> str:
    """The setting with the highest mean best validation BLEU: the choice a user would make without
    looking at the test set (the first of equal ones)."""
    return max(numbers, key=lambda n: n["valid"]["bleu"])["setting"]


def _mean_sd(values: list[float]) -> tuple[float, float]:
    return statistics.fmean(values), (statistics.stdev(values) if len(values) > 1 else 0.0)


def _p_values(setting: Setting, reference: Setting) -> Optional[list[float]]:
    """Paired bootstrap p-value of the setting's beam-5 BLEU against p = 1's, per seed (None for p = 1)."""
    if setting is reference:
        return None
    out = []
    for seed in setting.plan.seeds:
        mine = score_run(setting.plan.runs_dir / f"{setting.stem}_s{seed}", setting.plan, setting.arm(BEAMS[-1]))
        ref_dir = reference.plan.runs_dir / f"{reference.stem}_s{seed}"
        theirs = score_run(ref_dir, reference.plan, reference.arm(BEAMS[-1]))
        pair = compare_systems({"reference": theirs["hyps"], "setting": mine["hyps"]}, mine["refs"])
        out.append(round(pair[1]["bleu_p_value"], 4))
    return out


def summarize(setting: Setting, rows: dict[str, dict[str, Any]], reference: Setting) -> dict[str, Any]:
    """The numbers of one setting: test BLEU per decoding, speed, the curve, by length, p-values."""
    greedy, beam = rows[setting.arm(BEAMS[0]).label], rows[setting.arm(BEAMS[-1]).label]
    speeds = [s for s in (seconds_per_update(d) for d in setting.run_dirs()) if s is not None]
    valid = best_valid(setting.run_dirs())
    valid_mean, valid_sd = _mean_sd(valid)
    return {
        "setting": setting.name,
        "p": setting.p,
        "valid": {"bleu": round(valid_mean, 2), "sd": round(valid_sd, 2), "per_seed": [round(v, 2) for v in valid]},
        "greedy": {"bleu": greedy["bleu"], "sd": greedy["bleu_sd"], "per_seed": greedy["per_seed_bleu"]},
        "beam5": {"bleu": beam["bleu"], "sd": beam["bleu_sd"], "per_seed": beam["per_seed_bleu"]},
        "beam_minus_greedy": round(beam["bleu"] - greedy["bleu"], 2),
        "s_per_update": round(statistics.fmean(speeds), 4) if speeds else None,
        "train_min": beam["train_min"],
        "bleu_by_length_beam5": beam["bleu_by_length"],
        "bleu_by_length_greedy": greedy["bleu_by_length"],
        "valid_curve": [[step, round(bleu, 2)] for step, bleu in valid_curve(setting.run_dirs())],
        "p_values_beam5_vs_p1": _p_values(setting, reference),
    }


def _against_reference(setting: dict[str, Any], reference: dict[str, Any]) -> str:
    """Each seed's beam-5 BLEU minus that of p = 1 with the same seed, and its paired-bootstrap p-value:
    a p-value alone does not say which way the difference goes, and the seeds may disagree."""
    p_values = setting["p_values_beam5_vs_p1"]
    if p_values is None:
        return "reference"
    mine, theirs = setting["beam5"]["per_seed"], reference["beam5"]["per_seed"]
    return ", ".join(f"{mine[seed] - theirs[seed]:+.2f} ({p:.3f})" for seed, p in zip(mine, p_values))


def table(numbers: list[dict[str, Any]], sizes: dict[str, int]) -> str:
    """The Markdown table: one row per setting, the one chosen on validation in bold; the long
    sentences are the longest bucket of the test split that a figure draws (:func:`drawn_buckets`)."""
    longest, chosen = drawn_buckets(sizes)[-1], chosen_on_validation(numbers)
    seeds = len(numbers[0]["valid"]["per_seed"])

    def spread(score: dict[str, Any]) -> str:  # mean ± sd over seeds; the score alone for one seed
        return with_half(score["bleu"], score["sd"] if seeds > 1 else None)

    lines = [
        f"| setting | p | valid BLEU greedy | test BLEU greedy | test BLEU beam 5 | beam − greedy | s / update | "
        f"beam 5 BLEU, source length {longest} ({sizes[longest]} sent.) | beam 5 vs p = 1.0, per seed: ΔBLEU (p) |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for n in numbers:
        speed = f"{n['s_per_update']:.3f}" if n["s_per_update"] is not None else "n/a"
        last = n["bleu_by_length_beam5"].get(longest)
        name = f"**{n['setting']}**" if n["setting"] == chosen else n["setting"]
        lines.append(
            f"| {name} | {n['p']} | {spread(n['valid'])} | {spread(n['greedy'])} | "
            f"{spread(n['beam5'])} | {n['beam_minus_greedy']:+.2f} | {speed} | "
            f"{'n/a' if last is None else f'{last:.2f}'} | "
            f"{_against_reference(n, numbers[0])} |"
        )
    over = "Mean ± standard deviation over seeds" if seeds > 1 else "One seed"
    return "\n".join(lines) + (
        f"\n\n{over}; the best checkpoint of each run by greedy validation BLEU "
        "(valid BLEU: that checkpoint's score). In bold, the setting chosen on validation: the highest mean "
        f"validation BLEU ({chosen}); the rule was fixed before any test score was read. "
        "Seconds per update: training time over updates, validation left out. The last column: each seed "
        "against p = 1.0 with the same seed, in the seeds' order, with sacreBLEU's paired bootstrap p-value."
    )


def plot(numbers: list[dict[str, Any]], buckets: list[str], path: Path) -> Path:
    """Three panels: validation BLEU by update, test BLEU greedy and beam 5, and BLEU by source length."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    from nmt.util.fileio import atomic_write

    fig = Figure(figsize=(15.0, 4.2), layout="constrained")
    FigureCanvasAgg(fig)
    curves, bars, lengths = fig.subplots(1, 3)
    for n in numbers:
        steps, bleus = zip(*n["valid_curve"]) if n["valid_curve"] else ((), ())
        curves.plot(steps, bleus, marker="o", markersize=3, label=n["setting"])
    curves.set(xlabel="update", ylabel="validation BLEU (greedy)", title="Validation BLEU by update")
    width, xs = 0.4, range(len(numbers))
    for offset, key, label in ((-width / 2, "greedy", "greedy"), (width / 2, "beam5", "beam 5")):
        bars.bar(
            [x + offset for x in xs],
            [n[key]["bleu"] for n in numbers],
            width,
            yerr=[n[key]["sd"] for n in numbers],
            capsize=3,
            label=label,
        )
    bars.set_xticks(list(xs), labels=[n["setting"] for n in numbers], rotation=30, ha="right")
    one_seed = len(numbers[0]["valid"]["per_seed"]) == 1
    bars.set(ylabel="test BLEU", title="Test BLEU, one seed" if one_seed else "Test BLEU, mean ± sd over seeds")
    for n in numbers:
        by_length = n["bleu_by_length_beam5"]
        shown = [(i, by_length[b]) for i, b in enumerate(buckets) if b in by_length]
        lengths.plot([i for i, _ in shown], [v for _, v in shown], marker="o", label=n["setting"])
    lengths.set_xticks(range(len(buckets)), labels=buckets)
    lengths.set(
        xlabel=f"source length (words); buckets of {MIN_BUCKET} sentences or more",
        ylabel="test BLEU (beam 5)",
        title="Test BLEU by source length",
    )
    for ax in (curves, bars, lengths):
        ax.grid(True, alpha=0.3)
        ax.legend(fontsize=7)
    with atomic_write(path) as handle:
        fig.savefig(handle, format="png", dpi=150)
    return path


def run(ctx: LabContext) -> LabResult:
    """Train (or reuse) both plans, score greedy and beam 5, then write the figure and return the table."""
    rows_of_settings = settings(ctx)
    rows: dict[str, dict[str, Any]] = {}
    for name, plan in zip(("constant", "schedules"), plans(ctx)):
        out = ctx.runs_dir / f"report-{name}"
        ctx.compare(plan, out=out)
        report = json.loads(report_json(out).read_text(encoding="utf-8"))
        rows.update({row["variant"]: row for row in report["variants"]})
    reference = rows_of_settings[0]
    numbers = [summarize(s, rows, reference) for s in rows_of_settings]
    sizes = bucket_sizes(reference.plan)
    figure = plot(numbers, drawn_buckets(sizes), ctx.out / "teacher_forcing.png")
    return LabResult(
        table=table(numbers, sizes),
        figure=figure,
        numbers={
            "steps": ctx.steps(STEPS, CLASS_STEPS),
            "seeds": lab_seeds(ctx, SEEDS),
            "split": ctx.score_split,
            "floor": FLOOR,
            "bucket_sizes": sizes,
            "chosen_on_validation": chosen_on_validation(numbers),
            "settings": numbers,
        },
    )


LAB = Lab(
    name="teacher_forcing",
    title="Teacher forcing: constant p and scheduled sampling (Bengio et al. 2015)",
    # 6 settings x 2 seeds = 12 runs x 1,500 updates x 1.18 s per update, validations included (measured by
    # the lab "beam": 1,500 Bahdanau updates in 29.5 min on 2026-11-26) = 354 min, plus one greedy and one
    # beam-5 test2016 scoring per run (~20 s together): about 360 min.
    cpu_minutes=360,
    # class_minutes: wall time of `python scripts/time_labs.py --size class` on 2026-11-27 (2 cores, the
    # lab from scratch in a runs folder of its own; docs/measurements/labs_class_2026-11-27_cpu.jsonl)
    class_minutes=7.9,
    run=run,
    plans=plans,
    runs_group="teacher_forcing",
)
