"""nmt compare --jobs stops on SIGTERM even where the handler's raise was lost: Python only prints an
exception raised inside a callback that ignores exceptions (a weakref callback, ``__del__``), so the
loop that watches the runs also checks the signals the handler received."""

from __future__ import annotations

import signal

import pytest

from nmt.comparison.jobs import _run_jobs
from nmt.util.errors import Interrupted


def test_a_received_stop_signal_ends_the_loop_before_another_run_starts() -> None:
    pending: list = ["a run that must not start"]  # _start would fail on it: the loop must stop first
    with pytest.raises(Interrupted) as stop:
        _run_jobs(None, pending, [], 1, [signal.SIGTERM])  # type: ignore[arg-type]
    assert stop.value.signum == signal.SIGTERM and pending == ["a run that must not start"]
