"""What torchrun tells a worker through its environment, read without importing torch.

The CLI asks before any command runs (a worker of several ends differently, see
:func:`nmt.training.distributed.end_rank`), so this module stays free of torch.  It also checks the
whole environment there (:func:`check_environment`), so a variable torch would trip over (a
missing ``RANK`` or ``MASTER_ADDR``, a ``RANK`` that is not a number) is one line before any work,
not a ``KeyError`` when the process group starts or a ``ValueError`` after a run has trained.
A worker other than rank 0 waits for ``MASTER_ADDR:MASTER_PORT`` here (:func:`wait_for_master`),
saying so, for at most ``NMT_RENDEZVOUS_TIMEOUT`` seconds, rather than inside torch, silently,
for the process group's own hour.
"""

from __future__ import annotations

import logging
import math
import os
import socket
import time
from typing import Optional

from nmt.util.errors import UserError

log = logging.getLogger(__name__)

RENDEZVOUS = ("MASTER_ADDR", "MASTER_PORT")
"""Where the processes of a run meet: torch's env:// rendezvous needs both (torchrun sets them)."""

TIMEOUT_VARIABLE = "NMT_RENDEZVOUS_TIMEOUT"
DEFAULT_TIMEOUT = 300.0
"""Seconds a worker waits for ``MASTER_ADDR:MASTER_PORT`` to answer (``NMT_RENDEZVOUS_TIMEOUT`` sets them):
long enough for rank 0 started by hand a few minutes later, short of torch's silent hour."""


def world_size() -> int:
    """The number of processes of this run: torchrun's ``WORLD_SIZE``, 1 without it."""
    raw = os.environ.get("WORLD_SIZE", "1")
    try:
        value = int(raw)
    except ValueError:
        value = 0
    if value < 1:
        raise UserError(f"WORLD_SIZE={raw!r}: expected a whole number of processes, 1 or more (torchrun sets it)")
    return value


def _index(name: str, below: Optional[int] = None) -> Optional[int]:
    """The whole number 0 or more in the variable ``name`` (None when unset), less than ``below``."""
    raw = os.environ.get(name)
    if raw is None:
        return None
    try:
        value = int(raw)
    except ValueError:
        value = -1
    if value < 0 or (below is not None and value >= below):
        bound = f", less than WORLD_SIZE={below}" if below is not None else ""
        raise UserError(f"{name}={raw[:80]!r}: expected a whole number, 0 or more{bound} (torchrun sets it)")
    return value


def check_environment() -> int:
    """Check what torchrun sets, before any work; returns the number of processes.

    ``RANK`` and ``LOCAL_RANK``, where set, are whole numbers and ``RANK`` is below ``WORLD_SIZE``;
    with several processes ``RANK``, ``MASTER_ADDR`` and a ``MASTER_PORT`` of 1-65535 are set.
    """
    size = world_size()
    rank = _index("RANK", below=size)
    _index("LOCAL_RANK")
    if size == 1:
        return size
    missing = [name for name in ("RANK", *RENDEZVOUS) if name not in os.environ]
    if rank is None or missing:
        raise UserError(
            f"WORLD_SIZE={size} without {', '.join(missing)}: start the processes with torchrun "
            "(nmt train --nproc N does), or unset WORLD_SIZE"
        )
    port = os.environ["MASTER_PORT"]
    if not port.isdigit() or not 1 <= int(port) <= 65535:
        raise UserError(f"MASTER_PORT={port[:80]!r}: expected a port number, 1-65535 (torchrun sets it)")
    rendezvous_timeout()
    return size


def rendezvous_timeout() -> float:
    """Seconds to wait for ``MASTER_ADDR:MASTER_PORT``: ``NMT_RENDEZVOUS_TIMEOUT``, else :data:`DEFAULT_TIMEOUT`."""
    raw = os.environ.get(TIMEOUT_VARIABLE)
    if raw is None:
        return DEFAULT_TIMEOUT
    try:
        value = float(raw)
    except ValueError:
        value = math.nan
    if not (math.isfinite(value) and value > 0):
        raise UserError(f"{TIMEOUT_VARIABLE}={raw[:80]!r}: expected seconds, a number above 0")
    return value


def wait_for_master(rank: int, size: int, timeout: float) -> None:
    """Return once ``MASTER_ADDR:MASTER_PORT`` accepts a connection, where rank 0 (or torchrun's
    agent) keeps the run's store; log one line if it does not at once, and after ``timeout``
    seconds without an answer raise a :class:`UserError` naming the address.

    The probe connects and closes: the store takes that as a client that left.
    """
    host, port = os.environ["MASTER_ADDR"], int(os.environ["MASTER_PORT"])
    where = f"MASTER_ADDR:MASTER_PORT={host[:80]}:{port}"
    deadline = time.monotonic() + timeout
    said = False
    while True:
        left = deadline - time.monotonic()
        try:
            with socket.create_connection((host, port), timeout=min(max(left, 0.1), 5.0)):
                return
        except OSError as exc:
            reason = exc.strerror or str(exc) or type(exc).__name__
        if not said:
            log.warning(
                "rank %d of %d: waiting for rank 0 at %s (%s), up to %g s (%s sets it)",
                rank,
                size,
                where,
                reason,
                timeout,
                TIMEOUT_VARIABLE,
            )
            said = True
        if time.monotonic() >= deadline:
            raise UserError(
                f"rank {rank} of {size}: nothing answered at {where} in {timeout:g} s ({reason}); "
                f"start rank 0 there, check MASTER_ADDR and MASTER_PORT, or raise {TIMEOUT_VARIABLE}"
            )
        time.sleep(min(0.5, max(deadline - time.monotonic(), 0.0)))
