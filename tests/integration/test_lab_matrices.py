"""nmt lab matrices --tiny: seed 1 of every attention variant trained once, three test sentences
decoded with attention by each, a figure grid and a table, and a second call that retrains nothing.
Also the rules behind its numbers: which sentences are shown, entropy and diagonal share."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest

from conftest import REPO, run_tiny_lab
from nmt.config.variants import VARIANTS
from nmt.labs.base import LabContext
from nmt.labs.matrices import attention_variants, diagonal_share, entropy_bits, pick_sentences
from nmt.labs.variant_runs import variant_plan


def _tiny_steps(tmp_path: Path) -> int:
    """Updates per run of the shared variant runs at the tiny size (nmt.labs.variant_runs sets them)."""
    return int(variant_plan(LabContext(out=tmp_path, runs_dir=tmp_path / "runs", size="tiny")).steps or 0)


def test_pick_sentences_takes_the_first_of_the_length_and_tops_up_in_file_order():
    lines = ["a b", "a b c d", "a", "a b c", "a b c d e f g", "a b c d"]
    assert pick_sentences(lines, (3, 4), count=3) == [1, 3, 5]
    assert pick_sentences(lines, (3, 4), count=2) == [1, 3]
    assert pick_sentences(lines, (6, 9), count=3) == [0, 1, 4]  # one qualifies: the first two others join it


def test_entropy_and_diagonal_share_of_known_matrices():
    identity, uniform = np.eye(4), np.full((4, 4), 0.25)
    assert entropy_bits(identity) == pytest.approx(0.0, abs=1e-9)
    assert entropy_bits(uniform) == pytest.approx(2.0)  # log2 of 4 source tokens
    assert diagonal_share(identity) == pytest.approx(1.0)
    assert diagonal_share(identity[::-1]) == pytest.approx(0.5)  # anti-diagonal: only the two middle rows are near
    assert diagonal_share(uniform) == pytest.approx((2 + 3 + 3 + 2) / 4 * 0.25)
    stretched = np.zeros((3, 5))  # 3 output tokens over 5 source tokens: the diagonal runs 0, 2, 4
    stretched[[0, 1, 2], [0, 2, 4]] = 1.0
    assert diagonal_share(stretched) == pytest.approx(1.0)


def test_matrices_lab_draws_every_attention_variant_and_reuses_the_runs(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(REPO)  # the lab's base config is a path in configs/
    run_tiny_lab("matrices", tmp_path, capsys)
    variants = attention_variants()
    assert "none" not in variants and len(variants) == len(VARIANTS) - 1  # every named variant with attention

    page = (tmp_path / "matrices.md").read_text(encoding="utf-8")
    assert page.startswith("# Attention matrices of every variant, side by side\n")
    assert "`none` has no attention matrix" in page
    assert "| variant | test BLEU (seed 1) | mean H (bits) | mean diagonal |" in page
    assert "| variant | sentence | hypothesis (greedy) | H (bits) | diagonal |" in page
    for name in variants:
        assert page.count(f"\n| {name} | ") == 4  # the summary row and one row per sentence
    assert "\n| none | " not in page
    png = (tmp_path / "matrices.png").read_bytes()
    assert png.startswith(b"\x89PNG\r\n\x1a\n") and len(png) > 50_000

    numbers = json.loads((tmp_path / "matrices.json").read_text(encoding="utf-8"))
    assert (
        numbers["tiny"] is True
        and numbers["split"] == "test"
        and numbers["seed"] == 1
        and numbers["steps"] == _tiny_steps(tmp_path)
    )
    assert [s["line"] for s in numbers["sentences"]] == sorted(s["line"] for s in numbers["sentences"])
    assert len(numbers["sentences"]) == 3 and all(4 <= len(s["source"].split()) <= 6 for s in numbers["sentences"])
    assert list(numbers["variants"]) == variants
    for row in numbers["variants"].values():
        assert 0 <= row["bleu"] <= 100 and len(row["sentences"]) == 3
        for sentence, uniform in zip(row["sentences"], numbers["uniform_entropy_bits"]):
            assert 0 <= sentence["entropy_bits"] <= uniform + 1e-3 and 0 <= sentence["diagonal_share"] <= 1
            assert isinstance(sentence["hypothesis"], str)
    assert all(u >= math.log2(4) for u in numbers["uniform_entropy_bits"])  # at least four source tokens

    runs = tmp_path / "runs"
    assert sorted(p.name for p in runs.glob("*_s1")) == sorted(name.replace("+", "_") + "_s1" for name in variants)
    assert not list(runs.glob("*_s2"))  # seed 1 only
    best = {p: p.stat().st_mtime_ns for p in runs.glob("*_s1/checkpoints/best.pt")}
    assert len(best) == len(variants)

    def no_training(*args, **kwargs):
        raise AssertionError("a finished run was trained again")

    monkeypatch.setattr("nmt.training.entry.run_training", no_training)
    run_tiny_lab("matrices", tmp_path, capsys)  # a second call: every run is reused
    assert {p: p.stat().st_mtime_ns for p in best} == best
    again = json.loads((tmp_path / "matrices.json").read_text(encoding="utf-8"))
    assert again["variants"] == numbers["variants"]
