"""Stop signals: SIGINT and SIGTERM end a training run cleanly instead of killing it.

While a :class:`StopSignals` block runs, the first SIGINT (Ctrl-C) or SIGTERM (a scheduler's
stop) is only recorded; the trainer sees it after the current update, saves last.pt and ends
with exit code 128 + the signal (the shell's convention), so the run can be resumed.  The
first signal also puts the default handler back, so a second one aborts at once, for a
run that will not stop.  Leaving the block restores the handlers found on entry.

From Python (``nmt.train`` in a notebook or a program: ``interactive``) the second SIGINT raises
KeyboardInterrupt instead, as Python's own handler does, so an impatient second Ctrl-C (a
notebook's "interrupt kernel" twice) stops the cell without killing the kernel.  Off the main
thread, where Python lets no code set a handler, the block handles no signal: a stop signal
reaches the main thread as it would without nmt.
"""

from __future__ import annotations

import logging
import signal

from nmt.util.signal_trap import SignalTrap

log = logging.getLogger(__name__)

STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM)


class StopSignals:
    """A context manager that turns the first stop signal into :attr:`received` (0: none yet).

    ``who`` prefixes the log line (e.g. ``"rank 1: "`` under torchrun); ``interactive``: a second
    SIGINT raises KeyboardInterrupt rather than ending the process.  Signal handlers can only be
    set from the main thread; entered on another, it sets none (:class:`~nmt.util.signal_trap.SignalTrap`).
    """

    def __init__(self, who: str = "", interactive: bool = False) -> None:
        self.who = who
        self.interactive = interactive
        self._trap = SignalTrap(STOP_SIGNALS, then=self._handle)

    @property
    def received(self) -> int:
        """The stop signal received (the latest, should a second kind follow the first), else 0."""
        return self._trap.signum or 0

    def _handle(self, signum: int) -> None:
        """Log the signal (the trap has recorded it) and make the next one of its kind abort."""
        log.warning(
            "%s%s received: saving a checkpoint after this update (again to abort)",
            self.who,
            signal.Signals(signum).name,
        )
        again = signal.default_int_handler if self.interactive and signum == signal.SIGINT else signal.SIG_DFL
        signal.signal(signum, again)

    def __enter__(self) -> StopSignals:
        self._trap.__enter__()
        return self

    def __exit__(self, *exc: object) -> None:
        self._trap.__exit__(*exc)
