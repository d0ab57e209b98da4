"""``nmt compare``: variants and option sweeps trained for the same number of updates over several seeds.

For every arm (:mod:`nmt.config.arms`: a named variant, a point of the ``--sweep`` grid, or both)
and seed this trains the base config with the arm's overrides, ``train.seed`` and
``train.max_steps`` (and no wall-clock budget), so the same command trains the same models on a
fast or a slow machine.  The best checkpoint by validation then translates one split (with the
arm's ``decode.*`` values; arms that differ only there share their runs), and the report gives
per arm: the mean over seeds of BLEU and chrF with a 95% Student's t interval, the paired t-test
against the baseline over seeds (:mod:`nmt.score.seed_stats`), a paired bootstrap test against the
baseline for each seed (sacreBLEU's, on that seed's translations), BLEU by source length (mean
over seeds), updates, training wall time, parameters, FLOPs per target token and, with
``--time-updates``, seconds per update measured alone; its title names the split, beam, seeds
and updates.  Beside it, record.json / record.md hold the reproducibility record
(:mod:`nmt.comparison.record`).  A run that already finished the same plan is
not retrained, and its saved score is reused while its best checkpoint is unchanged; a run of
the same config that stopped before its end (Ctrl-C, a killed process) is resumed from its last
checkpoint, exactly as ``nmt train --resume`` would; so an interrupted comparison continues
where it stopped, to the update, and a larger seed list only adds runs.
A run that differs only in speed options (:data:`nmt.config.saved.SPEED_ONLY`, e.g. ``train.threads``) is reused
too; a finished run of another config is replaced only with ``--force``, and without it the
comparison is refused before anything trains.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any, Optional

from nmt.comparison.jobs import check_jobs, train_side_by_side
from nmt.comparison.plan import Plan, check_plan
from nmt.comparison.record import build_record, write_record
from nmt.comparison.record_runs import run_entry
from nmt.comparison.runs import RunAction, check_finished_work, drop_stale_scores, planned_actions, train_run
from nmt.comparison.scores import header, score_run, summarize, table_rows
from nmt.comparison.timing import add_to_rows, summary, time_arms
from nmt.config.variants import VARIANTS, registered_variants, variant_overrides
from nmt.evaluation.record import RECORD_FILES
from nmt.evaluation.report_files import REPORT_FILES, check_report_outputs
from nmt.evaluation.run_report import check_out_folder
from nmt.run.paths import REPORT, report_stem
from nmt.score.metrics import write_report
from nmt.util.errors import UserError
from nmt.util.owned import claim
from nmt.util.registry import PATH


def planned_run_actions(plan: Plan) -> list[tuple[RunAction, str]]:
    """Each run of the plan with its action (:func:`run_action`) and the line that shows it."""
    steps = check_plan(plan)
    users: dict[str, list[str]] = {}
    for arm in plan.arms:
        users.setdefault(arm.run_stem, []).append(arm.label)
    found = []
    for (stem, seed), act in planned_actions(plan, steps).items():
        note = f" ({act.note})" if act.note else ""
        found.append((act, f"{act.action:<8} {' | '.join(users[stem])} seed {seed}: {act.run_dir}{note}"))
    return found


def planned_runs(plan: Plan) -> list[str]:
    """One line per run of the plan with its action (:func:`run_action`): ``nmt compare --dry-run``."""
    return [line for _act, line in planned_run_actions(plan)]


def run_compare(plan: Plan, out: Optional[Path] = None, progress: bool = True, jobs: int = 1) -> str:
    """Train (or reuse) every run of the plan, score them, write report.json/.md; returns the table.

    ``jobs`` > 1 trains up to that many runs at once, each in a process of its own
    (:mod:`nmt.comparison.jobs`), before they are scored.  With ``plan.time_updates``, each
    arm is then timed alone (:mod:`nmt.comparison.timing`) for the ``s/update (alone)`` column.
    """
    started = time.monotonic()
    check_jobs(jobs)
    steps = check_plan(plan)
    out = out or plan.runs_dir / REPORT
    check_out_folder(out)  # not after hours of training
    check_out_folder(plan.runs_dir, "--runs-dir")
    check_report_outputs(out, [*REPORT_FILES, *RECORD_FILES])  # nor a report.md of the user's there
    actions = planned_actions(plan, steps)
    check_finished_work(list(actions.values()))
    drop_stale_scores(list(actions.values()))
    if jobs > 1:
        train_side_by_side(plan, list(actions.values()), jobs, progress)
        actions = planned_actions(plan, steps)  # every run is now a finished one: reused below
        unfinished = [str(a.run_dir) for a in actions.values() if a.action != "reuse"]
        if unfinished:
            raise UserError(f"runs trained side by side did not finish their plan: {', '.join(unfinished)}")
    scored: dict[str, dict[int, dict[str, Any]]] = {}
    run_dirs: dict[tuple[str, int], Path] = {}  # trained once, scored by every arm that shares it
    for arm in plan.arms:
        for seed in plan.seeds:
            key = (arm.run_stem, seed)
            if key not in run_dirs:
                run_dirs[key] = train_run(plan, actions[key], arm.label, seed, steps, progress)
            scored.setdefault(arm.label, {})[seed] = score_run(run_dirs[key], plan, arm)
    rows = summarize(plan, scored)
    timing = None
    if plan.time_updates:  # every run has trained: each arm is timed alone
        timings = time_arms(plan, steps)
        add_to_rows(rows, timings)
        timing = summary(timings)
    out.mkdir(parents=True, exist_ok=True)
    payload = {
        "plan": {
            "config": str(plan.config) if plan.config else None,
            "variants": plan.variants,
            "sweeps": {s.key: list(s.values) for s in plan.sweeps},
            "arms": {a.label: {"train": list(a.train), "decode": list(a.decode)} for a in plan.arms},
            "seeds": plan.seeds,
            "steps": steps,
            "baseline": plan.reference,
            "split": plan.split,
            "overrides": plan.overrides,
        },
        "variants": rows,
        "known_variants": {
            k: variant_overrides(k)
            for k in plan.variants or []
            if k in VARIANTS or k in registered_variants() or PATH.fullmatch(k)
        },
        **({"update_timing": timing} if timing else {}),
    }
    claim(out, [*REPORT_FILES, *RECORD_FILES])
    title, intro = header(plan, rows, steps)
    intro = f"{intro} {timing['method']}" if timing else intro
    json_path, md_path = write_report(report_stem(out), payload, table_rows(rows, plan), title=title, intro=intro)
    entries = [
        run_entry(run_dirs[(arm.run_stem, seed)], arm.label, seed, plan.split, arm.score_tag)
        for arm in plan.arms
        for seed in plan.seeds
    ]
    record = build_record(
        plan, steps, rows, sorted(set(run_dirs.values())), time.monotonic() - started, timing, entries
    )
    record_json, _ = write_record(out, record)
    return f"{md_path.read_text(encoding='utf-8')}\nwrote {json_path} and {md_path}; the reproducibility record {record_json}"
