"""nmt lab length --tiny: the paper's design (none and bahdanau, each trained on pairs of up to 30 and up
to 50 words by train.max_words), scored by source-length bucket with intervals, one figure and one table;
a second call retrains nothing.  The class size joins captions and reads a folder per cap."""

from __future__ import annotations

import json
from pathlib import Path

from conftest import run_tiny_lab, stop_count
from nmt import config as config_mod
from nmt.labs.base import LabContext
from nmt.labs.length import (
    CAPS,
    CLASS_CAPS,
    EUROPARL_CONFIG_NAME,
    JOIN_CAPTIONS,
    RESAMPLES,
    SEEDS,
    STEPS,
    TINY_CAPS,
    paper_plan,
)


def valid_events(run: Path) -> list[tuple[int, float]]:
    """(update, validation loss) of each validation a run's metrics.jsonl logged (at each epoch's end here)."""
    lines = (run / "metrics.jsonl").read_text(encoding="utf-8").splitlines()
    return [(e["step"], e["loss"]) for e in map(json.loads, lines) if e["event"] == "valid"]


def labels(caps):
    return [f"{v} train.max_words={c}" for v in ("none", "bahdanau") for c in caps]


def test_the_full_size_caps_europarl_at_training_and_the_class_size_joins_captions(tmp_path):
    tiny = paper_plan(LabContext(out=tmp_path, runs_dir=tmp_path / "runs", size="tiny"))
    assert [a.label for a in tiny.arms] == labels(TINY_CAPS) and tiny.reference == "none train.max_words=8"
    assert tiny.seeds == [1] and tiny.split == "test" and not any("join" in o for o in tiny.overrides)
    folders = {config_mod.load(tiny.config, [*tiny.overrides, *a.train]).data.prepared_dir for a in tiny.arms}
    assert len(folders) == 1  # one prepared folder, one vocabulary for both caps
    full = paper_plan(LabContext(out=tmp_path, runs_dir=tmp_path / "full"))
    assert Path(full.config).name == EUROPARL_CONFIG_NAME and [a.label for a in full.arms] == labels(CAPS)
    assert full.split == "test" and full.steps == STEPS and full.seeds == SEEDS == [1, 2, 3]
    cfg = config_mod.load(full.config, [*full.overrides, *full.arms[0].train])
    assert cfg.data.corpus == "europarl" and cfg.train.max_words == int(CAPS[0])
    classroom = paper_plan(LabContext(out=tmp_path, runs_dir=tmp_path / "class", size="class"))
    assert [a.label for a in classroom.arms] == [f"{v} data.max_len={CLASS_CAPS[0]}" for v in ("none", "bahdanau")]
    assert f"data.join_captions={JOIN_CAPTIONS}" in classroom.overrides and classroom.split == "test2016"
    assert {
        config_mod.load(classroom.config, [*classroom.overrides, *a.train]).data.prepared_dir.name
        for a in classroom.arms
    } == {f"de-en-join{JOIN_CAPTIONS}-max{CLASS_CAPS[0]}"}


def test_bleu_by_length_for_the_four_runs_at_the_tiny_size(tmp_path, capsys):
    printed = run_tiny_lab("length", tmp_path, capsys)
    page = (tmp_path / "length.md").read_text(encoding="utf-8")
    assert page.startswith("# Attention against none by sentence length")
    rows = [line for line in page.splitlines() if line.startswith("| ") and not line.startswith("| model")]
    names = ["none, ≤5 words", "none, ≤8 words", "bahdanau, ≤5 words", "bahdanau, ≤8 words"]
    assert [row.split(" | ")[0][2:] for row in rows] == names * 2  # BLEU by length, then the length ratios
    assert "Output length over reference length" in page and f"{RESAMPLES:,} bootstrap resamples" in page
    assert rows[1].split(" | ")[2] == "baseline"

    figure = tmp_path / "length.png"
    assert figure.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and figure.stat().st_size > 20_000

    numbers = json.loads((tmp_path / "length.json").read_text(encoding="utf-8"))
    assert numbers["tiny"] is True and numbers["join_captions"] == 1 and numbers["caps"] == [5, 8]
    assert numbers["cap_option"] == "train.max_words" and numbers["resamples"] == RESAMPLES
    assert [r["name"] for r in numbers["runs"]] == names
    assert sum(numbers["bucket_sizes"].values()) == 20 and len(numbers["bucket_sizes"]) > 1  # 20 synthetic pairs
    for r in numbers["runs"]:
        assert 0.0 <= r["bleu"] <= 100.0 and set(r["buckets"]) <= set(numbers["bucket_sizes"])
        for b in r["buckets"].values():
            assert b["low"] <= b["high"] and b["per_seed"] == [b["mean"]] and b["ratio"] >= 0

    runs = tmp_path / "runs"
    folders = sorted(runs.glob("*_s1"))
    assert len(folders) == 4
    for variant in ("none", "bahdanau"):  # the cap reaches training: fewer pairs, an epoch of fewer updates
        short, long = (valid_events(runs / f"{variant}_train.max_words-{c}_s1") for c in TINY_CAPS)
        assert short[0][0] < long[0][0] and short != long
    stamps = [(f / "metrics.jsonl").stat().st_mtime_ns for f in folders]
    assert run_tiny_lab("length", tmp_path, capsys) == printed
    assert [(f / "metrics.jsonl").stat().st_mtime_ns for f in folders] == stamps
    assert all(stop_count(f) == 1 for f in folders)  # nothing retrained
