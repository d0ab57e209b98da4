"""nmt lab beam --tiny: one model trained once, the validation split decoded for each beam and
alpha, and a second call that retrains and re-decodes nothing."""

from __future__ import annotations

import json

from conftest import REPO, run_tiny_lab, stop_count


def test_beam_lab_decodes_the_grid_on_validation_and_reuses_everything(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(REPO)  # the lab's base config is a path in configs/
    run_tiny_lab("beam", tmp_path, capsys)

    page = (tmp_path / "beam.md").read_text(encoding="utf-8")
    assert page.startswith("# Beam size and length penalty\n")
    assert page.count("| beam | α = 0 | α = 1 |") == 3  # BLEU, length ratio, seconds
    assert page.count("\n| 1 | ") == 3 and page.count("\n| 2 | ") == 3
    assert "translates the valid split (20 sentences)" in page
    assert "Reference only: test BLEU" in page and "beam 5 and α 1" in page
    png = (tmp_path / "beam.png").read_bytes()
    assert png.startswith(b"\x89PNG\r\n\x1a\n") and len(png) > 20_000

    numbers = json.loads((tmp_path / "beam.json").read_text(encoding="utf-8"))
    assert numbers["tiny"] is True and numbers["split"] == "valid" and numbers["updates"] == 12
    grid = {(r["beam"], r["alpha"]): r for r in numbers["grid"]}
    assert sorted(grid) == [(1, 0.0), (1, 1.0), (2, 0.0), (2, 1.0)]
    for row in grid.values():
        assert 0 <= row["bleu"] <= 100 and row["length_ratio"] >= 0 and row["ref_len"] > 0
        assert row["seconds"] > 0 and row["threads"] >= 1
    assert grid[1, 0.0] == {**grid[1, 1.0], "alpha": 0.0}  # greedy has no length penalty: decoded once
    reference = numbers["test_reference"]
    assert reference["split"] == "test" and reference["beam"] == 5 and reference["alpha"] == 1.0
    assert 0 <= reference["bleu"] <= 100
    assert (numbers["best_on_valid"]["beam"], numbers["best_on_valid"]["alpha"]) in grid

    run = tmp_path / "runs" / "bahdanau_s1"
    decoded = sorted(p.name for p in (run / "lab-beam-valid").iterdir())
    assert decoded == ["beam1-alpha0.json", "beam2-alpha0.json", "beam2-alpha1.json"]
    mtimes = {p: p.stat().st_mtime_ns for p in [run / "checkpoints" / "best.pt", *(run / "lab-beam-valid").iterdir()]}

    run_tiny_lab("beam", tmp_path, capsys)  # a second call: the run and every decoded setting are reused
    assert stop_count(run) == 1
    assert {p: p.stat().st_mtime_ns for p in mtimes} == mtimes
    again = json.loads((tmp_path / "beam.json").read_text(encoding="utf-8"))
    assert again["grid"] == numbers["grid"]
