"""The reproducibility record written beside every ``nmt compare`` table.

It answers the items of the ACL/NAACL reproducibility checklist that a comparison can answer
from its own runs: how many runs and seeds, the update budget, every option that differs
between arms (and the overrides all arms share), what was selected on which split, the
hardware each run trained on (read from its metrics.jsonl), the software versions (torch,
sacreBLEU, SentencePiece, nmt and the git commit of its checkout when there is one), the
sacreBLEU signature, and the time the runs took.  ``record.json`` holds it all and
``record.md`` is the page a reader checks a table against.
"""

from __future__ import annotations

import datetime
import platform
import subprocess
from importlib import metadata
from pathlib import Path
from typing import Any, Optional

from nmt import __version__
from nmt.evaluate.compare_plan import Plan
from nmt.evaluate.compare_runs import last_stop
from nmt.run import events
from nmt.score.metrics import write_report

RECORD = "record"
"""Stem of the record's two files in a comparison's report folder (record.json, record.md)."""

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


def build_record(
    plan: Plan,
    steps: int,
    rows: list[dict[str, Any]],
    run_dirs: list[Path],
    wall_s: float,
    update_timing: Optional[dict[str, Any]] = None,
) -> dict[str, Any]:
    """Every checklist item a comparison answers, from its plan, its runs and its rows; with
    ``update_timing`` (:func:`nmt.evaluate.compare_timing.summary`), how each arm was timed alone."""
    train_s = training_seconds(run_dirs)
    timing = {"update_timing": update_timing} if update_timing else {}
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
            "mean over seeds with a 95% Student's t interval; paired t-test over seeds against the baseline; "
            "sacreBLEU paired bootstrap per seed"
        ),
        "hardware": run_hardware(run_dirs),
        "software": software(),
        "train_s_total": round(sum(train_s), 1),
        "train_s_per_run": round(sum(train_s) / len(train_s), 1) if train_s else None,
        "wall_s": round(wall_s, 1),
        **timing,
    }


def training_seconds(run_dirs: list[Path]) -> list[float]:
    """Each stopped run's training time, as the run measured it."""
    return [stop.elapsed_s for d in run_dirs if (stop := last_stop(d)) is not None]


def hardware_line(hardware: list[dict[str, Any]]) -> str:
    """The machines of :func:`run_hardware` in one line."""
    return "; ".join(
        f"{h.get('device_name', '?')} ({h.get('device', '?')}, {h.get('cpus', '?')} cores, {h.get('threads', '?')} "
        f"threads, amp {h.get('amp')}, torch {h.get('torch', '?')}): {h['runs']} run start(s)"
        for h in hardware
    )


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
        f"- statistics: {record['statistics']}",
        f"- hardware: {hardware}",
        f"- software: {soft}",
        f"- compute: {record['train_s_total']} s of training in all ({record['train_s_per_run']} s per run, "
        f"as each run measured it, so shared when runs trained side by side); this command's wall time "
        f"{record['wall_s']} s",
        *_timing_lines(record.get("update_timing")),
    ]


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
    ]
    return write_report(out / RECORD, record, [], markdown="\n".join(lines) + "\n")
