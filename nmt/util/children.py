"""Child processes that end with the process that started them, even when it is killed outright.

A child started in a session of its own (``start_new_session=True``, so that Ctrl-C on a terminal
reaches only its parent, which passes it on) gets no signal when its parent dies: killed with
SIGKILL, the parent can pass nothing on, and the child runs on as an orphan (``nmt compare --jobs``
left training processes holding their run locks).  On Linux a process can ask the kernel for a
signal when its parent ends, ``prctl(PR_SET_PDEATHSIG, sig)``; :func:`die_with_parent` gives the
``preexec_fn`` that asks for SIGTERM, on which ``nmt train`` saves its last checkpoint and ends.
Elsewhere there is no such call, and children behave as before.
"""

from __future__ import annotations

import ctypes
import os
import signal
import sys
from collections.abc import Callable
from typing import Any, Optional

PR_SET_PDEATHSIG = 1
"""prctl's option: the signal the calling process gets when its parent thread ends (linux/prctl.h)."""


def _prctl() -> Optional[Callable[..., Any]]:
    """libc's ``prctl``, looked up in the parent (nothing is loaded between fork and exec); None off Linux."""
    if not sys.platform.startswith("linux"):
        return None
    try:
        return ctypes.CDLL(None, use_errno=True).prctl
    except (OSError, AttributeError):  # a libc without it
        return None


def die_with_parent(signum: int = signal.SIGTERM) -> Optional[Callable[[], None]]:
    """A ``preexec_fn`` for :class:`subprocess.Popen` that makes the child get ``signum`` when this
    process ends, however it ends; None where the system offers no such call (not Linux).

    The kernel sends it when the *thread* that started the child ends, so start children from a
    thread that lives as long as the process (the main thread).  A parent that died before the
    child's call would never signal it, so the child then signals itself.
    """
    prctl = _prctl()
    if prctl is None:
        return None
    parent, number = os.getpid(), int(signum)

    def ask_for_signal() -> None:  # runs in the child, between fork and exec
        prctl(PR_SET_PDEATHSIG, number)
        if os.getppid() != parent:  # the parent is already gone
            os.kill(os.getpid(), number)

    return ask_for_signal
