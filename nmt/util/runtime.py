"""Where the run happens: allocator, device, mixed precision, seeds and RNG state.

Nothing else in the package decides a device or an autocast dtype.
"""

from __future__ import annotations

import contextlib
import ctypes
import logging
import os
import platform
import random
import sys
from collections.abc import Iterator
from typing import Any

import numpy as np
import torch

log = logging.getLogger(__name__)

# glibc mallopt parameters (malloc.h).
_M_TRIM_THRESHOLD = -1
_M_TOP_PAD = -2
_M_MMAP_MAX = -4


def keep_freed_memory() -> bool:
    """Stop glibc from returning freed tensor memory to the OS after every step.

    By default glibc serves large blocks (activations, logits: tens of MB) with
    mmap and unmaps them on free, so every training step page-faults the same
    memory back in; measured on a 2-core machine this cost up to 43% of a step.
    Serving them from the heap and never trimming it keeps the pages mapped.
    Must run before the first large tensor.  No-op off glibc or when the user
    already set ``MALLOC_*`` variables.  Returns whether the settings took.
    """
    if not sys.platform.startswith("linux") or any(k.startswith("MALLOC_") for k in os.environ):
        return False
    try:
        libc = ctypes.CDLL("libc.so.6")
        ok = libc.mallopt(_M_MMAP_MAX, 0) and libc.mallopt(_M_TRIM_THRESHOLD, 2**30)
        return bool(ok and libc.mallopt(_M_TOP_PAD, 64 * 2**20))
    except (OSError, AttributeError):
        return False


def hardware(device: torch.device) -> dict[str, Any]:
    """What a speed or wall-clock figure depends on: the device's name, cores, threads, torch."""
    if device.type == "cuda":
        name = torch.cuda.get_device_name(device)
    else:
        name = platform.processor() or platform.machine()
        try:
            with open("/proc/cpuinfo", encoding="utf-8") as handle:
                name = next((line.split(":", 1)[1].strip() for line in handle if line.startswith("model name")), name)
        except OSError:
            pass
    return {
        "device": device.type,
        "device_name": name,
        "cpus": os.cpu_count(),
        "threads": torch.get_num_threads(),
        "torch": torch.__version__,
    }


def select_device(name: str, local_rank: int | None = None) -> torch.device:
    """``auto`` picks CUDA when present, else CPU; asking for CUDA without one is a user error.

    ``local_rank`` (one process per GPU under torchrun) picks ``cuda:<local_rank>`` and makes
    it the current device; it does not change a CPU choice.
    """
    from nmt.util.errors import UserError

    if name == "auto":
        device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    elif name == "cuda" and not torch.cuda.is_available():
        raise UserError("train.device=cuda but no CUDA device is available; use auto or cpu")
    else:
        device = torch.device(name)
    if device.type == "cuda" and local_rank is not None:
        if local_rank >= torch.cuda.device_count():
            raise UserError(
                f"local rank {local_rank} but only {torch.cuda.device_count()} GPU(s) here; "
                f"start at most that many processes per node"
            )
        device = torch.device("cuda", local_rank)
        torch.cuda.set_device(device)
    return device


def amp_dtype(device: torch.device, amp: str) -> torch.dtype | None:
    """The autocast dtype, or None for full fp32 (always on CPU: bf16 is slower there)."""
    if device.type != "cuda" or amp == "off":
        return None
    if amp == "auto":
        return torch.bfloat16 if torch.cuda.is_bf16_supported() else torch.float16
    return torch.bfloat16 if amp == "bf16" else torch.float16


def amp_name(dtype: torch.dtype | None) -> str:
    """The autocast dtype as logged: "bfloat16", "float16" or "off"."""
    return str(dtype).removeprefix("torch.") if dtype else "off"


def autocast(device: torch.device, dtype: torch.dtype | None) -> contextlib.AbstractContextManager:
    """One autocast context for the forward pass; a null context when dtype is None."""
    if dtype is None:
        return contextlib.nullcontext()
    return torch.autocast(device_type=device.type, dtype=dtype)


def grad_scaler(device: torch.device, dtype: torch.dtype | None) -> torch.amp.GradScaler:
    """A gradient scaler, enabled only for fp16 (bf16 and fp32 do not underflow)."""
    return torch.amp.GradScaler(device.type, enabled=dtype == torch.float16)


def seed_everything(seed: int) -> None:
    """Seed Python's, NumPy's and torch's global generators (dropout, teacher-forcing coins)."""
    random.seed(seed)
    np.random.seed(seed % 2**32)
    torch.manual_seed(seed)


def rng_state() -> dict[str, Any]:
    """Every random stream a training step draws from, for exact resume."""
    state: dict[str, Any] = {
        "python": random.getstate(),
        # numpy's key array as a list, so checkpoints load with weights_only=True
        "numpy": [v.tolist() if isinstance(v, np.ndarray) else v for v in np.random.get_state()],
        "torch": torch.get_rng_state(),
    }
    if torch.cuda.is_available():
        state["cuda"] = torch.cuda.get_rng_state_all()
    return state


def set_rng_state(state: dict[str, Any]) -> None:
    """Restore the streams captured by :func:`rng_state`."""
    random.setstate(state["python"])
    name, keys, pos, has_gauss, cached = state["numpy"]
    np.random.set_state((name, np.asarray(keys, dtype=np.uint32), pos, has_gauss, cached))
    torch.set_rng_state(state["torch"])
    if "cuda" in state and torch.cuda.is_available():
        torch.cuda.set_rng_state_all(state["cuda"])


@contextlib.contextmanager
def preserved_rng() -> Iterator[None]:
    """Run a block (e.g. validation) without disturbing the training random streams."""
    saved = rng_state()
    try:
        yield
    finally:
        set_rng_state(saved)
