"""nmt lab length --tiny: every variant (none included) trained once, scored on the test split by
source-length bucket, one figure and one table; a second call retrains nothing, and a subset plan
of the shared runs (as the labs matrices and kernel build it) finds them finished."""

from __future__ import annotations

import json

from conftest import run_tiny_lab, stop_count
from nmt.comparison.command import planned_runs
from nmt.config.variants import VARIANTS, run_name
from nmt.labs.base import LabContext
from nmt.labs.length import variant_plan


def test_variant_plan_names_every_variant_and_fixes_the_shared_run_folders(tmp_path):
    ctx = LabContext(out=tmp_path, runs_dir=tmp_path / "runs", size="tiny")
    plan = variant_plan(ctx)
    assert plan.variants == list(VARIANTS) and plan.reference == "none" and plan.seeds == [1]
    assert plan.split == "test" and plan.runs_dir == ctx.runs_dir and plan.beam is None
    full = variant_plan(LabContext(out=tmp_path, runs_dir=tmp_path / "full"))
    assert full.seeds == [1] and full.split == "test2016" and full.steps == 600
    subset = variant_plan(ctx, variants=["gaussian", "bahdanau"], seeds=[2])
    assert [a.run_stem for a in subset.arms] == ["gaussian", "bahdanau"] and subset.reference == "gaussian"
    assert subset.steps == plan.steps and subset.overrides == plan.overrides


def test_bleu_by_length_for_every_variant_at_the_tiny_size(tmp_path, capsys):
    printed = run_tiny_lab("length", tmp_path, capsys)
    page = (tmp_path / "length.md").read_text(encoding="utf-8")
    assert page.startswith("# Attention against none by sentence length")
    lines = page.splitlines()
    # the 20 synthetic test sentences are short: one bucket
    assert "| variant | BLEU | p vs none | length 0-9 (20 sent.) |" in lines
    rows = [line for line in lines if line.startswith("| ") and not line.startswith("| variant")]
    assert [row.split(" | ")[0][2:] for row in rows] == list(VARIANTS)
    assert all(" ± " not in row and len(row.split(" | ")) == 4 for row in rows)  # one seed: no spread to show
    assert rows[0].startswith("| none | ") and rows[0].split(" | ")[2] == "baseline"
    assert all(float(row.split(" | ")[2]) <= 1.0 for row in rows[1:])  # each variant's paired p against none

    figure = tmp_path / "length.png"
    assert figure.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and figure.stat().st_size > 20_000

    numbers = json.loads((tmp_path / "length.json").read_text(encoding="utf-8"))
    assert numbers["tiny"] is True and numbers["split"] == "test" and numbers["steps"] == 12
    assert numbers["seeds"] == [1] and numbers["baseline"] == "none" and numbers["bucket_sizes"] == {"0-9": 20}
    assert [v["variant"] for v in numbers["variants"]] == list(VARIANTS)
    for v in numbers["variants"]:
        assert 0.0 <= v["bleu"] <= 100.0 and set(v["bleu_by_length"]) == {"0-9"} and v["beam"] == 5
        assert v["p_values"] is None if v["variant"] == "none" else len(v["p_values"]) == 1

    runs = tmp_path / "runs"
    folders = [runs / f"{run_name(v)}_s1" for v in VARIANTS]
    stamps = [(f / "metrics.jsonl").stat().st_mtime_ns for f in folders]
    assert run_tiny_lab("length", tmp_path, capsys) == printed
    assert [(f / "metrics.jsonl").stat().st_mtime_ns for f in folders] == stamps
    assert all(stop_count(f) == 1 for f in folders)  # nothing retrained

    ctx = LabContext(out=tmp_path, runs_dir=runs, size="tiny")
    shared = planned_runs(variant_plan(ctx, variants=["gaussian", "none"], seeds=[1]))
    assert len(shared) == 2 and all(line.startswith("reuse") for line in shared), shared
