"""The teacher-forcing schedules a config may name (``train.tf_schedule``): a registry.

A schedule is a function ``(step, train) -> p``: the update number and the ``train`` section,
giving the probability of feeding the reference token at that update.  nmt's ``constant``,
``linear`` and ``inverse_sigmoid`` (:mod:`nmt.training.schedules`) are registered through the
same :func:`register_schedule` a user calls; a config may also name one by import path
(``my_schedules:cosine_decay``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Optional

from nmt.util.registry import Registry

TF_SCHEDULE_NAMES = ("constant", "linear", "inverse_sigmoid")
"""nmt's own schedules."""

TF_SCHEDULES = Registry("teacher-forcing schedule", "train.tf_schedule")
TF_SCHEDULES.reserve(TF_SCHEDULE_NAMES)


def register_schedule(name: str, schedule: Optional[Callable[..., float]] = None) -> Any:
    """Register a teacher-forcing schedule ``schedule(step: int, train: TrainConfig) -> p`` under
    ``name`` (``train.tf_schedule: NAME``); with no function, a decorator."""
    if schedule is None:
        return TF_SCHEDULES.decorator(name)
    return TF_SCHEDULES.register(name, schedule)
