"""A checkpoint whose weights hold NaN or an infinity is refused in one line naming it (issue 70): it
translated every line to nothing, with only the warning for a model that has not learned yet."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

import nmt
from conftest import run_cli
from nmt.run import checkpoint as ckpt
from nmt.util.errors import CheckpointError


@pytest.fixture(params=[float("nan"), float("inf")], ids=["nan", "inf"])
def spoiled(request, trained_toy: Path, tmp_path: Path) -> tuple[Path, str]:
    """A copy of the toy run whose best.pt has one weight set to ``request.param``; that weight's name."""
    run = tmp_path / "toy"
    shutil.copytree(trained_toy, run)
    path = run / "checkpoints" / "best.pt"
    saved = ckpt.load(path)
    name = next(key for key, tensor in saved.model.items() if tensor.is_floating_point())
    saved.model[name].view(-1)[0] = request.param
    ckpt.save(path, saved)
    return path, name


def test_translate_refuses_the_checkpoint_in_one_line(spoiled, tmp_path, capsys):
    path, name = spoiled
    source = tmp_path / "in.txt"
    source.write_text("a b c\n", encoding="utf-8")
    out = tmp_path / "out.txt"
    code, _out, err = run_cli(["translate", "--checkpoint", str(path), "-i", str(source), "-o", str(out)], capsys)
    lines = err.strip().splitlines()
    assert code == 2 and len(lines) == 1, err
    assert lines[0].startswith(f"nmt: error: {path}: weight {name} holds NaN or infinite values")
    assert "not learned" not in err and not out.exists()


def test_the_library_refuses_it_too(spoiled):
    path, name = spoiled
    with pytest.raises(CheckpointError, match=f"weight {name} holds NaN or infinite values") as refused:
        nmt.load(path)
    assert str(path) in str(refused.value) and "\n" not in str(refused.value)


def test_a_finite_checkpoint_still_loads(trained_toy):
    assert len(nmt.load(trained_toy / "checkpoints" / "best.pt").translate(["a b c"])) == 1
