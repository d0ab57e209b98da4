"""nmt's teacher-forcing schedules, registered as a user's are, and the p an update trains with.

Each is ``schedule(step, train) -> p`` (scheduled sampling, Bengio et al. 2015); ``train`` is the
config's ``train`` section.  :func:`teacher_forcing_p` looks the configured one up in
:data:`~nmt.config.schedules.TF_SCHEDULES` and checks what it gives.
"""

from __future__ import annotations

import math
import numbers

from nmt.config import TrainConfig
from nmt.config.schedules import TF_SCHEDULES, register_schedule
from nmt.model.attention_check import raised
from nmt.util.registry import PluginError

__all__ = ["constant", "inverse_sigmoid", "linear", "teacher_forcing_p"]


@register_schedule("constant")
def constant(step: int, train: TrainConfig) -> float:
    """p = ``teacher_forcing`` at every update."""
    return train.teacher_forcing


@register_schedule("linear")
def linear(step: int, train: TrainConfig) -> float:
    """From ``teacher_forcing`` down to ``tf_min`` over ``tf_decay_steps`` updates, then flat."""
    p, frac = train.teacher_forcing, min(step / train.tf_decay_steps, 1.0)
    return p + (min(train.tf_min, p) - p) * frac


@register_schedule("inverse_sigmoid")
def inverse_sigmoid(step: int, train: TrainConfig) -> float:
    """p = ``teacher_forcing`` k / (k + exp(step / k)), k = ``tf_k`` (Bengio et al. 2015)."""
    k = train.tf_k
    return train.teacher_forcing * k / (k + math.exp(min(step / k, 700.0)))


def teacher_forcing_p(cfg: TrainConfig, step: int) -> float:
    """Probability of feeding the reference token at update ``step``, by ``cfg.tf_schedule``.

    A registered schedule that raises, or gives anything but a number in [0, 1], is one PluginError naming it.
    """
    entry = TF_SCHEDULES.get(cfg.tf_schedule)
    try:
        p = entry.target(step, cfg)
    except Exception as exc:
        if entry.builtin:
            raise
        called = " (nmt calls a schedule as schedule(step, train))" if isinstance(exc, TypeError) else ""
        raise PluginError(f"train.tf_schedule={cfg.tf_schedule} raised {raised(exc)} at update {step}{called}") from exc
    if isinstance(p, bool) or not isinstance(p, numbers.Real) or not 0.0 <= float(p) <= 1.0:  # a NumPy float is one
        raise PluginError(
            f"train.tf_schedule={cfg.tf_schedule} gave p={p!r} at update {step}; a schedule returns a number in [0, 1]"
        )
    return float(p)
