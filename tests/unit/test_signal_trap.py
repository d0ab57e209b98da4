"""SignalTrap: handlers for a block that record every signal, raise for it, and restore what was there."""

from __future__ import annotations

import signal
import sys
import threading
import weakref
from collections.abc import Iterator
from contextlib import contextmanager
from types import FrameType
from typing import Any, Optional

import pytest

from nmt.util.signal_trap import SignalTrap

SIGNALS = (signal.SIGTERM, signal.SIGHUP)


class Stop(BaseException):
    def __init__(self, signum: int) -> None:
        super().__init__(signum)
        self.signum = signum


def handlers() -> dict[int, Any]:
    return {s: signal.getsignal(s) for s in SIGNALS}


@contextmanager
def unraisable_kept() -> Iterator[list[Any]]:
    """Exceptions Python could not raise (a weakref callback's), kept rather than printed or warned about."""
    seen: list[Any] = []
    before = sys.unraisablehook
    sys.unraisablehook = seen.append
    try:
        yield seen
    finally:
        sys.unraisablehook = before


@pytest.mark.parametrize("signum", SIGNALS)
def test_a_signal_is_recorded_raised_and_the_handlers_restored(signum: int) -> None:
    before = handlers()
    with pytest.raises(Stop) as stop, SignalTrap(SIGNALS, raises=Stop) as trap:
        assert trap.signum is None and trap.received == []
        trap.check()  # nothing received: nothing raised
        signal.raise_signal(signum)  # runs the handler before it returns
    assert stop.value.signum == signum and trap.received == [signum] and trap.signum == signum
    assert handlers() == before


def test_a_raise_that_python_swallowed_is_found_by_check() -> None:
    class Thing:
        pass

    with unraisable_kept() as seen, SignalTrap(SIGNALS, raises=Stop) as trap:
        thing = Thing()
        ref = weakref.ref(thing, lambda _: signal.raise_signal(signal.SIGTERM))
        del thing  # the handler raises inside the weakref callback, where Python drops the exception
        assert ref() is None and [type(u.exc_value) for u in seen] == [Stop]
        with pytest.raises(Stop) as stop:
            trap.check()
    assert stop.value.signum == signal.SIGTERM


def test_without_raises_the_signal_is_only_recorded_and_then_called() -> None:
    called: list[int] = []
    with SignalTrap(SIGNALS, then=called.append) as trap:
        signal.raise_signal(signal.SIGHUP)
        signal.raise_signal(signal.SIGTERM)
        trap.check()  # nothing to raise
    assert trap.received == called == [signal.SIGHUP, signal.SIGTERM] and trap.signum == signal.SIGTERM


def test_resignal_ends_under_the_handler_found_on_entry() -> None:
    earlier: list[int] = []

    def record(signum: int, _frame: Optional[FrameType]) -> None:
        earlier.append(signum)

    before = signal.signal(signal.SIGTERM, record)
    try:
        with SignalTrap(SIGNALS, raises=Stop) as trap:
            trap.resignal()  # no signal yet: nothing happens
            assert earlier == []
            with pytest.raises(Stop):
                signal.raise_signal(signal.SIGTERM)
            assert earlier == []  # the trap's handler ran, not the earlier one
            trap.resignal()
            assert earlier == [signal.SIGTERM] and signal.getsignal(signal.SIGTERM) is record
        assert signal.getsignal(signal.SIGTERM) is record
    finally:
        signal.signal(signal.SIGTERM, before)


def test_off_the_main_thread_no_handler_is_set() -> None:
    before = handlers()
    inside: list[dict[int, Any]] = []

    def enter() -> None:
        with SignalTrap(SIGNALS, raises=Stop):
            inside.append(handlers())

    thread = threading.Thread(target=enter)
    thread.start()
    thread.join()
    assert inside == [before] and handlers() == before
