"""User code that fails, through the commands: ``nmt train``, ``nmt diagnose attention`` and ``nmt export``
end in one line naming the attention or schedule (status 2), never in an internal error.

Each user module is a file passed with ``--module``, as a user passes theirs; each case's file has a
name of its own, since a module is imported once per process.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path
from typing import ClassVar

import pytest
import torch
from torch import Tensor

import nmt
from conftest import run_cli, toy_overrides
from nmt import config as C
from nmt.config.attention_space import ATTENTIONS
from nmt.config.schedules import TF_SCHEDULES
from nmt.data.prepare import load_prepared
from nmt.model.build import build_model
from nmt.run import checkpoint as ckpt
from nmt.run.state import TrainState
from nmt.util import registry

HEAD = "import nmt\nimport torch\n\n\n"
LINEAR = '    defaults = {"query_map": "linear", "key_map": "linear"}\n\n'


def energy(name: str, body: str, extra: str = "") -> str:
    """A module registering energy ``name`` whose forward(q, k) runs ``body``."""
    return (
        f"{HEAD}@nmt.register_attention({name!r})\nclass Energy_{name}(nmt.Energy):\n{LINEAR}{extra}"
        f"    def forward(self, q, k):\n        {body}\n"
    )


BROKEN = {
    "raising": (energy("raising", "raise ValueError('no scores today')"), "raised ValueError: no scores today"),
    "wrong_init": (
        energy(
            "wrong_init",
            "return q @ k.transpose(-1, -2)",
            "    def __init__(self, size):\n        super().__init__(size, size)\n\n",
        ),
        "__init__ takes (query_size, key_size, heads=1)",
    ),
    "greedy": (energy("greedy", "torch.empty(2**50); return q @ k.transpose(-1, -2)"), "can't allocate memory"),
    "listed": (energy("listed", "return [q @ k.transpose(-1, -2)]"), "returned a list, not a tensor"),
    "integers": (energy("integers", "return (q @ k.transpose(-1, -2)).long()"), "returned torch.int64 scores"),
    "short_only": (energy("short_only", "return (q @ k.transpose(-1, -2))[..., :8]"), "scores have shape"),
}


@pytest.fixture(autouse=True)
def registered_in_the_test_only(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """What a test registers, allows or imports in this process ends with it."""
    for kept in (ATTENTIONS, TF_SCHEDULES):
        monkeypatch.setattr(kept, "_entries", dict(kept._entries))
    tokens = registry._ALLOWED.set(registry._ALLOWED.get()), registry._GIVEN.set(registry._GIVEN.get())
    modules = set(sys.modules)
    yield
    registry._ALLOWED.reset(tokens[0])
    registry._GIVEN.reset(tokens[1])
    for name in set(sys.modules) - modules:
        if name.startswith("users_"):
            del sys.modules[name]


def module_file(folder: Path, stem: str, source: str) -> str:
    path = folder / f"users_{stem}.py"
    path.write_text(source, encoding="utf-8")
    return str(path)


def sets(root: Path, files: dict, **extra: object) -> list[str]:
    return [a for s in toy_overrides(root, files, **extra) for a in ("--set", s)]


def one_line(code: int, err: str) -> str:
    assert code == 2 and len(err.strip().splitlines()) == 1, err
    assert "internal error" not in err
    return err


@pytest.mark.parametrize("case", list(BROKEN))
def test_train_refuses_a_broken_energy_in_one_line_before_the_run_folder(tmp_path, toy_files, capsys, case):
    _, files = toy_files
    source, words = BROKEN[case]
    args = ["train", "--module", module_file(tmp_path, case, source), "--no-progress"]
    code, _, err = run_cli([*args, *sets(tmp_path, files, train__max_steps=2, model__attention__type=case)], capsys)
    assert f"attention {case}" in one_line(code, err) and words in err
    assert not (tmp_path / "runs" / "toy").exists()


def test_a_constant_energy_trains(tmp_path, toy_files, capsys):
    _, files = toy_files
    source = energy("flat", "return q.new_zeros(q.size(0), q.size(1), q.size(2), k.size(2))")
    args = ["train", "--module", module_file(tmp_path, "flat", source), "--no-progress"]
    extra = dict(train__max_steps=2, train__valid_every=2, model__attention__type="flat")
    code, _, err = run_cli([*args, *sets(tmp_path, files, **extra)], capsys)
    assert code == 0, err
    assert (tmp_path / "runs" / "toy" / "checkpoints" / "last.pt").is_file()


SCHEDULES = {
    "wrong_signature": "def wrong_signature(step):\n    return 1.0\n",
    "cliff": "def cliff(step, train):\n    if step == 2:\n        raise KeyError('past the cliff')\n    return 1.0\n",
}


@pytest.mark.parametrize("name,words", [("wrong_signature", "(step, train)"), ("cliff", "raised KeyError")])
def test_a_schedule_with_a_wrong_signature_or_raising_mid_run_is_one_line(tmp_path, toy_files, capsys, name, words):
    _, files = toy_files
    source = f"{HEAD}{SCHEDULES[name]}\n\nnmt.register_schedule({name!r}, {name})\n"
    args = ["train", "--module", module_file(tmp_path, name, source), "--no-progress"]
    extra = dict(train__max_steps=4, train__valid_every=0, train__tf_schedule=name)
    code, _, err = run_cli([*args, *sets(tmp_path, files, **extra)], capsys)
    assert name in one_line(code, err) and words in err


PICKY = (
    "if q.size(0) > 3:\n            raise RuntimeError('picky about batches')\n        return q @ k.transpose(-1, -2)"
)
"""Passes the checks (batches of 3 sentences and 1), raises on a training batch."""
NAN = "s = q @ k.transpose(-1, -2)\n        return s * float('nan') if q.size(0) > 3 else s"
"""Passes the checks, gives NaN scores on a training batch."""


def test_diagnose_attention_refuses_a_broken_energy_and_names_one_raising_while_measuring(tmp_path, toy_files, capsys):
    _, files = toy_files
    diagnose = ["diagnose", "attention", "--steps", "0", "--batches", "1", "--threads", "1"]
    broken = module_file(tmp_path, "d_raising", energy("d_raising", "raise ValueError('no scores today')"))
    code, _, err = run_cli([*diagnose, "--module", broken, "--variants", "d_raising", *sets(tmp_path, files)], capsys)
    assert "attention d_raising (heads=1) fails a check" in one_line(code, err)
    picky = module_file(tmp_path, "d_picky", energy("d_picky", PICKY))
    code, _, err = run_cli([*diagnose, "--module", picky, "--variants", "d_picky", *sets(tmp_path, files)], capsys)
    assert "attention d_picky raised RuntimeError: picky about batches while measuring variant d_picky" in one_line(
        code, err
    )


def test_train_names_an_energy_that_raises_mid_run(tmp_path, toy_files, capsys):
    _, files = toy_files
    args = ["train", "--module", module_file(tmp_path, "t_picky", energy("t_picky", PICKY)), "--no-progress"]
    code, _, err = run_cli(
        [*args, *sets(tmp_path, files, train__max_steps=2, model__attention__type="t_picky")], capsys
    )
    assert "attention t_picky raised RuntimeError: picky about batches while training" in one_line(code, err)


def test_a_non_finite_loss_names_the_users_attention(tmp_path, toy_files, capsys):
    _, files = toy_files
    args = ["train", "--module", module_file(tmp_path, "nanny", energy("nanny", NAN)), "--no-progress"]
    extra = dict(train__max_steps=4, train__max_nonfinite=2, model__attention__type="nanny")
    code, _, err = run_cli([*args, *sets(tmp_path, files, **extra)], capsys)
    assert "2 non-finite losses in a row" in one_line(code, err)
    assert "your attention nanny" in err and "train.lr" in err


class ShapeBranch(nmt.Energy):
    """Python control flow on the number of keys: right in PyTorch at every length, but a traced graph
    keeps the branch of the traced length (five tokens) for all."""

    defaults: ClassVar[dict[str, str]] = {"query_map": "linear", "key_map": "linear"}

    def forward(self, q: Tensor, k: Tensor) -> Tensor:
        scores = q @ k.transpose(-1, -2)
        if k.size(2) > 4:
            return scores
        return -scores


def test_an_export_whose_graph_fixed_a_branch_on_a_size_is_refused_in_one_line(tmp_path, toy_prepared, capsys):
    pytest.importorskip("onnxscript")
    pytest.importorskip("onnxruntime")
    nmt.register_attention("shape_branch", ShapeBranch)
    cfg = C.load(None, ["model.emb_size=8", "model.hidden_size=8", "model.attention.type=shape_branch"])
    _, tok, _ = load_prepared(toy_prepared)
    torch.manual_seed(0)
    model = build_model(cfg.model, tok.vocab_size, tok.vocab_size)
    state = ckpt.Checkpoint(
        cfg.model_dump(mode="json"), model.state_dict(), {"src": tok.model_bytes, "tgt": tok.model_bytes}, TrainState()
    )
    path = ckpt.save(tmp_path / "model.pt", state)
    code, _, err = run_cli(
        ["export", "--checkpoint", str(path), "--format", "onnx", "-o", str(tmp_path / "onnx")], capsys
    )
    assert "attention shape_branch does not export to ONNX" in one_line(code, err)
    assert "depends on a tensor's shape through Python control flow" in err and "--engine torch" in err
    assert not (tmp_path / "onnx").exists()
