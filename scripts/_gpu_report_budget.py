"""gpu_report.py's clock: the budget of the whole report, and one measurement run within its share.

A measurement that fails or overruns becomes an ``error`` line and the report goes on; one
with too little time left becomes a ``skipped`` line.  The limit is a SIGALRM timer, so it
interrupts Python code (a compilation, a decoding loop) but needs the main thread.
"""

from __future__ import annotations

import contextlib
import logging
import signal
import time
from collections.abc import Callable, Iterator
from typing import Any, Optional, Union

from _gpu_report_table import Report

log = logging.getLogger("gpu_report")
MIN_SECONDS = 2.0  # a measurement with less time left is skipped


class OutOfTime(Exception):
    """A measurement ran past the time its phase had left."""


@contextlib.contextmanager
def time_limit(seconds: float) -> Iterator[None]:
    """Raise :class:`OutOfTime` in the block once ``seconds`` have passed (SIGALRM, main thread)."""

    def on_alarm(signum: int, frame: object) -> None:
        raise OutOfTime(f"stopped after {seconds:.0f} s, the time its phase had left of --minutes")

    previous = signal.signal(signal.SIGALRM, on_alarm)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


class Budget:
    """The wall clock of the whole report, from the start of main()."""

    def __init__(self, minutes: float) -> None:
        self.total = 60 * minutes
        self.start = time.monotonic()

    def elapsed(self) -> float:
        return time.monotonic() - self.start

    def left(self, share: float = 1.0) -> float:
        """Seconds until ``share`` of the budget is spent (negative once past it)."""
        return share * self.total - self.elapsed()


Records = Union[dict[str, Any], list[dict[str, Any]]]
"""What a measurement returns: its record, or several."""


def attempt(
    report: Report, phase: str, name: str, seconds: float, run: Callable[[], Records]
) -> Optional[list[dict[str, Any]]]:
    """Run one measurement within ``seconds`` and report its records (as written), or its error;
    None if it failed or was skipped."""
    if seconds < MIN_SECONDS:
        report.skipped(phase, name, f"{max(seconds, 0):.0f} s left of its share of --minutes")
        return None
    log.info("%s: %s (at most %.0f s)", phase, name, seconds)
    try:
        with time_limit(seconds):
            records = run()
    except Exception as exc:  # one failure must not cost the others their turn
        log.exception("%s: %s failed", phase, name)
        report.error(phase, name, exc)
        return None
    return [report.add(record) for record in (records if isinstance(records, list) else [records])]
