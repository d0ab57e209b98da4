"""Checkpoints: written atomically, loaded without executing code.

A checkpoint is a plain dict of tensors and primitives saved with
``torch.save`` and read back with ``torch.load(weights_only=True)``, whose
restricted unpickler refuses anything that could run code.  Writes go to a
temporary file in the same folder that is flushed, fsynced and renamed over
the target, so a crash or a full disk mid-write leaves the previous file.
"""

from __future__ import annotations

import pickle
import zipfile
from pathlib import Path
from typing import Any

import torch

from nmt.errors import CheckpointError
from nmt.fileio import atomic_write

FORMAT = "nmt-checkpoint"
VERSION = 1


def save(path: Path, payload: dict[str, Any]) -> Path:
    """Atomically save a checkpoint payload (tagged with our format and version)."""
    tagged = {"format": FORMAT, "version": VERSION, **payload}
    with atomic_write(path) as handle:
        torch.save(tagged, handle)
    return Path(path)


def load(path: Path, map_location: str | torch.device = "cpu") -> dict[str, Any]:
    """Load a checkpoint safely; a missing, truncated, foreign or malicious file is a CheckpointError."""
    path = Path(path)
    if path.is_dir():
        raise CheckpointError(f"{path}: is a directory; give a checkpoint file, e.g. "
                              f"runs/NAME/checkpoints/best.pt")
    if not path.is_file():
        raise CheckpointError(f"{path}: checkpoint not found")
    try:
        payload = torch.load(path, map_location=map_location, weights_only=True)
    except (pickle.UnpicklingError, zipfile.BadZipFile, EOFError, RuntimeError, ValueError,
            TypeError, AttributeError, ImportError, KeyError, IndexError, UnicodeDecodeError,
            OSError) as exc:
        reason = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise CheckpointError(
            f"{path}: not a loadable nmt checkpoint (truncated, foreign or unsafe file): {reason[:200]}"
        ) from None
    if not isinstance(payload, dict) or payload.get("format") != FORMAT:
        raise CheckpointError(f"{path}: not an nmt checkpoint (written by another program?)")
    if payload.get("version") != VERSION:
        raise CheckpointError(f"{path}: checkpoint format version {payload.get('version')} is not {VERSION}")
    return payload


def bytes_to_tensor(data: bytes) -> torch.Tensor:
    """Store raw bytes (a tokenizer model) as a uint8 tensor, which weights_only loading allows."""
    return torch.frombuffer(bytearray(data), dtype=torch.uint8).clone()


def tensor_to_bytes(tensor: torch.Tensor) -> bytes:
    """The bytes stored by :func:`bytes_to_tensor`."""
    return bytes(tensor.cpu().numpy().tobytes())
