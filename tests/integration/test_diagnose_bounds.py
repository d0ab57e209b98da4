"""``nmt diagnose`` and ``train.max_steps`` within bounds (issue 70): a measure that is not a finite
number is JSON null, never a bare NaN no strict parser reads; an update count past 10^9 is refused in
one line, before anything trains."""

from __future__ import annotations

import json
import math

import pytest

import nmt.api
from conftest import run_cli
from nmt import config as config_mod
from nmt.diagnosis import attention_health
from nmt.diagnosis.results import AttentionHealth, FitGap, finite_or_null
from nmt.util.errors import ConfigError, UserError


def strict(line: str) -> dict:
    """A JSON line parsed as JSON is defined: NaN and Infinity are not numbers of it."""

    def refuse(name: str) -> None:
        raise ValueError(f"{name} is not JSON")

    return json.loads(line, parse_constant=refuse)


def nan_row(variant: str, count: int, batches: int) -> dict:
    return {
        "variant": variant,
        "steps": count,
        "batches": batches,
        "loss": float("nan"),
        "energy_std": float("inf"),
        "entropy": 0.5,
        "max_weight": 0.5,
        "context_rms": 1.0,
        "readout_saturation": 0.0,
        "attention_weight_norm": 1.0,
        "grad_norm": {"attention": float("nan"), "encoder": 1.0},
    }


def test_a_measure_that_is_not_finite_is_null_in_the_json_line(trained_toy, capsys, monkeypatch):
    """A diverged model's loss is NaN; the line held a bare NaN."""

    def measured(cfg, variant, steps, batches, thread_count):
        yield from (nan_row(variant, count, batches) for count in steps)

    monkeypatch.setattr(attention_health, "health", measured)
    argv = ["diagnose", "attention", "--config", str(trained_toy / "config.yaml"), "--variants", "bahdanau"]
    code, out, err = run_cli([*argv, "--steps", "0,3"], capsys)
    assert code == 0, err
    rows = [strict(line) for line in out.splitlines()]
    assert "NaN" not in out and "Infinity" not in out and len(rows) == 2
    assert rows[0]["loss"] is None and rows[0]["energy_std"] is None and rows[0]["entropy"] == 0.5
    assert rows[0]["grad_norm"] == {"attention": None, "encoder": 1.0}
    (first, _) = nmt.api.attention_health(trained_toy / "config.yaml", variants=["bahdanau"], steps=[0, 3])
    assert math.isnan(first.loss)  # the library's row keeps the float; only its JSON says null


def test_the_rows_of_both_diagnoses_write_null_for_what_is_not_finite(tmp_path):
    health = AttentionHealth(**nan_row("bahdanau", 0, 1), config=None, overrides=[])
    assert strict(json.dumps(health.to_dict(), allow_nan=False))["loss"] is None
    gap = FitGap(tmp_path / "best.pt", 3, 10, 1.0, math.e, float("nan"), float("inf"), float("nan"))
    assert strict(json.dumps(gap.to_dict(), allow_nan=False)) == {
        "checkpoint": str(tmp_path / "best.pt"),
        "step": 3,
        "train_pairs": 10,
        "train_loss": 1.0,
        "train_ppl": math.e,
        "valid_loss": None,
        "valid_ppl": None,
        "gap": None,
    }
    assert finite_or_null([1.5, float("-inf"), {"a": [float("nan")]}, "NaN", None]) == [
        1.5,
        None,
        {"a": [None]},
        "NaN",
        None,
    ]


@pytest.mark.parametrize("steps", ["99999999999999", "0,1000000001"])
def test_an_update_count_past_the_bound_is_refused_before_anything_trains(trained_toy, capsys, monkeypatch, steps):
    monkeypatch.setattr(attention_health, "health", lambda *a: pytest.fail("trained"))
    argv = ["diagnose", "attention", "--config", str(trained_toy / "config.yaml"), "--variants", "bahdanau"]
    code, out, err = run_cli([*argv, "--steps", steps], capsys)
    lines = err.strip().splitlines()
    assert code == 2 and out == "" and len(lines) == 1, err
    assert lines[0].startswith("nmt: error: --steps: ") and "give at most 1,000,000,000" in lines[0]
    with pytest.raises(UserError, match=r"^steps: .* give at most 1,000,000,000"):
        nmt.api.attention_health(trained_toy / "config.yaml", variants=["bahdanau"], steps=[10**14])


def test_more_updates_than_the_epochs_drawn_hold_is_one_line_not_a_division_by_zero(trained_toy):
    """The probe draws the batches of 1,000 epochs; past them no batch was left to measure."""
    config = config_mod.load(trained_toy / "config.yaml", [])
    with pytest.raises(UserError, match="take more than 1000 epochs of its training data"):
        next(attention_health.health(config, "bahdanau", [10**9], 1, 1))


@pytest.mark.parametrize("value", ["1000000000000000000000000000000", "1000000001"])
def test_train_max_steps_has_an_upper_bound(value):
    with pytest.raises(ConfigError, match=r"^train\.max_steps: Input should be less than or equal to 1000000000"):
        config_mod.load(None, [f"train.max_steps={value}"])
    assert config_mod.load(None, ["train.max_steps=1000000000"]).train.max_steps == 10**9
