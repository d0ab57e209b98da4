"""nmt compare --sweep: a grid of option values at a fixed number of updates, decoding sweeps
scored on shared runs, and sweep problems refused before anything trains."""

from __future__ import annotations

import json

from conftest import run_cli, stop_count
from test_compare import compare_args


def test_a_training_sweep_by_a_decoding_sweep(tmp_path, toy_files, capsys):
    _, files = toy_files
    args = compare_args(
        tmp_path,
        files,
        "--variants",
        "bahdanau",
        "--sweep",
        "train.teacher_forcing=1.0,0.5",
        "--sweep",
        "decode.length_penalty=0,2",
        "--seeds",
        "1",
        "--steps",
        "8",
        "--beam",
        "3",
    )
    code, out, err = run_cli([*args, "--dry-run"], capsys)
    assert code == 0, err
    lines = out.strip().splitlines()
    assert len(lines) == 2 and all(line.startswith("train") for line in lines)  # two runs for four arms
    assert "bahdanau train.teacher_forcing=0.5 decode.length_penalty=0 | " in lines[1]

    code, out, err = run_cli(args, capsys)
    assert code == 0, err
    runs = tmp_path / "cmp"
    report = json.loads((runs / "report" / "report.json").read_text())
    labels = [row["variant"] for row in report["variants"]]
    assert labels == [
        "bahdanau train.teacher_forcing=1.0 decode.length_penalty=0",
        "bahdanau train.teacher_forcing=1.0 decode.length_penalty=2",
        "bahdanau train.teacher_forcing=0.5 decode.length_penalty=0",
        "bahdanau train.teacher_forcing=0.5 decode.length_penalty=2",
    ]
    assert report["plan"]["sweeps"] == {"train.teacher_forcing": ["1.0", "0.5"], "decode.length_penalty": ["0", "2"]}
    folders = sorted(p.name for p in runs.iterdir() if p.name != "report")
    assert folders == ["bahdanau_train.teacher_forcing-0.5_s1", "bahdanau_train.teacher_forcing-1.0_s1"]
    for folder in folders:
        run = runs / folder
        assert stop_count(run) == 1  # trained once, although two arms score it
        assert (run / "compare-test-decode.length_penalty-0" / "scored.json").is_file()
        assert (run / "compare-test-decode.length_penalty-2" / "scored.json").is_file()
    rows = {row["variant"]: row for row in report["variants"]}
    assert all(row["updates"] == 8 and row["beam"] == 3 for row in rows.values())
    assert rows[labels[0]]["p_values"] is None and len(rows[labels[3]]["p_values"]) == 1


def test_sweep_problems_fail_in_one_line_before_training(tmp_path, toy_files, capsys):
    _, files = toy_files
    for extra, message in [
        (["--sweep", "train.seed=1,2"], "use --seeds"),
        (["--sweep", "decode.beam=1,5", "--beam", "5"], "--beam and --sweep decode.beam"),
        (["--sweep", "model.no_such_option=1,2"], "no_such_option"),
        (["--sweep", "model.dropout=0,7"], "model.dropout"),  # the second value is out of range
        (["--sweep", "model.dropout=0,0.1", "--baseline", "bahdanau"], "--baseline 'bahdanau' is not among"),
    ]:
        code, _out, err = run_cli(compare_args(tmp_path, files, *extra, "--steps", "5"), capsys)
        assert code == 2 and message in err and len(err.strip().splitlines()) == 1, (extra, err)
    assert not (tmp_path / "cmp").exists()  # nothing trained
