"""Which checkpoints ``nmt average`` takes together: one network, judged by nmt.config.saved."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from nmt import config as C
from nmt.model.build import build_model
from nmt.run import checkpoint as ckpt
from nmt.run.state import TrainState
from nmt.training.average import average
from nmt.util.errors import UserError

BASE = ["model.hidden_size=256", "model.emb_size=16", "model.init_state=bridge"]
TOKENIZERS = {"src": b"spm-src", "tgt": b"spm-tgt"}


def _saved(path: Path, overrides: list[str], step: int, seed: int) -> Path:
    """A model-only checkpoint of a tiny vocabulary built from ``overrides``."""
    cfg = C.load(None, overrides)
    torch.manual_seed(seed)
    model = build_model(cfg.model, 11, 13)
    return ckpt.save(
        path,
        ckpt.Checkpoint(
            config=cfg.model_dump(mode="json"),
            model=model.state_dict(),
            tokenizers=TOKENIZERS,
            state=TrainState(step=step),
        ),
    )


def test_half_and_its_size_average_together(tmp_path: Path) -> None:
    """enc_hidden_size half and 128 (hidden 256) build one network: the two checkpoints average."""
    a = _saved(tmp_path / "a.pt", [*BASE, "model.enc_hidden_size=half"], step=1, seed=1)
    b = _saved(tmp_path / "b.pt", [*BASE, "model.enc_hidden_size=128", "model.dropout=0.4"], step=2, seed=2)
    mean = average([a, b])
    first, second = ckpt.load(a).model, ckpt.load(b).model
    key = next(k for k, v in first.items() if v.is_floating_point())
    assert torch.allclose(mean.model[key], (first[key] + second[key]) / 2)
    assert mean.config == ckpt.load(b).config  # the newest one's config, as it was saved


def test_another_network_is_refused_naming_the_option(tmp_path: Path) -> None:
    a = _saved(tmp_path / "a.pt", [*BASE, "model.enc_hidden_size=half"], step=1, seed=1)
    b = _saved(tmp_path / "b.pt", [*BASE, "model.enc_hidden_size=64"], step=2, seed=2)
    with pytest.raises(UserError, match=r"its model differs from .*a\.pt's \(enc_hidden_size\)"):
        average([a, b])
