"""No output is written through a symbolic link, nor replaces one: one rule for every command
(:func:`nmt.util.out_paths.check_not_link`), refused in one line (exit 2) before any work.

Before: ``nmt eval`` appended to a run's ``test_reads.jsonl`` through a link into its target; ``nmt
export -o LINK`` replaced the user's link with a folder; ``nmt eval --out LINK``, ``nmt report --out
LINK`` and ``nmt align --report LINK`` wrote into the folder the link leads to; ``nmt align --report
DIR`` replaced a link named ``alignment_error.txt``.  No model is loaded: each refusal comes first.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from conftest import run_cli
from nmt.evaluation.align_command import REPORT_JSON, REPORT_TEXT
from nmt.run.paths import TEST_READS
from nmt.run.test_reads import log_read
from nmt.util.errors import UserError
from nmt.util.owned import MANIFEST


def _one_line(code: int, err: str, *needles: str) -> None:
    assert code == 2 and err.startswith("nmt: error: ") and err.count("\n") == 1, err
    assert "Traceback" not in err and all(needle in err for needle in needles), err


def _untouched(folder: Path) -> None:
    assert sorted(p.name for p in folder.iterdir()) == ["mine.txt"]
    assert (folder / "mine.txt").read_text(encoding="utf-8") == "mine\n"


@pytest.fixture()
def linked(tmp_path: Path) -> Path:
    """``tmp_path/link``, a symbolic link to the user's folder ``theirs`` that holds mine.txt."""
    theirs = tmp_path / "theirs"
    theirs.mkdir()
    (theirs / "mine.txt").write_text("mine\n", encoding="utf-8")
    (tmp_path / "link").symlink_to(theirs)
    return tmp_path / "link"


@pytest.fixture()
def run(tmp_path: Path) -> Path:
    """A run folder whose test_reads.jsonl is a link to the user's file (the checkpoint is never read)."""
    folder = tmp_path / "runs" / "toy"
    (folder / "checkpoints").mkdir(parents=True)
    (folder / "checkpoints" / "best.pt").write_bytes(b"never loaded")
    (tmp_path / "notes.jsonl").write_text("mine\n", encoding="utf-8")
    (folder / TEST_READS).symlink_to(tmp_path / "notes.jsonl")
    return folder


def test_the_test_read_log_is_never_appended_through_a_link(run: Path, tmp_path: Path) -> None:
    with pytest.raises(UserError, match=f"{TEST_READS}: is a symbolic link, so nmt does not append") as info:
        log_read(run, "test", "nmt eval", [run / "checkpoints" / "best.pt"])
    assert "\n" not in str(info.value)
    assert (tmp_path / "notes.jsonl").read_text(encoding="utf-8") == "mine\n" and (run / TEST_READS).is_symlink()
    log_read(run, "valid", "nmt eval", [])  # no test read: nothing to append, nothing refused


def test_eval_of_a_test_split_refuses_the_link_before_loading(run: Path, tmp_path: Path, capsys) -> None:
    argv = ["eval", "--checkpoint", str(run / "checkpoints" / "best.pt"), "--split", "test"]
    code, _, err = run_cli([*argv, "--out", str(tmp_path / "e")], capsys)
    _one_line(code, err, TEST_READS, "is a symbolic link")
    assert (tmp_path / "notes.jsonl").read_text(encoding="utf-8") == "mine\n"


def test_the_log_appends_to_a_plain_file(tmp_path: Path) -> None:
    log_read(tmp_path, "test", "nmt eval", [tmp_path / "best.pt"])
    log_read(tmp_path, "test2016", "nmt compare", [])
    lines = [json.loads(line) for line in (tmp_path / TEST_READS).read_text(encoding="utf-8").splitlines()]
    assert [(line["split"], line["reader"]) for line in lines] == [("test", "nmt eval"), ("test2016", "nmt compare")]


def test_eval_and_report_write_no_report_through_a_linked_folder(linked: Path, tmp_path: Path, capsys) -> None:
    text = tmp_path / "ref.txt"
    text.write_text("a small dog runs\n", encoding="utf-8")
    code, _, err = run_cli(["eval", "--hyp", str(text), "--ref", str(text), "--out", str(linked)], capsys)
    _one_line(code, err, f"--out {linked}: is a symbolic link")
    (tmp_path / "run").mkdir()
    code, _, err = run_cli(["report", str(tmp_path / "run"), "--out", str(linked)], capsys)
    _one_line(code, err, f"--out {linked}: is a symbolic link")
    _untouched(linked.resolve())
    assert linked.is_symlink()


def test_export_replaces_no_link_with_a_folder(linked: Path, tmp_path: Path, capsys) -> None:
    empty = tmp_path / "empty"
    empty.mkdir()
    for link, target in ((tmp_path / "to-empty", empty), (tmp_path / "to-nothing", tmp_path / "missing")):
        link.symlink_to(target)
        checkpoint = tmp_path / "best.pt"
        checkpoint.write_bytes(b"never read")
        argv = ["export", "--checkpoint", str(checkpoint), "--format", "safetensors", "-o", str(link), "--force"]
        code, _, err = run_cli(argv, capsys)
        _one_line(code, err, f"-o {link}: is a symbolic link")
        assert link.is_symlink() and os.readlink(link) == str(target)
        assert ".tmp" not in err  # not the name of a temporary (a dangling link named it)
    assert list(empty.iterdir()) == [] and not (tmp_path / "missing").exists()
    assert sorted(p.name for p in tmp_path.iterdir() if p.name.startswith(".")) == []


@pytest.fixture()
def align_argv(tmp_path: Path) -> list[str]:
    """``nmt align`` with a gold file and a checkpoint that is never loaded."""
    for name, text in (("src", "a b\n"), ("tgt", "B A\n"), ("gold", "0-1 1-0\n")):
        (tmp_path / name).write_text(text, encoding="utf-8")
    (tmp_path / "best.pt").write_bytes(b"never loaded")
    files = ["--src", str(tmp_path / "src"), "--tgt", str(tmp_path / "tgt"), "--gold", str(tmp_path / "gold")]
    return ["align", "--checkpoint", str(tmp_path / "best.pt"), *files, "--gold-format", "pharaoh"]


def test_align_report_goes_through_no_link(align_argv: list[str], linked: Path, tmp_path: Path, capsys) -> None:
    code, _, err = run_cli([*align_argv, "--report", str(linked)], capsys)
    _one_line(code, err, f"--report {linked}: is a symbolic link")
    _untouched(linked.resolve())
    report = tmp_path / "report"
    report.mkdir()
    (report / REPORT_TEXT).symlink_to(tmp_path / "theirs" / "mine.txt")
    code, _, err = run_cli([*align_argv, "--report", str(report)], capsys)
    _one_line(code, err, f"{REPORT_TEXT} is not a plain file nmt wrote")
    assert (report / REPORT_TEXT).is_symlink()
    _untouched(tmp_path / "theirs")


def test_align_report_replaces_its_own_files_and_no_one_elses(align_argv: list[str], tmp_path: Path) -> None:
    """What the report folder may hold: an nmt align report of before manifests is replaced, a user's
    alignment_error.json is not."""
    from nmt.evaluation.align_command import _check_paths

    report = tmp_path / "report"
    report.mkdir()
    (report / REPORT_JSON).write_text(json.dumps({"aer": 0.5, "settings": {}}), encoding="utf-8")
    (report / REPORT_TEXT).write_text("AER 50.0%\n", encoding="utf-8")
    _check_paths([], None, report)  # nmt's own, from before manifests
    (report / REPORT_JSON).write_text("{}", encoding="utf-8")
    with pytest.raises(UserError, match=f"{REPORT_JSON} was not written by nmt"):
        _check_paths([], None, report)
    (report / MANIFEST).write_text(f"{REPORT_JSON}\n{REPORT_TEXT}\n", encoding="utf-8")
    _check_paths([], None, report)  # listed in the manifest: nmt wrote them


def test_a_manifest_that_is_not_a_plain_file_is_refused_unread(tmp_path: Path, capsys) -> None:
    """A FIFO or a link named .nmt-outputs would be read (a FIFO: forever) and rewritten."""
    text = tmp_path / "ref.txt"
    text.write_text("a small dog runs\n", encoding="utf-8")
    for make in (os.mkfifo, lambda path: path.symlink_to(text)):
        out = tmp_path / f"out{len(list(tmp_path.iterdir()))}"
        out.mkdir()
        make(out / MANIFEST)
        code, _, err = run_cli(["eval", "--hyp", str(text), "--ref", str(text), "--out", str(out)], capsys)
        _one_line(code, err, f"{MANIFEST} is not a plain file nmt wrote")
        assert sorted(p.name for p in out.iterdir()) == [MANIFEST]
    assert text.read_text(encoding="utf-8") == "a small dog runs\n"
