"""A schedule's p may be a NumPy scalar (issue 70): ``np.float32(0.5)`` is a number in [0, 1] and was
refused as "a schedule returns a number in [0, 1]"; a NumPy bool, NaN or a value outside [0, 1] still is not."""

from __future__ import annotations

import numpy as np
import pytest

import nmt
from nmt import config as C
from nmt.config.schedules import TF_SCHEDULES
from nmt.training.schedules import teacher_forcing_p
from nmt.util.registry import PluginError


@pytest.fixture(autouse=True)
def fresh_schedules(monkeypatch: pytest.MonkeyPatch) -> None:
    """Each test registers into a copy: nothing it adds outlives it."""
    monkeypatch.setattr(TF_SCHEDULES, "_entries", dict(TF_SCHEDULES._entries))


@pytest.mark.parametrize("value", [np.float32(0.5), np.float16(0.5), np.float64(0.5), np.int64(1), np.int8(0)])
def test_a_numpy_scalar_in_0_1_is_a_p(value) -> None:
    nmt.register_schedule("numpy_p", lambda step, train: value)
    p = teacher_forcing_p(C.load(None, ["train.tf_schedule=numpy_p"]).train, 3)
    assert p == float(value) and type(p) is float


@pytest.mark.parametrize("value", [np.bool_(True), np.float32("nan"), np.float64(1.5), np.int64(-1), np.array([0.5])])
def test_a_numpy_value_that_is_no_p_is_still_refused_naming_the_schedule(value) -> None:
    nmt.register_schedule("numpy_bad", lambda step, train: value)
    with pytest.raises(PluginError, match=r"train\.tf_schedule=numpy_bad gave p=") as refused:
        teacher_forcing_p(C.load(None, ["train.tf_schedule=numpy_bad"]).train, 3)
    assert "\n" not in str(refused.value)
