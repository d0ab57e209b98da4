"""``nmt compare``: variants and option sweeps trained for the same number of updates over several seeds.

For every arm (:mod:`nmt.config.arms`: a named variant, a point of the ``--sweep`` grid, or both)
and seed this trains the base config with the arm's overrides, ``train.seed`` and
``train.max_steps`` (and no wall-clock budget), so the same command trains the same models on a
fast or a slow machine.  The best checkpoint by validation then translates one split (with the
arm's ``decode.*`` values; arms that differ only there share their runs), and the report gives
per arm: mean and standard
deviation over seeds of BLEU and chrF, a paired bootstrap test against the baseline for each
seed (sacreBLEU's, on that seed's translations), BLEU by source length (mean over seeds),
updates, training wall time and parameters.  A run that already finished the same plan is
not retrained, and its saved score is reused while its best checkpoint is unchanged; a run of
the same config that stopped before its end (Ctrl-C, a killed process) is resumed from its last
checkpoint, exactly as ``nmt train --resume`` would; so an interrupted comparison continues
where it stopped, to the update, and a larger seed list only adds runs.
A run that differs only in speed options (:data:`SPEED_ONLY`, e.g. ``train.threads``) is reused
too; a finished run of another config is replaced only with ``--force``, and without it the
comparison is refused before anything trains.
"""

from __future__ import annotations

import functools
import json
import logging
import statistics
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Optional

from nmt import config as config_mod
from nmt.config import saved as saved_configs
from nmt.config.arms import Arm, Sweep, expand_arms
from nmt.config.saved import SPEED_ONLY, without_inert_options  # noqa: F401  (what a reused run may differ in; tests ask here)
from nmt.config.variants import VARIANTS
from nmt.evaluate.run_report import check_out_folder
from nmt.run import events
from nmt.run import folder as rundir
from nmt.run.paths import REPORT, SCORED, RunPaths, report_stem
from nmt.score.metrics import bleu_by_length, compare_systems, score, write_report
from nmt.util.errors import UserError
from nmt.util.fileio import atomic_write_bytes

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Plan:
    """What to compare; :func:`check_plan` validates it before anything trains."""

    config: Optional[Path]
    variants: Optional[list[str]]  # None: the base config's own model (with sweeps) or bahdanau, luong_general
    seeds: list[int]
    steps: Optional[int]
    baseline: Optional[str] = None  # None: the first arm
    sweeps: list[Sweep] = field(default_factory=list)
    split: str = "test"
    beam: Optional[int] = None  # None: the config's decode.beam
    runs_dir: Path = Path("runs/compare")
    overrides: list[str] = field(default_factory=list)
    force: bool = False  # replace finished runs of another config (else the comparison is refused)

    @functools.cached_property
    def arms(self) -> list[Arm]:  # expanded once per plan: every loop over arms and the reference read it
        default = None if self.sweeps else ["bahdanau", "luong_general"]
        return expand_arms(self.variants if self.variants is not None else default, self.sweeps)

    @property
    def reference(self) -> str:
        return self.baseline or self.arms[0].label


def parse_list(text: str, what: str, cast: type = str) -> list[Any]:
    """'a,b' -> ['a', 'b'] (cast each); an empty list or a bad item is a UserError."""
    items = [item.strip() for item in text.split(",") if item.strip()]
    if not items:
        raise UserError(f"--{what}: give at least one, comma-separated")
    try:
        values = [cast(item) for item in items]
    except ValueError:
        raise UserError(f"--{what} {text!r}: expected comma-separated {cast.__name__} values") from None
    if len(set(values)) < len(values):
        raise UserError(f"--{what} {text!r}: each may appear once")
    return values


def run_overrides(plan: Plan, arm: Arm, seed: int, steps: int) -> list[str]:
    """The ``--set`` list of one run: base overrides, the arm's training ones, then the plan's fixed ones."""
    return [
        *plan.overrides,
        *arm.train,
        f"name={arm.run_stem}_s{seed}",
        f"runs_dir={plan.runs_dir}",
        f"train.seed={seed}",
        f"train.max_steps={steps}",
        "train.time_budget_min=null",
        "train.max_epochs=100000",
    ]


def check_plan(plan: Plan) -> int:
    """Every problem a user can fix, raised before any training; returns the updates per run."""
    if plan.beam is not None and any(sweep.key == "decode.beam" for sweep in plan.sweeps):
        raise UserError("--beam and --sweep decode.beam=...: give the beam sizes in the sweep alone")
    labels = [arm.label for arm in plan.arms]
    if plan.reference not in labels:
        shown = ", ".join(repr(x) for x in labels[:6]) + (f" and {len(labels) - 6} more" if len(labels) > 6 else "")
        raise UserError(f"--baseline {plan.reference!r} is not among the compared arms ({shown})")
    if not plan.seeds:
        raise UserError("--seeds: give at least one seed")
    base = config_mod.load(plan.config, plan.overrides)
    folder, src = base.data.prepared_dir, base.data.src
    if folder.is_dir() and not (folder / f"{plan.split}.{src}").is_file():  # unprepared: training prepares it
        found = sorted(p.stem for p in folder.glob(f"*.{src}"))
        raise UserError(f"--split {plan.split}: the corpus in {folder} has no such split (have: {', '.join(found)})")
    steps = plan.steps if plan.steps is not None else base.train.max_steps
    if steps is None or steps < 1:
        raise UserError(
            "a comparison trains a fixed number of updates: give --steps N (N >= 1) "
            "or set train.max_steps in the config"
        )
    for arm in plan.arms:  # an arm or seed that does not fit the base config fails now, not after hours
        for seed in plan.seeds:
            config_mod.load(plan.config, [*run_overrides(plan, arm, seed, steps), *arm.decode])
    return steps


def _stop(run_dir: Path) -> Optional[events.Stop]:
    """The run's last stop event (None while it never stopped)."""
    stops = events.of_kind(events.read(run_dir), events.Stop)
    return stops[-1] if stops else None


def completed(run_dir: Path) -> Optional[events.Stop]:
    """The stop event of a run that trained to its end (not interrupted, not started again
    since) and has a best checkpoint; None for an unfinished run or none at all."""
    ends = [e for e in events.read(run_dir) if isinstance(e, (events.Start, events.Stop))]
    last = ends[-1] if ends else None
    if not isinstance(last, events.Stop) or last.reason == "interrupted":
        return None
    return last if RunPaths(run_dir).best.is_file() else None


def _trained_config(run_dir: Path) -> Optional[config_mod.Config]:
    """The config a run was trained with, read as a saved run is read on resume (an option added
    since takes its old value); None without one, or with one this version cannot read."""
    saved = RunPaths(run_dir).config
    if not saved.is_file():
        return None
    try:
        return config_mod.load(saved, saved=True)
    except UserError:
        return None


def differences(a: config_mod.Config, b: config_mod.Config) -> list[str]:
    """The dotted option names whose values differ between two configs."""
    return [change.key for change in saved_configs.changes(a, b)]


@dataclass(frozen=True)
class RunAction:
    """What the comparison does with one run (see :func:`run_action`), and why, for the log."""

    overrides: list[str]
    run_dir: Path
    action: str  # reuse, resume, train, replace, kept or refused
    note: str = ""


def run_action(plan: Plan, arm: Arm, seed: int, steps: int) -> RunAction:
    """One run's overrides, folder and what the comparison does with it.

    "reuse": a finished run of this config, up to inert options (a run that differs only in
    :data:`SPEED_ONLY` options is reused, and the note says how); "resume": an unfinished run of
    this config (same rule) with a last checkpoint, which training continues from it; "train": an
    empty or absent folder; "replace": an unfinished run of another config or without a last
    checkpoint, or with ``plan.force`` a finished one of another config, which training
    overwrites; "kept": a finished run of another config, which only ``--force`` replaces;
    "refused": files nmt did not write, which training will not touch.
    """
    overrides = run_overrides(plan, arm, seed, steps)
    cfg = config_mod.load(plan.config, overrides)
    run_dir = Path(cfg.runs_dir) / cfg.name
    try:
        replaceable = rundir.check_replaceable(run_dir, overwrite=True)
    except UserError:
        return RunAction(overrides, run_dir, "refused", "not an nmt run: training will not touch it")
    if not replaceable:
        return RunAction(overrides, run_dir, "train")
    stop, trained = completed(run_dir), _trained_config(run_dir)
    changed = (
        [c.key for c in saved_configs.changes(trained, cfg, saved_configs.SAME_TRAINING)]
        if trained
        else [RunPaths(run_dir).config.name]
    )
    if stop is None:
        if changed or not RunPaths(run_dir).last.is_file():
            return RunAction(overrides, run_dir, "replace", "unfinished")
        return RunAction(overrides, run_dir, "resume", f"unfinished; resumed from {RunPaths(run_dir).last.name}")
    if trained is not None and not changed and (stop.step >= steps or stop.reason == "early_stopping"):
        speed = [
            f"train.{k} was {getattr(trained.train, k)}, not {getattr(cfg.train, k)}"
            for k in SPEED_ONLY
            if getattr(trained.train, k) != getattr(cfg.train, k)
        ]
        note = f"{', '.join(speed)} (speed and logging only, not the model)" if speed else ""
        return RunAction(overrides, run_dir, "reuse", note)
    shown = ", ".join(changed[:4]) + (f" and {len(changed) - 4} more" if len(changed) > 4 else "")
    note = f"finished with another {shown}" if changed else f"finished after {stop.step} updates, not {steps}"
    return RunAction(overrides, run_dir, "replace" if plan.force else "kept", note)


def planned_actions(plan: Plan, steps: int) -> dict[tuple[str, int], RunAction]:
    """What happens to each run folder of the plan, keyed by (run stem, seed): arms that differ only
    in decoding options share one."""
    actions: dict[tuple[str, int], RunAction] = {}
    for arm in plan.arms:
        for seed in plan.seeds:
            if (arm.run_stem, seed) not in actions:
                actions[arm.run_stem, seed] = run_action(plan, arm, seed, steps)
    return actions


def planned_runs(plan: Plan) -> list[str]:
    """One line per run of the plan with its action (:func:`run_action`): ``nmt compare --dry-run``."""
    steps = check_plan(plan)
    users: dict[str, list[str]] = {}
    for arm in plan.arms:
        users.setdefault(arm.run_stem, []).append(arm.label)
    lines = []
    for (stem, seed), act in planned_actions(plan, steps).items():
        note = f" ({act.note})" if act.note else ""
        lines.append(f"{act.action:<8} {' | '.join(users[stem])} seed {seed}: {act.run_dir}{note}")
    return lines


def check_finished_work(actions: list[RunAction]) -> None:
    """Refuse, before anything trains, a plan that would delete files nmt did not write, or
    replace finished runs of another config without ``--force`` (listed, the first few)."""
    for act in actions:
        if act.action == "refused":
            rundir.check_replaceable(act.run_dir, overwrite=True)  # raises, saying why
    kept = [a for a in actions if a.action == "kept"]
    if kept:
        listed = ", ".join(str(a.run_dir) for a in kept[:3]) + (f" and {len(kept) - 3} more" if len(kept) > 3 else "")
        raise UserError(
            f"{len(kept)} finished run(s) of another config would be trained again and replaced: "
            f"{listed} ({kept[0].note}); give --force to replace them, or another --runs-dir"
        )


def train_run(plan: Plan, act: RunAction, label: str, seed: int, steps: int, progress: bool) -> Path:
    """Train one arm and seed (or reuse its finished run, or resume its unfinished one); returns the
    run directory."""
    from nmt.train.loop import run_training

    if act.action == "reuse":
        log.info(
            "%s seed %d: reusing the finished run %s%s",
            label,
            seed,
            act.run_dir,
            f"; its {act.note}" if act.note else "",
        )
        return act.run_dir
    if act.action == "resume":
        log.info("%s seed %d: resuming the unfinished run %s (%d updates in all)", label, seed, act.run_dir, steps)
        outcome = run_training(None, [], resume=act.run_dir, progress=progress)
    else:
        log.info("%s seed %d: training %d updates into %s", label, seed, steps, act.run_dir)
        outcome = run_training(plan.config, act.overrides, overwrite=True, progress=progress)
    if outcome.exit_code:
        raise KeyboardInterrupt  # stopped by a signal: the run is saved; rerun the command to go on
    return act.run_dir


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
    stop = _stop(run_dir)
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


def table_rows(rows: list[dict[str, Any]], baseline: str) -> list[dict[str, Any]]:
    """The Markdown table: one line per variant."""
    out = []
    for r in rows:
        p = "baseline" if r["variant"] == baseline else ", ".join(f"{v:.3f}" for v in r["p_values"])
        out.append(
            {
                "variant": r["variant"],
                "params": f"{r['params']:,}",
                "updates": r["updates"],
                "train min": r["train_min"],
                "BLEU": f"{r['bleu']:.2f} ± {r['bleu_sd']:.2f}",
                "chrF": f"{r['chrf']:.2f} ± {r['chrf_sd']:.2f}",
                "ΔBLEU": r["delta_bleu"],
                "p per seed": p,
                **{f"BLEU len {k}": v for k, v in r["bleu_by_length"].items()},
            }
        )
    return out


def run_compare(plan: Plan, out: Optional[Path] = None, progress: bool = True) -> str:
    """Train (or reuse) every run of the plan, score them, write report.json/.md; returns the table."""
    steps = check_plan(plan)
    out = out or plan.runs_dir / REPORT
    check_out_folder(out)  # not after hours of training
    actions = planned_actions(plan, steps)
    check_finished_work(list(actions.values()))
    scored: dict[str, dict[int, dict[str, Any]]] = {}
    run_dirs: dict[tuple[str, int], Path] = {}  # trained once, scored by every arm that shares it
    for arm in plan.arms:
        for seed in plan.seeds:
            key = (arm.run_stem, seed)
            if key not in run_dirs:
                run_dirs[key] = train_run(plan, actions[key], arm.label, seed, steps, progress)
            scored.setdefault(arm.label, {})[seed] = score_run(run_dirs[key], plan, arm)
    rows = summarize(plan, scored)
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
        "known_variants": {k: list(v) for k, v in VARIANTS.items() if k in (plan.variants or [])},
    }
    json_path, md_path = write_report(report_stem(out), payload, table_rows(rows, plan.reference))
    return f"{md_path.read_text(encoding='utf-8')}\nwrote {json_path} and {md_path}"
