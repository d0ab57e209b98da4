"""Intra-op threads chosen from the cores other processes leave free, re-checked as a run goes.

torch's OpenMP threads spin at every barrier until the slowest thread arrives.  When another
process holds one core of a 2-core machine, the thread sharing that core arrives late at every
barrier and the step crawls: ``scripts/bench_busy.py`` measured training at about a third of
its quiet speed with 2 threads beside a one-core hog, but at about two thirds with 1 thread.
Passive waiting (``OMP_WAIT_POLICY=PASSIVE``) avoids the collapse too, but costs a quarter of
the quiet speed.  So by default nmt watches the load of *other* processes on the CPUs it may
run on (``/proc/stat`` minus its own CPU time) and uses one thread per core they leave free,
between 1 and torch's default.  ``train.threads`` (or ``--threads``) fixes the count instead.
"""

from __future__ import annotations

import logging
import os
import time
from dataclasses import dataclass
from typing import Optional

import torch

from nmt.util.errors import UserError

log = logging.getLogger(__name__)

CHECK_EVERY_S = 2.0  # seconds between load checks: long enough to average, short enough to react
THREADS_PER_CPU = 4
"""The most threads asked per CPU of the machine: more only oversubscribes, and a count such as
10**6 made ``torch.set_num_threads`` kill the process with a segmentation fault."""


def max_threads() -> int:
    """The largest thread count :func:`configure` takes on this machine."""
    return THREADS_PER_CPU * (os.cpu_count() or 1)


def check_count(threads: object, name: str = "threads") -> int:
    """``threads`` if it is a whole number from 0 to :func:`max_threads`; else a UserError naming ``name``."""
    top = max_threads()
    if not isinstance(threads, int) or isinstance(threads, bool) or not 0 <= threads <= top:
        raise UserError(
            f"{name}={str(threads)[:40]}: give 0 (one per free core) or a count from 1 to {top} "
            f"({THREADS_PER_CPU} per CPU of this machine)"
        )
    return threads


@dataclass(frozen=True)
class CpuSample:
    """Cumulative CPU counters at one instant, in seconds."""

    wall: float  # time.monotonic()
    busy: float  # time the watched CPUs spent on anything but idle/iowait, all processes
    own: float  # CPU time of this process (all its threads)


def _allowed_cpus() -> set[int]:
    return os.sched_getaffinity(0) if hasattr(os, "sched_getaffinity") else set(range(os.cpu_count() or 1))


def read_sample(cpus: set[int], stat_path: str = "/proc/stat") -> Optional[CpuSample]:
    """Busy time of ``cpus`` and this process's CPU time now; None where /proc/stat is missing."""
    tick = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100
    busy = 0
    try:
        with open(stat_path, encoding="ascii") as handle:
            for line in handle:
                name, *fields = line.split()
                if not name.startswith("cpu") or name == "cpu" or int(name[3:]) not in cpus:
                    continue
                values = [int(v) for v in fields[:8]]  # user nice system idle iowait irq softirq steal
                busy += sum(values) - values[3] - values[4]
    except (OSError, ValueError, IndexError):
        return None
    own = os.times()
    return CpuSample(wall=time.monotonic(), busy=busy / tick, own=own.user + own.system)


def free_cores(before: CpuSample, after: CpuSample, n_cpus: int) -> float:
    """Cores not used by other processes between two samples (this process's own use counts as free)."""
    wall = after.wall - before.wall
    if wall <= 0:
        return float(n_cpus)
    others = (after.busy - before.busy) - (after.own - before.own)
    return min(float(n_cpus), max(0.0, n_cpus - max(0.0, others) / wall))


def threads_for(free: float, ceiling: int) -> int:
    """One thread per free core, rounded half up, between 1 and ``ceiling``."""
    return max(1, min(ceiling, int(free + 0.5)))


class ThreadGovernor:
    """Keeps torch's intra-op thread count at the number of cores other processes leave free.

    Call :meth:`check` often (every update, every decoded batch); it reads the counters at most
    every ``every_s`` seconds and changes ``torch.set_num_threads`` only when the count differs.
    """

    def __init__(self, ceiling: Optional[int] = None, every_s: float = CHECK_EVERY_S) -> None:
        self.ceiling = ceiling or torch.get_num_threads()
        self.cpus = _allowed_cpus()
        self.every_s = every_s
        self.last = read_sample(self.cpus)
        self.threads = torch.get_num_threads()

    @property
    def active(self) -> bool:
        """False where there is nothing to choose (one thread allowed) or nothing to read."""
        return self.last is not None and self.ceiling > 1

    def check(self) -> int:
        """Re-read the load when due and set the thread count; returns the count in use."""
        if not self.active or time.monotonic() - self.last.wall < self.every_s:  # type: ignore[union-attr]
            return self.threads
        now = read_sample(self.cpus)
        if now is None:
            return self.threads
        free = free_cores(self.last, now, len(self.cpus))  # type: ignore[arg-type]
        self.last = now
        wanted = threads_for(free, self.ceiling)
        if wanted != self.threads:
            log.info(
                "other processes left %.1f of %d cores free: %d -> %d threads",
                free,
                len(self.cpus),
                self.threads,
                wanted,
            )
            torch.set_num_threads(wanted)
            self.threads = wanted
        return self.threads


_governor: Optional[ThreadGovernor] = None  # the process's; set by configure()


def configure(threads: int, name: str = "threads") -> Optional[ThreadGovernor]:
    """``threads > 0``: use exactly that many.  0: follow the free cores from now on (see :func:`tick`).

    The count is torch's, for the whole process (``torch.set_num_threads``), until changed again.
    A negative count or one above :func:`max_threads` is refused (:func:`check_count`), the
    message naming the option ``name``.
    """
    global _governor
    check_count(threads, name)
    _governor = None
    if threads > 0:
        torch.set_num_threads(threads)
        return None
    governor = ThreadGovernor()
    _governor = governor if governor.active else None
    return _governor


def tick() -> None:
    """Let the configured governor re-check the load (cheap; call it every update or decoded batch)."""
    if _governor is not None:
        _governor.check()
