"""What ``nmt train`` must never do: delete what it did not write, let two processes write one
run, change a run's data or model on resume, or exit 0 after a signal stopped it."""

import json
import os
import signal
import subprocess
import sys

import pytest

from conftest import NMT, PROC_TIMEOUT, REPO, stop, toy_overrides, wait_until
from nmt import config as C
from nmt.run.folder import LOCK_NAME, RunBusyError, RunLock, check_replaceable, is_run
from nmt.training.entry import run_training
from nmt.util.errors import ConfigError, UserError

# ------------------------------------------------------------ run names


@pytest.mark.parametrize("name", [".", "..", "../escape", "/tmp/abs", "a/b", "", "x y", "run\n"])
def test_run_name_must_be_one_plain_folder_name(name):
    with pytest.raises(ConfigError, match="a run name is one folder name"):
        C.from_dict({"name": name})


def test_plain_run_names_are_accepted():
    for name in ("demo", "multi30k_de_en_best", "run-2.v1", ".hidden"):
        assert C.load(None, [f"name={name}"]).name == name


def test_overwrite_with_name_dotdot_deletes_nothing(tmp_path):
    """The reported data loss, through a real process: `--set name=.. --overwrite`."""
    keep = tmp_path / "precious.txt"
    keep.write_text("not a run")
    runs = tmp_path / "runs"
    runs.mkdir()
    proc = subprocess.run(
        NMT + ["train", "--set", "name=..", "--set", f"runs_dir={runs}", "--overwrite"],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=PROC_TIMEOUT,
    )
    assert proc.returncode == 2 and "a run name is one folder name" in proc.stderr
    assert keep.read_text() == "not a run" and runs.is_dir()


# ------------------------------------------------------------ what --overwrite may remove


def test_overwrite_refuses_a_folder_nmt_did_not_write(tmp_path, toy_files):
    _, files = toy_files
    folder = tmp_path / "runs" / "toy"
    folder.mkdir(parents=True)
    (folder / "notes.txt").write_text("mine")
    (folder / "config.yaml").write_text("name: toy\n")  # a config alone is not a run
    with pytest.raises(UserError, match="nmt did not write"):
        run_training(None, toy_overrides(tmp_path, files, train__max_steps=1), overwrite=True, progress=False)
    assert (folder / "notes.txt").read_text() == "mine"
    assert not (folder / LOCK_NAME).exists()  # refused before a lock file was put there


def test_overwrite_replaces_a_run_and_keeps_nothing_of_it(tmp_path, toy_files):
    _, files = toy_files
    overrides = toy_overrides(tmp_path, files, train__max_steps=1)
    run_training(None, overrides, progress=False)
    run_dir = tmp_path / "runs" / "toy"
    (run_dir / "checkpoints" / "step0000099.pt").write_bytes(b"old")
    assert is_run(run_dir)
    run_training(None, overrides, overwrite=True, progress=False)
    assert not (run_dir / "checkpoints" / "step0000099.pt").exists()
    starts = [json.loads(line)["event"] for line in (run_dir / "metrics.jsonl").read_text().splitlines()]
    assert starts.count("start") == 1  # the old run's metrics are gone, not appended to


def test_check_replaceable(tmp_path):
    assert check_replaceable(tmp_path / "absent", overwrite=False) is False
    (tmp_path / "empty").mkdir()
    assert check_replaceable(tmp_path / "empty", overwrite=False) is False
    (tmp_path / "file").write_text("x")
    with pytest.raises(UserError, match="not a folder"):
        check_replaceable(tmp_path / "file", overwrite=True)
    run = tmp_path / "run"
    (run / "checkpoints").mkdir(parents=True)
    (run / "config.yaml").write_text("name: run\n")
    assert check_replaceable(run, overwrite=False) is True  # never started: nothing to lose
    (run / "metrics.jsonl").write_text("")
    with pytest.raises(UserError, match="already holds a run"):
        check_replaceable(run, overwrite=False)
    assert check_replaceable(run, overwrite=True) is True
    gone = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    (run / "checkpoints" / f".best.pt.{int(gone.stdout)}.0badcafe.tmp").write_bytes(b"a crash's leftover")
    assert check_replaceable(run, overwrite=True) is True  # the trainer's own temporary, its writer gone
    for foreign in ("notes.txt", "eval-beam5/report.json", "checkpoints/avg.pt", "tb/mine.txt", "attention/x.png"):
        path = run / foreign
        path.parent.mkdir(exist_ok=True)
        path.write_text("theirs")
        with pytest.raises(UserError, match=f"also holds {foreign.split('/')[0]}.*which nmt train did not write"):
            check_replaceable(run, overwrite=True)
        path.unlink()
        if path.parent != run and not any(path.parent.iterdir()):
            path.parent.rmdir()


@pytest.mark.parametrize("theirs", ["notes.txt", "eval-beam5/report.md", "checkpoints/avg.pt"])
def test_overwrite_refuses_a_run_holding_files_training_did_not_write(tmp_path, toy_files, theirs):
    """The reported data loss: `--overwrite` deleted a user's notes, an `nmt eval` report and an
    averaged checkpoint kept in the run folder.  Now it refuses, naming them, and deletes nothing."""
    _, files = toy_files
    overrides = toy_overrides(tmp_path, files, train__max_steps=1)
    run_training(None, overrides, progress=False)
    run_dir = tmp_path / "runs" / "toy"
    before = sorted(p.relative_to(run_dir) for p in run_dir.rglob("*"))
    (run_dir / theirs).parent.mkdir(exist_ok=True)
    (run_dir / theirs).write_text("mine")
    with pytest.raises(UserError, match=f"also holds {theirs.split('/')[0]}.*move those out"):
        run_training(None, overrides, overwrite=True, progress=False)
    assert (run_dir / theirs).read_text() == "mine"
    assert all((run_dir / p).exists() for p in before)  # nothing of the run was deleted either


def test_overwrite_refusal_is_one_line_and_exit_2(tmp_path, toy_files):
    _, files = toy_files
    overrides = toy_overrides(tmp_path, files, train__max_steps=1)
    run_training(None, overrides, progress=False)
    (tmp_path / "runs" / "toy" / "notes.txt").write_text("mine")
    args = [arg for o in overrides for arg in ("--set", o)]
    proc = subprocess.run(
        NMT + ["train", *args, "--overwrite"], cwd=REPO, capture_output=True, text=True, timeout=PROC_TIMEOUT
    )
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr.count("\n") == 1 and "notes.txt, which nmt train did not write" in proc.stderr
    assert (tmp_path / "runs" / "toy" / "notes.txt").read_text() == "mine"


def test_a_run_that_failed_its_data_check_starts_afresh(tmp_path, toy_files):
    """A run refused by its data check left config.yaml, checkpoints/ and .lock; the next run said
    "already holds a run" and --resume said "no last.pt".  The next run now starts afresh."""
    _, files = toy_files
    broken = {**files, "train": [files["train"][0], files["valid"][1]]}  # 3000 sources, 100 targets
    with pytest.raises(UserError):
        run_training(
            None, toy_overrides(tmp_path, broken, train__max_steps=1, data__root=tmp_path / "bad"), progress=False
        )
    run_dir = tmp_path / "runs" / "toy"
    run_training(None, toy_overrides(tmp_path, files, train__max_steps=1), progress=False)
    assert (run_dir / "checkpoints" / "last.pt").is_file()


# ------------------------------------------------------------ one writer per run


def test_second_lock_names_the_holder(tmp_path):
    with RunLock(tmp_path / "run"), pytest.raises(RunBusyError, match=f"PID {os.getpid()}"):
        RunLock(tmp_path / "run").acquire()
    RunLock(tmp_path / "run").acquire().release()  # free again once released


def test_training_into_a_locked_run_is_refused_and_changes_nothing(tmp_path, toy_files):
    _, files = toy_files
    overrides = toy_overrides(tmp_path, files, train__max_steps=1)
    run_training(None, overrides, progress=False)
    run_dir = tmp_path / "runs" / "toy"
    before = {p: p.read_bytes() for p in run_dir.rglob("*") if p.is_file() and p.name != LOCK_NAME}
    with RunLock(run_dir):  # another `nmt train` holding the run
        with pytest.raises(RunBusyError, match="in use by another nmt train"):
            run_training(None, overrides, overwrite=True, progress=False)
        with pytest.raises(RunBusyError):
            run_training(None, [], resume=run_dir, progress=False)
    after = {p: p.read_bytes() for p in run_dir.rglob("*") if p.is_file() and p.name != LOCK_NAME}
    assert after == before


def test_lock_of_a_killed_process_does_not_block(tmp_path):
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import sys, time; from nmt.run.folder import RunLock; "
            f"lock = RunLock({str(tmp_path)!r}).acquire(); print('locked', flush=True); time.sleep(600)",
        ],
        cwd=REPO,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout.readline().strip() == "locked"  # '' if it died first, never a hang
        with pytest.raises(RunBusyError, match=f"PID {holder.pid}"):
            RunLock(tmp_path).acquire()
    finally:
        holder.kill()  # SIGKILL: no chance to release the lock or remove its file
        holder.wait(timeout=PROC_TIMEOUT)
        holder.stdout.close()
    RunLock(tmp_path).acquire().release()  # kill -9 left the file, not the lock


# ------------------------------------------------------------ resume


def test_resume_refuses_changed_data_options_before_touching_files(tmp_path, toy_files):
    _, files = toy_files
    run_training(None, toy_overrides(tmp_path, files, train__max_steps=1), progress=False)
    run_dir = tmp_path / "runs" / "toy"
    data = tmp_path / "data"
    before = {p: p.stat().st_mtime_ns for p in data.rglob("*")}
    with pytest.raises(UserError, match=r"data.vocab_size: 100 -> 64"):
        run_training(None, ["data.vocab_size=64"], resume=run_dir, progress=False)
    assert {p: p.stat().st_mtime_ns for p in data.rglob("*")} == before
    with pytest.raises(UserError, match="name: 'toy' -> 'other'"):
        run_training(None, ["name=other"], resume=run_dir, progress=False)


def test_resume_refuses_a_config_file(tmp_path, toy_files):
    _, files = toy_files
    run_training(None, toy_overrides(tmp_path, files, train__max_steps=1), progress=False)
    with pytest.raises(UserError, match="leave out --config"):
        run_training(REPO / "configs" / "demo.yaml", [], resume=tmp_path / "runs" / "toy", progress=False)


# ------------------------------------------------------------ config files


def test_yaml_key_given_twice_is_refused_with_both_lines(tmp_path):
    path = tmp_path / "twice.yaml"
    path.write_text("name: x\ntrain:\n  lr: 0.1\nmodel:\n  hidden_size: 32\ntrain:\n  lr: 0.2\n")
    with pytest.raises(ConfigError, match=r"'train' appears twice \(lines 2 and 6\)"):
        C.load(path)
    path.write_text("train:\n  lr: 0.1\n  lr: 0.2\n")
    with pytest.raises(ConfigError, match=r"'lr' appears twice \(lines 2 and 3\)"):
        C.load(path)


# ------------------------------------------------------------ signals


def test_sigterm_saves_and_exits_143(tmp_path, toy_files):
    """A real `nmt train` stopped by SIGTERM: last.pt saved, exit 128 + 15, resume named."""
    _, files = toy_files
    overrides = toy_overrides(tmp_path, files, train__max_steps=100000, train__valid_every=0)
    argv = NMT + ["train", "--no-progress"] + [a for o in overrides for a in ("--set", o)]
    out_path, err_path = tmp_path / "stdout.txt", tmp_path / "stderr.txt"
    metrics = tmp_path / "runs" / "toy" / "metrics.jsonl"
    # Output goes to files, not pipes: nothing reads a pipe while we wait, and a full one would stall it.
    with open(out_path, "w") as out_file, open(err_path, "w") as err_file:
        proc = subprocess.Popen(argv, cwd=REPO, stdout=out_file, stderr=err_file, text=True)
    try:
        wait_until(
            lambda: metrics.is_file() and '"event": "train"' in metrics.read_text(),
            proc,
            "a training line in metrics.jsonl",
        )
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=PROC_TIMEOUT)
    finally:
        stop(proc)
    out, err = out_path.read_text(), err_path.read_text()
    assert proc.returncode == 143, err
    assert (tmp_path / "runs" / "toy" / "checkpoints" / "last.pt").is_file()
    assert "interrupted by SIGTERM" in out and "nmt train --resume" in out
    assert "can be resumed" in err
