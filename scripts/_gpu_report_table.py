"""Where gpu_report.py's measurements go: JSON lines on stdout and in report.jsonl, a Markdown page.

Every record is printed and appended the moment it exists, and ``report.md`` is rewritten from
all records so far after each one, so a run killed halfway still leaves its table.  The page is
built from the records alone (:func:`markdown`), so it can be rebuilt from a ``report.jsonl``.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterable
from pathlib import Path
from typing import Any, Optional

from nmt.util.fileio import atomic_write_bytes

log = logging.getLogger("gpu_report")
MISSING = "–"


class Report:
    """Collects one run's records and writes each one out at once (stdout, report.jsonl, report.md).

    ``context`` (device, torch and CUDA versions...) is added to every measurement, so each JSON
    line stands on its own; it is set once the hardware is known, and a record's own keys win.
    """

    def __init__(self, out_dir: Path) -> None:
        out_dir.mkdir(parents=True, exist_ok=True)
        self.jsonl, self.md = out_dir / "report.jsonl", out_dir / "report.md"
        self.jsonl.write_text("", encoding="utf-8")  # one run per report: an older one is replaced
        self.records: list[dict[str, Any]] = []
        self.context: dict[str, Any] = {}

    def add(self, record: dict[str, Any]) -> dict[str, Any]:
        """Print, append and tabulate one record (with the context unless it is the hardware line)."""
        full = record if record.get("event") in ("hardware", "done") else {**self.context, **record}
        self.records.append(full)
        line = json.dumps(full)
        print(line, flush=True)
        with self.jsonl.open("a", encoding="utf-8") as handle:
            handle.write(line + "\n")
        try:
            atomic_write_bytes(self.md, markdown(self.records).encode("utf-8"))
        except Exception:  # the JSON line is written; a table bug must not end the measurements
            log.exception("could not write %s", self.md)
        return full

    def error(self, phase: str, measurement: str, exc: BaseException) -> None:
        """A measurement that failed: its error type and the first line of its message."""
        message = (str(exc).strip().splitlines() or [""])[0][:300]
        self.add(
            {
                "event": "error",
                "phase": phase,
                "measurement": measurement,
                "error": type(exc).__name__,
                "message": message,
            }
        )

    def skipped(self, phase: str, measurement: str, reason: str) -> None:
        """A measurement not attempted, and why (no time left in its share, a CPU-only skip...)."""
        self.add({"event": "skipped", "phase": phase, "measurement": measurement, "reason": reason})


def _num(value: Optional[float], digits: int = 1, grouped: bool = False) -> str:
    if value is None:
        return MISSING
    return f"{value:,.{digits}f}" if grouped else f"{value:.{digits}f}"


def _table(header: list[str], rows: Iterable[list[str]], text_columns: int = 1) -> list[str]:
    """A Markdown table: the first ``text_columns`` columns left-aligned, the numbers right-aligned."""
    rows = list(rows)
    if not rows:
        return ["(nothing measured yet)"]
    align = ["---"] * text_columns + ["---:"] * (len(header) - text_columns)
    return [
        "| " + " | ".join(header) + " |",
        "| " + " | ".join(align) + " |",
        *("| " + " | ".join(row) + " |" for row in rows),
    ]


def _failure(record: dict[str, Any]) -> str:
    if record["event"] == "error":
        return f"error: {record['error']}"
    return "skipped"


def _header(records: list[dict[str, Any]]) -> list[str]:
    lines = ["# GPU report", ""]
    hw = next((r for r in records if r["event"] == "hardware"), None)
    if hw is not None:
        gpu = f", {hw['gpu_memory_mb']:,.0f} MiB" if hw.get("gpu_memory_mb") else ""
        lines += [
            f"Command: `{hw['command']}`  ",
            f"Machine: {hw['device_name']} ({hw['device']}{gpu}), {hw['cpus']} CPU cores; "
            f"torch {hw['torch']}, CUDA {hw['cuda'] or 'none'}; measured {hw['date']}.  ",
        ]
    data = next((r for r in records if r["event"] == "data"), None)
    if data is not None:
        pairs = ", ".join(f"{split} {n:,}" for split, n in data["pairs"].items())
        lines.append(f"Data: {data['corpus']} {data['pair']}, sentence pairs: {pairs}.  ")
    done = next((r for r in records if r["event"] == "done"), None)
    if done is not None:
        lines.append(f"Wall time {done['wall_s']:.0f} s of a {done['budget_s']:.0f} s budget.")
    else:
        lines.append("The run has not finished (or was stopped): the tables hold what it measured so far.")
    return [*lines, ""]


def _throughput(records: list[dict[str, Any]]) -> list[str]:
    rows = []
    for r in records:
        if r["event"] == "throughput":
            path = "parallel" if r["arch"] == "transformer" else ("fast" if r["fast_path"] else "step")
            rows.append(
                [
                    r["model"],
                    path,
                    r["compile"],
                    r["amp"],
                    _num(r["params"], 0, grouped=True),
                    _num(r["target_tokens_per_s"], 0, grouped=True),
                    _num(r["ms_per_update"], 1),
                    _num(r["peak_gpu_mb"], 0, grouped=True),
                    _num(r["untimed_pass_s"], 1),
                ]
            )
        elif r["event"] in ("error", "skipped") and r["phase"] == "throughput":
            rows.append([r["measurement"], _failure(r), *[MISSING] * 7])
    steps = next((r["updates"] for r in records if r["event"] == "throughput"), None)
    note = f" ({steps} timed updates after an untimed pass over the same batches)" if steps else ""
    head = ["Model", "Decoder path", "Compile", "AMP", "Params", "Target tokens/s", "ms/update", "Peak GPU MiB"]
    head.append("Untimed pass s")
    return [f"## Training throughput{note}", "", *_table(head, rows, text_columns=4), ""]


def _training(records: list[dict[str, Any]]) -> list[str]:
    run = next((r for r in records if r["event"] == "training"), None)
    if run is None:
        return ["## The GPU config, trained", "", "(not trained yet)", ""]
    levels = [r for r in records if r["event"] == "time_to_bleu"]
    tests = {r["beam"]: r for r in records if r["event"] == "test_bleu"}
    row = [
        f"{run['steps']} of {run['max_updates']}",
        _num(run["elapsed_s"], 0),
        *[f"{_num(r['elapsed_s'], 0)} s (update {r['step']})" if r["reached"] else "not reached" for r in levels],
        _num(run["best_bleu"], 2),
        *[_num(tests[b]["bleu"], 2) if b in tests else MISSING for b in (1, 5)],
        _num(run["peak_gpu_mb"], 0, grouped=True),
        str(run["stop_reason"]),
    ]
    split = next((r["split"] for r in tests.values()), "test")
    head = [
        "Updates",
        "Training s",
        *[f"Valid BLEU {r['level']:g} at" for r in levels],
        "Best valid BLEU",
        f"{split} BLEU greedy",
        f"{split} BLEU beam 5",
        "Peak GPU MiB",
        "Stopped by",
    ]
    title = f"## {run['config']}, trained (validation every {run['valid_every']} updates; greedy BLEU, best checkpoint)"
    return [title, "", *_table(head, [row], text_columns=0), ""]


def _decoding(records: list[dict[str, Any]]) -> list[str]:
    rows = []
    for r in records:
        if r["event"] == "decode":
            rows.append(
                [
                    str(r["beam"]),
                    str(r["batch_size"]),
                    str(r["sentences"]),
                    str(r.get("passes", 1)),  # lines written before passes were counted had one
                    _num(r["sentences_per_s"], 1, grouped=True),
                    _num(r["output_tokens_per_s"], 0, grouped=True),
                    _num(r["peak_gpu_mb"], 0, grouped=True),
                ]
            )
        elif r["event"] in ("error", "skipped") and r["phase"] == "decode":
            rows.append([r["measurement"], _failure(r), *[MISSING] * 5])
    splits = [Path(r["input"]).stem for r in records if r["event"] == "decode"]
    splits += [r["split"] for r in records if r["event"] == "test_bleu"]
    split = splits[0] if splits else "the test split"
    head = ["Beam", "Batch", "Sentences", "Passes", "Sentences/s", "Output tokens/s", "Peak GPU MiB"]
    return [f"## Decoding speed ({split}, the trained model, fp32)", "", *_table(head, rows, text_columns=0), ""]


def _problems(records: list[dict[str, Any]]) -> list[str]:
    lines = []
    for r in records:
        if r["event"] == "error":
            lines.append(f"- {r['phase']}, {r['measurement']}: {r['error']}: {r['message']}")
        elif r["event"] == "skipped":
            lines.append(f"- {r['phase']}, {r['measurement']}: skipped ({r['reason']})")
    return ["## Errors and skipped measurements", "", *(lines or ["None."]), ""]


def markdown(records: list[dict[str, Any]]) -> str:
    """The report page: hardware, then one table per measurement kind, then what failed."""
    parts = [_header(records), _throughput(records), _training(records), _decoding(records), _problems(records)]
    return "\n".join(line for part in parts for line in part)
