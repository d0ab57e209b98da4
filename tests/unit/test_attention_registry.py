"""The registry an attention or a schedule of one's own joins: nmt's own entries go through it too.

Properties: the built-in energies are registered classes whose traits the config's table repeats
exactly; a user's energy is named by a config like a preset, built by the same Attention, checked
by check_attention (which fails, in one line, on each property broken on purpose), and recorded in
a checkpoint so that loading imports only allowed modules whose source has not changed.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import ClassVar

import pytest
import torch
from torch import Tensor, nn

import nmt
from nmt import config as C
from nmt.config.attention_space import _BUILTIN_TRAITS, ATTENTION_ENERGIES, ATTENTIONS, Traits, energy_traits
from nmt.config.named_code import admit_code, code_record
from nmt.config.schedules import TF_SCHEDULE_NAMES, TF_SCHEDULES
from nmt.model import energies
from nmt.model.attention import Attention
from nmt.training.schedules import teacher_forcing_p
from nmt.util.errors import ConfigError
from nmt.util.registry import PluginError, allowing, fingerprint

REPO = Path(__file__).resolve().parents[2]
EXAMPLE = REPO / "examples" / "attention" / "cosine.py"


@pytest.fixture(autouse=True)
def fresh_registries(monkeypatch: pytest.MonkeyPatch) -> None:
    """Each test registers into copies: nothing it adds outlives it."""
    for registry in (ATTENTIONS, TF_SCHEDULES):
        monkeypatch.setattr(registry, "_entries", dict(registry._entries))


class HalfDot(nmt.Energy):
    """q.k / 2: a user's energy, defined in a test module (an importable module with a source)."""

    defaults: ClassVar[dict[str, str]] = {"query_map": "linear", "key_map": "linear"}

    def forward(self, q: Tensor, k: Tensor) -> Tensor:
        return q @ k.transpose(-1, -2) / 2


def test_every_builtin_energy_is_a_registered_energy_class_with_the_traits_the_config_assumes() -> None:
    assert set(_BUILTIN_TRAITS) == set(ATTENTION_ENERGIES)
    for name in ATTENTION_ENERGIES:
        entry = ATTENTIONS.get(name)
        assert entry.builtin and issubclass(entry.target, energies.Energy)
        assert _BUILTIN_TRAITS[name] == Traits(*(getattr(entry.target, t) for t in Traits._fields)), name
    assert set(TF_SCHEDULE_NAMES) <= set(TF_SCHEDULES.names()) and all(
        TF_SCHEDULES.get(n).builtin for n in TF_SCHEDULE_NAMES
    )


def test_a_builtin_name_cannot_be_taken_and_a_bad_name_is_refused() -> None:
    with pytest.raises(PluginError, match="'mlp' is nmt's own"):
        nmt.register_attention("mlp", HalfDot)
    with pytest.raises(PluginError, match="use letters, digits and _"):
        nmt.register_attention("half dot", HalfDot)


def test_a_registered_energy_is_a_config_type_with_its_class_defaults_and_builds_like_a_builtin() -> None:
    with pytest.raises(ConfigError, match=r"^model\.attention\.type: expected a preset"):
        C.load(None, ["model.attention.type=half"])
    nmt.register_attention("half", HalfDot)
    att = C.load(None, ["model.attention.type=half"]).model.attention
    assert att.axes() == {
        "energy": "half",
        "query_map": "linear",
        "key_map": "linear",
        "value_map": "identity",
        "out_proj": False,
        "heads": 1,
    }
    assert att.resolved_style == "luong"
    built = Attention(8, 8, energy="half", query_map="linear", key_map="linear")
    assert isinstance(built.score, HalfDot) and energy_traits("half") == Traits(True, True, True)
    with pytest.raises(ConfigError, match="needs equal query and key sizes"):  # same_size, as for dot
        C.load(None, ["model.attention.type=custom", "model.attention.energy=half", "model.bidirectional=true"])


def test_an_import_path_in_a_config_imports_the_module_beside_the_config(tmp_path: Path) -> None:
    (tmp_path / "thirds.py").write_text(
        "import nmt\n\nclass Third(nmt.Energy):\n    def forward(self, q, k):\n        return q @ k.transpose(-1, -2) / 3\n",
        encoding="utf-8",
    )
    path = tmp_path / "c.yaml"
    path.write_text("model:\n  attention:\n    type: custom\n    energy: thirds:Third\n    key_map: linear\n")
    try:
        with pytest.raises(ConfigError, match=r"thirds:Third' is code outside nmt.*--module thirds"):
            C.load(path)  # only read (nmt config, a plan): nothing imported
        assert "thirds" not in sys.modules
        assert C.load(path, import_code=True).model.attention.axes()["energy"] == "thirds:Third"
        assert ATTENTIONS.get("thirds:Third").origin == "thirds:Third"
    finally:
        sys.modules.pop("thirds", None)
    path.write_text("model:\n  attention:\n    type: nowhere_module:Energy\n")
    with pytest.raises(ConfigError, match=r"^model\.attention\.type: module nowhere_module not found \(looked in"):
        C.load(path, import_code=True)


class WrongShape(nmt.Energy):
    def forward(self, q: Tensor, k: Tensor) -> Tensor:
        return q @ k.transpose(-1, -2)[..., :1]  # (B, h, T, 1): one key


class PadAware(nmt.Energy):
    def forward(self, q: Tensor, k: Tensor) -> Tensor:  # sharper the more keys, padding counted
        return q @ k.transpose(-1, -2) * k.size(-2)


class Frozen(nmt.Energy):
    def __init__(self, query_size: int, key_size: int, heads: int = 1) -> None:
        super().__init__(query_size, key_size, heads)
        self.unused = nn.Parameter(torch.ones(1))

    def forward(self, q: Tensor, k: Tensor) -> Tensor:
        return q @ k.transpose(-1, -2) + 0 * self.unused


class Stepwise(nmt.Energy):
    def forward(self, q: Tensor, k: Tensor) -> Tensor:  # each query sees the mean of the queries: leaks across T
        return (q + q.mean(-2, keepdim=True)) @ k.transpose(-1, -2)


@pytest.mark.parametrize(
    "energy,words",
    [
        (WrongShape, "scores have shape"),
        (PadAware, "changes with the padding or the other sentences"),
        (Frozen, "every parameter of the energy gets a zero gradient"),
        (Stepwise, r"one at a time \(decoding\) differ from all at once"),
    ],
)
def test_check_attention_names_the_property_a_broken_energy_fails(energy: type, words: str) -> None:
    with pytest.raises(PluginError, match=words):
        nmt.check_attention(energy)


def test_check_attention_passes_every_builtin_and_the_worked_example() -> None:
    for name in ATTENTION_ENERGIES:
        assert len(nmt.check_attention(name)) == (7 if energy_traits(name).stateful else 6), name
    with allowing([str(EXAMPLE)]):
        assert len(nmt.check_attention("cosine")) == 6


def test_a_checkpoint_records_a_users_code_and_loading_admits_it_only_when_allowed(tmp_path: Path) -> None:
    module = tmp_path / "halves.py"
    module.write_text(
        "import nmt\n\n@nmt.register_attention('halves')\nclass Halves(nmt.Energy):\n"
        "    defaults = {'key_map': 'linear'}\n\n"
        "    def forward(self, q, k):\n        return q @ k.transpose(-1, -2) / 2\n",
        encoding="utf-8",
    )
    sys.path.insert(0, str(tmp_path))
    try:
        with allowing(["halves"]):
            raw = C.load(None, ["model.attention.type=halves"]).model_dump(mode="json")
        (record,) = code_record(raw)
        assert record == {
            "kind": "attention",
            "name": "halves",
            "origin": "halves:Halves",
            "sha256": fingerprint(ATTENTIONS.get("halves").target),
        }
        ATTENTIONS._entries.pop("halves")
        sys.modules.pop("halves")
        with pytest.raises(PluginError, match=r"ck\.pt: its attention 'halves' is code outside nmt .*--module halves"):
            admit_code([record], "ck.pt")
        assert "halves" not in sys.modules  # refused without importing anything
        with allowing(["halves"]):
            admit_code([record], "ck.pt")
        assert ATTENTIONS.get("halves").origin == "halves:Halves"
        with pytest.raises(PluginError, match="changed since this model was trained"):
            admit_code([{**record, "sha256": "0" * 64}], "ck.pt")
        with pytest.raises(PluginError, match="is not one nmt writes"):
            admit_code([{"kind": "optimizer"}], "ck.pt")
    finally:
        sys.path.remove(str(tmp_path))
        sys.modules.pop("halves", None)


def test_a_registered_schedule_gives_p_and_one_outside_0_1_is_refused_naming_it() -> None:
    nmt.register_schedule("halving", lambda step, train: train.teacher_forcing / 2 ** (step // 100))
    cfg = C.load(None, ["train.tf_schedule=halving", "train.teacher_forcing=0.8"]).train
    assert [teacher_forcing_p(cfg, s) for s in (0, 100, 250)] == [0.8, 0.4, 0.2]
    nmt.register_schedule("broken", lambda step, train: 1.5)
    with pytest.raises(PluginError, match=r"train\.tf_schedule=broken gave p=1\.5 at update 0"):
        teacher_forcing_p(C.load(None, ["train.tf_schedule=broken"]).train, 0)
    with pytest.raises(ConfigError, match=r"^train\.tf_schedule: expected one of 'constant'"):
        C.load(None, ["train.tf_schedule=cosine_decay"])
