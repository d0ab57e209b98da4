"""``nmt report`` on a run whose records were edited (issue 70): a split name from test_reads.jsonl is
shown literally in report.md, never as Markdown or HTML, and a malformed selection.json is one line
naming the file and field, not a traceback."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from test_run_report import write_run

from conftest import run_cli
from nmt.evaluation.run_report import markdown_text

HOSTILE = [
    "test\n# Injected heading",
    "test [click](javascript:alert(1))",
    "test<script>alert(1)</script>",
    "test | a | b |",
    "test*bold*_it_`code`",
    "test" + "x" * 500,
]


def one_run(tmp_path: Path) -> Path:
    run = tmp_path / "runs" / "a"
    write_run(run, [(100, 60.0, 10.0)])
    return run


def test_a_split_name_from_the_log_is_shown_literally_in_the_report(tmp_path, capsys):
    run = one_run(tmp_path)
    lines = [{"time": "t", "split": name, "reader": "nmt eval", "checkpoints": []} for name in HOSTILE]
    (run / "test_reads.jsonl").write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")
    code, _out, err = run_cli(["report", str(run), "--out", str(tmp_path / "report")], capsys)
    assert code == 0, err
    page = (tmp_path / "report" / "report.md").read_text(encoding="utf-8")
    line = next(line for line in page.splitlines() if line.startswith("- a: "))
    assert "# Injected heading" not in page.splitlines() and "<script>" not in page and "](javascript" not in page
    assert "| a | b |" not in page and "`code`" not in page and "x" * 100 not in page
    assert "test\\\\n\\# Injected heading read 1 time" in line and "test\\<script\\>" in line  # shown: test\n# ...
    assert len(line) < 1000


@pytest.mark.parametrize("name", HOSTILE)
def test_markdown_text_escapes_what_markdown_reads(name):
    shown = markdown_text(name)
    assert "\n" not in shown and len(shown) <= 4 * 84
    plain = shown.replace("\\", "")
    assert plain.startswith("test") and all(c not in shown.replace("\\" + c, "") for c in "<>[]()|*_`#")


def test_markdown_text_keeps_a_plain_split_name():
    assert markdown_text("test2016") == "test2016" and markdown_text("tëst") == "tëst"


@pytest.mark.parametrize(
    "record, field",
    [
        ({"format": 1, "chosen": None, "earlier": [], "tests": [3]}, '"tests"[0]'),
        ({"format": 1, "chosen": None, "earlier": [], "tests": [{"split": {"a": 1}}]}, '"tests"[0]'),
        ({"format": True, "chosen": None, "earlier": [], "tests": []}, '"format": 1'),
        ({"format": 1, "chosen": None, "earlier": ["x"], "tests": []}, '"earlier"'),
    ],
)
def test_a_malformed_selection_json_stops_the_report_in_one_line(tmp_path, capsys, record, field):
    run = one_run(tmp_path)
    (run / "selection.json").write_text(json.dumps(record), encoding="utf-8")
    code, _out, err = run_cli(["report", str(run), "--out", str(tmp_path / "report")], capsys)
    lines = err.strip().splitlines()
    assert code == 2 and len(lines) == 1, err
    assert str(run / "selection.json") in lines[0] and field in lines[0]
    assert not (tmp_path / "report" / "report.md").exists()


def test_a_log_of_test_reads_that_is_not_utf8_stops_the_report_in_one_line(tmp_path, capsys):
    run = one_run(tmp_path)
    good = json.dumps({"time": "t", "split": "test2016", "reader": "nmt eval", "checkpoints": []})
    (run / "test_reads.jsonl").write_bytes(f"{good}\n".encode() + b'{"split": "test\xff"}\n')
    code, _out, err = run_cli(["report", str(run), "--out", str(tmp_path / "report")], capsys)
    assert code == 2 and len(err.strip().splitlines()) == 1, err
    assert "test_reads.jsonl: line 2 is not UTF-8" in err
    assert not (tmp_path / "report" / "report.md").exists()
