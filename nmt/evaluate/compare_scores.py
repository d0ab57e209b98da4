"""Scoring for ``nmt compare``: each run's best checkpoint translates the plan's split (kept beside
its translations and reused while the checkpoint is unchanged); means over seeds, paired tests
against the baseline and BLEU by length make the report's rows."""

from __future__ import annotations

import json
import statistics
from pathlib import Path
from typing import Any, Optional

from nmt.config.arms import Arm
from nmt.evaluate.compare_plan import Plan
from nmt.evaluate.compare_runs import last_stop
from nmt.run.paths import SCORED, RunPaths
from nmt.score.metrics import bleu_by_length, compare_systems, score
from nmt.util.fileio import atomic_write_bytes


def _scoring_key(run_dir: Path, plan: Plan, arm: Arm) -> dict[str, Any]:
    """What a saved score depends on: the best checkpoint (size, mtime), the split, the beam and
    the arm's decoding options."""
    stat = RunPaths(run_dir).best.stat()
    key: dict[str, Any] = {"checkpoint": [stat.st_size, stat.st_mtime_ns], "split": plan.split, "beam": plan.beam}
    return {**key, "decode": list(arm.decode)} if arm.decode else key


def score_run(run_dir: Path, plan: Plan, arm: Arm) -> dict[str, Any]:
    """Translate the plan's split with the run's best checkpoint and the arm's decoding options,
    and score it.

    The result is kept in ``compare-<split>[-<decoding options>]/scored.json`` beside the
    translations; a later comparison with the same checkpoint, split, beam and decoding options
    reads it instead of translating again.
    """
    from nmt.evaluate.eval_command import translate_split
    from nmt.model.build import count_parameters

    paths = RunPaths(run_dir)
    out = paths.compare_folder(plan.split, arm.score_tag)
    cache, key = out / SCORED, _scoring_key(run_dir, plan, arm)
    if cache.is_file():
        saved = json.loads(cache.read_text(encoding="utf-8"))
        if saved.get("key") == key:
            return saved["result"]
    out.mkdir(parents=True, exist_ok=True)
    systems, refs, srcs, info, model = translate_split([paths.best], plan.split, plan.beam, list(arm.decode), out)
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
        "beam": info["beam"],
    }
    atomic_write_bytes(cache, json.dumps({"key": key, "result": scored}).encode("utf-8"))
    return scored


def _mean_std(values: list[float]) -> tuple[float, float]:
    return statistics.fmean(values), (statistics.stdev(values) if len(values) > 1 else 0.0)


def summarize(plan: Plan, scored: dict[str, dict[int, dict[str, Any]]]) -> list[dict[str, Any]]:
    """One row per variant: means over seeds, and the paired test against the baseline per seed."""
    rows = []
    base = scored[plan.reference]
    for variant, runs in scored.items():
        bleu, bleu_sd = _mean_std([r["bleu"] for r in runs.values()])
        chrf, chrf_sd = _mean_std([r["chrf"] for r in runs.values()])
        p_values = []
        if variant != plan.reference:
            for seed, run in runs.items():
                pair = compare_systems({plan.reference: base[seed]["hyps"], variant: run["hyps"]}, run["refs"])
                p_values.append(pair[1]["bleu_p_value"])
        buckets: dict[str, list[float]] = {}
        for run in runs.values():
            for row in run["by_length"]:
                buckets.setdefault(row["bucket"], []).append(row["bleu"])
        first = next(iter(runs.values()))
        rows.append(
            {
                "variant": variant,
                "seeds": list(runs),
                "params": first["params"],
                "updates": first["updates"],
                "train_min": round(statistics.fmean(r["train_s"] for r in runs.values()) / 60, 2),
                "bleu": round(bleu, 2),
                "bleu_sd": round(bleu_sd, 2),
                "chrf": round(chrf, 2),
                "chrf_sd": round(chrf_sd, 2),
                "delta_bleu": round(bleu - statistics.fmean(r["bleu"] for r in base.values()), 2),
                "p_values": [round(p, 4) for p in p_values] or None,
                "bleu_by_length": {k: round(statistics.fmean(v), 2) for k, v in buckets.items()},
                "per_seed_bleu": {seed: round(r["bleu"], 2) for seed, r in runs.items()},
                "beam": first["beam"],
                "bleu_signature": first["bleu_signature"],
            }
        )
    return rows


def p_cell(p_values: Optional[list[float]]) -> str:
    """A table cell of a row's paired-test p-values, one per seed; "baseline" for the baseline's row,
    whose ``p_values`` :func:`summarize` leaves None."""
    return "baseline" if p_values is None else ", ".join(f"{v:.3f}" for v in p_values)


def table_rows(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The Markdown table: one line per variant."""
    out = []
    for r in rows:
        out.append(
            {
                "variant": r["variant"],
                "params": f"{r['params']:,}",
                "updates": r["updates"],
                "train min": r["train_min"],
                "BLEU": f"{r['bleu']:.2f} ± {r['bleu_sd']:.2f}",
                "chrF": f"{r['chrf']:.2f} ± {r['chrf_sd']:.2f}",
                "ΔBLEU": r["delta_bleu"],
                "p per seed": p_cell(r["p_values"]),
                **{f"BLEU len {k}": v for k, v in r["bleu_by_length"].items()},
            }
        )
    return out
