"""One finished (or running) run in numbers: what it was, how long it trained, how fast, how it scored.

Everything comes from what the repository's own commands wrote into the run folder:
``config.yaml`` (pair, attention), ``metrics.jsonl`` (the start event's parameters and
hardware, the train events' speed, the validation curve, the stop event's time, epochs and
updates) and the ``report.json`` of the evaluation folders ``eval-greedy`` and ``eval-beam5``
(``nmt eval --beam 1 --out RUN/eval-greedy``, ``--beam 5 --out RUN/eval-beam5``).  The
Markdown table here is the README's results table.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Optional

from nmt.evaluation.run_files import checkpoint_parameters, read_compare_scores, read_eval, read_run_events
from nmt.run import events
from nmt.run.paths import REPORT_EVALS, RunPaths

EVAL_FOLDERS = REPORT_EVALS
"""Which evaluation folder holds which column of the table."""

HARDWARE_KEYS = ("device", "device_name", "cpus", "threads", "torch")


@dataclass(frozen=True)
class EvalScores:
    """Test scores of one evaluation folder, with the sacreBLEU signature of each metric."""

    split: Optional[str]
    bleu: float
    chrf: float
    signatures: dict[str, str]  # metric ("bleu", "chrf", ...) -> signature


@dataclass(frozen=True)
class CurvePoint:
    """One validation: when (updates, wall-clock minutes) and how good (greedy BLEU)."""

    step: int
    minutes: float
    bleu: float


@dataclass(frozen=True)
class RunSummary:
    """One row of the results table plus what the report's other sections show."""

    run: Path
    pair: str
    attention: str  # the attention type, or "transformer"
    params: Optional[int]
    hardware: Optional[dict[str, Any]]  # None: logged before start events existed
    train_minutes: float  # wall clock of training, validation included
    epochs: int
    updates: int
    stop_reason: Optional[str]  # None: no stop event (still training, or killed)
    stopped: bool
    tokens_per_s: Optional[float]  # target tokens per second over the logged updates
    valid_bleu_signature: Optional[str]
    curve: list[CurvePoint]
    evals: dict[str, Optional[EvalScores]]  # EVAL_FOLDERS key -> scores, None when not evaluated

    @property
    def name(self) -> str:
        """The run folder's name: the table's run column and the curves' label."""
        return self.run.name

    @property
    def best(self) -> Optional[CurvePoint]:
        """The best validation, the first of equals (the one best.pt holds)."""
        return max(self.curve, key=lambda p: p.bleu, default=None)


def _config_labels(run_dir: Path) -> tuple[str, str]:
    """Pair and attention from ``config.yaml``; "n/a" when the file is gone, since the metrics
    alone still make a report."""
    import yaml

    path = RunPaths(run_dir).config
    if not path.is_file():
        return "n/a", "n/a"
    config = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    data, model = config.get("data", {}), config.get("model", {})
    attention = "transformer" if model.get("arch") == "transformer" else model.get("attention", {}).get("type", "n/a")
    return f"{data.get('src', '?')}-{data.get('tgt', '?')}", attention


def throughput(train: list[events.Train]) -> Optional[float]:
    """Target tokens per second over the logged updates: their tokens over their time, so a
    slow update weighs by how long it took (the mean of tok_s would overstate speed)."""
    timed = [e for e in train if e.tok_s > 0 and e.tgt_tokens > 0]
    if not timed:
        return None
    return sum(e.tgt_tokens for e in timed) / sum(e.tgt_tokens / e.tok_s for e in timed)


def _eval_scores(folder: Path) -> Optional[EvalScores]:
    """Scores of one evaluation folder with every ``*_signature`` it holds (TER's too, once
    nmt eval writes it), so the report lists whatever metrics were scored."""
    system = read_eval(folder)
    if system is None:
        return None
    signatures = {
        key.removesuffix("_signature"): value
        for key, value in system.items()
        if key.endswith("_signature") and isinstance(value, str)
    }
    return EvalScores(
        split=system["split"], bleu=float(system["bleu"]), chrf=float(system["chrf"]), signatures=signatures
    )


def summarize(run_dir: Path) -> RunSummary:
    """Read one run folder; UserError (one line) when it has no readable metrics.jsonl."""
    run_dir = Path(run_dir)
    log = read_run_events(run_dir)
    starts, stops = events.of_kind(log, events.Start), events.of_kind(log, events.Stop)
    valid = events.of_kind(log, events.Valid)
    last = stops[-1] if stops else (log[-1] if log else None)
    params = starts[0].params if starts and starts[0].params is not None else None
    paths = RunPaths(run_dir)
    best_pt = paths.best
    if params is None and best_pt.is_file():
        params = checkpoint_parameters(best_pt)
    pair, attention = _config_labels(run_dir)
    return RunSummary(
        run=run_dir,
        pair=pair,
        attention=attention,
        params=params,
        hardware={k: starts[0].hardware.get(k) for k in HARDWARE_KEYS} if starts else None,
        train_minutes=last.elapsed_s / 60 if last else 0.0,
        epochs=last.epoch if last else 0,
        updates=last.step if last else 0,
        stop_reason=stops[-1].reason if stops else None,
        stopped=bool(stops),
        tokens_per_s=throughput(events.of_kind(log, events.Train)),
        valid_bleu_signature=next((e.bleu_signature for e in valid if e.bleu_signature), None),
        curve=[CurvePoint(e.step, e.elapsed_s / 60, e.bleu) for e in valid],
        evals=_with_compare_scores(run_dir, {key: _eval_scores(paths.report_eval(key)) for key in EVAL_FOLDERS}),
    )


COMPARE_BEAMS = {"greedy": 1, "beam5": 5}
"""The beam of the scores ``nmt compare`` saved that fill each column an nmt eval folder did not."""


def _with_compare_scores(run_dir: Path, evals: dict[str, Optional[EvalScores]]) -> dict[str, Optional[EvalScores]]:
    """``evals`` with each empty column filled from the run's ``nmt compare`` scores of the same beam
    (a test split before any other), so a comparison's runs report their scores instead of n/a."""
    saved = sorted(read_compare_scores(run_dir), key=lambda s: not s["split"].startswith("test"))
    filled = dict(evals)
    for column, beam in COMPARE_BEAMS.items():
        match = next((s for s in saved if s["beam"] == beam), None)
        if filled.get(column) is None and match is not None:
            filled[column] = EvalScores(match["split"], match["bleu"], match["chrf"], {"bleu": match["bleu_signature"]})
    return filled


def _score(scores: Optional[EvalScores], metric: str) -> str:
    """A table cell: two decimals, or n/a for a folder never evaluated."""
    return f"{getattr(scores, metric):.2f}" if scores else "n/a"


def results_table(rows: list[RunSummary]) -> str:
    """The README's results table, one line per run (n/a where a run was not evaluated)."""
    lines = [
        "| pair | attention | run | parameters | training | best validation BLEU (greedy) "
        "| test BLEU greedy | test BLEU beam 5 | test chrF beam 5 |",
        "| --- | --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    for row in rows:
        params = f"{row.params / 1e6:.1f}M" if row.params is not None else "n/a"
        best = row.best
        valid = f"{best.bleu:.2f} after {best.minutes:.1f} min" if best else "n/a"
        greedy, beam5 = row.evals["greedy"], row.evals["beam5"]
        lines.append(
            f"| {row.pair} | {row.attention} | {row.name} | {params} | "
            f"{row.train_minutes:.1f} min, {row.epochs} epochs | {valid} | {_score(greedy, 'bleu')} | "
            f"{_score(beam5, 'bleu')} | {_score(beam5, 'chrf')} |"
        )
    return "\n".join(lines)
