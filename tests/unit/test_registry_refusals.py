"""What the registry and ``--module`` refuse, each in one line before anything runs: targets of the
wrong kind, names a config already gives a meaning, energy defaults a config cannot take, module
names and files that are not modules or would replace another module, imports that fail, and
tampered code records of a checkpoint.
"""

from __future__ import annotations

import math
import sys
from pathlib import Path
from typing import Any

import pytest
import torch
from torch import Tensor

import nmt
from nmt import config as C
from nmt.api.extending import allowing_modules
from nmt.config.attention_space import ATTENTIONS
from nmt.config.named_code import admit_code
from nmt.config.schedules import TF_SCHEDULES
from nmt.config.variants import registered_variants
from nmt.util.errors import ConfigError, UserError
from nmt.util.registry import MAX_NAME_CHARS, PluginError, allowing, import_module


@pytest.fixture(autouse=True)
def fresh_registries(monkeypatch: pytest.MonkeyPatch) -> None:
    """Each test registers into copies: nothing it adds outlives it."""
    for registry in (ATTENTIONS, TF_SCHEDULES):
        monkeypatch.setattr(registry, "_entries", dict(registry._entries))


class Halves(nmt.Energy):
    def forward(self, q: Tensor, k: Tensor) -> Tensor:
        return q @ k.transpose(-1, -2) / 2


def with_defaults(defaults: Any) -> type:
    return type("Defaulted", (Halves,), {"defaults": defaults})


@pytest.mark.parametrize(
    "target",
    [42, lambda q, k: q, nmt.Energy, torch.nn.Linear, "Halves", Halves.forward],
    ids=["int", "function", "Energy", "Linear", "str", "method"],
)
def test_only_a_subclass_of_energy_registers_as_an_attention(target: Any) -> None:
    with pytest.raises(PluginError, match=r"^attention 'mine': .* is not a subclass of nmt\.Energy"):
        nmt.register_attention("mine", target)
    assert "mine" not in ATTENTIONS


@pytest.mark.parametrize(
    "target",
    [math.pi, int, lambda: 0.5, lambda step: 0.5, lambda a, b, c: 0.5],
    ids=["float", "class", "no-argument", "one-argument", "three-arguments"],
)
def test_only_a_function_of_step_and_train_registers_as_a_schedule(target: Any) -> None:
    with pytest.raises(PluginError, match=r"^teacher-forcing schedule 'mine': .* (is not a function|does not take)"):
        nmt.register_schedule("mine", target)
    nmt.register_schedule("fine", lambda step, train, *rest: 0.5)  # extra optional arguments are fine


@pytest.mark.parametrize(
    "defaults,words",
    [
        ({"heads": 0}, r"heads=0: expected an integer >= 1"),
        ({"heads": True}, r"heads=True: expected an integer >= 1"),
        ({"query_map": "cubic"}, r"query_map='cubic': expected identity or linear"),
        ({"style": "loong"}, r"style='loong': expected bahdanau or luong"),
        ({"out_proj": 1}, r"out_proj=1: expected true or false"),
        ({"energy": "mlp"}, r"sets energy in its defaults: the class is the energy"),
        ({"rank": 4}, r"has defaults 'rank': they may set query_map"),
        (["heads"], r"give a dict of axes"),
    ],
)
def test_energy_defaults_a_config_cannot_take_are_refused_at_registration(defaults: Any, words: str) -> None:
    with pytest.raises(PluginError, match=words):
        nmt.register_attention("mine", with_defaults(defaults))
    nmt.register_attention("mine", with_defaults({"heads": 2, "style": "bahdanau", "query_map": "linear"}))


@pytest.mark.parametrize("name", ["bahdanau", "none", "qkv", "custom", "luong_location", "mlp"])
def test_a_name_a_config_already_means_cannot_be_registered(name: str) -> None:
    with pytest.raises(PluginError, match=rf"^attention '{name}' is (nmt's own|an attention preset|a variant)"):
        nmt.register_attention(name, Halves)
    assert ATTENTIONS.get("mlp").builtin and name not in registered_variants()


def test_a_long_name_is_refused_and_a_wrong_type_of_name_too() -> None:
    with pytest.raises(PluginError, match=f"at most {MAX_NAME_CHARS} characters"):
        nmt.register_attention("a" * 100_000, Halves)
    with pytest.raises(PluginError, match="use letters, digits and _"):
        nmt.register_attention(42, Halves)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    "override",
    [
        "model.attention.type=os:system",
        "model.attention.type=torch.nn:Linear",
        "model.attention.type=nmt:Energy",
        "train.tf_schedule=math:pi",
        "train.tf_schedule=builtins:int",
    ],
)
def test_an_import_path_to_code_of_the_wrong_kind_is_refused_in_one_line(override: str) -> None:
    with pytest.raises(ConfigError, match=r"(not a subclass of nmt\.Energy|is not a function)") as caught:
        C.load(None, [override], import_code=True)
    assert "\n" not in str(caught.value)


def test_check_attention_refuses_the_base_class_and_a_path_to_a_function() -> None:
    with pytest.raises(PluginError, match=r"not a subclass of nmt\.Energy"):
        nmt.check_attention(nmt.Energy)
    with pytest.raises(PluginError, match=r"'os:getcwd' is code outside nmt.*--module os"):
        nmt.check_attention("os:getcwd")
    with allowing(["os"]), pytest.raises(PluginError, match=r"not a subclass of nmt\.Energy"):
        nmt.check_attention("os:getcwd")


@pytest.mark.parametrize(
    "modules", [None, 5, "cosine", [""], [".."], ["."], [" "], [3]], ids=["None", "5", "str", "", "..", ".", " ", "3"]
)
def test_modules_of_the_wrong_kind_are_refused_naming_the_parameter(modules: Any) -> None:
    with pytest.raises(UserError, match=r"^modules?\b") as caught, allowing_modules(modules):
        pass
    assert "\n" not in str(caught.value)


def write(folder: Path, name: str, text: str) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / name
    path.write_text(text, encoding="utf-8")
    return path


def test_a_module_that_fails_to_import_is_one_line_naming_how(tmp_path: Path) -> None:
    broken = write(tmp_path, "broken_syntax.py", "def f(:\n")
    with pytest.raises(PluginError, match=r"module broken_syntax: syntax error in .* line 1"):
        import_module(str(broken))
    raising = write(tmp_path, "raising_mod.py", "raise RuntimeError('no GPU here')\n")
    with pytest.raises(PluginError, match=r"module raising_mod: importing it raised RuntimeError: 'no GPU here'"):
        import_module(str(raising))
    write(tmp_path, "needs_missing.py", "import not_installed_anywhere\n")
    with pytest.raises(PluginError, match=r"module needs_missing: its own import failed: .*'not_installed_anywhere'"):
        import_module("needs_missing", tmp_path)
    with pytest.raises(PluginError, match=r"module absent_mod not found \(looked in"):
        import_module("absent_mod", tmp_path)
    assert not {"broken_syntax", "raising_mod", "needs_missing"} & set(sys.modules)


@pytest.mark.parametrize("stem", ["json", "torch", "nmt", "os"])
def test_a_module_file_never_replaces_a_module_of_its_name(tmp_path: Path, stem: str) -> None:
    before = sys.modules.get(stem)
    path = write(tmp_path / "pl2", f"{stem}.py", "VALUE = 1\n")
    with pytest.raises(PluginError, match=rf"the module '{stem}' is already .*rename the file"):
        import_module(str(path))
    assert sys.modules.get(stem) is before


def test_a_second_module_file_of_the_same_name_is_refused(tmp_path: Path) -> None:
    first = write(tmp_path / "a", "same_name_mod.py", "VALUE = 1\n")
    second = write(tmp_path / "b", "same_name_mod.py", "VALUE = 2\n")
    try:
        assert import_module(str(first)).VALUE == 1
        assert import_module(str(first)).VALUE == 1  # the same file again is fine
        with pytest.raises(PluginError, match=r"is already .*a/same_name_mod\.py"):
            import_module(str(second))
        assert sys.modules["same_name_mod"].VALUE == 1
    finally:
        sys.modules.pop("same_name_mod", None)


def record(**changes: Any) -> dict[str, Any]:
    return {"kind": "attention", "name": "halves", "origin": "halves:Halves", "sha256": None, **changes}


@pytest.mark.parametrize(
    "changes",
    [
        {"origin": "/abs/x.py:X"},
        {"origin": "../evil:X"},
        {"origin": "x" * 1_000_000 + ":X"},
        {"name": "n" * 1_000_000},
        {"name": 5},
        {"sha256": "not a hash"},
    ],
    ids=["absolute-path", "parent-path", "huge-origin", "huge-name", "int-name", "bad-hash"],
)
def test_a_tampered_code_record_is_refused_in_a_short_line_without_advice_to_import_it(changes: dict) -> None:
    with pytest.raises(PluginError, match=r"^ck\.pt: its record of user code .* is not one nmt writes") as caught:
        admit_code([record(**changes)], "ck.pt")
    assert len(str(caught.value)) < 400 and "--module" not in str(caught.value)


def test_a_registered_energy_still_loads_as_a_variant_and_a_config_type() -> None:
    nmt.register_attention("halves", Halves)
    assert registered_variants().count("halves") == 1
    cfg = C.load(None, ["model.attention.type=halves", "model.attention.key_map=linear"])
    assert cfg.model.attention.axes()["energy"] == "halves"


class Broken(nmt.Energy):
    def forward(self, q: Tensor, k: Tensor) -> Tensor:
        return (q @ k.transpose(-1, -2))[..., :1]  # one key's score only: the wrong shape


def test_a_name_that_failed_check_attention_is_no_longer_offered() -> None:
    nmt.register_attention("broken_one", Broken)
    with pytest.raises(PluginError, match="scores have shape"):
        nmt.check_attention("broken_one")
    assert "broken_one" not in ATTENTIONS and "broken_one" not in registered_variants()
    with pytest.raises(PluginError, match="scores have shape"):
        nmt.check_attention(Broken)  # registered by the check under its import path, and removed again
    assert ATTENTIONS.name_of(Broken) is None
    with pytest.raises(ConfigError, match=r"model\.attention\.type: expected a preset"):
        C.load(None, ["model.attention.type=broken_one"])


class KeyNormalized(nmt.Energy):
    """Divides by each key's L1 norm: fine on real keys, NaN on the zero states of padding."""

    def forward(self, q: Tensor, k: Tensor) -> Tensor:
        return q @ (k / k.abs().sum(-1, keepdim=True)).transpose(-1, -2)


class ScoreDropout(nmt.Energy):
    """Dropout on the scores in training: a legitimate design, inactive in evaluation."""

    def __init__(self, query_size: int, key_size: int, heads: int = 1) -> None:
        super().__init__(query_size, key_size, heads)
        self.drop = torch.nn.Dropout(0.5)

    def forward(self, q: Tensor, k: Tensor) -> Tensor:
        return self.drop(q @ k.transpose(-1, -2))


def test_check_attention_pads_with_zeros_as_encoders_do_and_runs_in_evaluation_mode() -> None:
    with pytest.raises(PluginError, match=r"not all finite|non-finite"):
        nmt.check_attention(KeyNormalized)
    assert len(nmt.check_attention(ScoreDropout)) == 6


def test_a_name_another_modules_code_holds_is_refused_unless_replacing_is_asked_for() -> None:
    other = type("Elsewhere", (Halves,), {"__module__": "somebody_elses"})
    nmt.register_attention("shared_name", Halves)
    nmt.register_attention("shared_name", Halves)  # the same module again (a notebook cell run twice)
    with pytest.raises(PluginError, match=r"'shared_name' is already .*replace=True"):
        nmt.register_attention("shared_name", other)
    nmt.register_attention("shared_name", other, replace=True)
    assert ATTENTIONS.get("shared_name").target is other


def test_an_unknown_name_says_how_to_import_the_module_that_registers_it() -> None:
    with pytest.raises(ConfigError, match=r"--module, or modules=\[\.\.\.\]"):
        C.load(None, ["model.attention.type=lowrank"])
    with pytest.raises(ConfigError, match=r"--module, or modules=\[\.\.\.\]"):
        C.load(None, ["train.tf_schedule=warmup"])
