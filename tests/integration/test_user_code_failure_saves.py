"""A user's teacher-forcing schedule that fails mid-run ends the run in one line, as before, and now
keeps the updates made: checkpoints/last.pt is saved first, as a stop signal saves it.

Before, the run ended with the schedule's one line and no last.pt, so every update since the last
validation was lost.  The schedule passes nmt's check (updates 0 and max_steps) and fails at update 3.
"""

from __future__ import annotations

from typing import Any

import pytest

import nmt
from conftest import toy_overrides
from nmt.run import checkpoint as ckpt
from nmt.run.paths import RunPaths
from nmt.training.entry import run_training
from nmt.util.registry import PluginError

FAILS_AT = 3


def fails_at_three(step: int, train: Any) -> float:
    """p = 1, except at update 3, where it is 2: outside [0, 1], a PluginError naming the schedule."""
    return 2.0 if step == FAILS_AT else 1.0


pytestmark = pytest.mark.usefixtures("isolated_registries")


def test_a_schedule_failing_mid_run_saves_last_pt_and_ends_in_one_line(tmp_path, toy_files) -> None:
    nmt.register_schedule("fails_at_three", fails_at_three)
    _, files = toy_files
    overrides = toy_overrides(
        tmp_path, files, train__max_steps=8, train__valid_every=0, train__tf_schedule="fails_at_three"
    )
    with pytest.raises(PluginError) as failed:
        run_training(None, overrides, progress=False)
    run = RunPaths(tmp_path / "runs" / "toy")
    message = str(failed.value)
    assert "\n" not in message and "fails_at_three gave p=2.0 at update 3" in message
    assert f"saved in {run.last}" in message and "stopped at step 3" in message
    saved = ckpt.load(run.last)
    assert saved.state.step == FAILS_AT and saved.trainable  # the 3 updates made, and all to resume them
