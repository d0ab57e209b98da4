"""Outputs nmt cannot create: a name past 255 bytes, a path under a file or through a dangling
symbolic link, a read-only folder. Each is one line and exit 2 before any work, the path shortened."""

from __future__ import annotations

import errno
import os
from pathlib import Path

import pytest

from conftest import run_cli, toy_overrides
from nmt.util.errors import UserError
from nmt.util.out_paths import NAME_MAX, SHOWN_PATH_CHARS, check_can_create, os_error_line, shown

LONG = "n" * (NAME_MAX + 45)  # 300 bytes: one name too long for the file system


def _hyp_eval(tmp_path: Path, out: Path) -> list[str]:
    text = tmp_path / "ref.txt"
    text.write_text("a small dog runs\n", encoding="utf-8")
    return ["eval", "--hyp", str(text), "--ref", str(text), "--out", str(out)]


def _one_line(code: int, err: str) -> str:
    assert code == 2 and err.startswith("nmt: error: ") and err.count("\n") == 1, err
    assert "Traceback" not in err and len(err) < 2 * SHOWN_PATH_CHARS + 200, err  # the path shortened
    return err


def test_a_path_is_shown_by_its_start_and_end():
    assert shown("a/b") == "a/b"
    text = shown("/x/" + LONG + "/report")
    assert len(text) <= SHOWN_PATH_CHARS and text.startswith("/x/nnn") and text.endswith("nnn/report")


def test_what_cannot_be_created_is_refused_before_any_work(tmp_path):
    afile = tmp_path / "notes.txt"
    afile.write_text("mine\n", encoding="utf-8")
    (tmp_path / "dangling").symlink_to(tmp_path / "missing")
    for path, kind, words in (
        (tmp_path / LONG, "folder", f"is {NAME_MAX + 45} bytes, more than the {NAME_MAX}"),
        (afile / "out", "folder", "notes.txt is not a folder"),
        (afile / "avg.pt", "file", "notes.txt is not a folder"),
        (tmp_path / "dangling" / "avg.pt", "file", "dangling is a symbolic link to nothing"),
        (tmp_path / "dangling", "folder", "dangling is a symbolic link to nothing"),
        (afile, "folder", "exists and is not a folder"),
        (tmp_path, "file", "exists and is not a file"),
    ):
        with pytest.raises(UserError, match=words):
            check_can_create(path, "-o", kind)
    check_can_create(tmp_path / "new" / "deeper", "--out")  # missing folders are made
    assert afile.read_text(encoding="utf-8") == "mine\n" and not (tmp_path / "new").exists()


@pytest.fixture
def read_only(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every folder reads as on a read-only file system (as root, chmod cannot make one)."""
    access, statvfs = os.access, os.statvfs
    monkeypatch.setattr(os, "access", lambda path, mode, **kw: not mode & os.W_OK and access(path, mode, **kw))

    class ReadOnly:
        f_flag = os.ST_RDONLY | statvfs("/").f_flag

    monkeypatch.setattr(os, "statvfs", lambda path: ReadOnly())


def test_eval_and_report_refuse_a_read_only_folder_and_a_long_name(tmp_path, capsys, read_only):
    err = _one_line(*run_cli(_hyp_eval(tmp_path, tmp_path / "eval"), capsys)[::2])
    assert f"cannot create files in {tmp_path} (read-only file system)" in err
    run = tmp_path / "runs" / "a"
    run.mkdir(parents=True)
    code, _, err = run_cli(["report", str(run), "--out", str(tmp_path / "report")], capsys)
    assert "(read-only file system)" in _one_line(code, err)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["ref.txt", "runs"]


def test_a_name_past_255_bytes_is_one_short_line(tmp_path, capsys):
    code, _, err = run_cli(_hyp_eval(tmp_path, tmp_path / LONG), capsys)
    assert f"more than the {NAME_MAX} a file system allows" in _one_line(code, err)


def test_train_refuses_a_read_only_runs_dir_before_reading_data(tmp_path, capsys, toy_files, read_only):
    _, files = toy_files
    argv = ["train", "--no-progress", *(a for s in toy_overrides(tmp_path, files) for a in ("--set", s))]
    code, _, err = run_cli(argv, capsys)
    assert "(read-only file system)" in _one_line(code, err)


def test_compare_refuses_a_runs_dir_that_is_a_file_before_training(tmp_path, capsys, toy_files, monkeypatch):
    _, files = toy_files
    taken = tmp_path / "runs.txt"
    taken.write_text("mine\n", encoding="utf-8")
    monkeypatch.setattr("nmt.comparison.command.train_run", lambda *a: pytest.fail("a run trained"))
    sets = [s for s in toy_overrides(tmp_path, files) if not s.startswith(("name=", "runs_dir="))]
    argv = ["compare", "--runs-dir", str(taken), "--variants", "bahdanau", "--seeds", "1", "--steps", "2"]
    argv += [a for s in sets for a in ("--set", s)] + ["--out", str(tmp_path / "report")]
    code, _, err = run_cli(argv, capsys)
    assert f"--runs-dir {taken}: exists and is not a folder" in _one_line(code, err)
    assert taken.read_text(encoding="utf-8") == "mine\n"


def test_a_write_that_fails_for_the_users_reason_is_one_line(tmp_path, capsys, monkeypatch):
    """A file system that turns read-only mid-run: the OSError is worded, not an internal error."""
    target = tmp_path / ("deep/" * 40) / "report.md"

    def refused(path: Path, data: bytes) -> None:
        raise OSError(errno.EROFS, "Read-only file system", str(target))

    monkeypatch.setattr("nmt.score.metrics.atomic_write", lambda *a, **k: refused(*a, b""))
    code, _, err = run_cli(_hyp_eval(tmp_path, tmp_path / "eval"), capsys)
    assert "cannot write: " in _one_line(code, err) and err.rstrip().endswith("(read-only file system)")
    assert os_error_line(OSError(errno.EIO, "I/O error")) is None  # not the user's: an internal error
