"""The training processes of ``nmt compare --jobs N`` die with it, also when it is killed outright.

They run in sessions of their own (so that Ctrl-C reaches only the comparison, which passes it on),
so nothing reached them when ``nmt compare`` got SIGKILL: they trained on as orphans, holding their
run locks.  On Linux each now asks the kernel for SIGTERM when its parent dies (``PR_SET_PDEATHSIG``),
on which ``nmt train`` saves its last checkpoint and ends.  Checked with real processes: a parent
that starts a child as :func:`nmt.comparison.jobs._start` does, then is killed with SIGKILL.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from nmt.util.children import die_with_parent

PARENT = textwrap.dedent(
    """
    import sys, time
    from pathlib import Path
    from nmt.comparison import jobs as compare_jobs
    from nmt.comparison.plan import Plan
    from nmt.comparison.runs import RunAction

    # the child sleeps where nmt train would train
    compare_jobs.train_command = lambda plan, act: [sys.executable, "-c", "import time; time.sleep(120)"]
    runs = Path(sys.argv[1])
    plan = Plan(config=None, variants=None, seeds=[1], steps=1, runs_dir=runs)
    job = compare_jobs._start(plan, RunAction([], runs / "bahdanau_s1", "train"))
    print(job.process.pid, flush=True)
    time.sleep(120)
    """
)


def _alive(pid: int) -> bool:
    """Whether ``pid`` runs (a zombie nobody reaped yet has ended)."""
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii") as stat:
            return stat.read().rsplit(")", 1)[1].split()[0] != "Z"
    except FileNotFoundError:
        return False


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="PR_SET_PDEATHSIG is Linux's")
def test_a_training_child_dies_when_compare_is_killed_outright(tmp_path: Path) -> None:
    parent = subprocess.Popen([sys.executable, "-c", PARENT, str(tmp_path / "runs")], stdout=subprocess.PIPE, text=True)
    child = 0
    try:
        assert parent.stdout is not None
        child = int(parent.stdout.readline())
        assert _alive(child)
        parent.kill()  # SIGKILL: no handler of the parent runs
        parent.wait(timeout=10)
        deadline = time.monotonic() + 5
        while _alive(child) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert not _alive(child), "the training child outlived its killed parent"
    finally:
        if parent.poll() is None:
            parent.kill()
            parent.wait()
        if child and _alive(child):
            os.kill(child, signal.SIGKILL)


def test_off_linux_there_is_no_hook() -> None:
    hook = die_with_parent()
    assert (hook is None) != sys.platform.startswith("linux")
