"""Scoring for ``nmt compare``: each run's best checkpoint translates the plan's split (kept beside
its translations and reused while the checkpoint is unchanged); means over seeds, paired tests
against the baseline and BLEU by length make the report's rows."""

from __future__ import annotations

import json
import statistics
from pathlib import Path
from typing import Any, Optional

from nmt.comparison.plan import Plan
from nmt.comparison.read_back import per_seed_bleu, read_json
from nmt.comparison.timing import COLUMN
from nmt.config.arms import Arm
from nmt.run.events import last_stop
from nmt.run.paths import SCORED, RunPaths, report_json
from nmt.score.across import holm
from nmt.score.metrics import bleu_by_length, bleu_metric, compare_systems, score
from nmt.score.power import BLEU_RANGE, pooled_spread, power_line
from nmt.score.seed_stats import mean_interval, paired_t_test, with_half
from nmt.score.significance import segment_statistics, stratified_ar_p_value
from nmt.util.errors import UserError, short_repr
from nmt.util.fileio import atomic_write_bytes, sha256_file


def _scoring_key(run_dir: Path, plan: Plan, arm: Arm) -> dict[str, Any]:
    """What a saved score depends on: the best checkpoint (its size and SHA-256), the split, the beam
    and the arm's decoding options.  The checkpoint's bytes, not its modification time: a run copied,
    or unpacked from a lecturer's pack (tar keeps whole seconds), is the same model with the same scores."""
    best = RunPaths(run_dir).best
    key: dict[str, Any] = {
        "checkpoint": [best.stat().st_size, sha256_file(best)],
        "split": plan.split,
        "beam": plan.beam,
    }
    return {**key, "decode": list(arm.decode)} if arm.decode else key


def score_run(run_dir: Path, plan: Plan, arm: Arm) -> dict[str, Any]:
    """Translate the plan's split with the run's best checkpoint and the arm's decoding options,
    and score it.

    The result is kept in ``compare-<split>[-<decoding options>]/scored.json`` beside the
    translations; a later comparison with the same checkpoint, split, beam and decoding options
    reads it instead of translating again.
    """
    from nmt.evaluation.eval_command import translate_split
    from nmt.model.build import count_parameters
    from nmt.model.cost import flops_per_target_token

    paths = RunPaths(run_dir)
    out = paths.compare_folder(plan.split, arm.score_tag)
    cache, key = out / SCORED, _scoring_key(run_dir, plan, arm)
    if cache.is_file():
        saved = json.loads(cache.read_text(encoding="utf-8"))
        if saved.get("key") == key:
            return saved["result"]
    out.mkdir(parents=True, exist_ok=True)
    systems, refs, srcs, info, model = translate_split(
        [paths.best], plan.split, plan.beam, list(arm.decode), out, reader="nmt compare"
    )
    (hyps,) = systems.values()
    result = score(hyps, refs)
    stop = last_stop(run_dir)
    assert stop is not None, f"{run_dir} was scored before it finished"
    scored = {
        "hyps": hyps,
        "refs": refs,
        "bleu": result.bleu,
        "chrf": result.chrf,
        "bleu_signature": result.bleu_signature,
        "by_length": bleu_by_length([len(s.split()) for s in srcs], hyps, refs),
        "updates": stop.step,
        "best_step": info["step"],
        "train_s": stop.elapsed_s,
        "params": count_parameters(model),
        "flops_per_token": flops_per_target_token(model),
        "beam": info["beam"],
    }
    atomic_write_bytes(cache, json.dumps({"key": key, "result": scored}).encode("utf-8"))
    return scored


def _mean_std(values: list[float]) -> tuple[float, float]:
    return statistics.fmean(values), (statistics.stdev(values) if len(values) > 1 else 0.0)


def _mflops(run: dict[str, Any]) -> Optional[float]:
    """Millions of forward FLOPs per target token (:mod:`nmt.model.cost`); None for a score saved before it was counted."""
    flops = run.get("flops_per_token")
    return None if flops is None else round(flops / 1e6, 2)


def _half(values: list[float]) -> Optional[float]:
    """The half-width of the 95% t interval over seeds, rounded; None for one seed."""
    half = mean_interval(values).half
    return None if half is None else round(half, 2)


def _across_seeds(runs: dict[int, dict[str, Any]], base: dict[int, dict[str, Any]]) -> dict[str, Any]:
    """The paired t-test over the seeds both arms trained: mean difference, its interval, p."""
    seeds = [s for s in runs if s in base]
    test = paired_t_test([runs[s]["bleu"] for s in seeds], [base[s]["bleu"] for s in seeds])
    half = test.difference.half
    return {
        "delta_ci95": None if half is None else round(half, 2),
        "p_seeds": None if test.p is None else round(test.p, 4),
    }


AR_TRIALS, AR_SEED = 10000, 12345
"""The combined test's settings (written into the report's record)."""
BOOTSTRAP_RESAMPLES, BOOTSTRAP_SEED = 1000, 12345
"""The per-seed paired bootstrap's settings (:func:`~nmt.score.metrics.compare_systems`'s defaults, passed explicitly)."""


def _replicates_ar(runs: dict[int, dict[str, Any]], base: dict[int, dict[str, Any]]) -> Optional[float]:
    """Stratified approximate randomization over the seeds both arms trained (Clark et al. 2011):
    test-set noise and optimizer noise in one BLEU p-value (:func:`~nmt.score.significance.stratified_ar_p_value`)."""
    seeds = [s for s in runs if s in base]
    if not seeds:
        return None
    metric = bleu_metric()
    stats = {
        arm: [segment_statistics(metric, r[s]["hyps"], r[s]["refs"]) for s in seeds]
        for arm, r in (("b", base), ("v", runs))
    }
    return round(stratified_ar_p_value(metric, stats["b"], stats["v"], AR_TRIALS, AR_SEED), 4)


def summarize(plan: Plan, scored: dict[str, dict[int, dict[str, Any]]]) -> list[dict[str, Any]]:
    """One row per variant: means over seeds with their 95% intervals, the paired t-test against
    the baseline over seeds, the paired bootstrap against the baseline per seed, and the
    stratified approximate randomization over all seeds' outputs (both noises at once)."""
    rows = []
    base = scored[plan.reference]
    for variant, runs in scored.items():
        bleu_values, chrf_values = [r["bleu"] for r in runs.values()], [r["chrf"] for r in runs.values()]
        bleu, bleu_sd = _mean_std(bleu_values)
        chrf, chrf_sd = _mean_std(chrf_values)
        p_values = []
        if variant != plan.reference:
            for seed, run in runs.items():
                pair = compare_systems(
                    {plan.reference: base[seed]["hyps"], variant: run["hyps"]},
                    run["refs"],
                    n_samples=BOOTSTRAP_RESAMPLES,
                    seed=BOOTSTRAP_SEED,
                )
                p_values.append(pair[1]["bleu_p_value"])
        buckets: dict[str, list[float]] = {}
        for run in runs.values():
            for row in run["by_length"]:
                buckets.setdefault(row["bucket"], []).append(row["bleu"])
        first = next(iter(runs.values()))
        seeds_test = _across_seeds(runs, base) if variant != plan.reference else {"delta_ci95": None, "p_seeds": None}
        rows.append(
            {
                "variant": variant,
                "seeds": list(runs),
                "params": first["params"],
                "mflops_per_token": _mflops(first),
                "updates": first["updates"],
                "train_min": round(statistics.fmean(r["train_s"] for r in runs.values()) / 60, 2),
                "bleu": round(bleu, 2),
                "bleu_sd": round(bleu_sd, 2),
                "bleu_ci95": _half(bleu_values),
                "chrf": round(chrf, 2),
                "chrf_sd": round(chrf_sd, 2),
                "chrf_ci95": _half(chrf_values),
                "delta_bleu": round(bleu - statistics.fmean(r["bleu"] for r in base.values()), 2),
                **seeds_test,
                "p_values": [round(p, 4) for p in p_values] or None,
                "p_ar_seeds": _replicates_ar(runs, base) if variant != plan.reference else None,
                "bleu_by_length": {k: round(statistics.fmean(v), 2) for k, v in buckets.items()},
                "per_seed_bleu": {seed: round(r["bleu"], 2) for seed, r in runs.items()},
                "per_seed_chrf": {seed: round(r["chrf"], 2) for seed, r in runs.items()},
                "beam": first["beam"],
                "bleu_signature": first["bleu_signature"],
            }
        )
    add_holm(rows)
    return rows


def add_holm(rows: list[dict[str, Any]]) -> None:
    """Each arm's ``p_seeds_holm``: its paired t-test's p-value adjusted by Holm's method over the
    family of every arm's test against the baseline in this comparison (None where there is no test)."""
    tested = [r for r in rows if r.get("p_seeds") is not None]
    for row, adjusted in zip(tested, holm([r["p_seeds"] for r in tested])):
        row["p_seeds_holm"] = round(adjusted, 4)
    for row in rows:
        row.setdefault("p_seeds_holm", None)


def spread_samples(per_seed: dict[str, dict[Any, float]], reference: str) -> list[list[float]]:
    """Each arm's per-seed differences to ``reference`` (seeds both hold), the samples the spread
    between seeds is pooled over: every arm but the reference, and but ``none`` when other arms are
    left (attention against none is a gap of another size, whose spread says nothing about how finely
    a design separates attention variants)."""
    base = per_seed.get(reference)
    if base is None:
        return []
    arms = [a for a in per_seed if a != reference]
    if len(arms) > 1:
        arms = [a for a in arms if a != "none"]
    return [[per_seed[a][s] - base[s] for s in per_seed[a] if s in base] for a in arms]


def difference_spread(rows: list[dict[str, Any]], reference: str) -> Optional[float]:
    """The standard deviation of the per-seed BLEU differences from the baseline, pooled over the
    arms (:func:`spread_samples`, :func:`nmt.score.power.pooled_spread`): the sigma the power of the
    paired test depends on."""
    return pooled_spread(spread_samples({r["variant"]: r["per_seed_bleu"] for r in rows}, reference))


def report_spread(path: Path) -> float:
    """:func:`difference_spread` of an earlier comparison: its ``report.json`` (or the folder holding it)."""
    file = report_json(path) if path.is_dir() else path
    report = read_json(file, "it is not the report.json of an nmt compare (give that file, or its folder)")
    plan = report.get("plan") if isinstance(report, dict) else None
    if not isinstance(plan, dict) or "variants" not in report:
        raise UserError(f"{file}: not the report.json of an nmt compare (no plan and variants)")
    per_seed = per_seed_bleu(file, report["variants"])  # each a BLEU score, or one line naming the field
    baseline = plan.get("baseline")
    if not (isinstance(baseline, str) and baseline in per_seed):
        raise UserError(f"{file}: plan.baseline is {short_repr(baseline)}, none of its arms")
    sigma = pooled_spread(spread_samples(per_seed, baseline))
    if sigma is None:
        raise UserError(f"{file}: its comparison has no spread between seeds (it needs two or more seeds per arm)")
    if sigma < BLEU_RANGE[0]:
        raise UserError(f"{file}: its seeds' differences spread {sigma:.2g} BLEU, too little to size a design by")
    return sigma


def p_cell(p_values: Optional[list[float]]) -> str:
    """A table cell of a row's paired-test p-values, one per seed; "baseline" for the baseline's row,
    whose ``p_values`` :func:`summarize` leaves None."""
    return "baseline" if p_values is None else ", ".join(f"{v:.3f}" for v in p_values)


def swept_values(plan: Plan, arm: Arm) -> dict[str, str]:
    """The value each ``--sweep`` option takes in ``arm`` (a column of its own in the table)."""
    given = dict(o.split("=", 1) for o in (*arm.train, *arm.decode))
    return {s.key: given.get(s.key, "") for s in plan.sweeps}


def table_rows(rows: list[dict[str, Any]], plan: Optional[Plan] = None) -> list[dict[str, Any]]:
    """The Markdown table: one line per arm, a column per swept option when ``plan`` has sweeps."""
    arms = {a.label: a for a in plan.arms} if plan is not None else {}
    out = []
    for r in rows:
        arm = arms.get(r["variant"])
        baseline = r["p_values"] is None
        out.append(
            {
                "variant": r["variant"],
                **(swept_values(plan, arm) if plan is not None and arm is not None else {}),
                "params": f"{r['params']:,}",
                "MFLOPs/token": "-" if r.get("mflops_per_token") is None else f"{r['mflops_per_token']:.2f}",
                **({COLUMN: f"{r['s_per_update_alone']:.4g}"} if "s_per_update_alone" in r else {}),
                "updates": r["updates"],
                "train min": r["train_min"],
                "BLEU": with_half(r["bleu"], r.get("bleu_ci95")),
                "chrF": with_half(r["chrf"], r.get("chrf_ci95")),
                "ΔBLEU": "baseline" if baseline else with_half(r["delta_bleu"], r.get("delta_ci95"), sign=True),
                "p seeds": "baseline" if baseline else ("-" if r.get("p_seeds") is None else f"{r['p_seeds']:.3f}"),
                "p seeds (Holm)": "baseline"
                if baseline
                else ("-" if r.get("p_seeds_holm") is None else f"{r['p_seeds_holm']:.3f}"),
                "p per seed": p_cell(r["p_values"]),
                "p AR all seeds": "baseline"
                if baseline
                else ("-" if r.get("p_ar_seeds") is None else f"{r['p_ar_seeds']:.4f}"),
                **{f"BLEU len {k}": v for k, v in r["bleu_by_length"].items()},
            }
        )
    return out


def header(plan: Plan, rows: list[dict[str, Any]], steps: int) -> tuple[str, str]:
    """The page's title and the paragraph that says what the table compares and how."""
    n = len(plan.seeds)
    beam = rows[0]["beam"] if rows else None
    name = plan.config.stem if plan.config else "the default config"
    title = (
        f"Comparison of {len(rows)} arms: {name}, {plan.split}, beam {beam}, {n} seed{'s' * (n != 1)}, {steps} updates"
    )
    if n >= 2:
        spread = (
            f"BLEU and chrF are means over the {n} seeds ± the half-width of their 95% confidence interval "
            f"(Student's t, {n - 1} degrees of freedom); ΔBLEU is the mean difference to the baseline "
            f"({plan.reference}) over the same seeds ± its 95% interval, and `p seeds` the paired t-test of "
            "those differences (two-sided); `p seeds (Holm)` adjusts it by Holm's method over the family of "
            f"the {max(len(rows) - 1, 0)} arms' tests against the baseline in this table, the p-value to read "
            "when asking whether any arm differs."
        )
        sigma = difference_spread(rows, plan.reference)
        if sigma is not None:
            spread += f" Power: {power_line(sigma, n)}."
    else:
        spread = "One seed: scores without intervals, and no test across seeds."
    return title, (
        f"{spread} `p per seed` is sacreBLEU's paired bootstrap against the baseline on each seed's "
        "translations: it measures the test set's sampling noise for one trained model, not the variation "
        "between training runs. `p AR all seeds` holds both: approximate randomization over every seed's "
        f"translations at once, each sentence swapped between the arms within its seed ({AR_TRIALS} trials, "
        f"seed {AR_SEED}; stratified by replicate, Clark et al. 2011). Every arm trains the same number of updates; the best checkpoint by "
        "validation is scored. MFLOPs/token: forward FLOPs of the matrix products per target token on a "
        "pair of 16 source and 16 target tokens (torch.utils.flop_counter); `train min` is the runs' own "
        "time, shared with any run beside them."
    )
