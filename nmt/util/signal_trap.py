"""Stop signals caught for a block of code, and kept: the one helper behind nmt's ways to stop.

A training run records SIGINT or SIGTERM and stops after its update (:mod:`nmt.training.signals`), an
export removes its hidden folder (:mod:`nmt.engine.export_folder`), ``nmt translate -o`` removes its
temporary file (:func:`stops_unwind`), and ``nmt compare --jobs`` passes the signal on to its runs
(:mod:`nmt.comparison.jobs`).  Each installs handlers for a block, and most of them raise
from the handler.  A raise from a signal handler can be lost: when the signal lands while Python
runs a callback that ignores exceptions (a weakref callback, ``__del__``), the exception is only
printed.  So every signal is also recorded, for the code to :meth:`~SignalTrap.check`
at its next safe point.

Python lets only the main thread set handlers; entered on another thread, a trap sets none and
records nothing, and the signals reach the main thread as they would without it.
"""

from __future__ import annotations

import signal
import threading
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from types import FrameType
from typing import Any, Optional

STOP_SIGNALS = (signal.SIGTERM, signal.SIGHUP)
"""The signals that ask a command to end, besides Ctrl-C's SIGINT: a ``kill``, a closed terminal."""


class SignalTrap:
    """A context manager that handles ``signals`` while its block runs, and restores the earlier handlers after.

    Each signal is appended to :attr:`received`; then ``then(signum)`` runs (to log it, or re-arm
    a handler), and then ``raises(signum)`` is raised, when given.  :meth:`check` raises it again for a
    signal whose raise was lost; :meth:`resignal` ends as the signal would have without the trap.
    """

    def __init__(
        self,
        signals: Iterable[int],
        *,
        raises: Optional[Callable[[int], BaseException]] = None,
        then: Optional[Callable[[int], None]] = None,
    ) -> None:
        self.signals = tuple(signals)
        self.raises = raises
        self.then = then
        self.received: list[int] = []  # every signal handled, in the order they came
        self.previous: dict[int, Any] = {}  # the handlers in place on entry (None: one not set from Python)

    @property
    def signum(self) -> Optional[int]:
        """The latest signal received, or None."""
        return self.received[-1] if self.received else None

    def _handle(self, signum: int, _frame: Optional[FrameType]) -> None:
        self.received.append(signum)
        if self.then is not None:
            self.then(signum)
        if self.raises is not None:
            raise self.raises(signum)

    def check(self) -> None:
        """Raise ``raises`` for the latest signal received, if any: the handler's own raise may have been lost."""
        if self.signum is not None and self.raises is not None:
            raise self.raises(self.signum)

    def resignal(self) -> None:
        """Put back the earlier handler of the latest signal received and raise that signal again, so the
        process ends as it would have without the trap (exit status 128 + signal).  An earlier Python
        handler that returns (or SIG_IGN) leaves the caller to go on; nothing happens without a signal."""
        signum = self.signum
        if signum is None:
            return
        previous = self.previous.pop(signum, None)
        signal.signal(signum, signal.SIG_DFL if previous is None else previous)
        signal.raise_signal(signum)

    def __enter__(self) -> SignalTrap:
        if threading.current_thread() is threading.main_thread():
            self.previous = {int(s): signal.signal(s, self._handle) for s in self.signals}
        return self

    def __exit__(self, *exc: object) -> None:
        for signum, handler in self.previous.items():
            signal.signal(signum, signal.SIG_DFL if handler is None else handler)
        self.previous = {}


class Stopped(BaseException):
    """A stop signal arrived in a :func:`stops_unwind` block (raised in the main thread by its handler)."""

    def __init__(self, signum: int) -> None:
        super().__init__(signum)
        self.signum = signum


@contextmanager
def stops_unwind(signals: Iterable[int] = STOP_SIGNALS) -> Iterator[SignalTrap]:
    """Within the block, a stop signal unwinds the stack as Ctrl-C does, so every ``finally`` and
    ``except BaseException`` on the way runs (a temporary file is removed); then the process ends by
    that signal, under the handler found on entry, as it would have without the block (killed by
    it, by default).  An earlier Python handler that returns leaves a KeyboardInterrupt to stop the
    command.  A signal whose raise was lost is found when the block ends.
    """
    with SignalTrap(signals, raises=Stopped) as trap:
        try:
            yield trap
            trap.check()
        except Stopped:
            trap.resignal()
            raise KeyboardInterrupt from None
