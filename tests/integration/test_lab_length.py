"""nmt lab length --tiny: the paper's design on joined pairs (none and bahdanau, each trained on pairs
of up to 30 and up to 50 words), scored by source-length bucket, one figure and one table; a second
call retrains nothing, and each cap reads a prepared folder of its own."""

from __future__ import annotations

import json

from conftest import run_tiny_lab, stop_count
from nmt import config as config_mod
from nmt.labs.base import LabContext
from nmt.labs.length import CAPS, CLASS_CAPS, JOIN_CAPTIONS, paper_plan

LABELS = ["none data.max_len=30", "none data.max_len=50", "bahdanau data.max_len=30", "bahdanau data.max_len=50"]


def test_the_plan_is_two_variants_times_two_caps_on_joined_captions(tmp_path):
    ctx = LabContext(out=tmp_path, runs_dir=tmp_path / "runs", size="tiny")
    plan = paper_plan(ctx)
    assert [a.label for a in plan.arms] == LABELS and plan.reference == "none data.max_len=50"
    assert f"data.join_captions={JOIN_CAPTIONS}" in plan.overrides and plan.seeds == [1] and plan.split == "test"
    folders = {config_mod.load(plan.config, [*plan.overrides, *a.train]).data.prepared_dir.name for a in plan.arms}
    assert folders == {f"en-de-join{JOIN_CAPTIONS}-max{cap}" for cap in CAPS}  # the demo config's pair
    classroom = paper_plan(LabContext(out=tmp_path, runs_dir=tmp_path / "class", size="class"))
    assert [a.label for a in classroom.arms] == [f"{v} data.max_len={CLASS_CAPS[0]}" for v in ("none", "bahdanau")]
    full = paper_plan(LabContext(out=tmp_path, runs_dir=tmp_path / "full"))
    assert full.split == "test2016" and full.steps == 1200 and len(full.arms) == 4


def test_bleu_by_length_for_the_four_runs_at_the_tiny_size(tmp_path, capsys):
    printed = run_tiny_lab("length", tmp_path, capsys)
    page = (tmp_path / "length.md").read_text(encoding="utf-8")
    assert page.startswith("# Attention against none by sentence length")
    rows = [line for line in page.splitlines() if line.startswith("| ") and not line.startswith("| model")]
    names = ["none, ≤30 words", "none, ≤50 words", "bahdanau, ≤30 words", "bahdanau, ≤50 words"]
    assert [row.split(" | ")[0][2:] for row in rows] == names * 2  # BLEU by length, then the length ratios
    assert "Output length over reference length" in page
    assert rows[1].split(" | ")[2] == "baseline"

    figure = tmp_path / "length.png"
    assert figure.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and figure.stat().st_size > 20_000

    numbers = json.loads((tmp_path / "length.json").read_text(encoding="utf-8"))
    assert numbers["tiny"] is True and numbers["join_captions"] == JOIN_CAPTIONS and numbers["caps"] == [30, 50]
    assert [r["name"] for r in numbers["runs"]] == names
    # the 20 synthetic test pairs joined in groups of 1..6: six pairs, the longest several captions long
    assert sum(numbers["bucket_sizes"].values()) == 6 and len(numbers["bucket_sizes"]) > 1
    for r in numbers["runs"]:
        assert 0.0 <= r["bleu"] <= 100.0 and set(r["bleu_by_length"]) <= set(numbers["bucket_sizes"])
        assert set(r["length_ratio"]) == set(r["bleu_by_length"]) and all(v >= 0 for v in r["length_ratio"].values())

    runs = tmp_path / "runs"
    folders = sorted(runs.glob("*_s1"))
    assert len(folders) == 4
    stamps = [(f / "metrics.jsonl").stat().st_mtime_ns for f in folders]
    assert run_tiny_lab("length", tmp_path, capsys) == printed
    assert [(f / "metrics.jsonl").stat().st_mtime_ns for f in folders] == stamps
    assert all(stop_count(f) == 1 for f in folders)  # nothing retrained
