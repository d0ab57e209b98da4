"""``nmt.evaluate`` and ``nmt.compare``: the ``nmt eval`` and ``nmt compare`` commands from Python,
their tables returned as records (:class:`~nmt.api.records.Records`, a DataFrame on request).

Each calls the function its command calls (:func:`nmt.evaluation.eval_command.run_eval`,
:func:`nmt.comparison.command.run_compare`), which writes report.json and report.md as always; the
records are read back from that report.json, so the library returns what the files hold.  The
commands call these functions in turn, keeping one path from options to report.
"""

from __future__ import annotations

import json
import logging
import math
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Optional, Union

from nmt.api import arguments as check
from nmt.api.extending import allowing_modules
from nmt.api.records import Records
from nmt.api.training import Overrides, override_list
from nmt.run.paths import REPORT, RunPaths, report_json
from nmt.util.errors import UserError, short_repr
from nmt.util.logs import ensure_configured

if TYPE_CHECKING:
    from nmt.config.arms import Sweep

PathLike = Union[str, Path]

log = logging.getLogger(__name__)


def _read_report(folder: Path) -> dict[str, Any]:
    report: dict[str, Any] = json.loads(report_json(folder).read_text(encoding="utf-8"))
    return report


@dataclass(frozen=True)
class Evaluation:
    """What ``nmt eval`` wrote: the report (report.json's contents), its folder, and the summary it prints."""

    report: dict[str, Any]
    folder: Path
    summary: str

    @property
    def records(self) -> Records:
        """One record per system: its name, then BLEU, chrF, TER, their signatures and the segment count."""
        return Records({"system": name, **scores} for name, scores in self.report["systems"].items())

    @property
    def comparison(self) -> Records:
        """With several systems, one record per system against the first (differences and p-values)."""
        return Records(self.report.get("comparison", []))

    @property
    def bleu_by_length(self) -> Records:
        """BLEU by source length, one record per system and length bucket (where sources are known)."""
        series = self.report.get("bleu_by_length", {})
        return Records({"system": name, **row} for name, rows in series.items() for row in rows)

    def to_pandas(self) -> Any:
        """:attr:`records` as a pandas DataFrame (needs pandas)."""
        return self.records.to_pandas()


def _checkpoints(checkpoint: Union[PathLike, Sequence[PathLike], None]) -> list[Path]:
    """Checkpoint files; a run folder with a best checkpoint stands for it (any other path is left
    for the loader to refuse, as ``nmt eval --checkpoint`` does)."""
    if checkpoint is None:
        return []
    if isinstance(checkpoint, (str, os.PathLike)):
        paths = [check.path("checkpoint", checkpoint)]
    else:
        paths = check.paths("checkpoint", checkpoint)
    return [RunPaths(p).chosen if RunPaths(p).best.is_file() else p for p in paths]


def evaluate(
    checkpoint: Union[PathLike, Sequence[PathLike], None] = None,
    *,
    split: str = "test",
    hyps: Optional[Sequence[PathLike]] = None,
    ref: Optional[PathLike] = None,
    src: Optional[PathLike] = None,
    model: Optional[PathLike] = None,
    engine: Optional[str] = None,
    compute_type: str = "float32",
    out: Optional[PathLike] = None,
    beam: Optional[int] = None,
    overrides: Overrides = None,
    test: str = "both",
    bootstrap_samples: int = 1000,
    ar_trials: int = 10000,
    seed: int = 12345,
    modules: Sequence[str] = (),
) -> Evaluation:
    """Score systems with sacreBLEU as ``nmt eval`` does, writing report.json and report.md.

    Give one of: ``checkpoint`` (a checkpoint, a run folder for its best, or several: an ensemble)
    to translate ``split`` of its corpus; ``model`` (an export folder on ``engine``) with ``src``
    and ``ref``; or hypothesis files ``hyps`` with ``ref`` (several are compared with the first
    by paired bootstrap resampling and approximate randomization, ``test``).

    Args:
        engine: what runs ``model``: None takes the export's own engine, as :func:`nmt.load` does.
        out: the report's folder; default the run's ``eval/`` (``eval-ensemble/``), else ``eval/``.
        beam: beam size when translating; default the model's ``decode.beam``.
        overrides: ``decode.*`` settings, as ``--set`` takes them or as a mapping.
        test: the significance tests of several systems: ``"both"``, ``"bootstrap"``, ``"ar"`` or ``"none"``.
        bootstrap_samples: resamples of the paired bootstrap (1 or more).
        ar_trials: trials of approximate randomization (1 or more).
        seed: the tests' random seed, 0 to 2**32 - 1.
        modules: modules a checkpoint may load its attention from (see :func:`nmt.load`).

    Raises:
        nmt.util.errors.UserError: a bad combination, path or file, or an argument of the wrong
            type or out of range (naming the parameter), in one line.
    """
    from nmt.decode.engines import ENGINE_NAMES
    from nmt.evaluation.eval_command import default_out, run_eval

    ensure_configured()
    checkpoints = _checkpoints(checkpoint)
    hyp_files = check.paths("hyps", hyps) if hyps is not None else []
    model_dir = check.optional_path("model", model)
    if engine is not None:
        check.choice("engine", engine, ENGINE_NAMES)
    folder = check.path("out", out) if out is not None else default_out(checkpoints)
    with allowing_modules(modules):
        summary = run_eval(
            checkpoints=checkpoints,
            split=check.text("split", split),
            hyps=hyp_files,
            ref=check.optional_path("ref", ref),
            src=check.optional_path("src", src),
            out=folder,
            beam=check.decode_option("beam", beam),
            overrides=override_list(overrides),
            test=check.text("test", test),
            bootstrap_samples=check.integer("bootstrap_samples", bootstrap_samples, minimum=1),
            ar_trials=check.integer("ar_trials", ar_trials, minimum=1),
            seed=check.integer("seed", seed, minimum=1, maximum=check.MAX_SEED),
            model=model_dir,
            engine=engine,
            compute_type=check.text("compute_type", compute_type),
        )
    return Evaluation(_read_report(folder), folder, summary)


@dataclass(frozen=True)
class Comparison:
    """What ``nmt compare`` wrote: the report (report.json), its folder, and the table it prints; or,
    from a dry run, only :attr:`planned` (the report empty, nothing written)."""

    report: dict[str, Any]
    folder: Path
    text: str
    planned: list[str] = field(default_factory=list)
    """One line per run of the plan with what happens to it (``train``, ``reuse``, ``resume``, ...),
    as ``nmt compare --dry-run`` prints them."""

    @property
    def records(self) -> Records:
        """One record per arm (variant or sweep point): seeds, BLEU and chrF means with 95% intervals,
        p-values against the baseline, updates, training minutes, parameters, FLOPs per token and,
        where the comparison timed them, seconds per update alone (``s_per_update_alone``); none
        after a dry run."""
        return Records(self.report.get("variants", []))

    def to_pandas(self) -> Any:
        """:attr:`records` as a pandas DataFrame (needs pandas)."""
        return self.records.to_pandas()


def _items(value: Sequence[Any], name: str) -> Sequence[Any]:
    """``value`` if it is a list of names and finite numbers (``name``: the parameter, for the message
    refusing anything else, e.g. ``seeds=3``)."""
    if isinstance(value, (str, bytes)) or not isinstance(value, Sequence):
        raise UserError(f"{name}={short_repr(value)}: give a list, e.g. [{short_repr(value)}], or 'a,b' text")
    for i, item in enumerate(value):
        if not isinstance(item, (str, int, float)) or (isinstance(item, float) and not math.isfinite(item)):
            raise UserError(f"{name}[{i}]={short_repr(item)}: give a name or a finite number")
        if isinstance(item, str) and "," in item:
            raise UserError(f"{name}[{i}]={short_repr(item)}: one item per list entry, without commas")
    return value


def _joined(value: Union[str, Sequence[Any], None], name: str) -> Optional[str]:
    """A comma-separated list as the command takes it, from a list (checked by :func:`_items`) or that text."""
    if value is None or isinstance(value, str):
        return value
    return ",".join(str(v) for v in _items(value, name))


def _sweeps(sweep: Union[str, Sequence[str], Mapping[str, Sequence[Any]], None]) -> list[Sweep]:
    """The sweeps of one ``KEY=V1,V2`` text, a list of them, or a mapping ``{KEY: [V1, V2]}`` whose
    values are kept whole (:func:`nmt.config.arms.sweep_of`), never joined with commas and split again."""
    from nmt.config.arms import parse_sweep, sweep_of

    if sweep is None:
        return []
    if isinstance(sweep, str):
        return [parse_sweep(sweep)]
    if isinstance(sweep, Mapping):
        return [
            sweep_of(key, values if isinstance(values, str) else _items(values, f"sweep[{key!r}]"))
            for key, values in sweep.items()
        ]
    return [parse_sweep(check.text("sweep", text)) for text in sweep]


def default_runs_dir(config: Optional[Path], overrides: Sequence[str]) -> Path:
    """Where a comparison's runs go without ``runs_dir``: ``compare_<config name>`` in the config's
    own ``runs_dir`` (``runs`` by default), so a config that keeps its runs elsewhere keeps these too."""
    from nmt.config import load

    return Path(load(config, overrides).runs_dir) / f"compare_{config.stem if config else 'defaults'}"


def _power(seeds: Sequence[int], spread: Any, target: Any) -> list[str]:
    """The design's power line for a stated ``spread``, or the spread of an earlier comparison (a
    path to its report.json or its folder); none without one."""
    if spread is None:
        if target is not None:
            raise UserError("target: give spread too (the power of a design depends on the spread between seeds)")
        return []
    from nmt.score.power import BLEU_RANGE, power_line

    if isinstance(spread, (str, os.PathLike)):
        from nmt.comparison.scores import report_spread

        sigma = report_spread(check.path("spread", spread))
    else:
        sigma = check.number("spread", spread, minimum=BLEU_RANGE[0], maximum=BLEU_RANGE[1])
    delta = None if target is None else check.number("target", target, minimum=BLEU_RANGE[0], maximum=BLEU_RANGE[1])
    if len(seeds) < 2:
        return ["power: one seed has no test across seeds; give --seeds with two or more"]
    return [f"power: {power_line(sigma, len(seeds), delta)}"]


def compare(
    config: Optional[PathLike] = None,
    *,
    variants: Union[str, Sequence[str], None] = None,
    sweep: Union[str, Sequence[str], Mapping[str, Sequence[Any]], None] = None,
    seeds: Union[str, Sequence[int]] = (1, 2),
    steps: Optional[int] = None,
    baseline: Optional[str] = None,
    split: str = "test",
    beam: Optional[int] = None,
    runs_dir: Optional[PathLike] = None,
    out: Optional[PathLike] = None,
    overrides: Overrides = None,
    progress: bool = True,
    jobs: int = 1,
    force: bool = False,
    match_params: Optional[str] = None,
    time_updates: int = 0,
    dry_run: bool = False,
    spread: Union[float, PathLike, None] = None,
    target: Optional[float] = None,
    search: Optional[str] = None,
    modules: Sequence[str] = (),
) -> Comparison:
    """Train variants or option sweeps for the same number of updates over several seeds and compare
    their scores, as ``nmt compare`` does (finished runs are reused; report.json, report.md and the
    reproducibility record are written to ``out``, default ``RUNS_DIR/report``).  The command calls
    this function, so both check the same options with the same messages.

    Args:
        config: the base YAML config (None: the defaults).
        variants: named variants (``nmt variants``), a list or ``"a,b"``; the first is the baseline.
        sweep: ``"train.teacher_forcing=1.0,0.5"``, a list of such, or ``{"train.teacher_forcing": [1.0, 0.5]}``.
        seeds: training seeds; every arm trains once per seed.
        steps: updates per run (default the config's ``train.max_steps``).
        runs_dir: the runs' folder (default ``compare_<config name>`` in the config's ``runs_dir``).
        match_params: an arm whose parameter count every other RNN arm is resized to (within 2%).
        time_updates: after the runs, time this many training updates of each arm alone, one arm
            after another in this process, for the ``s_per_update_alone`` record (0: no timing).
        dry_run: train, score and write nothing: the result's :attr:`~Comparison.planned` lists the
            runs with what would happen to each, the lines ``nmt compare --dry-run`` prints.
        spread: the standard deviation of per-seed BLEU differences between arms, a stated guess,
            or an earlier comparison's report.json (or its folder) to take it from: the plan's text then ends with the smallest difference its seeds
            detect with 80% power (:func:`nmt.score.power.power_line`), said before any run.
        target: with ``spread``, a BLEU difference to detect: the line adds the seeds it needs.
        search: what was searched to reach the base configuration, on which split and with what
            budget (Dodge et al. 2019), kept in the record (compare cannot know it).
        modules: modules to import first, whose registered attentions ``variants`` may then name
            (``["examples/attention/cosine.py"]`` for ``variants="bahdanau,cosine"``); names or ``.py`` paths.

    Raises:
        nmt.util.errors.UserError: a bad option or plan, before anything trains; one line.
    """
    arguments = {k: v for k, v in locals().items() if k != "modules"}
    from nmt.config.named_code import importing_config_code

    with allowing_modules(modules), importing_config_code(dry_run is not True):  # a plan only reads its config
        return _compare(**arguments)


def _compare(
    config: Optional[PathLike],
    variants: Union[str, Sequence[str], None],
    sweep: Union[str, Sequence[str], Mapping[str, Sequence[Any]], None],
    seeds: Union[str, Sequence[int]],
    steps: Optional[int],
    baseline: Optional[str],
    split: str,
    beam: Optional[int],
    runs_dir: Optional[PathLike],
    out: Optional[PathLike],
    overrides: Overrides,
    progress: bool,
    jobs: int,
    force: bool,
    match_params: Optional[str],
    time_updates: int,
    dry_run: bool,
    spread: Union[float, PathLike, None],
    target: Optional[float],
    search: Optional[str],
) -> Comparison:
    """:func:`compare` with its modules allowed."""
    from nmt.comparison.command import planned_runs, run_compare
    from nmt.comparison.plan import Plan, parse_list

    config_path = check.optional_path("config", config)
    names = _joined(variants, "variants")
    for name, value in (("baseline", baseline), ("match_params", match_params)):
        if value is not None:
            check.text(name, value)
    plan = Plan(
        config=config_path,
        variants=parse_list(names, "variants") if names is not None else None,
        sweeps=_sweeps(sweep),
        seeds=parse_list(_joined(seeds, "seeds") or "", "seeds", int),
        steps=check.integer("steps", steps, minimum=0) if steps is not None else None,  # 0: the plan says why not
        baseline=baseline,
        split=check.text("split", split),
        beam=check.decode_option("beam", beam),
        overrides=override_list(overrides),
        runs_dir=check.path("runs_dir", runs_dir)
        if runs_dir is not None
        else default_runs_dir(config_path, override_list(overrides)),
        force=check.flag("force", force),
        match_params=match_params,
        time_updates=check.integer("time_updates", time_updates, minimum=0),
        search=None if search is None else check.text("search", search),
    )
    check.integer("jobs", jobs, minimum=1)
    check.flag("progress", progress)
    folder = check.path("out", out) if out is not None else plan.runs_dir / REPORT
    design = _power(plan.seeds, spread, target)
    if check.flag("dry_run", dry_run):
        lines = planned_runs(plan)
        return Comparison({}, folder, "\n".join([*lines, *design]), lines)
    for line in design:
        log.info("%s", line)
    ensure_configured()
    text = run_compare(plan, out=folder, progress=progress, jobs=jobs)
    return Comparison(_read_report(folder), folder, text)
