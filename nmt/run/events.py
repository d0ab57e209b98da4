"""The run's event log, ``runs/<name>/metrics.jsonl``: typed records, one JSON object per line.

Four kinds, in the order a run writes them: :class:`Start` (once per start or resume),
:class:`Train` (every ``train.log_every`` updates), :class:`Valid` (every validation) and
:class:`Stop`.  Each line is ``{"event": <kind>, <field>: <value>, ...}``; the start
event's hardware description is written as top-level fields beside the others.  This module
is the one place that writes and reads the file: the trainer, ``nmt compare`` and the
scripts all go through :func:`append` and :func:`read`.  Fields added later have defaults,
so logs of older runs still read.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import Any, ClassVar, Optional, TypeVar, Union

from nmt.run.paths import METRICS, RunPaths
from nmt.util.fileio import open_log

FILE_NAME = METRICS


@dataclass(frozen=True)
class Start:
    """A (re)start: where the run stands and what its speed depends on."""

    kind: ClassVar[str] = "start"
    step: int
    epoch: int
    elapsed_s: float
    params: Optional[int] = None  # trainable parameters (absent in runs older than the field)
    world_size: int = 1
    amp: str = "off"
    hardware: dict[str, Any] = field(default_factory=dict)  # device, device_name, cpus, threads, torch


@dataclass(frozen=True)
class Train:
    """One training update's loss and speed."""

    kind: ClassVar[str] = "train"
    step: int
    epoch: int
    loss: float  # label-smoothed cross-entropy per target token
    lr: float
    tf: float  # teacher-forcing probability of this update
    tok_s: float  # target tokens per second of this update
    tgt_tokens: int
    elapsed_s: float
    world_size: int = 1
    grad_norm: Optional[float] = None  # L2 norm of the gradient before clipping (absent in older runs)


@dataclass(frozen=True)
class Valid:
    """One validation: loss and perplexity (teacher-forced), greedy BLEU and chrF, samples."""

    kind: ClassVar[str] = "valid"
    step: int
    epoch: int
    elapsed_s: float
    lr: float
    best: Optional[float]  # best train.metric so far, this validation included
    loss: float
    ppl: float
    bleu: float
    chrf: float
    bleu_signature: str = ""
    samples: list[dict[str, str]] = field(default_factory=list)  # src, ref, hyp
    # greedy translations' length / the references', as BLEU's brevity penalty reads it (None: not logged)
    length_ratio: Optional[float] = None


@dataclass(frozen=True)
class Stop:
    """The end of a training process, and why it ended."""

    kind: ClassVar[str] = "stop"
    reason: Optional[str]
    step: int
    epoch: int
    elapsed_s: float
    best: Optional[float]


Event = Union[Start, Train, Valid, Stop]
KINDS: dict[str, type] = {cls.kind: cls for cls in (Start, Train, Valid, Stop)}
E = TypeVar("E", Start, Train, Valid, Stop)


def to_json(event: Event) -> dict[str, Any]:
    """The line's object: the kind first, then the fields (a start's hardware flattened)."""
    data = asdict(event)
    hardware = data.pop("hardware", {})
    return {"event": event.kind, **data, **hardware}


def from_json(data: dict[str, Any]) -> Event:
    """The record of one line; unknown fields are kept as hardware (start) or ignored."""
    try:
        cls = KINDS[data["event"]]
    except KeyError:
        raise ValueError(f"unknown event {data.get('event')!r}") from None
    names = {f.name for f in fields(cls)} - {"hardware"}
    known = {k: v for k, v in data.items() if k in names}
    if cls is Start:
        known["hardware"] = {k: v for k, v in data.items() if k not in names and k != "event"}
    return cls(**known)


def append(run_dir: Path, event: Event) -> None:
    """Add one event to ``run_dir/metrics.jsonl``; a last line cut short by a crash is dropped first."""
    with open_log(RunPaths(run_dir).metrics, "a+b") as handle:  # never through a link
        if handle.tell() > 0:
            handle.seek(-1, 2)
            if handle.read(1) != b"\n":
                handle.seek(0)
                handle.truncate(handle.read().rfind(b"\n") + 1)
        handle.write((json.dumps(to_json(event)) + "\n").encode("utf-8"))


def read(run_dir: Path) -> list[Event]:
    """Every event of ``run_dir/metrics.jsonl`` in order; no file: an empty list.

    A last line without its newline (a write cut short by a crash, perhaps inside a character) is
    left out; any other line that is not an event, or not UTF-8, raises ValueError naming the file
    and line.  Lines are split on ``"\\n"`` bytes and decoded one by one, so a few bad bytes are
    named where they are (decoding the whole file named only a byte offset, and no file).
    """
    path = RunPaths(run_dir).metrics
    if not path.is_file():
        return []
    data = path.read_bytes()
    lines = data.split(b"\n")
    lines.pop()  # after the last newline: empty, or a line cut short
    out: list[Event] = []
    for number, raw in enumerate(lines, start=1):
        try:
            line = raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise ValueError(
                f"{path}:{number}: not UTF-8 (byte 0x{raw[exc.start]:02x} at column {exc.start + 1}); "
                "nmt writes this file as JSON lines: restore it, or remove the damaged line"
            ) from None
        if line.strip():
            try:
                out.append(from_json(json.loads(line)))
            except (ValueError, TypeError) as exc:
                raise ValueError(f"{path}:{number}: not a metrics event ({exc})") from None
    return out


def of_kind(events: list[Event], kind: type[E]) -> list[E]:
    """The events of one kind, in order."""
    return [e for e in events if isinstance(e, kind)]


def last_stop(run_dir: Path) -> Optional[Stop]:
    """The run's last stop event (None while it never stopped)."""
    stops = of_kind(read(run_dir), Stop)
    return stops[-1] if stops else None
