"""The reproducibility record of a set of runs, written beside ``nmt report``'s and ``nmt compare``'s tables.

It holds what the runs themselves can tell a reader checking a table: the hardware each run
trained on (read from its metrics.jsonl), the software versions (torch, sacreBLEU,
SentencePiece, nmt and the git commit of its checkout when there is one) and the time the runs
took.  ``record.json`` holds it all and ``record.md`` is the page to read; ``nmt compare`` adds
what its plan answers (:mod:`nmt.comparison.record`).
"""

from __future__ import annotations

import datetime
import platform
import subprocess
from importlib import metadata
from pathlib import Path
from typing import Any, Optional

from nmt import __version__
from nmt.run import events
from nmt.run.test_reads import counts_line, read_counts
from nmt.score.metrics import write_report

RECORD = "record"
"""Stem of the record's two files in a report folder (record.json, record.md)."""

RECORD_FILES = (f"{RECORD}.json", f"{RECORD}.md")


def git_commit(folder: Path = Path(__file__).resolve().parent) -> Optional[str]:
    """The commit of the git checkout nmt runs from, with ``+dirty`` when it has changes; None outside one."""
    try:
        head = subprocess.run(
            ["git", "-C", str(folder), "rev-parse", "HEAD"], capture_output=True, text=True, timeout=10, check=True
        ).stdout.strip()
        dirty = subprocess.run(
            ["git", "-C", str(folder), "status", "--porcelain", "--untracked-files=no"],
            capture_output=True,
            text=True,
            timeout=10,
            check=True,
        ).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return None
    return head + ("+dirty" if dirty else "")


def software() -> dict[str, Optional[str]]:
    """Versions of what a score depends on."""
    versions: dict[str, Optional[str]] = {"python": platform.python_version(), "nmt": __version__}
    for package in ("torch", "sacrebleu", "sentencepiece", "numpy"):
        try:
            versions[package] = metadata.version(package)
        except metadata.PackageNotFoundError:
            versions[package] = None
    versions["nmt_commit"] = git_commit()
    return versions


def run_hardware(run_dirs: list[Path]) -> list[dict[str, Any]]:
    """Each distinct hardware line and mixed-precision setting the runs trained with, with how many runs."""
    seen: dict[str, dict[str, Any]] = {}
    for run_dir in run_dirs:
        for start in events.of_kind(events.read(run_dir), events.Start):
            entry = {**start.hardware, "amp": start.amp, "world_size": start.world_size}
            key = repr(sorted(entry.items()))
            seen.setdefault(key, {**entry, "runs": 0})["runs"] += 1
    return list(seen.values())


def training_seconds(run_dirs: list[Path]) -> list[float]:
    """Each stopped run's training time, as the run measured it."""
    return [stop.elapsed_s for d in run_dirs if (stop := events.last_stop(d)) is not None]


def hardware_line(hardware: list[dict[str, Any]]) -> str:
    """The machines of :func:`run_hardware` in one line."""
    return "; ".join(
        f"{h.get('device_name', '?')} ({h.get('device', '?')}, {h.get('cpus', '?')} cores, {h.get('threads', '?')} "
        f"threads, amp {h.get('amp')}, torch {h.get('torch', '?')}): {h['runs']} run start(s)"
        for h in hardware
    )


def write_runs_record(out: Path, run_dirs: list[Path], signatures: list[str]) -> tuple[Path, Path]:
    """The record of ``nmt report``'s table: its runs, their hardware and training time, the
    software reading them, and the sacreBLEU signatures of its scores."""
    train_s = training_seconds(run_dirs)
    hardware, versions = run_hardware(run_dirs), software()
    record: dict[str, Any] = {
        "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        "runs": [str(d) for d in run_dirs],
        "hardware": hardware,
        "software": versions,
        "signatures": signatures,
        "train_s_total": round(sum(train_s), 1),
        "test_reads": {d.name: read_counts(d) for d in run_dirs},
    }
    machines = hardware_line(hardware)
    lines = [
        "# Reproducibility record",
        "",
        f"- date: {record['date']}",
        f"- runs: {len(run_dirs)} ({', '.join(d.name for d in run_dirs)})",
        f"- hardware the runs trained on: {machines or 'not logged'}",
        f"- software of this report: {', '.join(f'{k} {v}' for k, v in versions.items())}",
        f"- signatures: {'; '.join(f'`{sig}`' for sig in signatures) or 'none'}",
        f"- training time of the runs, as each measured it: {record['train_s_total']} s",
        f"- test reads: {'; '.join(f'{name}: {counts_line(c)}' for name, c in record['test_reads'].items())}",
    ]
    return write_report(out / RECORD, record, [], markdown="\n".join(lines) + "\n")
