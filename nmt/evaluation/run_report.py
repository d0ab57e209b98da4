"""``nmt report``: a Markdown report with learning curves for one or more run folders.

Writes into one folder ``report.md`` (the results table and the sacreBLEU signatures of its
scores, parameters and training throughput, the figures) and two PNGs: validation BLEU
against updates and against wall-clock minutes, one line per run.  The numbers come from
:mod:`nmt.evaluation.run_summary`, the figures from :mod:`nmt.util.plots`; nothing is recomputed, so the
report says exactly what training and ``nmt eval`` logged.
"""

from __future__ import annotations

import logging
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Optional

from nmt.evaluation.record import RECORD_FILES, write_runs_record
from nmt.evaluation.report_files import check_report_outputs
from nmt.evaluation.run_files import find_runs
from nmt.evaluation.run_summary import RunSummary, results_table, summarize
from nmt.run.paths import REPORT
from nmt.run.test_reads import counts_line, read_counts
from nmt.util.errors import UserError
from nmt.util.fileio import atomic_write_bytes
from nmt.util.out_paths import check_can_create
from nmt.util.owned import claim
from nmt.util.plots import plot_curves

log = logging.getLogger(__name__)

REPORT_NAME = f"{REPORT}.md"
FIGURES = {"updates": "valid_bleu_by_updates.png", "minutes": "valid_bleu_by_minutes.png"}
METRIC_NAMES = {"bleu": "BLEU", "chrf": "chrF", "ter": "TER"}
DEFAULT_FOLDER = REPORT
"""Without --out the report goes to ``report/`` beside the first run (runs/report for runs/<name>)."""


def default_out(runs: Sequence[Path]) -> Path:
    """Where the report goes without --out: beside the (first) run, as nmt compare's does."""
    return Path(runs[0]).parent / DEFAULT_FOLDER


def check_out_folder(out: Path, option: str = "--out") -> None:
    """Refuse an output folder that cannot be one: ``out`` or the nearest of its parents that
    exists is a file (or anything else but a folder), a dangling symbolic link, a name too long,
    or a folder nmt cannot write in (:func:`nmt.util.out_paths.check_can_create`).  Checked before
    any work, so a bad ``--out`` costs nothing and writes nothing."""
    check_can_create(Path(out), option, "folder")


def curve_labels(rows: list[RunSummary]) -> list[str]:
    """Each run's legend label: its folder name, or its whole path where two names clash
    (seed runs of the same name under different folders), so no curve hides another."""
    names = [row.name for row in rows]
    return [row.name if names.count(row.name) == 1 else str(row.run) for row in rows]


def write_figures(rows: list[RunSummary], out: Path) -> list[str]:
    """The two learning-curve PNGs; file names written (none when no run has validated yet)."""
    if not any(row.curve for row in rows):
        return []
    labels = curve_labels(rows)
    by_updates = {label: [(p.step, p.bleu) for p in row.curve] for label, row in zip(labels, rows)}
    by_minutes = {label: [(p.minutes, p.bleu) for p in row.curve] for label, row in zip(labels, rows)}
    plot_curves(
        by_updates,
        out / FIGURES["updates"],
        xlabel="updates",
        ylabel="validation BLEU (greedy)",
        title="Validation BLEU against updates",
    )
    plot_curves(
        by_minutes,
        out / FIGURES["minutes"],
        xlabel="wall-clock minutes of training (validation included)",
        ylabel="validation BLEU (greedy)",
        title="Validation BLEU against time",
    )
    return list(FIGURES.values())


def signature_lines(rows: list[RunSummary]) -> list[str]:
    """One bullet per distinct (score, signature), naming the runs it covers: identical
    signatures are what makes the table's columns comparable."""
    seen: dict[tuple[str, str], list[str]] = {}
    for row in rows:
        if row.valid_bleu_signature:
            seen.setdefault(("validation BLEU (greedy)", row.valid_bleu_signature), []).append(row.name)
        for key, scores in row.evals.items():
            if not scores:
                continue
            for metric, signature in scores.signatures.items():
                name = METRIC_NAMES.get(metric, metric)
                label = f"test {name} {'greedy' if key == 'greedy' else 'beam 5'} ({scores.split})"
                seen.setdefault((label, signature), []).append(row.name)
    return [f"- {label}: `{signature}` ({', '.join(names)})" for (label, signature), names in seen.items()]


def _hardware(row: RunSummary) -> str:
    """What the speed was measured on, from the first start event (n/a for older logs)."""
    if not row.hardware:
        return "n/a"
    hw = row.hardware
    return f"{hw.get('device_name') or hw.get('device')}, {hw.get('threads')} threads, torch {hw.get('torch')}"


def throughput_table(rows: list[RunSummary]) -> str:
    """Size, speed and how each run ended."""
    lines = [
        "| run | parameters | updates | epochs | training minutes | target tokens/s | hardware | stopped by |",
        "| --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    for row in rows:
        params = f"{row.params:,}" if row.params is not None else "n/a"
        speed = f"{row.tokens_per_s:,.0f}" if row.tokens_per_s is not None else "n/a"
        stopped = (row.stop_reason or "unknown") if row.stopped else "no stop event (still training, or killed)"
        lines.append(
            f"| {row.name} | {params} | {row.updates} | {row.epochs} | {row.train_minutes:.1f} | "
            f"{speed} | {_hardware(row)} | {stopped} |"
        )
    return "\n".join(lines)


MARKDOWN_PUNCTUATION = frozenset("\\`*_{}[]()#+-.!|<>~&\"'=:$^")
"""ASCII punctuation that Markdown or HTML may give a meaning; CommonMark shows each literally after a backslash."""


def markdown_text(text: str, limit: int = 80) -> str:
    """``text`` (a name read from a file, such as a split's) as Markdown shows it literally, on one
    line: cut to ``limit`` characters, a character that is not printable written as its escape, and
    each character of :data:`MARKDOWN_PUNCTUATION` after a backslash (no link, tag or table cell)."""
    cut = text[:limit] + ("..." if len(text) > limit else "")
    out = []
    for char in cut:
        if not char.isprintable():
            out.append(char.encode("unicode_escape").decode("ascii").replace("\\", "\\\\"))
        else:
            out.append("\\" + char if char in MARKDOWN_PUNCTUATION else char)
    return "".join(out)


def holdout_reads(run: Path) -> str:
    """The run's test reads (:func:`nmt.run.test_reads.read_counts`) for report.md, each split's name
    shown literally (:func:`markdown_text`): the names come from files a user or a tool can edit."""
    counts: Counter[str] = Counter()
    for split, count in read_counts(run).items():
        counts[markdown_text(split)] += count
    return counts_line(dict(counts))


def markdown(rows: list[RunSummary], figures: list[str]) -> str:
    """The whole report.md."""
    parts = [
        "# Training report",
        "",
        "Runs: " + ", ".join(f"`{row.run}`" for row in rows) + ".",
        "",
        "## Final scores",
        "",
        results_table(rows),
        "",
        "Test scores from each run's `eval-greedy/report.json` (beam 1) and `eval-beam5/report.json` "
        "(`nmt eval --out RUN/eval-greedy` / `RUN/eval-beam5`); n/a: not evaluated. Training time is "
        "wall clock with validation included.",
        "",
        "sacreBLEU signatures:",
        "",
        *(signature_lines(rows) or ["- none (no validation or evaluation yet)"]),
        "",
        "## Learning curves",
        "",
    ]
    if figures:
        parts += [
            f"![validation BLEU against updates]({FIGURES['updates']})",
            "",
            f"![validation BLEU against minutes]({FIGURES['minutes']})",
            "",
        ]
    else:
        parts += ["No validation events yet, so no curves.", ""]
    parts += [
        "## Parameters and throughput",
        "",
        throughput_table(rows),
        "",
        "Target tokens per second are the logged updates' tokens over their time (training only, validation excluded).",
        "",
        "## Test reads",
        "",
        *(f"- {row.name}: {holdout_reads(row.run)}" for row in rows),
        "",
        "Each score of a test split with a run's models is one more look at the holdout (`nmt eval`, "
        "`nmt compare` and `nmt select` count them in the run folder); a setting chosen after a look "
        "was chosen on test, however slightly.",
        "",
    ]
    return "\n".join(parts)


def write_report(runs: Sequence[Path], out: Optional[Path] = None) -> tuple[Path, str]:
    """Read every run (all before writing, so a bad one leaves no half report), write report.md
    and the figures into ``out``; returns the report's path and the results table."""
    if not runs:
        raise UserError("give at least one run folder")
    out = Path(out) if out is not None else default_out(runs)
    if any(Path(run).resolve() == out.resolve() for run in runs):
        raise UserError(f"--out {out} is one of the runs; choose another folder")
    check_out_folder(out)
    check_report_outputs(out, [REPORT_NAME, *FIGURES.values(), *RECORD_FILES])
    rows = [summarize(run) for run in find_runs(runs)]
    claim(out, [REPORT_NAME, *FIGURES.values(), *RECORD_FILES])
    figures = write_figures(rows, out)
    path = out / REPORT_NAME
    atomic_write_bytes(path, markdown(rows, figures).encode("utf-8"))
    signatures = sorted({sig for row in rows for ev in row.evals.values() if ev for sig in ev.signatures.values()})
    write_runs_record(out, [row.run for row in rows], signatures)
    log.debug("wrote %s%s", path, f" and {', '.join(figures)}" if figures else "")
    return path, results_table(rows)
