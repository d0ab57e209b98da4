"""``nmt translate -o FILE``: the output rules every output follows, and no temporary left behind.

- A symbolic link as ``-o`` (to a file or to nothing) was replaced by a regular file, while
  ``nmt eval`` and ``nmt average`` refuse links: one rule now (:func:`nmt.util.out_paths.check_not_link`).
- SIGTERM or SIGHUP during a translation left ``.FILE.PID.HEX.tmp`` (Ctrl-C removed it): every stop
  signal removes it now, and the process still ends by the signal.
- A temporary left by a process killed outright is removed by the next write to the same output,
  once its PID is gone; a running writer's is left alone.

The model is never loaded: ``translate_stream`` is replaced by one that writes lines itself.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import IO, Any

import pytest

from conftest import run_cli
from nmt.decode import translate
from nmt.training.average import check_output as check_average_output
from nmt.util.errors import UserError
from nmt.util.fileio import remove_stale_temporaries
from nmt.util.out_paths import check_not_link

SOURCE = "ein Hund\nzwei Katzen\n"


@pytest.fixture()
def src(tmp_path: Path) -> Path:
    path = tmp_path / "in.txt"
    path.write_text(SOURCE, encoding="utf-8")
    return path


@pytest.fixture()
def echo(monkeypatch: pytest.MonkeyPatch) -> None:
    """translate_stream copies its input, upper-cased: a translation without a model."""

    def copy(source: IO[bytes], name: str, sink: IO[str], engine: Any, **kwargs: Any) -> int:
        lines = source.read().decode("utf-8").splitlines()
        sink.writelines(line.upper() + "\n" for line in lines)
        return len(lines)

    monkeypatch.setattr(translate, "translate_stream", copy)


def _no_engine() -> Any:
    raise AssertionError("the model was loaded before the output was checked")


@pytest.mark.parametrize("dangling", [False, True], ids=["to-a-file", "to-nothing"])
def test_translate_refuses_a_symlink_as_output(src: Path, tmp_path: Path, dangling: bool) -> None:
    target = tmp_path / "target.txt"
    if not dangling:
        target.write_text("mine\n", encoding="utf-8")
    link = tmp_path / "out.txt"
    link.symlink_to(target)
    with pytest.raises(UserError, match=r"-o .*out\.txt: is a symbolic link") as info:
        translate.translate_file(_no_engine, src, link)
    assert "\n" not in str(info.value)
    assert link.is_symlink() and os.readlink(link) == str(target)
    assert target.read_text(encoding="utf-8") == "mine\n" if not dangling else not target.exists()


def test_the_cli_refuses_a_symlink_in_one_line(src: Path, tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    link = tmp_path / "out.txt"
    link.symlink_to(tmp_path / "nowhere.txt")
    code, _, err = run_cli(["translate", "--checkpoint", str(src), "-i", str(src), "-o", str(link)], capsys)
    assert code == 2 and err.startswith("nmt: error: -o ") and err.count("\n") == 1, err
    assert "is a symbolic link" in err and link.is_symlink()


def test_every_output_follows_the_same_rule(tmp_path: Path) -> None:
    """The rule itself, and ``nmt average -o LINK --force`` (which replaced the link)."""
    afile = tmp_path / "a.pt"
    afile.write_bytes(b"checkpoint")
    other = tmp_path / "other.pt"
    other.write_bytes(b"mine")
    link = tmp_path / "avg.pt"
    link.symlink_to(other)
    for path in (link, tmp_path / "dangling"):
        if path != link:
            path.symlink_to(tmp_path / "missing")
        with pytest.raises(UserError, match="is a symbolic link"):
            check_not_link(path, "-o")
    with pytest.raises(UserError, match="is a symbolic link"):
        check_average_output(link, [afile], force=True)
    check_not_link(afile, "-o")  # a plain file and a new name are fine
    check_not_link(tmp_path / "new.txt", "-o")


def test_a_translation_replaces_a_plain_file(src: Path, tmp_path: Path, echo: None) -> None:
    out = tmp_path / "out.txt"
    out.write_text("old\n", encoding="utf-8")
    assert translate.translate_file(lambda: None, src, out) == 2  # type: ignore[arg-type,return-value]
    assert out.read_text(encoding="utf-8") == SOURCE.upper() and not out.is_symlink()


def _dead_pid() -> int:
    done = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    return int(done.stdout)


def test_the_next_write_removes_temporaries_of_dead_writers_only(src: Path, tmp_path: Path, echo: None) -> None:
    out = tmp_path / "out.txt"
    dead = _dead_pid()
    stale = tmp_path / f".out.txt.{dead}.0123abcd.tmp"
    live = tmp_path / f".out.txt.{os.getppid()}.89abcdef.tmp"  # pytest's parent: running
    other = tmp_path / f".other.txt.{dead}.0123abcd.tmp"  # another output's
    mine = tmp_path / f".out.txt.{dead}.notatemp"
    for path in (stale, live, other, mine):
        path.write_text("partial\n", encoding="utf-8")
    translate.translate_file(lambda: None, src, out)  # type: ignore[arg-type,return-value]
    assert not stale.exists() and live.exists() and other.exists() and mine.exists()
    assert out.read_text(encoding="utf-8") == SOURCE.upper()
    assert remove_stale_temporaries(out) == []  # nothing left to remove


SLOW_TRANSLATION = textwrap.dedent(
    """
    import sys, time
    from pathlib import Path
    from nmt.decode import translate

    def slow(source, name, sink, engine, **kwargs):
        sink.write("half a translation\\n")
        sink.flush()
        print("writing", flush=True)
        time.sleep(60)

    translate.translate_stream = slow
    translate.translate_file(lambda: None, Path(sys.argv[1]), Path(sys.argv[2]))
    """
)


def default_stop_signals() -> None:
    """In the child: the stop signals' default actions, as a process started from a terminal has them.
    A suite run under nohup, or in the background of a script, passes SIGHUP or SIGINT on ignored, and
    a process that ignores a signal is not meant to stop by it."""
    for signum in (signal.SIGTERM, signal.SIGHUP, signal.SIGINT):
        signal.signal(signum, signal.SIG_DFL)


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGHUP, signal.SIGINT], ids=lambda s: s.name)
def test_a_stop_signal_leaves_no_temporary(src: Path, tmp_path: Path, signum: signal.Signals) -> None:
    out = tmp_path / "big.txt"
    out.write_text("the previous translation\n", encoding="utf-8")
    proc = subprocess.Popen(
        [sys.executable, "-c", SLOW_TRANSLATION, str(src), str(out)],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
        preexec_fn=default_stop_signals,
    )
    try:
        assert proc.stdout is not None and proc.stdout.readline() == "writing\n"
        assert [p.name for p in tmp_path.glob(".big.txt.*.tmp")], "the translation is being written"
        proc.send_signal(signum)
        code = proc.wait(timeout=20)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    if signum != signal.SIGINT:
        assert code == -signum, "the process ends by the signal, as without nmt's handler"
    assert [p.name for p in tmp_path.glob(".big.txt.*")] == []
    assert out.read_text(encoding="utf-8") == "the previous translation\n"
