"""A user's attention or schedule that is broken in a way nmt did not foresee is one PluginError naming
it, never an internal error: an energy that raises, cannot be built, allocates too much, returns a
list or integers, or has the right shape for short inputs only; a schedule that raises.  A constant
energy (scores that depend on nothing learned) is legitimate and passes.  What the user's code
raises later, mid-run, is named too (``naming_user_code``), and so is the energy in the advice for a
loss that stops being finite.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
import torch
from torch import Tensor

import nmt
from nmt import config as C
from nmt.config.attention_space import ATTENTIONS
from nmt.config.schedules import TF_SCHEDULES
from nmt.training.schedules import teacher_forcing_p
from nmt.training.user_code import check_user_code, naming_user_code, nonfinite_advice
from nmt.util.registry import PluginError


@pytest.fixture(autouse=True)
def fresh_registries(monkeypatch: pytest.MonkeyPatch) -> None:
    """Each test registers into copies: nothing it adds outlives it."""
    for registry in (ATTENTIONS, TF_SCHEDULES):
        monkeypatch.setattr(registry, "_entries", dict(registry._entries))


def config(*sets: str) -> C.Config:
    """A config with queries and keys of one size, as an energy without maps of its own needs."""
    return C.load(None, ["model.bidirectional=false", *sets])


def dot(q: Tensor, k: Tensor) -> Tensor:
    return q @ k.transpose(-1, -2)


class Raises(nmt.Energy):
    def forward(self, q: Tensor, k: Tensor) -> Tensor:
        raise ValueError("no scores today")


class WrongInit(nmt.Energy):
    def __init__(self, size: int) -> None:  # nmt builds energies as cls(query_size, key_size, heads)
        super().__init__(size, size)

    def forward(self, q: Tensor, k: Tensor) -> Tensor:
        return dot(q, k)


class TorchTooBig(nmt.Energy):
    def forward(self, q: Tensor, k: Tensor) -> Tensor:
        torch.empty(2**50)  # 4 PiB: refused by the allocator at once, nothing is taken
        return dot(q, k)


class PythonTooBig(nmt.Energy):
    def forward(self, q: Tensor, k: Tensor) -> Tensor:
        table = [0.0] * 2**50  # MemoryError at once
        return dot(q, k) + table[0]


class AList(nmt.Energy):
    def forward(self, q: Tensor, k: Tensor) -> list:  # type: ignore[override]
        return [dot(q, k)]


class Integers(nmt.Energy):
    def forward(self, q: Tensor, k: Tensor) -> Tensor:
        return dot(q, k).round().long()


class ShortOnly(nmt.Energy):
    def forward(self, q: Tensor, k: Tensor) -> Tensor:  # keeps the first 8 keys only: wrong for longer sources
        return dot(q, k)[..., :8]


class NaNGradient(nmt.Energy):
    def forward(self, q: Tensor, k: Tensor) -> Tensor:  # finite scores whose gradient is not: d sqrt(x)/dx at 0
        return (dot(q, k) * 0).sqrt()


@pytest.mark.parametrize(
    "energy,words",
    [
        (Raises, r"fails a check: with 4 queries and 6 keys it raised ValueError: no scores today$"),
        (WrongInit, r"cannot be built with 1 head\(s\): TypeError: .*__init__ takes \(query_size, key_size, heads=1\)"),
        (TorchTooBig, r"it raised RuntimeError: .*allocate"),
        (PythonTooBig, r"it raised MemoryError$"),
        (AList, r"forward returned a list, not a tensor of scores"),
        (Integers, r"forward returned torch\.int64 scores; return floating-point ones"),
        (ShortOnly, r"scores have shape \(3, 1, 12, 8\), expected \(B, h, T, S\) = \(3, 1, 12, 40\)"),
        (NaNGradient, r"gradients through the energy are not all finite"),
    ],
)
def test_a_broken_energy_is_one_plugin_error_naming_it(energy: type, words: str) -> None:
    with pytest.raises(PluginError, match=words) as refused:
        nmt.check_attention(energy)
    assert f"attention {energy.__module__}:{energy.__qualname__}" in str(refused.value)
    assert "\n" not in str(refused.value) and len(str(refused.value)) < 400


class Zeros(nmt.Energy):
    def forward(self, q: Tensor, k: Tensor) -> Tensor:  # every key alike: the mean of the source
        return q.new_zeros(q.size(0), q.size(1), q.size(2), k.size(2))


def test_a_constant_energy_passes_the_checks() -> None:
    """Its linear query and key maps (no ``defaults``) get no gradient either: the scores ignore them."""
    passed = nmt.check_attention(Zeros)
    assert len(passed) == 6 and passed[-1] == "gradients (the energy has no parameters) (heads 1, 2)"
    nmt.register_attention("zeros", Zeros)
    check_user_code(config("model.attention.type=zeros"))


class NotWrittenYet(nmt.Energy):
    def forward(self, q: Tensor, k: Tensor) -> Tensor:
        raise NotImplementedError("write the line marked YOUR LINE")


def test_a_forward_not_written_yet_stops_check_attention_as_itself_and_training_in_one_line() -> None:
    nmt.register_attention("unwritten", NotWrittenYet)
    with pytest.raises(NotImplementedError, match="YOUR LINE"):  # notebook 07 stops at the student's line
        nmt.check_attention("unwritten")
    with pytest.raises(PluginError, match=r"^attention unwritten: its forward raised NotImplementedError: write"):
        check_user_code(config("model.attention.type=unwritten"))


def test_a_schedule_that_raises_is_named_at_the_check_and_mid_run() -> None:
    def broken(step: int, train: object) -> float:
        return 1 / (step - 3) if step else 1.0  # fine at update 0, fails at update 3

    nmt.register_schedule("broken", broken)
    cfg = config("train.tf_schedule=broken", "train.max_steps=3")
    with pytest.raises(PluginError, match=r"^train\.tf_schedule=broken raised ZeroDivisionError: .* at update 3$"):
        check_user_code(cfg)  # the check calls it at the first and the last update
    assert teacher_forcing_p(cfg.train, 0) == 1.0
    with pytest.raises(PluginError, match=r"at update 3$"):
        teacher_forcing_p(cfg.train, 3)


MODULE = '''
import nmt


class Picky(nmt.Energy):
    """Right on the checks' batches, raises on any batch of more than 3 sentences."""

    def forward(self, q, k):
        if q.size(0) > 3:
            raise RuntimeError("picky about batches")
        return q @ k.transpose(-1, -2)


def cliff(step, train):
    if step > 5:
        raise KeyError("past the cliff")
    return 1.0


nmt.register_attention("picky", Picky)
nmt.register_schedule("cliff", cliff)
'''


@pytest.fixture()
def users_module(tmp_path: Path) -> Iterator[object]:
    """A module of the user's (not this test module), imported from a file as --module imports it."""
    (tmp_path / "users_code_mid_run.py").write_text(MODULE, encoding="utf-8")
    sys.path.insert(0, str(tmp_path))
    try:
        yield importlib.import_module("users_code_mid_run")
    finally:
        sys.path.remove(str(tmp_path))
        sys.modules.pop("users_code_mid_run", None)


def test_what_the_users_code_raises_mid_run_is_one_plugin_error_naming_it(users_module) -> None:
    cfg = config("model.attention.type=picky", "train.tf_schedule=cliff")
    check_user_code(cfg)  # passes: the checks' batches are small, and train.max_steps is 0 (no end)
    energy = users_module.Picky(8, 8)  # type: ignore[attr-defined]
    picky = r"^attention picky raised RuntimeError: picky about batches while training$"
    with pytest.raises(PluginError, match=picky), naming_user_code(cfg):
        energy(torch.zeros(4, 1, 2, 8), torch.zeros(4, 1, 3, 8))
    cliff = r"^train\.tf_schedule=cliff raised KeyError: 'past the cliff'"
    with pytest.raises(PluginError, match=cliff + " at update 6$"), naming_user_code(cfg):
        teacher_forcing_p(cfg.train, 6)  # a PluginError of its own already: passes unchanged
    with pytest.raises(PluginError, match=cliff + " while x$"), naming_user_code(cfg, "x"):
        users_module.cliff(9, cfg.train)  # type: ignore[attr-defined]
    with pytest.raises(ZeroDivisionError), naming_user_code(cfg):
        _ = 1 / 0  # raised here, in no code of the user's: not theirs to fix


def test_the_advice_for_a_non_finite_loss_names_the_users_attention() -> None:
    nmt.register_attention("zeros", Zeros)
    assert nonfinite_advice(config()) == "lower train.lr or enable train.clip_grad_norm"
    advice = nonfinite_advice(config("model.attention.type=zeros"))
    assert advice.startswith("the model attends with your attention zeros: check that its scores")
    assert advice.endswith("or lower train.lr or enable train.clip_grad_norm")
