"""A full disk during training: one line on stderr, exit 2, and every earlier checkpoint intact.

No test here fills a real disk: torch.save and TensorBoard's record writer are made to fail as
they do on one (torch with a RuntimeError, "unexpected pos"; TensorBoard with OSError(ENOSPC)
in its writer thread), and the folder's free space is reported as nil where that decides.
"""

from __future__ import annotations

import errno
import shutil
import threading
import time
from collections import namedtuple

import pytest
import torch
from tensorboard.summary.writer import record_writer

from conftest import run_cli, toy_overrides
from nmt.run import checkpoint as ckpt
from nmt.run import events
from nmt.training.entry import run_training
from nmt.training.tensorboard import Board
from nmt.util.fileio import DiskFullError

Usage = namedtuple("Usage", "total used free")


def train_argv(overrides: list[str], *extra: str) -> list[str]:
    return ["train", "--no-progress", *extra, *[a for o in overrides for a in ("--set", o)]]


def one_line_error(code: int, err: str, *needles: str) -> None:
    assert code == 2, err
    assert err.startswith("nmt: error: ") and err.count("\n") == 1, err
    assert "Traceback" not in err and all(needle in err for needle in needles), err


@pytest.fixture()
def escaped(monkeypatch) -> list:
    """Exceptions that leave a thread unhandled (by default, a traceback on stderr)."""
    caught: list = []

    def record(args) -> None:
        caught.append(args.exc_value)

    monkeypatch.setattr(threading, "excepthook", record)
    return caught


def test_a_full_disk_while_saving_a_checkpoint(tmp_path, toy_files, monkeypatch, capsys):
    """torch.save fails with RuntimeError; the disk is full: exit 2, one line, nothing lost."""
    _, files = toy_files
    run_training(None, toy_overrides(tmp_path, files, train__max_steps=2), progress=False)
    run_dir = tmp_path / "runs" / "toy"
    checkpoints = run_dir / "checkpoints"
    before = {p.name: p.read_bytes() for p in checkpoints.iterdir()}

    def full(obj, handle, *args, **kwargs):
        handle.write(b"PK\x03\x04 the start of a zip")
        raise RuntimeError("[enforce fail at inline_container.cc:672] . unexpected pos 704 vs 598")

    monkeypatch.setattr(torch, "save", full)
    monkeypatch.setattr(shutil, "disk_usage", lambda folder: Usage(10**9, 10**9, 0))
    code, _, err = run_cli(train_argv(["train.max_steps=4"], "--resume", str(run_dir)), capsys)
    monkeypatch.undo()
    one_line_error(code, err, "no space left on device while writing", "earlier checkpoints are intact")
    assert {p.name: p.read_bytes() for p in checkpoints.iterdir()} == before  # no temporary left either
    assert ckpt.load(checkpoints / "last.pt").state.step == 2


def test_a_full_disk_in_the_tensorboard_thread(tmp_path, toy_files, monkeypatch, capsys, escaped):
    """The writer's thread fails with ENOSPC mid-run: no thread traceback, exit 2, one line."""
    _, files = toy_files
    real_write, records = record_writer.RecordWriter.write, []

    def write(self, data: bytes) -> None:
        records.append(len(data))
        if len(records) > 12:  # after the first few updates' scalars
            raise OSError(errno.ENOSPC, "No space left on device")
        real_write(self, data)

    monkeypatch.setattr(record_writer.RecordWriter, "write", write)
    code, _, err = run_cli(train_argv(toy_overrides(tmp_path, files, train__max_steps=8)), capsys)
    one_line_error(
        code, err, "no space left on device while writing TensorBoard events", str(tmp_path / "runs" / "toy" / "tb")
    )
    assert escaped == []
    assert threading.excepthook.__name__ == "record"  # the board gave the hook back


def test_a_writer_thread_failure_between_calls_surfaces_at_the_next_one(tmp_path, monkeypatch, escaped):
    """The thread dies after a call returned: the board keeps its error and raises it next time."""
    board = Board(tmp_path)
    board.write(events.Start(step=0, epoch=0, elapsed_s=0.0))

    def full(self, data: bytes) -> None:
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(record_writer.RecordWriter, "write", full)
    board.writer.add_scalar("train/loss", 1.0, 1)  # queued; the thread fails on it
    deadline = time.monotonic() + 60
    while board.failure is None and time.monotonic() < deadline:
        time.sleep(0.01)
    assert isinstance(board.failure, OSError) and escaped == []  # kept, not printed
    with pytest.raises(DiskFullError, match="TensorBoard events"):
        board.close()
    assert board.failure is None and threading.excepthook.__name__ == "record"


def test_closing_after_another_error_does_not_hide_it(tmp_path, monkeypatch, escaped):
    board = Board(tmp_path)
    board.write(events.Start(step=0, epoch=0, elapsed_s=0.0))
    board.failure = OSError(errno.ENOSPC, "No space left on device")
    board.close(quiet=True)  # the trainer's loop already raised: this one is only logged
    assert board.writer is None and escaped == []


def test_other_thread_errors_still_reach_the_hook(tmp_path, escaped):
    board = Board(tmp_path)
    board.write(events.Start(step=0, epoch=0, elapsed_s=0.0))
    try:
        thread = threading.Thread(target=lambda: 1 / 0)
        thread.start()
        thread.join()
    finally:
        board.close()
    assert [type(e) for e in escaped] == [ZeroDivisionError]
