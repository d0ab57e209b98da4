"""What torchrun tells a worker through its environment, read without importing torch.

The CLI asks before any command runs (a worker of several ends differently, see
:func:`nmt.train.distributed.end_rank`), so this module stays free of torch.
"""

from __future__ import annotations

import os

from nmt.util.errors import UserError


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
