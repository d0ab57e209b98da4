"""A comparison's runs trained side by side: ``nmt compare --jobs N``.

Each run that needs training gets its own ``nmt train`` process with the overrides, seed and
updates the comparison would train it with one after another, at most N at a time; the
comparison then scores them as usual (they are finished runs of its plan).  Worth it where one
run leaves the machine idle: a GPU kept waiting by a recurrent decoder's small kernels, or a
CPU with more cores than one run uses.  The runs share the machine, so their training times
are not those of a run alone.

A run's output goes to ``RUNS_DIR/logs/<run>.log``.  The processes start in sessions of their
own, so a Ctrl-C reaches only ``nmt compare``, which passes it on once to each of them: every run
saves its last checkpoint, and the same command resumes them.  A SIGTERM (or SIGHUP) is passed on as
SIGTERM, and the comparison then exits as ``nmt train`` would, 128 + the signal it received, with a
line saying which runs saved.  A second signal is passed on too, which stops them without saving,
as for ``nmt train``.  A comparison killed outright (SIGKILL) can pass nothing on, so on Linux each
process asks the kernel for SIGTERM when the comparison ends (:func:`nmt.util.children.die_with_parent`):
the runs save and end rather than train on as orphans holding their run locks.
"""

from __future__ import annotations

import logging
import os
import signal
import subprocess
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO

from nmt import config as config_mod
from nmt.comparison.plan import Plan
from nmt.comparison.runs import RunAction
from nmt.config.sections import DataConfig
from nmt.data.pipeline import load_corpus
from nmt.util.children import die_with_parent
from nmt.util.errors import Interrupted, UserError
from nmt.util.fileio import open_log
from nmt.util.registry import given_modules
from nmt.util.signal_trap import SignalTrap

log = logging.getLogger(__name__)
POLL_S = 0.5  # how often the running processes are looked at
SIGNALLED = 128  # nmt train exits with 128 + the signal that stopped it, its run saved
STOP_SIGNALS = (signal.SIGTERM, signal.SIGHUP)  # to nmt compare: passed on as Ctrl-C
MEMORY_PER_JOB = 1 << 29
"""Bytes of memory a training process takes at least (torch and a small model: about 0.5 GiB)."""


def jobs_ceiling(cores: int, memory: int) -> int:
    """The most runs trained at once on a machine of ``cores`` CPU cores and ``memory`` bytes: one per
    core (each process keeps a core busy, on a GPU too) and one per :data:`MEMORY_PER_JOB`; at least 1."""
    return max(1, min(cores, memory // MEMORY_PER_JOB))


def machine_jobs_ceiling() -> int:
    """:func:`jobs_ceiling` of this machine: the cores this process may use, and its physical memory."""
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1
    try:
        memory = os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError):
        memory = MEMORY_PER_JOB * cores  # unknown: the cores decide
    return jobs_ceiling(cores, memory)


def check_jobs(jobs: int, option: str = "--jobs") -> None:
    """Refuse, before any work, more runs at once than the machine can hold (:func:`machine_jobs_ceiling`):
    ``--jobs 1000`` started every run at once."""
    ceiling = machine_jobs_ceiling()
    if jobs > ceiling:
        raise UserError(
            f"{option} {jobs}: this machine trains at most {ceiling} run(s) at once (one per CPU core and per "
            f"{MEMORY_PER_JOB >> 20} MiB of memory); give {option} {ceiling} or less"
        )


def train_command(plan: Plan, act: RunAction) -> list[str]:
    """The ``nmt train`` command line that trains (or resumes) one run as :func:`nmt.comparison.runs.train_run` does."""
    command = [sys.executable, "-m", "nmt", "train", "--no-progress"]
    command += [arg for module in given_modules() for arg in ("--module", module)]  # the user's attention
    if act.action == "resume":
        return [*command, "--resume", str(act.run_dir)]
    config = ["--config", str(plan.config)] if plan.config else []
    return [*command, *config, *(arg for override in act.overrides for arg in ("--set", override)), "--overwrite"]


@dataclass
class _Job:
    act: RunAction
    process: subprocess.Popen[bytes]
    log_path: Path
    log_file: IO[bytes]


def _start(plan: Plan, act: RunAction) -> _Job:
    log_path = plan.runs_dir / "logs" / f"{act.run_dir.name}.log"
    log_path.parent.mkdir(parents=True, exist_ok=True)
    log_file = open_log(log_path)  # never through a link
    try:
        process = subprocess.Popen(
            train_command(plan, act),
            stdout=log_file,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            start_new_session=True,
            preexec_fn=die_with_parent(),  # SIGTERM when the comparison dies, even by SIGKILL (Linux)
        )
    except OSError:
        log_file.close()
        raise
    log.info("%s %s in a process of its own (pid %d; log %s)", act.action, act.run_dir, process.pid, log_path)
    return _Job(act, process, log_path, log_file)


def _last_line(path: Path) -> str:
    lines = [line for line in path.read_text(encoding="utf-8", errors="replace").splitlines() if line.strip()]
    return lines[-1].strip() if lines else "(no output)"


def _interrupt(jobs: list[_Job], signum: int = signal.SIGINT) -> None:
    """Pass one ``signum`` (SIGINT, or SIGTERM for any other stop signal) to every running job and wait
    for them; a further signal is passed on as well."""
    passed = signal.SIGINT if signum == signal.SIGINT else signal.SIGTERM
    for job in jobs:
        job.process.send_signal(passed)
    while True:
        try:
            for job in jobs:
                job.process.wait()
                job.log_file.close()
            return
        except KeyboardInterrupt:
            for job in jobs:
                if job.process.poll() is None:
                    job.process.send_signal(passed)


def _stopped(signum: int, runs: list[Path], runs_dir: Path) -> Interrupted:
    """The one-line end of a comparison stopped by ``signum``: which runs saved, and how to go on."""
    name = signal.Signals(signum).name
    saved = ", ".join(run.name for run in runs[:4]) + (f" and {len(runs) - 4} more" if len(runs) > 4 else "")
    what = (
        f"the runs in training ({saved}) saved their last checkpoint in {runs_dir}" if runs else "no run was training"
    )
    return Interrupted(signum, f"stopped by {name}: {what}; the same command resumes the comparison")


def prepare_corpora(plan: Plan, actions: list[RunAction], progress: bool = False) -> None:
    """Prepare and encode, once each, the corpora the runs to train read: the runs would each do it
    when they find none, and two processes writing one prepared folder at once would race.

    Runs that need one folder prepared two ways (a sweep of ``data.vocab_size``, say) would
    re-prepare it under each other's feet, so they are refused: one after another, each run
    prepares the folder it needs before it reads it.  A run to resume reads the planned data
    too: it is resumed only when its saved config trains as the plan does.
    """
    needs: dict[Path, tuple[DataConfig, Path]] = {}
    for act in actions:
        if act.action == "reuse":
            continue
        data = config_mod.load(plan.config, act.overrides).data
        folder = data.prepared_dir
        if folder in needs and needs[folder][0] != data:
            raise UserError(
                f"{needs[folder][1]} and {act.run_dir} need {folder} prepared two ways (their data options "
                "differ), which runs side by side cannot share; train them with --jobs 1, or give each "
                "its own data.root"
            )
        needs.setdefault(folder, (data, act.run_dir))
    for data, _run in needs.values():
        load_corpus(data, splits=("train", "valid"), progress=progress)


def train_side_by_side(plan: Plan, actions: list[RunAction], jobs: int, progress: bool = False) -> None:
    """Train (or resume) every run of ``actions`` that is not reused, ``jobs`` processes at a time.

    Raises KeyboardInterrupt when interrupted (every run saved, as a sequential comparison
    leaves them), and a UserError naming the run and its log when one fails; whatever ends the
    loop early interrupts the runs still going the same way, so nothing is lost.  ``progress``
    shows the bars of preparing the corpora (the runs themselves train with ``--no-progress``).
    """
    prepare_corpora(plan, actions, progress)
    pending = [act for act in actions if act.action != "reuse"]
    running: list[_Job] = []
    # SIGTERM or SIGHUP to ``nmt compare`` (a kill, a closed terminal) stops the runs as Ctrl-C does: they
    # run in sessions of their own, so nothing else would reach them.  The trap also keeps the signal,
    # since its raise can be lost (see nmt.util.signal_trap): the loop then finds it at its next poll.
    # It stays in place while the runs are stopped, so a second signal is passed on too.
    with SignalTrap(STOP_SIGNALS, raises=_as_interrupt) as trap:
        try:
            _run_jobs(plan, pending, running, jobs, trap.received)
        except KeyboardInterrupt as stop:  # Ctrl-C, SIGTERM, or a run stopped by one from elsewhere
            signum = stop.signum if isinstance(stop, Interrupted) else signal.SIGINT
            stopped = [job.act.run_dir for job in running]
            _interrupt(running, signum)
            raise _stopped(signum, stopped, plan.runs_dir) from None
        except BaseException:  # a failed run, a process that would not start
            _interrupt(running)
            raise


def _as_interrupt(signum: int) -> Interrupted:
    """What a stop signal to ``nmt compare`` raises: an Interrupted, as Ctrl-C's KeyboardInterrupt."""
    return Interrupted(signum, signal.Signals(signum).name)


def _run_jobs(plan: Plan, pending: list[RunAction], running: list[_Job], jobs: int, received: Sequence[int]) -> None:
    """Start the pending runs, ``jobs`` at a time, until every one has finished; ``running`` is kept
    up to date, for the caller to stop them.  A stop signal in ``received`` ends the loop."""
    while pending or running:
        if received:  # a signal whose raise was lost
            raise _as_interrupt(received[0])
        while pending and len(running) < jobs:
            running.append(_start(plan, pending.pop(0)))
        time.sleep(POLL_S)
        for job in [j for j in running if j.process.poll() is not None]:
            code = job.process.returncode
            if code == 0:
                running.remove(job)
                job.log_file.close()
                log.info("%s finished", job.act.run_dir)
                continue
            # left in running (signals to an ended process are not sent), so the caller names it
            if code > SIGNALLED:  # stopped by a signal from elsewhere, its run saved
                raise Interrupted(code - SIGNALLED, f"{job.act.run_dir} was stopped")
            how = f"killed by signal {-code}" if code < 0 else f"exit status {code}"
            raise UserError(
                f"training {job.act.run_dir} failed ({how}): {_last_line(job.log_path)}; "
                f"its output is in {job.log_path}"
            )
