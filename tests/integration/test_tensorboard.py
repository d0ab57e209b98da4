"""TensorBoard event files: what training logs, read back; resume without duplicated steps."""

import shutil

from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

from conftest import toy_overrides
from nmt.train import run_training

SCALARS = {"train/loss", "train/ppl", "train/lr", "train/teacher_forcing", "train/tokens_per_s", "train/grad_norm",
           "valid/loss", "valid/ppl", "valid/bleu", "valid/chrf"}


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
    assert SCALARS <= set(acc.Tags()["scalars"])
    assert steps(acc, "train/loss") == [1, 2, 3, 4, 5, 6]            # log_every 1
    assert steps(acc, "valid/bleu") == [3, 6]
    assert [e.step for e in acc.Images("valid/attention")] == [3, 6]
    assert all(e.value > 0 for e in acc.Scalars("train/grad_norm"))


def test_off_writes_no_folder(tmp_path, toy_files):
    _, files = toy_files
    run_training(None, toy_overrides(tmp_path, files, train__max_steps=2, train__tensorboard=False), progress=False)
    assert not (tmp_path / "runs" / "toy" / "tb").exists()


def test_resume_continues_the_stream_without_duplicated_steps(tmp_path, toy_files):
    """A resume from an older checkpoint than the last logged step (as after a crash) purges the
    orphaned steps, so every tag still has each step once."""
    _, files = toy_files
    run_dir = tmp_path / "runs" / "toy"
    run_training(None, toy_overrides(tmp_path, files, train__max_steps=4, train__valid_every=2), progress=False)
    shutil.copy(run_dir / "checkpoints" / "last.pt", tmp_path / "step4.pt")
    run_training(None, ["train.max_steps=8"], resume=run_dir, progress=False)
    shutil.copy(tmp_path / "step4.pt", run_dir / "checkpoints" / "last.pt")  # as if steps 5-8 were lost
    run_training(None, ["train.max_steps=8"], resume=run_dir, progress=False)
    acc = board(run_dir)
    assert steps(acc, "train/loss") == list(range(1, 9))
    assert steps(acc, "valid/bleu") == [2, 4, 6, 8]
