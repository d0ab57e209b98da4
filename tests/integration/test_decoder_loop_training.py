"""A decoder loop of the user's trains through nmt: the same losses as nmt's own loop under one seed
when it draws its coins as nmt does, checked before the first update, and recorded with the run."""

from __future__ import annotations

import pytest
import torch

import nmt
from conftest import toy_overrides, train_losses
from nmt.training.entry import run_training

pytestmark = pytest.mark.usefixtures("isolated_registries")


def coin_per_sentence_and_position(step, tgt_in, state, p):
    """The teacher-forcing loop as notebook 10 asks students to write it."""
    B, T = tgt_in.shape
    use_reference = torch.rand(B, T, device=tgt_in.device) < p
    tokens, logits = tgt_in[:, 0], []
    for t in range(T):
        if t > 0:
            tokens = torch.where(use_reference[:, t], tgt_in[:, t], logits[-1].argmax(-1))
        out, state = step(tokens, state)
        logits.append(out)
    return torch.stack(logits, dim=1)


def test_a_users_loop_trains_to_nmts_losses_and_is_recorded(tmp_path, toy_files) -> None:
    _, files = toy_files
    nmt.register_loop("coin", coin_per_sentence_and_position)
    common = dict(train__max_steps=12, train__valid_every=12, train__teacher_forcing=0.5, train__tensorboard=False)
    run_training(None, toy_overrides(tmp_path / "own", files, **common), progress=False)
    run_training(None, toy_overrides(tmp_path / "mine", files, train__decoder_loop="coin", **common), progress=False)
    own, mine = train_losses(tmp_path / "own" / "runs" / "toy"), train_losses(tmp_path / "mine" / "runs" / "toy")
    assert len(own) == 12 and own == mine
    saved = (tmp_path / "mine" / "runs" / "toy" / "config.yaml").read_text(encoding="utf-8")
    assert "decoder_loop: coin" in saved


def test_a_wrong_loop_is_refused_before_the_first_update(tmp_path, toy_files) -> None:
    def per_batch(step, tgt_in, state, p):
        tokens, logits = tgt_in[:, 0], []
        for t in range(tgt_in.size(1)):
            if t > 0:
                tokens = tgt_in[:, t] if torch.rand(()) < p else logits[-1].argmax(-1)
            out, state = step(tokens, state)
            logits.append(out)
        return torch.stack(logits, dim=1)

    _, files = toy_files
    nmt.register_loop("per_batch", per_batch)
    with pytest.raises(nmt.PluginError, match=r"^decoder loop per_batch fails a check: .*draw one coin per sentence"):
        run_training(None, toy_overrides(tmp_path, files, train__decoder_loop="per_batch"), progress=False)
    assert not (tmp_path / "runs" / "toy").exists()  # checked before the run's folder is touched
