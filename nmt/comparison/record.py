"""The reproducibility record written beside every ``nmt compare`` table.

It answers the items of the ACL/NAACL reproducibility checklist that a comparison can answer
from its own runs: how many runs and seeds, the update budget, every option that differs
between arms (and the overrides all arms share), what was selected on which split, the
hardware each run trained on (read from its metrics.jsonl), the software versions (torch,
sacreBLEU, SentencePiece, nmt and the git commit of its checkout when there is one), the
sacreBLEU signature, and the time the runs took.  ``record.json`` holds it all and
``record.md`` is the page a reader checks a table against.  The parts a comparison shares with
``nmt report``'s record (hardware, software, training time) come from :mod:`nmt.evaluation.record`.
"""

from __future__ import annotations

import datetime
from pathlib import Path
from typing import Any, Optional

from nmt.comparison.plan import Plan
from nmt.comparison.record_runs import arm_configs, data_entry
from nmt.comparison.scores import AR_SEED, AR_TRIALS, BOOTSTRAP_RESAMPLES, BOOTSTRAP_SEED
from nmt.evaluation.record import RECORD, hardware_line, run_hardware, software, training_seconds
from nmt.score.metrics import write_report


def build_record(
    plan: Plan,
    steps: int,
    rows: list[dict[str, Any]],
    run_dirs: list[Path],
    wall_s: float,
    update_timing: Optional[dict[str, Any]] = None,
    entries: Optional[list[dict[str, Any]]] = None,
) -> dict[str, Any]:
    """Every checklist item a comparison answers, from its plan, its runs and its rows; with
    ``update_timing`` (:func:`nmt.comparison.timing.summary`), how each arm was timed alone; with
    ``entries`` (:func:`nmt.comparison.record_runs.run_entry` of each arm and seed), what each run
    was scored with, each arm's resolved config and the data (:mod:`nmt.comparison.record_runs`)."""
    train_s = training_seconds(run_dirs)
    timing = {"update_timing": update_timing} if update_timing else {}
    detail: dict[str, Any] = {}
    if entries is not None:
        by_name = {d.name: d for d in run_dirs}
        detail = {
            "run_detail": entries,
            "resolved_configs": arm_configs(entries, by_name),
            "data": data_entry(plan),
        }
    return {
        "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        "config": str(plan.config) if plan.config else None,
        "runs": len(run_dirs),
        "arms": len(plan.arms),
        "seeds": plan.seeds,
        "updates_per_run": steps,
        "baseline": plan.reference,
        "arm_options": {a.label: [*a.train, *a.decode] for a in plan.arms},
        "shared_overrides": list(plan.overrides),
        "selection": (
            "each run's checkpoint with the best validation score (train.metric, greedy, on the valid split, "
            "every train.valid_every updates); no other option was searched: the arms above are the whole search"
        ),
        "scored_on": {"split": plan.split, "beam": rows[0]["beam"] if rows else None},
        "bleu_signature": rows[0]["bleu_signature"] if rows else None,
        "statistics": (
            "mean over seeds with a 95% Student's t interval; paired t-test over seeds against the baseline, "
            "Holm-adjusted over the arms; sacreBLEU paired bootstrap per seed; stratified approximate "
            "randomization over every seed's translations"
        ),
        "test_settings": {
            "bootstrap_resamples": BOOTSTRAP_RESAMPLES,
            "bootstrap_seed": BOOTSTRAP_SEED,
            "ar_trials": AR_TRIALS,
            "ar_seed": AR_SEED,
        },
        "per_seed": {
            r["variant"]: {"bleu": r["per_seed_bleu"], "mean": r["bleu"], "sd": r["bleu_sd"], "params": r["params"]}
            for r in rows
        },
        "search": plan.search
        or "not stated: nmt compare --search TEXT says what was searched for the base configuration, on which "
        "split and with what budget (Dodge et al. 2019)",
        "user_code": user_code(plan),
        "hardware": run_hardware(run_dirs),
        "software": software(),
        "train_s_total": round(sum(train_s), 1),
        "train_s_per_run": round(sum(train_s) / len(train_s), 1) if train_s else None,
        "wall_s": round(wall_s, 1),
        **timing,
        **detail,
    }


def user_code(plan: Plan) -> list[dict[str, Any]]:
    """The code outside nmt that the arms train (an energy, normalization or schedule of the user's):
    each entry's kind, name, module:qualname and the sha256 of its module's source, as a checkpoint keeps them."""
    from nmt import config as config_mod
    from nmt.config.named_code import code_record

    records = [
        record
        for arm in plan.arms
        for record in code_record(config_mod.load(plan.config, [*plan.overrides, *arm.train]).model_dump(mode="json"))
    ]
    return [dict(entry) for entry in {tuple(sorted(r.items())): r for r in records}.values()]


def _code_line(code: Optional[list[dict[str, Any]]]) -> str:
    if not code:
        return "- code outside nmt: none"
    shown = "; ".join(f"{c['kind']} {c['name']} = {c['origin']} (sha256 {str(c['sha256'])[:12]})" for c in code)
    return f"- code outside nmt: {shown}"


def _lines(record: dict[str, Any]) -> list[str]:
    hardware = hardware_line(record["hardware"])
    soft = ", ".join(f"{k} {v}" for k, v in record["software"].items())
    options = "; ".join(
        f"{label}: {' '.join(opts) or '(the config as it is)'}" for label, opts in record["arm_options"].items()
    )
    return [
        f"- date: {record['date']}",
        f"- config: `{record['config']}`; overrides shared by every arm: {' '.join(record['shared_overrides']) or 'none'}",
        f"- runs: {record['runs']} ({record['arms']} arms x seeds {', '.join(map(str, record['seeds']))}), "
        f"{record['updates_per_run']} updates each; baseline {record['baseline']}",
        f"- what differs between arms: {options}",
        f"- selection: {record['selection']}",
        f"- scored on: {record['scored_on']['split']}, beam {record['scored_on']['beam']}; sacreBLEU "
        f"`{record['bleu_signature']}`",
        f"- statistics: {record['statistics']} ({_settings(record.get('test_settings'))})",
        f"- search for the base configuration: {record.get('search', 'not stated')}",
        _code_line(record.get("user_code")),
        f"- hardware: {hardware}",
        f"- software: {soft}",
        f"- compute: {record['train_s_total']} s of training in all ({record['train_s_per_run']} s per run, "
        f"as each run measured it, so shared when runs trained side by side); this command's wall time "
        f"{record['wall_s']} s",
        *_timing_lines(record.get("update_timing")),
    ]


def _settings(settings: Optional[dict[str, Any]]) -> str:
    if not settings:
        return "settings not recorded"
    return (
        f"bootstrap {settings['bootstrap_resamples']} resamples, seed {settings['bootstrap_seed']}; "
        f"randomization {settings['ar_trials']} trials, seed {settings['ar_seed']}"
    )


def _timing_lines(timing: Optional[dict[str, Any]]) -> list[str]:
    """The record's line on ``s/update (alone)``, where the arms were timed."""
    if not timing:
        return []
    values = "; ".join(f"{label} {arm['s_per_update']} s" for label, arm in timing["arms"].items())
    return [f"- seconds per update alone: {values}. {timing['method']}"]


def write_record(out: Path, record: dict[str, Any]) -> tuple[Path, Path]:
    """``out/record.json`` and ``out/record.md``."""
    page = "\n".join(["# Reproducibility record", "", *_lines(record)]) + "\n"
    return write_report(out / RECORD, record, [], markdown=page)
