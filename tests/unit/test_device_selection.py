"""``device: auto`` picks CUDA, then Apple's MPS, then the CPU (nmt.util.runtime.select_device).

This project's machines have no MPS (and the CPU ones no CUDA), so the choice is tested with
torch's availability checks stubbed; only the CPU path runs for real.
"""

from __future__ import annotations

import pytest
import torch

from conftest import run_cli
from nmt.util import runtime
from nmt.util.errors import UserError


def stub(monkeypatch: pytest.MonkeyPatch, cuda: bool, mps: bool) -> None:
    monkeypatch.setattr(torch.cuda, "is_available", lambda: cuda)
    monkeypatch.setattr(torch.backends.mps, "is_available", lambda: mps)


@pytest.mark.parametrize(
    "cuda, mps, chosen",
    [(True, True, "cuda"), (True, False, "cuda"), (False, True, "mps"), (False, False, "cpu")],
)
def test_auto_prefers_cuda_then_mps_then_the_cpu(monkeypatch, cuda, mps, chosen):
    stub(monkeypatch, cuda, mps)
    assert runtime.select_device("auto").type == chosen


def test_an_explicit_device_is_taken_where_present(monkeypatch):
    stub(monkeypatch, cuda=False, mps=True)
    assert runtime.select_device("mps").type == "mps"
    assert runtime.select_device("cpu").type == "cpu"


@pytest.mark.parametrize("name, needle", [("mps", "Apple's MPS is not available"), ("cuda", "no CUDA device")])
def test_a_missing_device_is_one_line(monkeypatch, name, needle):
    stub(monkeypatch, cuda=False, mps=False)
    with pytest.raises(UserError, match=needle) as info:
        runtime.select_device(name)
    assert "\n" not in str(info.value)


def test_train_on_a_missing_mps_exits_2_in_one_line(monkeypatch, tmp_path, capsys):
    stub(monkeypatch, cuda=False, mps=False)
    code, _, err = run_cli(["train", "--set", "train.device=mps", "--set", f"runs_dir={tmp_path}"], capsys)
    assert code == 2 and "Apple's MPS is not available" in err and len(err.strip().splitlines()) == 1
    assert not any(tmp_path.iterdir())  # refused before the run folder was made


def test_load_on_a_missing_mps_is_one_line(monkeypatch, trained_toy):
    import nmt

    stub(monkeypatch, cuda=False, mps=False)
    with pytest.raises(UserError, match="Apple's MPS is not available"):
        nmt.load(trained_toy, device="mps")
