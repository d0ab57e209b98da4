"""The teacher-forcing schedules a config may name (``train.tf_schedule``): a registry.

A schedule is a function ``(step, train) -> p``: the update number and the ``train`` section,
giving the probability of feeding the reference token at that update.  nmt's ``constant``,
``linear`` and ``inverse_sigmoid`` (:mod:`nmt.training.schedules`) are registered through the
same :func:`register_schedule` a user calls; a config may also name one by import path
(``my_schedules:cosine_decay``).
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any, Optional

from nmt.util.registry import Registry

TF_SCHEDULE_NAMES = ("constant", "linear", "inverse_sigmoid")
"""nmt's own schedules."""


def not_a_schedule(target: Any) -> Optional[str]:
    """Why ``target`` cannot be a schedule (not a function taking ``(step, train)``), or None."""
    if isinstance(target, type) or not callable(target):
        return "is not a function (step, train) -> p"
    try:
        inspect.signature(target).bind(0, None)
    except TypeError:
        return "does not take the two arguments (step, train) a schedule is called with"
    except ValueError:  # no signature to read (some built-in callables): called and checked at the first update
        return None
    return None


TF_SCHEDULES = Registry("teacher-forcing schedule", "train.tf_schedule", accepts=not_a_schedule)
TF_SCHEDULES.reserve(TF_SCHEDULE_NAMES)


def register_schedule(name: str, schedule: Optional[Callable[..., float]] = None, replace: bool = False) -> Any:
    """Register a teacher-forcing schedule ``schedule(step: int, train: TrainConfig) -> p`` under
    ``name`` (``train.tf_schedule: NAME``); with no function, a decorator."""
    if schedule is None:
        return TF_SCHEDULES.decorator(name, replace)
    return TF_SCHEDULES.register(name, schedule, replace)
