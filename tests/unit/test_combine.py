"""The combine step (``model.attention.combine``): nmt's tanh, maxout and gate in both decoder styles, the
tanh's parameters under the names checkpoints written before the step existed use, and a user's combine
registered, checked (a wrong shape or rows that mix are named), refused when it is not a Combine, and
built from a config.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
import torch
from torch import Tensor, nn

import nmt
from nmt.config import from_dict
from nmt.config.combines import COMBINE_NAMES, COMBINES
from nmt.model.build import build_model
from nmt.util.registry import PluginError


@pytest.fixture(autouse=True)
def registered_in_the_test_only(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.setattr(COMBINES, "_entries", dict(COMBINES._entries))
    yield


def model_of(type_: str, combine: str):
    torch.manual_seed(0)
    cfg = from_dict({"model": {"hidden_size": 16, "emb_size": 8, "attention": {"type": type_, "combine": combine}}})
    return build_model(cfg.model, 20, 20)


@pytest.mark.parametrize("combine", COMBINE_NAMES)
@pytest.mark.parametrize("type_", ["bahdanau", "luong_general"])
def test_each_combine_trains_in_both_styles_and_step_by_step_equals_the_whole_target(type_: str, combine: str) -> None:
    assert len(nmt.check_combine(combine)) == 3
    model = model_of(type_, combine)
    src, src_len, tgt = torch.randint(4, 20, (3, 6)), torch.tensor([6, 4, 1]), torch.randint(4, 20, (3, 5))
    logits, _ = model(src, src_len, tgt)
    logits.logsumexp(-1).sum().backward()
    readout = [p for name, p in model.named_parameters() if name.startswith("decoder.readout.")]
    assert readout and all(p.grad is not None and p.grad.abs().sum() > 0 for p in readout)
    model.eval()
    whole, _ = model(src, src_len, tgt)
    enc = model.encode(src, src_len)
    state, steps = model.init_state(enc), []
    for t in range(tgt.size(1)):
        step_logits, state, _ = model.step(tgt[:, t], state, enc)
        steps.append(step_logits)
    torch.testing.assert_close(torch.stack(steps, 1), whole, atol=1e-5, rtol=1e-5)


def test_the_default_tanh_keeps_the_parameter_names_of_earlier_checkpoints() -> None:
    names = set(model_of("bahdanau", "tanh").state_dict())
    assert {"decoder.readout.weight", "decoder.readout.bias"} <= names
    gate = model_of("bahdanau", "gate")
    x = torch.randn(2, 16 + 32 + 8)  # [s; c; e]: H, K (bidirectional), E
    info, g = gate.decoder.readout.information, gate.decoder.readout.gate
    torch.testing.assert_close(gate.decoder.readout(x), torch.sigmoid(g(x)) * info(x))


class Doubled(nmt.Combine):
    """A wrong output size: 2H."""

    def __init__(self, in_size: int, out_size: int) -> None:
        super().__init__()
        self.linear = nn.Linear(in_size, 2 * out_size)

    def forward(self, x: Tensor) -> Tensor:
        return self.linear(x)


class BatchNormed(nmt.Combine):
    """Rows that mix: each output standardized over the batch."""

    def __init__(self, in_size: int, out_size: int) -> None:
        super().__init__()
        self.linear = nn.Linear(in_size, out_size)

    def forward(self, x: Tensor) -> Tensor:
        y = self.linear(x)
        return (y - y.mean(0)) / (y.std(0, correction=0) + 1e-5)


class Scaled(nmt.Combine):
    """A correct one: tanh(W x) times a learned scale."""

    def __init__(self, in_size: int, out_size: int) -> None:
        super().__init__()
        self.linear = nn.Linear(in_size, out_size)
        self.scale = nn.Parameter(torch.ones(()))

    def forward(self, x: Tensor) -> Tensor:
        return self.scale * torch.tanh(self.linear(x))


@pytest.mark.parametrize(
    "combine,words",
    [(Doubled, r"output \(3, 5, 16\), expected \(B, T, out_size\)"), (BatchNormed, "changes with the other rows")],
)
def test_check_combine_names_what_a_broken_one_gets_wrong(combine: type, words: str) -> None:
    nmt.register_combine("broken", combine)
    with pytest.raises(PluginError, match=words):
        nmt.check_combine("broken")
    assert "broken" not in COMBINES  # unregistered: a config no longer offers it


def test_a_users_combine_is_registered_checked_and_built_from_a_config() -> None:
    with pytest.raises(PluginError, match=r"not a subclass of nmt\.Combine"):
        nmt.register_combine("plain", nn.Linear)
    nmt.register_combine("scaled", Scaled)
    assert len(nmt.check_combine("scaled")) == 3
    model = model_of("luong_general", "scaled")
    assert isinstance(model.decoder.readout, Scaled)
