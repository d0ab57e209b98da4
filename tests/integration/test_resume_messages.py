"""The stop line and the resume log name the same position in the same words (issue 33: the
stop line said "epoch 1" where the resume log said "epoch 2" for one position)."""

from __future__ import annotations

import logging
import re

import pytest

from conftest import toy_overrides, write_toy_task
from nmt.training.entry import run_training


@pytest.mark.parametrize(
    "stop, resume, position",
    [
        ({"train__max_steps": 3}, ["train.max_steps=4"], r"step 3 \(epoch 1, after batch 3\)"),
        ({"train__max_epochs": 1}, ["train.max_epochs=2"], r"step \d+ \(end of epoch 1\)"),
    ],
)
def test_the_resume_log_names_the_position_the_stop_line_named(tmp_path, caplog, stop, resume, position):
    files = write_toy_task(tmp_path / "text", {"train": 600, "valid": 10})
    overrides = toy_overrides(tmp_path, files, train__tensorboard=False, train__valid_every=0, **stop)
    summary = run_training(None, overrides, progress=False).summary
    stopped = re.match(r"stopped \(\w+\) at (.+), after ", summary)
    assert stopped and re.fullmatch(position, stopped.group(1)), summary
    with caplog.at_level(logging.INFO, logger="nmt.training.loop"):
        run_training(None, resume, resume=tmp_path / "runs" / "toy", progress=False)
    resumed = [r.getMessage() for r in caplog.records if r.getMessage().startswith("resumed at ")]
    assert resumed == [f"resumed at {stopped.group(1)}"]
