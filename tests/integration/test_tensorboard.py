"""TensorBoard event files: what training logs, read back; resume without duplicated steps."""

import shutil
import sys
import time

import pytest
from tensorboard.backend.event_processing.event_accumulator import EventAccumulator
from tensorboard.summary.writer import event_file_writer

from conftest import run_cli, toy_overrides
from nmt.training.entry import run_training
from nmt.training.tensorboard import Board, wait_for_a_later_file_name
from nmt.util.errors import UserError

SCALARS = {
    "train/loss",
    "train/ppl",
    "train/lr",
    "train/teacher_forcing",
    "train/tokens_per_s",
    "train/grad_norm",
    "valid/loss",
    "valid/ppl",
    "valid/bleu",
    "valid/chrf",
    "valid/length_ratio",
}


def board(run_dir):
    acc = EventAccumulator(str(run_dir / "tb"), size_guidance={"scalars": 0, "images": 0})
    acc.Reload()  # drops events a resumed run purged
    return acc


def steps(acc, tag):
    return [e.step for e in acc.Scalars(tag)]


def test_scalars_and_attention_image_are_logged(tmp_path, toy_files):
    _, files = toy_files
    run_training(None, toy_overrides(tmp_path, files, train__max_steps=6, train__valid_every=3), progress=False)
    acc = board(tmp_path / "runs" / "toy")
    assert set(acc.Tags()["scalars"]) >= SCALARS
    assert steps(acc, "train/loss") == [1, 2, 3, 4, 5, 6]  # log_every 1
    assert steps(acc, "valid/bleu") == [3, 6]
    assert [e.step for e in acc.Images("valid/attention")] == [3, 6]
    assert all(e.value > 0 for e in acc.Scalars("train/grad_norm"))


def without_tensorboard(monkeypatch):
    """Make ``import torch.utils.tensorboard`` fail, as on a machine without the package."""
    monkeypatch.setitem(sys.modules, "torch.utils.tensorboard", None)


def test_off_writes_no_folder_and_never_imports_tensorboard(tmp_path, toy_files, monkeypatch):
    _, files = toy_files
    without_tensorboard(monkeypatch)
    run_training(None, toy_overrides(tmp_path, files, train__max_steps=2, train__tensorboard=False), progress=False)
    assert (tmp_path / "runs" / "toy" / "metrics.jsonl").is_file()
    assert not (tmp_path / "runs" / "toy" / "tb").exists()


def test_missing_package_is_a_one_line_error_naming_the_option(tmp_path, toy_files, monkeypatch, capsys):
    _, files = toy_files
    without_tensorboard(monkeypatch)
    argv = ["train", "--no-progress"]
    for assignment in toy_overrides(tmp_path, files, train__max_steps=2):
        argv += ["--set", assignment]
    code, _, err = run_cli(argv, capsys)
    assert code == 2
    assert len(err.strip().splitlines()) == 1 and "train.tensorboard=false" in err
    assert not (tmp_path / "runs" / "toy").exists()  # refused before the run directory is made


def test_a_trainer_built_directly_fails_the_same_way(tmp_path, monkeypatch):
    """Scripts that build a Trainer without run_training meet the same one-line error."""
    without_tensorboard(monkeypatch)
    with pytest.raises(UserError, match=r"train\.tensorboard=false"):
        Board(tmp_path)


def test_uniform_attention_logs_no_heat_map(tmp_path, toy_files):
    """Preset none attends uniformly: its scalars are logged, its flat heat map is not."""
    _, files = toy_files
    run_training(
        None,
        toy_overrides(tmp_path, files, train__max_steps=2, train__valid_every=2, model__attention__type="none"),
        progress=False,
    )
    acc = board(tmp_path / "runs" / "toy")
    assert steps(acc, "valid/bleu") == [2]
    assert "valid/attention" not in acc.Tags()["images"]


@pytest.mark.parametrize("first_file_number", [0, 8])
def test_resume_continues_the_stream_without_duplicated_steps(tmp_path, toy_files, monkeypatch, first_file_number):
    """A resume from an older checkpoint than the last logged step (as after a crash) purges the
    orphaned steps, so every tag still has each step once.  Numbered from 8, the event files of the
    two resumes (often opened in one second) would sort "10" before "9": CI met this under xdist."""
    monkeypatch.setattr(event_file_writer, "_global_uid", event_file_writer.AtomicCounter(first_file_number))
    _, files = toy_files
    run_dir = tmp_path / "runs" / "toy"
    run_training(None, toy_overrides(tmp_path, files, train__max_steps=4, train__valid_every=2), progress=False)
    shutil.copy(run_dir / "checkpoints" / "last.pt", tmp_path / "step4.pt")
    run_training(None, ["train.max_steps=8"], resume=run_dir, progress=False)
    shutil.copy(tmp_path / "step4.pt", run_dir / "checkpoints" / "last.pt")  # as if steps 5-8 were lost
    run_training(None, ["train.max_steps=8"], resume=run_dir, progress=False)
    numbers = [int(f.name.rsplit(".", 1)[1]) for f in sorted((run_dir / "tb").glob("events.out.tfevents.*"))]
    assert numbers == [first_file_number, first_file_number + 1, first_file_number + 2]  # read in write order
    acc = board(run_dir)
    assert steps(acc, "train/loss") == list(range(1, 9))
    assert steps(acc, "valid/bleu") == [2, 4, 6, 8]


def test_a_new_event_file_waits_for_a_later_second(tmp_path):
    """The name of a file opened now sorts after one stamped with the current second."""
    now = int(time.time())
    (tmp_path / f"events.out.tfevents.{now:010d}.host.99.9").touch()
    (tmp_path / "events.out.tfevents.notanumber").touch()  # ignored, as TensorBoard would read it
    wait_for_a_later_file_name(tmp_path)
    assert int(time.time()) > now


def test_a_clock_set_far_back_is_not_waited_for(tmp_path):
    ahead = int(time.time()) + 3600
    (tmp_path / f"events.out.tfevents.{ahead:010d}.host.1.0").touch()
    started = time.monotonic()
    wait_for_a_later_file_name(tmp_path)
    assert time.monotonic() - started < 0.5
