"""An output that is a character device or a FIFO is written into, never replaced; a block device or a
socket is refused: the one rule of every output (:func:`nmt.util.fileio.atomic_write`).

Before, every output was written under a temporary name and renamed over its path, so ``nmt translate
-o /dev/null`` run as root (a container, a Colab runtime) replaced the system's ``/dev/null`` with a
regular file, and ``-o FIFO`` replaced the named pipe its reader was waiting on.  Tests of
``/dev/null`` run with :func:`no_replacing_dev`, so a regression fails the test instead of deleting it.
"""

from __future__ import annotations

import os
import socket
import stat
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any

import pytest

from nmt.decode import translate
from nmt.training.average import check_output as check_average_output
from nmt.util.errors import UserError
from nmt.util.fileio import atomic_write, atomic_write_bytes, stream_kind, write_lines
from nmt.util.out_paths import check_can_create, check_not_link

DEV_NULL = Path("/dev/null")


def _a_device(path: Any) -> bool:
    try:
        mode = os.lstat(path).st_mode
    except OSError:
        return False
    return stat.S_ISCHR(mode) or stat.S_ISBLK(mode)


@pytest.fixture()
def no_replacing_dev(monkeypatch: pytest.MonkeyPatch) -> None:
    """A rename onto a device, or an unlink of one, fails the test before it happens."""
    replace, unlink = os.replace, os.unlink

    def guarded_replace(src: Any, dst: Any, **kwargs: Any) -> None:
        if _a_device(dst):
            pytest.fail(f"os.replace({src}, {dst}): an output replaced a device")
        replace(src, dst, **kwargs)

    def guarded_unlink(path: Any, **kwargs: Any) -> None:
        if _a_device(path):
            pytest.fail(f"os.unlink({path}): an output deleted a device")
        unlink(path, **kwargs)

    monkeypatch.setattr(os, "replace", guarded_replace)
    monkeypatch.setattr(os, "unlink", guarded_unlink)


class Reader:
    """A thread reading a FIFO to its end, as the program at the other end of a pipe does."""

    def __init__(self, fifo: Path) -> None:
        self.data = b""
        self.thread = threading.Thread(target=self._read, args=(fifo,), daemon=True)
        self.thread.start()

    def _read(self, fifo: Path) -> None:
        with open(fifo, "rb") as handle:
            self.data = handle.read()

    def join(self) -> bytes:
        self.thread.join(timeout=30)
        assert not self.thread.is_alive(), "the writer never closed the FIFO"
        return self.data


@pytest.fixture()
def fifo(tmp_path: Path) -> Iterator[Path]:
    path = tmp_path / "pipe"
    os.mkfifo(path)
    yield path
    assert stat.S_ISFIFO(os.lstat(path).st_mode), "the FIFO was replaced"
    assert sorted(p.name for p in tmp_path.iterdir() if p.name.endswith(".tmp")) == []


def test_every_writer_writes_into_a_fifo_and_leaves_it_one(fifo: Path) -> None:
    for write, want in (
        (lambda: atomic_write_bytes(fifo, b"bytes\n"), b"bytes\n"),
        (lambda: write_lines(fifo, ["a", "b"]), b"a\nb\n"),
    ):
        reader = Reader(fifo)
        write()
        assert reader.join() == want


def test_dev_null_stays_a_character_device(no_replacing_dev: None) -> None:
    before = os.stat(DEV_NULL)
    assert stream_kind(DEV_NULL) == "a character device"
    with atomic_write(DEV_NULL) as handle:
        handle.write(b"nothing to keep\n")
    write_lines(DEV_NULL, ["x"])
    after = os.stat(DEV_NULL)
    assert stat.S_ISCHR(after.st_mode) and after.st_rdev == before.st_rdev and after.st_mode == before.st_mode


def test_a_socket_is_refused_in_one_line(tmp_path: Path) -> None:
    path = tmp_path / "s"
    with socket.socket(socket.AF_UNIX) as server:
        server.bind(str(path))
        with pytest.raises(UserError, match=r"is a socket; nmt writes into no such file") as info:
            atomic_write_bytes(path, b"x")
        assert "\n" not in str(info.value)
        with pytest.raises(UserError, match=r"-o .*: is a socket"):
            check_can_create(path, "-o", "file")
        with pytest.raises(UserError, match=r"-o .*: is a socket"):
            translate.check_output(path)
        assert stat.S_ISSOCK(os.lstat(path).st_mode)


def test_a_link_to_a_device_is_written_into_and_any_other_link_refused(fifo: Path, tmp_path: Path) -> None:
    """``-o /dev/stdout`` (a link to the process's output) names a device: the one link an output
    goes through, since nothing is replaced.  A link to a file, a folder or nothing is refused."""
    to_fifo = tmp_path / "to-pipe"
    to_fifo.symlink_to(fifo)
    check_not_link(to_fifo, "-o")
    reader = Reader(to_fifo)
    write_lines(to_fifo, ["through"])
    assert reader.join() == b"through\n" and to_fifo.is_symlink()
    (tmp_path / "folder").mkdir()
    (tmp_path / "to-folder").symlink_to(tmp_path / "folder")
    with pytest.raises(UserError, match=r"--out .*to-folder: is a symbolic link; .* give the path of a folder"):
        check_not_link(tmp_path / "to-folder", "--out", "folder")
    with pytest.raises(UserError, match="is a symbolic link"):
        check_not_link(to_fifo, "--out", "folder")  # a folder is never a device


def test_a_device_needs_no_write_permission_in_its_folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """/dev is not writable by a user, and -o /dev/null creates nothing there."""
    access = os.access
    monkeypatch.setattr(os, "access", lambda p, mode, **kw: Path(p) != DEV_NULL.parent and access(p, mode, **kw))
    check_can_create(DEV_NULL, "-o", "file")
    assert translate.check_output(DEV_NULL) is None  # no mode to give a new file: none is made
    (tmp_path / "a.pt").write_bytes(b"a checkpoint")
    check_average_output(DEV_NULL, [tmp_path / "a.pt"], force=False)  # nothing is replaced: no --force needed


@pytest.fixture()
def echo(monkeypatch: pytest.MonkeyPatch) -> None:
    """translate_stream copies its input, upper-cased: a translation without a model."""

    def copy(source: IO[bytes], name: str, sink: IO[str], engine: Any, **kwargs: Any) -> int:
        lines = source.read().decode("utf-8").splitlines()
        sink.writelines(line.upper() + "\n" for line in lines)
        return len(lines)

    monkeypatch.setattr(translate, "translate_stream", copy)


def test_translate_writes_into_a_fifo_and_into_dev_null(
    fifo: Path, tmp_path: Path, echo: None, no_replacing_dev: None
) -> None:
    src = tmp_path / "in.txt"
    src.write_text("ein Hund\n", encoding="utf-8")
    reader = Reader(fifo)
    assert translate.translate_file(lambda: None, src, fifo) == 1  # type: ignore[arg-type,return-value]
    assert reader.join() == b"EIN HUND\n"
    mode = os.stat(DEV_NULL).st_mode
    translate.translate_file(lambda: None, src, DEV_NULL, alignments=DEV_NULL)  # type: ignore[arg-type,return-value]
    assert os.stat(DEV_NULL).st_mode == mode and stat.S_ISCHR(mode)
