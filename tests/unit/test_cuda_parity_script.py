"""scripts/cuda_parity.py: every case it checks is a valid model, equal sides pass, a changed weight
fails, and a machine without CUDA gets one line and exit 2.  (The GPU itself: docs/results.md, GPU.)"""

from __future__ import annotations

import subprocess
import sys

import cuda_parity
import pytest
import torch

from conftest import REPO
from nmt.config import from_dict
from nmt.config.attention_space import ATTENTION_TYPES


def test_every_case_is_a_valid_model_and_names_are_unique() -> None:
    names = [name for name, _ in cuda_parity.cases()]
    assert len(names) == len(set(names)) == len(ATTENTION_TYPES) + 8  # the presets and eight more models
    for _, section in cuda_parity.cases():
        from_dict({"model": section})


def move_to_the_same_cpu(monkeypatch: pytest.MonkeyPatch, nudge: float = 0.0, freeze: bool = False) -> None:
    """``.cuda()`` stays on the CPU; with ``nudge``, the model's copy gets its first weight changed;
    with ``freeze``, its first weight gets no gradient."""
    monkeypatch.setattr(torch.Tensor, "cuda", lambda self, *a, **k: self)

    def module_cuda(self: torch.nn.Module, *a: object, **k: object) -> torch.nn.Module:
        first = next(self.parameters())
        with torch.no_grad():
            first.add_(nudge)
        first.requires_grad_(not freeze)
        return self

    monkeypatch.setattr(torch.nn.Module, "cuda", module_cuda)


@pytest.mark.filterwarnings("ignore:.*autocast")
def test_equal_sides_agree_and_a_changed_weight_is_caught(monkeypatch: pytest.MonkeyPatch) -> None:
    sections = dict(cuda_parity.cases())
    move_to_the_same_cpu(monkeypatch)
    same = cuda_parity.compare("coverage", sections["coverage"], atol=1e-4, rtol=1e-3)
    assert same["ok"] and same["logits_max_abs_diff"] == 0.0 and same["grads_max_rel_diff"] == 0.0
    move_to_the_same_cpu(monkeypatch, nudge=0.5)
    changed = cuda_parity.compare("coverage", sections["coverage"], atol=1e-4, rtol=1e-3)
    assert not changed["ok"] and changed["logits_max_abs_diff"] > 1e-4


@pytest.mark.filterwarnings("ignore:.*autocast")
def test_a_gradient_missing_on_one_side_fails_the_line(monkeypatch: pytest.MonkeyPatch) -> None:
    move_to_the_same_cpu(monkeypatch, freeze=True)
    line = cuda_parity.compare("bahdanau", dict(cuda_parity.cases())["bahdanau"], atol=1e-4, rtol=1e-3)
    assert not line["ok"] and not line["same_grad_params"] and line["grads_max_rel_diff"] == 0.0


@pytest.mark.skipif(torch.cuda.is_available(), reason="checks the message of a machine without CUDA")
def test_without_cuda_one_line_and_exit_2() -> None:
    done = subprocess.run(
        [sys.executable, "scripts/cuda_parity.py"], cwd=REPO, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr.strip() == "cuda_parity.py: error: no CUDA device here: this script compares the CPU with a GPU"
