"""A run's relative data paths mean the folder it was started in, wherever it is resumed or read from
(it used to prepare a second copy of the corpus under the current folder)."""

from pathlib import Path

import torch

from conftest import toy_overrides
from nmt.config import load
from nmt.decode.inference import load_checkpoint
from nmt.run.anchor import started_in
from nmt.training.entry import run_training


def _start_relative_run(start: Path, files, monkeypatch, steps: int = 2) -> list[str]:
    start.mkdir()
    monkeypatch.chdir(start)
    overrides = toy_overrides(start, files, train__max_steps=steps, runs_dir="runs", data__root="data")
    run_training(None, overrides, progress=False)
    return overrides


def test_resume_from_another_folder_reads_the_run_s_own_data(tmp_path, toy_files, monkeypatch):
    _, files = toy_files
    _start_relative_run(tmp_path / "a", files, monkeypatch)
    elsewhere = tmp_path / "b" / "sub"
    elsewhere.mkdir(parents=True)
    monkeypatch.chdir(elsewhere)
    run_training(None, ["train.max_steps=3"], resume=Path("../../a/runs/toy"), progress=False)
    assert not (elsewhere / "data").exists() and not (tmp_path / "b" / "data").exists()
    assert torch.load(tmp_path / "a/runs/toy/checkpoints/last.pt", weights_only=False)["state"]["step"] == 3


def test_a_checkpoint_read_from_another_folder_finds_its_corpus(tmp_path, toy_files, monkeypatch):
    _, files = toy_files
    _start_relative_run(tmp_path / "a", files, monkeypatch)
    monkeypatch.chdir(tmp_path)
    loaded = load_checkpoint(tmp_path / "a/runs/toy/checkpoints/last.pt", torch.device("cpu"))
    assert loaded.config.data.prepared_dir.is_dir()
    assert loaded.config.data.prepared_dir.is_relative_to(tmp_path / "a" / "data")
    monkeypatch.chdir(tmp_path / "a")  # from the folder it was started in, the config is as saved
    assert load_checkpoint(Path("runs/toy/checkpoints/last.pt"), torch.device("cpu")).config.data.root == "data"


def test_started_in_needs_the_folder_to_end_in_runs_dir_and_name(tmp_path):
    cfg = load(None, ["runs_dir=./exp/runs", "name=x"])
    assert started_in(cfg, tmp_path / "exp" / "runs" / "x") == tmp_path
    assert started_in(cfg, tmp_path / "moved" / "x") is None
    assert started_in(load(None, [f"runs_dir={tmp_path}", "name=x"]), tmp_path / "x") is None
