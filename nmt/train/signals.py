"""Stop signals: SIGINT and SIGTERM end a training run cleanly instead of killing it.

While a :class:`StopSignals` block runs, the first SIGINT (Ctrl-C) or SIGTERM (a scheduler's
stop) is only recorded; the trainer sees it after the current update, saves last.pt and ends
with exit code 128 + the signal (the shell's convention), so the run can be resumed.  The
first signal also puts the default handler back, so a second one aborts at once, for a
run that will not stop.  Leaving the block restores the handlers found on entry.
"""

from __future__ import annotations

import logging
import signal
from types import FrameType
from typing import Any, Optional

log = logging.getLogger(__name__)

STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM)


class StopSignals:
    """A context manager that turns the first stop signal into :attr:`received` (0: none yet).

    ``who`` prefixes the log line (e.g. ``"rank 1: "`` under torchrun).  Signal handlers can
    only be set from the main thread, so enter it there.
    """

    def __init__(self, who: str = "") -> None:
        self.who = who
        self.received = 0
        self._previous: dict[int, Any] = {}

    def _handle(self, signum: int, _frame: Optional[FrameType]) -> None:
        log.warning(
            "%s%s received: saving a checkpoint after this update (again to abort)",
            self.who,
            signal.Signals(signum).name,
        )
        self.received = signum
        signal.signal(signum, signal.SIG_DFL)

    def __enter__(self) -> StopSignals:
        self._previous = {int(s): signal.signal(s, self._handle) for s in STOP_SIGNALS}
        return self

    def __exit__(self, *exc: object) -> None:
        for signum, handler in self._previous.items():
            signal.signal(signum, handler)
        self._previous = {}
