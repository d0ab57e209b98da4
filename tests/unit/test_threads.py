"""The thread governor: free cores from CPU counters, and the thread count it sets."""

from __future__ import annotations

import os
import time

import pytest
import torch

from nmt.util import threads
from nmt.util.threads import CpuSample, ThreadGovernor, free_cores, read_sample, threads_for


@pytest.fixture(autouse=True)
def restore_threads():
    before = torch.get_num_threads()
    yield
    threads.configure(before)


def test_read_sample_sums_only_the_allowed_cpus_and_skips_idle_and_iowait(tmp_path):
    stat = tmp_path / "stat"
    #          user nice system idle iowait irq softirq steal
    stat.write_text(
        "cpu  999 0 0 0 0 0 0 0\n"
        "cpu0 100 10 20 5000 300 1 2 3\n"
        "cpu1 7 0 0 9000 0 0 0 0\n"
        "cpu2 50 0 0 0 0 0 0 0\n"
        "intr 12345\n"
    )
    tick = os.sysconf("SC_CLK_TCK")
    sample = read_sample({0, 2}, str(stat))
    assert sample.busy == pytest.approx((100 + 10 + 20 + 1 + 2 + 3 + 50) / tick)
    assert read_sample({0}, str(tmp_path / "missing")) is None


def test_own_cpu_time_grows_while_this_process_computes_and_not_while_it_sleeps(tmp_path):
    """``own`` is this process's CPU time, the part of the busy time that free_cores gives back."""
    stat = tmp_path / "stat"
    stat.write_text("cpu0 1 0 0 1 0 0 0 0\n")
    start = read_sample({0}, str(stat))
    time.sleep(0.3)
    slept = read_sample({0}, str(stat))
    burn_until = time.process_time() + 0.3
    while time.process_time() < burn_until:
        pass
    burnt = read_sample({0}, str(stat))
    assert slept.wall - start.wall >= 0.3 and slept.own - start.own < 0.1
    assert burnt.own - slept.own >= 0.25  # clock ticks of 10 ms: a little below the 0.3 s burnt


def test_free_cores_counts_other_processes_not_our_own_use():
    before = CpuSample(wall=0.0, busy=0.0, own=0.0)
    # 4 s: the machine was busy 6 core-seconds, 2 of them ours -> others used 1 core
    assert free_cores(before, CpuSample(wall=4.0, busy=6.0, own=2.0), n_cpus=2) == pytest.approx(1.0)
    # all of the busy time was ours: every core is free for us
    assert free_cores(before, CpuSample(wall=2.0, busy=4.0, own=4.0), n_cpus=2) == pytest.approx(2.0)
    # counters can drift by a tick: never below 0 or above the CPUs
    assert free_cores(before, CpuSample(wall=1.0, busy=9.0, own=0.0), n_cpus=2) == 0.0
    assert free_cores(before, CpuSample(wall=1.0, busy=0.0, own=0.5), n_cpus=2) == 2.0
    assert free_cores(before, before, n_cpus=3) == 3.0


@pytest.mark.parametrize(
    "free, ceiling, expected",
    [(2.0, 2, 2), (1.6, 2, 2), (1.5, 2, 2), (1.33, 2, 1), (0.0, 2, 1), (7.9, 4, 4), (3.0, 8, 3)],
)
def test_threads_for_rounds_free_cores_between_one_and_the_ceiling(free, ceiling, expected):
    assert threads_for(free, ceiling) == expected


def test_governor_follows_a_busy_core_down_and_back_up(monkeypatch):
    torch.set_num_threads(2)
    samples = iter(
        [
            CpuSample(0.0, 0.0, 0.0),
            CpuSample(10.0, 20.0, 12.0),  # others held 0.8 of 2 cores -> 1 thread
            CpuSample(20.0, 40.0, 22.0),  # still busy -> stays at 1
            CpuSample(30.0, 50.0, 32.0),
        ]
    )  # others idle -> back to 2
    monkeypatch.setattr(threads, "read_sample", lambda cpus: next(samples))
    monkeypatch.setattr(threads, "_allowed_cpus", lambda: {0, 1})
    monkeypatch.setattr(threads.time, "monotonic", lambda: 1e9)  # always due
    governor = ThreadGovernor(ceiling=2)
    assert governor.active
    assert [governor.check() for _ in range(3)] == [1, 1, 2]
    assert torch.get_num_threads() == 2


def test_governor_waits_for_its_interval(monkeypatch):
    calls = []
    monkeypatch.setattr(threads, "read_sample", lambda cpus: calls.append(1) or CpuSample(0.0, 0.0, 0.0))
    monkeypatch.setattr(threads.time, "monotonic", lambda: 0.5)
    governor = ThreadGovernor(ceiling=2, every_s=2.0)
    governor.check()
    assert len(calls) == 1  # only the first sample: 0.5 s is not yet due


def test_configure_fixed_count_sets_it_and_installs_no_governor(monkeypatch):
    threads.configure(1)
    assert torch.get_num_threads() == 1
    checked = []
    monkeypatch.setattr(ThreadGovernor, "check", lambda self: checked.append(1))
    threads.tick()
    assert checked == []


def test_configure_zero_with_one_allowed_thread_has_nothing_to_govern():
    torch.set_num_threads(1)
    assert threads.configure(0) is None  # ceiling 1: nothing to choose
