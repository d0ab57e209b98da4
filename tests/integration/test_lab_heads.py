"""nmt lab heads --tiny: qkv attention trained with 1 and 4 heads on one seed at equal
updates and parameters, and a second call that retrains nothing."""

from __future__ import annotations

import json

from conftest import REPO, run_tiny_lab, stop_count


def test_heads_lab_compares_head_counts_at_equal_parameters_and_reuses_its_runs(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(REPO)  # the lab's base config is a path in configs/
    run_tiny_lab("heads", tmp_path, capsys)

    page = (tmp_path / "heads.md").read_text(encoding="utf-8")
    assert page.startswith("# Number of heads: qkv with 1, 2, 4 and 8 heads\n")
    assert "| heads | head size | parameters | test BLEU | per seed | p per seed vs 1 head | train min |" in page
    lines = [line for line in page.splitlines() if line.startswith(("| 1 |", "| 4 |"))]
    assert len(lines) == 2 and "baseline" in lines[0] and lines[0].startswith("| 1 | 32 |")
    assert lines[1].startswith("| 4 | 8 |")
    assert "Every arm has" in page and "A = 32 mapped dimensions" in page
    png = (tmp_path / "heads.png").read_bytes()
    assert png.startswith(b"\x89PNG\r\n\x1a\n") and len(png) > 20_000

    numbers = json.loads((tmp_path / "heads.json").read_text(encoding="utf-8"))
    assert numbers["tiny"] is True and numbers["split"] == "test" and numbers["seeds"] == [1]
    assert numbers["updates"] == 12 and numbers["equal_parameters"] is True
    arms = numbers["arms"]
    assert [a["heads"] for a in arms] == [1, 4] and [a["head_size"] for a in arms] == [32, 8]
    assert arms[0]["params"] == arms[1]["params"] > 0
    assert arms[0]["p_values"] is None and len(arms[1]["p_values"]) == 1  # one seed at the tiny size
    assert all(0 <= p <= 1 for p in arms[1]["p_values"])
    for arm in arms:
        assert 0 <= arm["bleu"] <= 100 and arm["bleu_sd"] >= 0 and len(arm["per_seed_bleu"]) == 1
        assert arm["train_min"] >= 0 and arm["curve"] and arm["curve"][-1][0] == 12

    runs = sorted(p for p in (tmp_path / "runs").iterdir() if p.name.startswith("qkv_"))
    assert [p.name for p in runs] == [f"qkv_model.attention.heads-{h}_s{s}" for h in (1, 4) for s in (1,)]
    run_tiny_lab("heads", tmp_path, capsys)  # a second call reuses every run
    assert all(stop_count(run) == 1 for run in runs)
    assert json.loads((tmp_path / "heads.json").read_text(encoding="utf-8"))["arms"] == arms


def test_heads_lab_with_jobs_2_trains_its_runs_side_by_side_to_the_same_numbers(tmp_path, capsys, monkeypatch):
    """--jobs 2 trains each run in an nmt train process of its own (as nmt compare --jobs):
    the lab's numbers are those of --jobs 1, apart from the wall times."""
    monkeypatch.chdir(REPO)
    arms = {}
    for jobs in (1, 2):
        folder = tmp_path / f"jobs{jobs}"
        run_tiny_lab("heads", folder, capsys, "--jobs", str(jobs))
        numbers = json.loads((folder / "heads.json").read_text(encoding="utf-8"))
        arms[jobs] = [{k: v for k, v in arm.items() if k != "train_min"} for arm in numbers["arms"]]
    assert arms[1] == arms[2] and len(arms[2]) == 2
    logs = sorted(p.name for p in (tmp_path / "jobs2" / "runs" / "logs").iterdir())
    assert logs == [f"qkv_model.attention.heads-{h}_s1.log" for h in (1, 4)]
    assert not (tmp_path / "jobs1" / "runs" / "logs").exists()
