"""Checkpoints: one versioned type, written atomically, loaded without executing code.

A :class:`Checkpoint` is saved as a plain dict of tensors and primitives (its
payload, tagged with :data:`FORMAT` and :data:`VERSION`) with ``torch.save`` and
read back with ``torch.load(weights_only=True)``, whose restricted unpickler
refuses anything that could run code.  Training, inference and every tool that
reads a checkpoint go through :func:`save` and :func:`load`.  Writes go to a
temporary file in the same folder that is flushed, fsynced and renamed over
the target, so a crash or a full disk mid-write leaves the previous file.
"""

from __future__ import annotations

import pickle
import warnings
import zipfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Optional

import torch

from nmt.config.named_code import admit_code, code_record
from nmt.config.saved import saved_config
from nmt.run.paths import RunPaths
from nmt.run.state import TrainState
from nmt.util.errors import CheckpointError, ConfigError
from nmt.util.fileio import atomic_write

FORMAT = "nmt-checkpoint"
VERSION = 2
"""The payload layout this code writes.  1: the train state's counters at the top level
(``step``, ``epoch``, ``pos``, ``best``, ``best_history``, ``bad_validations``, ``elapsed``);
2: under ``state``, as :meth:`TrainState.state_dict` (adds ``nonfinite``, later ``recent`` and
``last_valid``, read as empty when absent; an optional ``averaged_from`` names the checkpoints
of an average).  Version 1 reads."""
READS = (1, 2)


@dataclass
class Checkpoint:
    """A model with everything needed to use it, and optionally to go on training it.

    ``config`` is the run's resolved config as ``Config.model_dump(mode="json")``, so a
    checkpoint rebuilds its model and tokenizers alone.  The training parts (optimizer,
    schedule, scaler, random streams) are None in a checkpoint made only for translation
    (e.g. an average of others).
    """

    config: dict[str, Any]
    model: dict[str, torch.Tensor]
    tokenizers: dict[str, bytes]  # "src", "tgt": SentencePiece model files
    state: TrainState = field(default_factory=TrainState)
    optimizer: Optional[dict[str, Any]] = None
    schedule: Optional[dict[str, Any]] = None
    scaler: Optional[dict[str, Any]] = None
    rng: Optional[dict[str, Any]] = None  # rank 0's random streams
    rng_ranks: Optional[list[dict[str, Any]]] = None  # every rank's, under torchrun
    world_size: int = 1  # processes that wrote it
    averaged_from: Optional[list[str]] = None  # the checkpoints ``nmt average`` took the mean of

    def to_payload(self) -> dict[str, Any]:
        """The dict that is saved: only tensors and primitives, tagged with format and version."""
        payload = {
            "format": FORMAT,
            "version": VERSION,
            "config": self.config,
            "model": self.model,
            "tokenizers": {side: bytes_to_tensor(data) for side, data in self.tokenizers.items()},
            "state": self.state.state_dict(),
            "world_size": self.world_size,
        }
        for name in ("optimizer", "schedule", "scaler", "rng", "rng_ranks", "averaged_from"):
            if getattr(self, name) is not None:
                payload[name] = getattr(self, name)
        code = code_record(self.config)  # the user's attention or schedule: where it lives, its source's hash
        if code:
            payload["code"] = code
        return payload

    @classmethod
    def from_payload(cls, payload: Any, source: str = "checkpoint") -> Checkpoint:
        """The checkpoint of a loaded payload; another program's file, a version that is not an
        integer this nmt reads, or a run config that does not validate is a CheckpointError
        naming ``source``."""
        if not isinstance(payload, dict) or payload.get("format") != FORMAT:
            raise CheckpointError(f"{source}: not an nmt checkpoint (written by another program?)")
        version = payload.get("version")
        if isinstance(version, bool) or not isinstance(version, int):  # True == 1, "2" != 2: both altered
            raise CheckpointError(
                f"{source}: checkpoint format version {_excerpt(repr(version))} (a {type(version).__name__}) "
                f"is not an integer (it reads {', '.join(map(str, READS))}); the file was altered or not "
                f"written by nmt"
            )
        if version not in READS:
            newer = version > VERSION
            shown = version if version.bit_length() <= 64 else f"of {version.bit_length()} bits"  # str() caps digits
            raise CheckpointError(
                f"{source}: checkpoint format version {shown} is "
                f"{'newer than this nmt reads' if newer else 'not one this nmt reads'} (it reads "
                f"{', '.join(map(str, READS))}){'; upgrade nmt to load it' if newer else ''}"
            )
        admit_code(payload.get("code"), source)  # before the config names it: imports allowed modules only
        check_config(payload.get("config"), source)
        try:
            state = payload["state"] if version >= 2 else _state_v1(payload)
            return cls(
                config=payload["config"],
                model=payload["model"],
                tokenizers={side: tensor_to_bytes(t) for side, t in payload["tokenizers"].items()},
                state=TrainState.from_state_dict(state),
                optimizer=payload.get("optimizer"),
                schedule=payload.get("schedule"),
                scaler=payload.get("scaler"),
                rng=payload.get("rng"),
                rng_ranks=payload.get("rng_ranks"),
                world_size=int(payload.get("world_size", 1)),
                averaged_from=payload.get("averaged_from"),
            )
        except (KeyError, TypeError, AttributeError) as exc:
            raise CheckpointError(f"{source}: incomplete nmt checkpoint (missing {exc})") from None

    @property
    def trainable(self) -> bool:
        """Whether training can resume from it (optimizer, schedule and random streams saved)."""
        return None not in (self.optimizer, self.schedule, self.rng)


def _state_v1(payload: dict[str, Any]) -> dict[str, Any]:
    """Format 1's counters as a :class:`TrainState` dict."""
    return {
        "step": payload.get("step", 0),
        "epoch": payload.get("epoch", 0),
        "pos": payload.get("pos", 0),
        "best": payload.get("best"),
        "history": payload.get("best_history", []),
        "bad_validations": payload.get("bad_validations", 0),
        "elapsed": payload.get("elapsed", 0.0),
    }


def check_config(config: Any, source: str) -> None:
    """Refuse a checkpoint whose saved run config does not validate (an altered or corrupt
    file) with one CheckpointError naming ``source``, before any command builds a model from it."""
    if not isinstance(config, dict):
        raise CheckpointError(
            f"{source}: the run config saved in the checkpoint is a "
            f"{type(config).__name__}, not a mapping (an altered file?)"
        )
    try:
        saved_config(config)
    except (ConfigError, TypeError, ValueError, AttributeError, KeyError) as exc:
        raise CheckpointError(
            f"{source}: the run config saved in the checkpoint is invalid (an altered file?): {_excerpt(str(exc), 300)}"
        ) from None


def _excerpt(text: str, limit: int = 40) -> str:
    """``text`` cut to ``limit`` characters, so an altered file cannot make a message long."""
    return text if len(text) <= limit else text[:limit] + "..."


def payload_size(payload: Any) -> int:
    """Bytes of tensor data ``torch.save`` writes for ``payload`` (each storage once): a lower
    bound on the file's size, to tell a full disk from another failed write."""
    storages: dict[int, int] = {}

    def visit(node: Any) -> None:
        if isinstance(node, torch.Tensor):
            storage = node.untyped_storage()
            storages[storage.data_ptr()] = storage.nbytes()
        elif isinstance(node, dict):
            for value in node.values():
                visit(value)
        elif isinstance(node, (list, tuple)):
            for value in node:
                visit(value)

    visit(payload)
    return sum(storages.values())


def write_payload(path: Path, payload: dict[str, Any]) -> Path:
    """Atomically ``torch.save`` a dict of tensors and primitives.

    A full disk is a one-line :class:`~nmt.util.fileio.DiskFullError` (a user error): torch reports
    it as a RuntimeError, which :func:`~nmt.util.fileio.atomic_write` recognizes.
    """
    with atomic_write(path, size=payload_size(payload), intact="earlier checkpoints are intact") as handle:
        torch.save(payload, handle)
    return Path(path)


def check_checkpoint_path(path: Path) -> Path:
    """``path`` if it names a file; else the one CheckpointError that translate, eval and serve
    give (and average and resume for a file they read), so a folder or a typo reads the same."""
    path = Path(path)
    if path.is_dir():
        raise CheckpointError(f"{path}: is a directory; give a checkpoint file, e.g. runs/NAME/checkpoints/best.pt")
    if path.exists() and not path.is_file():
        raise CheckpointError(f"{path}: not a regular file; give a checkpoint file")
    if not path.is_file():
        raise CheckpointError(f"{path}: checkpoint not found")
    return path


def read_payload(path: Path, map_location: str | torch.device = "cpu") -> Any:
    """``torch.load`` with ``weights_only``; a missing, truncated or malicious file is a CheckpointError."""
    path = check_checkpoint_path(path)
    try:
        with warnings.catch_warnings():  # a foreign pickle's protocol warning would add lines to the one-line error
            warnings.filterwarnings("ignore", message="Detected pickle protocol", category=UserWarning)
            return torch.load(path, map_location=map_location, weights_only=True)
    except (
        pickle.UnpicklingError,
        zipfile.BadZipFile,
        EOFError,
        RuntimeError,
        ValueError,
        TypeError,
        AttributeError,
        ImportError,
        KeyError,
        IndexError,
        UnicodeDecodeError,
        OSError,
    ) as exc:
        reason = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise CheckpointError(
            f"{path}: not a loadable nmt checkpoint (truncated, foreign or unsafe file): {reason[:200]}"
        ) from None


def step_path(run_dir: Path, step: int) -> Path:
    """Where training keeps the checkpoint of update ``step`` (``train.keep_best`` / ``keep_last``)."""
    return RunPaths(run_dir).step(step)


def save(path: Path, checkpoint: Checkpoint) -> Path:
    """Atomically write ``checkpoint`` to ``path``."""
    return write_payload(path, checkpoint.to_payload())


def load(path: Path, map_location: str | torch.device = "cpu") -> Checkpoint:
    """Read a checkpoint safely; every way it can fail is a CheckpointError naming ``path``."""
    return Checkpoint.from_payload(read_payload(path, map_location), str(path))


def bytes_to_tensor(data: bytes) -> torch.Tensor:
    """Store raw bytes (a tokenizer model) as a uint8 tensor, which weights_only loading allows."""
    return torch.frombuffer(bytearray(data), dtype=torch.uint8).clone()


def tensor_to_bytes(tensor: torch.Tensor) -> bytes:
    """The bytes stored by :func:`bytes_to_tensor`."""
    return bytes(tensor.cpu().numpy().tobytes())
