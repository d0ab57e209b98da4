"""Logs nmt appends to (a run's metrics.jsonl, a comparison's run logs) are plain files opened without
following a link: a link placed where a log goes is refused in one line, its target left as it was."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from nmt.run import events
from nmt.util.errors import UserError
from nmt.util.fileio import open_log


def test_a_log_appends_to_a_plain_file_and_creates_it(tmp_path: Path) -> None:
    path = tmp_path / "a.log"
    for line in (b"one\n", b"two\n"):
        with open_log(path) as handle:
            handle.write(line)
    assert path.read_bytes() == b"one\ntwo\n"


@pytest.mark.parametrize("target", ["a file", "nothing"])
def test_a_link_where_a_log_goes_is_refused_and_its_target_untouched(tmp_path: Path, target: str) -> None:
    victim = tmp_path / "victim.txt"
    if target == "a file":
        victim.write_bytes(b"precious\n")
    link = tmp_path / "metrics.jsonl"
    link.symlink_to(victim)
    with pytest.raises(UserError, match="is a symbolic link"):
        open_log(link)
    assert (victim.read_bytes() == b"precious\n") if target == "a file" else not victim.exists()


def test_a_fifo_where_a_log_goes_is_refused_without_waiting(tmp_path: Path) -> None:
    fifo = tmp_path / "x.log"
    os.mkfifo(fifo)
    with pytest.raises(UserError, match=r"not a plain file|No such device"):
        open_log(fifo)


def test_a_runs_metrics_are_never_appended_through_a_link(tmp_path: Path) -> None:
    run = tmp_path / "run"
    run.mkdir()
    victim = tmp_path / "elsewhere.jsonl"
    victim.write_text("mine\n", encoding="utf-8")
    (run / "metrics.jsonl").symlink_to(victim)
    with pytest.raises(UserError, match=r"metrics\.jsonl: is a symbolic link"):
        events.append(run, events.Stop(reason="max_steps", step=1, epoch=0, elapsed_s=0.1, best=None))
    assert victim.read_text(encoding="utf-8") == "mine\n"
