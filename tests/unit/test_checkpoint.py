"""The versioned checkpoint type: round trip, training parts optional, old and new formats."""

from __future__ import annotations

import errno
import pickle
import shutil
import warnings
from collections import namedtuple

import pytest
import torch

from nmt.run import checkpoint as ckpt
from nmt.run.state import TrainState
from nmt.util import fileio
from nmt.util.errors import CheckpointError, UserError


def _full() -> ckpt.Checkpoint:
    return ckpt.Checkpoint(
        config={"name": "x"},
        model={"w": torch.arange(6.0).view(2, 3)},
        tokenizers={"src": b"\x00spm-src\xff", "tgt": b"spm-tgt"},
        state=TrainState(
            step=12, epoch=1, pos=4, best=20.5, history=[(20.5, 12)], bad_validations=1, nonfinite=0, elapsed=3.5
        ),
        optimizer={"state": {}, "param_groups": []},
        schedule={"steps": 12, "plateau": None},
        scaler={},
        rng={"torch": torch.get_rng_state()},
        world_size=1,
    )


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
    payload = {
        "format": ckpt.FORMAT,
        "version": 1,
        "config": {},
        "model": {},
        "tokenizers": {"src": ckpt.bytes_to_tensor(b"s"), "tgt": ckpt.bytes_to_tensor(b"t")},
        "step": 5,
        "epoch": 1,
        "pos": 2,
        "best": 9.0,
        "best_history": [[9.0, 5]],
        "bad_validations": 0,
        "elapsed": 1.5,
        "optimizer": {},
        "schedule": {},
        "scaler": {},
        "rng": {},
    }
    back = ckpt.Checkpoint.from_payload(payload)
    assert back.state == TrainState(step=5, epoch=1, pos=2, best=9.0, history=[(9.0, 5)], elapsed=1.5)
    assert back.tokenizers == {"src": b"s", "tgt": b"t"}


@pytest.mark.parametrize(
    "version, message",
    [
        (ckpt.VERSION + 1, "newer than this nmt reads.*upgrade nmt"),
        (0, "not one this nmt reads"),
        ("2", r"version '2' \(a str\) is not an integer"),
        (True, r"version True \(a bool\) is not an integer"),
        (2.0, r"version 2.0 \(a float\) is not an integer"),
        pytest.param("9" * 1000, r"version '9{39}\.\.\. \(a str\)", id="long-str"),  # the line stays short
        pytest.param(10**5000, r"version of 16610 bits is newer", id="huge-int"),  # str() would refuse it
    ],
)
def test_an_unknown_version_is_a_clear_error(version, message):
    payload = {**_full().to_payload(), "version": version}
    with pytest.raises(CheckpointError, match=message):
        ckpt.Checkpoint.from_payload(payload, "x.pt")


def test_a_payload_missing_a_part_names_it():
    payload = _full().to_payload()
    del payload["model"]
    with pytest.raises(CheckpointError, match=r"incomplete.*'model'"):
        ckpt.Checkpoint.from_payload(payload, "x.pt")


# ------------------------------------------------------------ a full disk (issue 33, item 6)

TORCH_WRITE_FAILED = "[enforce fail at inline_container.cc:672] . unexpected pos 704 vs 598"
"""What torch.save raises when the file it writes stops growing (a full disk)."""

Usage = namedtuple("Usage", "total used free")


def _disk_with(monkeypatch, free: int) -> None:
    """Make the file system of every folder report ``free`` bytes left."""
    monkeypatch.setattr(shutil, "disk_usage", lambda folder: Usage(10**9, 10**9 - free, free))


def _save_fails(monkeypatch, context: BaseException | None = None) -> None:
    """Make torch.save write a little, then fail as torch does (RuntimeError, maybe chained)."""

    def failing(obj, handle, *a, **k):
        handle.write(b"PK\x03\x04 part of a zip")
        if context is None:
            raise RuntimeError(TORCH_WRITE_FAILED)
        try:
            raise context
        except BaseException:
            raise RuntimeError(TORCH_WRITE_FAILED)  # noqa: B904 - as torch does: implicitly chained, __context__ only

    monkeypatch.setattr(torch, "save", failing)


def _assert_previous_kept(path, step: int) -> None:
    assert ckpt.load(path).state.step == step
    assert [p.name for p in path.parent.iterdir()] == [path.name]  # no temporary left behind


def test_torch_write_failure_on_a_full_disk_is_a_user_error(tmp_path, monkeypatch):
    """torch raises RuntimeError, not OSError: the folder's free space tells it was the disk."""
    path = ckpt.save(tmp_path / "last.pt", _full())
    _save_fails(monkeypatch)
    _disk_with(monkeypatch, free=0)
    with pytest.raises(
        fileio.DiskFullError,
        match=r"no space left on device while writing .*last\.pt "
        r"\(earlier checkpoints are intact\)",
    ):
        ckpt.save(path, _full())
    monkeypatch.undo()
    _assert_previous_kept(path, 12)


def test_torch_write_failure_chained_to_enospc_is_a_user_error(tmp_path, monkeypatch):
    """The real case (seen on a 256 kB tmpfs): RuntimeError whose context is OSError(ENOSPC)."""
    path = ckpt.save(tmp_path / "last.pt", _full())
    _save_fails(monkeypatch, OSError(errno.ENOSPC, "No space left on device"))
    with pytest.raises(UserError, match="no space left on device"):
        ckpt.save(path, _full())
    monkeypatch.undo()
    _assert_previous_kept(path, 12)


def test_a_write_failure_with_room_left_stays_an_internal_error(tmp_path, monkeypatch):
    """Free space larger than the checkpoint: the failure is not the disk's, so it is not hidden."""
    path = ckpt.save(tmp_path / "last.pt", _full())
    _save_fails(monkeypatch)
    _disk_with(monkeypatch, free=10**9)
    with pytest.raises(RuntimeError, match="unexpected pos"):
        ckpt.save(path, _full())
    monkeypatch.undo()
    _assert_previous_kept(path, 12)


def test_free_space_below_the_checkpoint_size_counts_as_full(tmp_path, monkeypatch):
    """2 MB free cannot hold a 4 MB checkpoint, though it is more than fileio.LOW_SPACE."""
    big = ckpt.Checkpoint(config={}, model={"w": torch.zeros(1 << 20)}, tokenizers={"src": b"a", "tgt": b"b"})
    path = ckpt.save(tmp_path / "last.pt", big)
    _save_fails(monkeypatch)
    _disk_with(monkeypatch, free=2 << 20)
    with pytest.raises(fileio.DiskFullError):
        ckpt.save(path, big)


def test_payload_size_counts_a_shared_storage_once():
    w = torch.zeros(100)
    payload = {"model": {"a": w, "b": w, "c": w[:10]}, "other": [torch.ones(5, dtype=torch.float64)], "n": 3}
    assert ckpt.payload_size(payload) == 100 * 4 + 5 * 8


def test_ctrl_c_while_the_disk_is_full_stays_an_interrupt(tmp_path, monkeypatch):
    def interrupted(obj, handle, *a, **k):
        raise KeyboardInterrupt

    monkeypatch.setattr(torch, "save", interrupted)
    _disk_with(monkeypatch, free=0)
    with pytest.raises(KeyboardInterrupt):
        ckpt.save(tmp_path / "last.pt", _full())


# ------------------------------------------------------------ paths, files and configs (items 13, 14, 18)


@pytest.mark.parametrize(
    "make, message",
    [
        (lambda tmp: tmp, "is a directory; give a checkpoint file"),
        (lambda tmp: tmp / "missing.pt", "checkpoint not found"),
    ],
)
def test_checkpoint_paths_are_checked_in_one_place(tmp_path, make, message):
    with pytest.raises(CheckpointError, match=message):
        ckpt.check_checkpoint_path(make(tmp_path))
    with pytest.raises(CheckpointError, match=message):  # loading says the same
        ckpt.load(make(tmp_path))


def test_serve_checks_checkpoint_paths_with_the_same_words(tmp_path, monkeypatch):
    from nmt.serve import models

    for path in (tmp_path, tmp_path / "missing.pt"):
        with pytest.raises(CheckpointError) as checked:
            ckpt.check_checkpoint_path(path)
        with pytest.raises(UserError) as served:
            models.load_served([str(path)], torch.device("cpu"))
        assert str(served.value) == str(checked.value)
    loaded = []
    monkeypatch.setattr(models, "open_engine", lambda *args, **kwargs: loaded.append(args))
    good = ckpt.save(tmp_path / "good.pt", _full())
    with pytest.raises(CheckpointError, match="checkpoint not found"):
        models.load_served([str(good), f"b={tmp_path / 'missing.pt'}"], torch.device("cpu"))
    assert loaded == []  # every path is checked before the first model loads


def _raw_pickle(path):
    path.write_bytes(pickle.dumps({"weights": [1.0, 2.0]}, protocol=4))
    return path


def test_a_raw_pickle_is_refused_without_torch_warnings(tmp_path):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with pytest.raises(CheckpointError, match="not a loadable nmt checkpoint"):
            ckpt.load(_raw_pickle(tmp_path / "raw.pt"))
    assert [str(w.message) for w in caught] == []


@pytest.mark.parametrize(
    "config, message",
    [
        ({"model": {"hidden_size": "lots"}}, "model.hidden_size"),
        ({"model": {"arch": "lstm-9000"}}, "model.arch"),
        (["not", "a", "mapping"], "a list, not a mapping"),
    ],
)
def test_an_altered_config_names_the_checkpoint_file(tmp_path, config, message):
    path = tmp_path / "altered.pt"
    ckpt.write_payload(path, {**_full().to_payload(), "config": config})
    with pytest.raises(CheckpointError) as error:
        ckpt.load(path)
    assert str(error.value).startswith(f"{path}: the run config saved in the checkpoint ")
    assert message in str(error.value) and "\n" not in str(error.value)
