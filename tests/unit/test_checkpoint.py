"""The versioned checkpoint type: round trip, training parts optional, old and new formats."""

from __future__ import annotations

import pytest
import torch

from nmt import checkpoint as ckpt
from nmt.errors import CheckpointError
from nmt.train_state import TrainState


def _full() -> ckpt.Checkpoint:
    return ckpt.Checkpoint(
        config={"name": "x"}, model={"w": torch.arange(6.0).view(2, 3)},
        tokenizers={"src": b"\x00spm-src\xff", "tgt": b"spm-tgt"},
        state=TrainState(step=12, epoch=1, pos=4, best=20.5, history=[(20.5, 12)], bad_validations=1,
                         nonfinite=0, elapsed=3.5),
        optimizer={"state": {}, "param_groups": []}, schedule={"steps": 12, "plateau": None},
        scaler={}, rng={"torch": torch.get_rng_state()}, world_size=1)


def test_save_load_round_trip(tmp_path):
    path = ckpt.save(tmp_path / "c.pt", _full())
    back = ckpt.load(path)
    assert back.state == _full().state and back.tokenizers == _full().tokenizers
    assert torch.equal(back.model["w"], _full().model["w"])
    assert back.schedule == {"steps": 12, "plateau": None} and back.trainable


def test_a_model_only_checkpoint_loads_but_cannot_resume(tmp_path):
    small = ckpt.Checkpoint(config={}, model={"w": torch.ones(2)}, tokenizers={"src": b"a", "tgt": b"b"})
    payload = small.to_payload()
    assert not {"optimizer", "schedule", "scaler", "rng", "rng_ranks"} & payload.keys()
    back = ckpt.load(ckpt.save(tmp_path / "m.pt", small))
    assert back.optimizer is None and not back.trainable


def test_format_1_payloads_still_load():
    payload = {"format": ckpt.FORMAT, "version": 1, "config": {}, "model": {},
               "tokenizers": {"src": ckpt.bytes_to_tensor(b"s"), "tgt": ckpt.bytes_to_tensor(b"t")},
               "step": 5, "epoch": 1, "pos": 2, "best": 9.0, "best_history": [[9.0, 5]],
               "bad_validations": 0, "elapsed": 1.5, "optimizer": {}, "schedule": {}, "scaler": {}, "rng": {}}
    back = ckpt.Checkpoint.from_payload(payload)
    assert back.state == TrainState(step=5, epoch=1, pos=2, best=9.0, history=[(9.0, 5)], elapsed=1.5)
    assert back.tokenizers == {"src": b"s", "tgt": b"t"}


@pytest.mark.parametrize("version, message", [
    (ckpt.VERSION + 1, "newer than this nmt reads.*upgrade nmt"),
    (0, "not one this nmt reads"),
    ("2", "not one this nmt reads"),
])
def test_an_unknown_version_is_a_clear_error(version, message):
    payload = {**_full().to_payload(), "version": version}
    with pytest.raises(CheckpointError, match=message):
        ckpt.Checkpoint.from_payload(payload, "x.pt")


def test_a_payload_missing_a_part_names_it():
    payload = _full().to_payload()
    del payload["model"]
    with pytest.raises(CheckpointError, match="incomplete.*'model'"):
        ckpt.Checkpoint.from_payload(payload, "x.pt")
