"""nmt lab kernel --tiny: the Nadaraya-Watson toy with a fixed and a learned width, and the
gaussian variant's seed-1 run (the folder the lab "matrices" shares) read back; a second call retrains nothing.
Also the toy's pieces: the kernel weights and the width the descent learns."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from conftest import REPO, run_tiny_lab
from nmt.labs.base import LabContext
from nmt.labs.kernel import (
    FIXED_WIDTH,
    Maps,
    fit_width,
    kernel_figure,
    kernel_weights,
    make_toy,
    spread_tokens,
    toy_errors,
)
from nmt.labs.matrices import SentenceAttention
from nmt.labs.variant_runs import variant_plan


def _tiny_steps(tmp_path: Path) -> int:
    """Updates per run of the shared variant runs at the tiny size (nmt.labs.variant_runs sets them)."""
    return int(variant_plan(LabContext(out=tmp_path, runs_dir=tmp_path / "runs", size="tiny")).steps or 0)


def test_kernel_weights_are_a_softmax_over_keys_and_leave_one_out_skips_the_own_point():
    keys = np.array([0.0, 1.0, 3.0])
    weights = kernel_weights(np.array([0.0, 2.0]), keys, width=1.0)
    assert weights.sum(axis=1) == pytest.approx([1.0, 1.0])
    expected = np.exp([0.0, -0.5, -4.5]) / np.exp([0.0, -0.5, -4.5]).sum()  # exp(-(q - k)^2 / 2), normalized
    assert weights[0] == pytest.approx(expected)
    assert weights[1, 1] == pytest.approx(weights[1, 2])  # 2 is as far from 1 as from 3
    loo = kernel_weights(keys, keys, width=1.0, leave_one_out=True)
    assert np.diag(loo) == pytest.approx([0.0, 0.0, 0.0]) and loo.sum(axis=1) == pytest.approx([1.0] * 3)
    assert kernel_weights(np.array([0.1]), keys, width=0.01)[0] == pytest.approx([1.0, 0.0, 0.0])  # narrow: nearest


def test_the_learned_width_minimizes_the_leave_one_out_error():
    toy = make_toy()
    assert len(toy.x_train) == 50 and np.all(np.diff(toy.x_train) >= 0) and len(toy.x_test) == 50
    fit = fit_width(toy)
    assert abs(fit.final_gradient) < 1e-4
    grid = np.linspace(0.05, 1.0, 96)
    best = grid[np.argmin([toy_errors(toy, float(w))["loo_mse"] for w in grid])]
    assert fit.width == pytest.approx(best, abs=0.01)
    assert toy_errors(toy, fit.width)["loo_mse"] < toy_errors(toy, FIXED_WIDTH)["loo_mse"]


def test_spread_in_source_tokens():
    assert spread_tokens(np.eye(3)) == pytest.approx(0.0, abs=1e-6)
    assert spread_tokens(np.array([[0.5, 0.0, 0.5]])) == pytest.approx(1.0)


def test_the_translation_map_names_its_axes_and_shows_the_source_tokens_readably(tmp_path):
    toy = make_toy()
    src, tgt = ["▁ant", "▁bee", "▁cat", "."], ["▁ANT", "▁BEE", "▁CAT", ".", "</s>"]
    weights = np.full((len(tgt), len(src)), 1 / len(src))
    rng = np.random.default_rng(0)
    maps = Maps(query=rng.normal(size=(4, 4)), key=rng.normal(size=(4, 8)))
    fig = kernel_figure(toy, fit_width(toy), SentenceAttention(src, tgt, "ANT BEE CAT .", weights), maps, maps)
    (ax,) = [ax for ax in fig.axes if [t.get_text() for t in ax.get_xticklabels()] == src]
    assert ax.get_xlabel() == "source tokens" and ax.get_ylabel() == "target (output) tokens"
    assert [t.get_text() for t in ax.get_yticklabels()] == tgt
    for label in ax.get_xticklabels():
        assert label.get_rotation() == 45 and label.get_fontsize() >= 9
    fig.savefig(tmp_path / "kernel.png")


def test_kernel_lab_fits_the_toy_and_reads_the_gaussian_run(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(REPO)  # the lab's base config is a path in configs/
    planned = run_tiny_lab("kernel", tmp_path, capsys, "--dry-run")
    assert planned.splitlines() == [f"train    gaussian seed 1: {tmp_path / 'runs' / 'gaussian_s1'}", "1 run: 1 train"]
    assert list(tmp_path.iterdir()) == []  # listed, not trained or written
    run_tiny_lab("kernel", tmp_path, capsys)

    page = (tmp_path / "kernel.md").read_text(encoding="utf-8")
    assert page.startswith("# The kernel view: Nadaraya-Watson regression and the gaussian variant\n")
    assert "| kernel width σ | chosen by | leave-one-out MSE (training) | held-out MSE |" in page
    assert "\n| 1.000 | fixed (the lecture's kernel) | " in page and "| learned: 200 gradient steps" in page
    assert "\n| W_q (decoder state -> query) | 32 x 32 | " in page
    assert "\n| W_k (encoder state -> key) | 32 x 64 | " in page  # a bidirectional encoder of 2 x 32
    assert "\n| test BLEU (beam " in page and "| its greedy translation |" in page
    png = (tmp_path / "kernel.png").read_bytes()
    assert png.startswith(b"\x89PNG\r\n\x1a\n") and len(png) > 50_000

    numbers = json.loads((tmp_path / "kernel.json").read_text(encoding="utf-8"))
    fixed, learned = numbers["toy"]["widths"]
    assert fixed["width"] == 1.0 and 0.05 < learned["width"] < 1.0
    assert learned["loo_mse"] < fixed["loo_mse"] and learned["held_out_mse"] < fixed["held_out_mse"]
    gaussian = numbers["gaussian"]
    assert gaussian["split"] == "test" and gaussian["seed"] == 1 and gaussian["steps"] == _tiny_steps(tmp_path)
    assert 0 <= gaussian["bleu"] <= 100 and 4 <= len(gaussian["source"].split()) <= 6
    assert 0 <= gaussian["entropy_bits"] <= gaussian["uniform_entropy_bits"] + 1e-3 and gaussian["spread_tokens"] >= 0
    for row in gaussian["maps"].values():
        assert row["rms_sv_learned"] > 0 and row["width_learned"] == pytest.approx(1 / row["rms_sv_learned"], rel=1e-3)
        assert row["sv_learned_min"] <= row["rms_sv_learned"] <= row["sv_learned_max"]
        # 12 small updates from the rebuilt initial maps: the same start, barely moved
        assert row["rms_sv_initial"] == pytest.approx(row["rms_sv_learned"], rel=0.05)

    runs = tmp_path / "runs"
    assert [p.name for p in runs.glob("*_s*")] == ["gaussian_s1"]  # the folder the lab "matrices" trains too
    best = runs / "gaussian_s1" / "checkpoints" / "best.pt"
    mtime = best.stat().st_mtime_ns

    def no_training(*args, **kwargs):
        raise AssertionError("a finished run was trained again")

    monkeypatch.setattr("nmt.training.entry.run_training", no_training)
    assert run_tiny_lab("kernel", tmp_path, capsys, "--dry-run").splitlines()[-1] == "1 run: 1 reuse"
    run_tiny_lab("kernel", tmp_path, capsys)  # a second call: the run is reused and the toy gives the same numbers
    assert best.stat().st_mtime_ns == mtime
    again = json.loads((tmp_path / "kernel.json").read_text(encoding="utf-8"))
    assert again["toy"] == numbers["toy"] and again["gaussian"] == numbers["gaussian"]
