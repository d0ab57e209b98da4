"""The loops over target positions a config may train with (``train.decoder_loop``): a registry.

A decoder loop is the teacher-forcing loop of lecture 002 written as a function
``loop(step, tgt_in, state, p) -> logits``: ``step(tokens, state) -> (logits, state)`` runs the
decoder one position (attention included), ``tgt_in`` (B, T) is [BOS, y_1, ...], ``state`` the
decoder's start state and ``p`` the teacher-forcing probability of this update; the loop decides
which token each sentence reads at each position and returns the logits of every position
(B, T, V).  nmt's ``sampled`` (:mod:`nmt.model.decoder_loop`: one coin per sentence and
position, the reference with probability p, else the previous argmax) is registered through the
same :func:`register_loop` a user calls; a config names one by name or import path
(``my_loops:coin_per_batch``), as it names a schedule.  Pure Python: the config imports it before torch.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any, Optional

from nmt.util.registry import Registry

DECODER_LOOP_NAMES = ("sampled",)
"""nmt's own decoder loops."""


def not_a_loop(target: Any) -> Optional[str]:
    """Why ``target`` cannot be a decoder loop (not a function taking ``(step, tgt_in, state, p)``), or None."""
    if isinstance(target, type) or not callable(target):
        return "is not a function (step, tgt_in, state, p) -> logits"
    try:
        inspect.signature(target).bind(None, None, None, None)
    except TypeError:
        return "does not take the four arguments (step, tgt_in, state, p) a decoder loop is called with"
    except ValueError:  # no signature to read: the checks call it
        return None
    return None


DECODER_LOOPS = Registry("decoder loop", "train.decoder_loop", accepts=not_a_loop)
DECODER_LOOPS.reserve(DECODER_LOOP_NAMES)


def register_loop(name: str, loop: Optional[Callable[..., Any]] = None, replace: bool = False) -> Any:
    """Register a decoder loop ``loop(step, tgt_in, state, p) -> logits`` under ``name``
    (``train.decoder_loop: NAME``); with no function, a decorator.  ``nmt.check_loop`` checks it."""
    if loop is None:
        return DECODER_LOOPS.decorator(name, replace)
    return DECODER_LOOPS.register(name, loop, replace)
