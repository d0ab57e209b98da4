"""How nmt.export.onnx_verify tells an export's outputs from the checkpoint's: relative to their size,
equal non-finite values alike, another shape never alike.  (Every export in tests/unit/test_export_onnx.py
passes the whole check; tests/integration/test_user_code_failures.py has one it refuses.)"""

from __future__ import annotations

import numpy as np

from nmt.export.onnx_verify import TOLERANCE, _difference


def test_the_difference_is_relative_to_the_outputs_size_and_treats_equal_non_finite_values_alike() -> None:
    ours = np.array([[100.0, -50.0], [0.0, 1.0]], dtype=np.float32)
    assert _difference(ours, ours.copy()) == 0.0
    assert _difference(ours, ours + 0.001) < TOLERANCE  # float rounding on outputs of size 100
    assert _difference(ours, -ours) > 1.0
    nan = np.array([np.nan, 1.0, np.inf], dtype=np.float32)
    assert _difference(nan, nan.copy()) == 0.0  # a checkpoint with NaN weights exports as it is
    assert _difference(nan, np.array([0.0, 1.0, np.inf], dtype=np.float32)) == float("inf")
    assert _difference(ours, ours[:1]) == float("inf")
    assert _difference(np.array([True, False]), np.array([True, True])) > TOLERANCE  # a mask
    assert _difference(np.zeros((2, 0)), np.zeros((2, 0))) == 0.0
