"""What torchrun tells a worker through its environment, read without importing torch.

The CLI asks before any command runs (a worker of several ends differently, see
:func:`nmt.training.distributed.end_rank`), so this module stays free of torch.  It also checks the
whole environment there (:func:`check_environment`), so a variable torch would trip over (a
missing ``RANK`` or ``MASTER_ADDR``, a ``RANK`` that is not a number) is one line before any work,
not a ``KeyError`` when the process group starts or a ``ValueError`` after a run has trained.
"""

from __future__ import annotations

import os
from typing import Optional

from nmt.util.errors import UserError

RENDEZVOUS = ("MASTER_ADDR", "MASTER_PORT")
"""Where the processes of a run meet: torch's env:// rendezvous needs both (torchrun sets them)."""


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
    return size
