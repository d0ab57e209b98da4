"""A worker whose rank 0 does not answer (issue 70): it says that it waits, naming
``MASTER_ADDR:MASTER_PORT``, and gives up after ``NMT_RENDEZVOUS_TIMEOUT`` seconds in one line,
instead of waiting silently inside torch for the process group's hour.

The address is a port bound on 127.0.0.1 and never listened on, so a connection is refused at
once and nothing else can take the port while the test runs.
"""

from __future__ import annotations

import logging
import os
import socket
import subprocess
import threading
import time
from collections.abc import Iterator

import pytest

from conftest import NMT, PROC_TIMEOUT, REPO
from nmt.util import torchrun
from nmt.util.errors import UserError


@pytest.fixture()
def silent_port() -> Iterator[int]:
    """A port on 127.0.0.1 that refuses connections while the test holds it."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as held:
        held.bind(("127.0.0.1", 0))
        yield held.getsockname()[1]


def test_a_worker_whose_master_does_not_answer_says_so_and_gives_up(tmp_path, silent_port) -> None:
    env = {
        **os.environ,
        "WORLD_SIZE": "2",
        "RANK": "1",
        "LOCAL_RANK": "1",
        "MASTER_ADDR": "127.0.0.1",
        "MASTER_PORT": str(silent_port),
        "NMT_RENDEZVOUS_TIMEOUT": "1.5",
    }
    start = time.monotonic()
    proc = subprocess.run(
        [*NMT, "train", "--set", f"runs_dir={tmp_path}", "--no-progress"],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=min(PROC_TIMEOUT, 120),  # torch alone waited its hour
        env=env,
    )
    took = time.monotonic() - start
    where = f"MASTER_ADDR:MASTER_PORT=127.0.0.1:{silent_port}"
    lines = proc.stderr.strip().splitlines()
    waiting = [line for line in lines if "waiting for rank 0" in line]
    assert proc.returncode == 2 and "Traceback" not in proc.stderr, proc.stderr
    assert len(waiting) == 1 and f"rank 1 of 2: waiting for rank 0 at {where}" in waiting[0], proc.stderr
    assert "up to 1.5 s (NMT_RENDEZVOUS_TIMEOUT sets it)" in waiting[0]
    assert lines[-1].startswith(f"nmt: error: rank 1 of 2: nothing answered at {where} in 1.5 s"), proc.stderr
    assert "raise NMT_RENDEZVOUS_TIMEOUT" in lines[-1]
    assert took < 60, took  # the interpreter, torch's import and 1.5 s, not torch's hour
    assert list(tmp_path.iterdir()) == []  # rank 1 creates nothing


def test_the_wait_ends_when_the_master_comes_up(monkeypatch, caplog) -> None:
    """A rank 0 that starts late is met: one line while waiting, then on without an error."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as master:
        master.bind(("127.0.0.1", 0))  # bound, not yet listening: refused until listen()
        monkeypatch.setenv("MASTER_ADDR", "127.0.0.1")
        monkeypatch.setenv("MASTER_PORT", str(master.getsockname()[1]))
        late = threading.Timer(0.7, master.listen)
        with caplog.at_level(logging.WARNING, logger="nmt.util.torchrun"):
            late.start()
            start = time.monotonic()
            try:
                torchrun.wait_for_master(1, 2, timeout=30)
            finally:
                late.join()
    assert caplog.text.count("waiting for rank 0") == 1
    assert 0.5 < time.monotonic() - start < 10


def test_a_master_that_answers_at_once_is_not_mentioned(monkeypatch, caplog) -> None:
    with socket.create_server(("127.0.0.1", 0)) as master:
        monkeypatch.setenv("MASTER_ADDR", "127.0.0.1")
        monkeypatch.setenv("MASTER_PORT", str(master.getsockname()[1]))
        with caplog.at_level(logging.WARNING, logger="nmt.util.torchrun"):
            torchrun.wait_for_master(1, 2, timeout=5)
    assert caplog.text == ""


@pytest.mark.parametrize("raw", ["0", "-1", "nan", "inf", "soon", ""])
def test_a_bad_timeout_is_one_line(monkeypatch, raw) -> None:
    monkeypatch.setenv("NMT_RENDEZVOUS_TIMEOUT", raw)
    with pytest.raises(UserError, match=f"NMT_RENDEZVOUS_TIMEOUT={raw!r}: expected seconds, a number above 0"):
        torchrun.rendezvous_timeout()


def test_the_timeout_defaults_to_five_minutes(monkeypatch) -> None:
    monkeypatch.delenv("NMT_RENDEZVOUS_TIMEOUT", raising=False)
    assert torchrun.rendezvous_timeout() == torchrun.DEFAULT_TIMEOUT == 300
