"""Where the run happens: device, mixed precision, seeds and RNG state, and a clock that waits for the device
(the allocator: nmt.util.allocator).

Nothing else in the package decides a device or an autocast dtype.
"""

from __future__ import annotations

import contextlib
import logging
import os
import platform
import random
import time
from collections.abc import Iterator
from typing import Any, Optional

import numpy as np
import torch

from nmt.util.allocator import keep_freed_memory  # noqa: F401  (scripts call it from here)

log = logging.getLogger(__name__)


def _cpu_name() -> str:
    """The CPU's model name (/proc/cpuinfo where there is one, else what ``platform`` says)."""
    name = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as handle:
            return next((line.split(":", 1)[1].strip() for line in handle if line.startswith("model name")), name)
    except OSError:
        return name


def hardware(device: torch.device) -> dict[str, Any]:
    """What a speed or wall-clock figure depends on: the device's name, cores, threads, torch."""
    return {
        "device": device.type,
        "device_name": torch.cuda.get_device_name(device) if device.type == "cuda" else _cpu_name(),
        "cpus": os.cpu_count(),
        "threads": torch.get_num_threads(),
        "torch": torch.__version__,
    }


def machine() -> str:
    """This machine in one line, as a benchmark's or an executed notebook's record names it: the CPU,
    the cores this process may use, the GPU where torch sees one, the Python and torch versions."""
    gpu = f", GPU {torch.cuda.get_device_name(0)}" if torch.cuda.is_available() else ", no GPU"
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    return f"{_cpu_name()}, {cores} cores{gpu}; Python {platform.python_version()}, torch {torch.__version__}"


def synchronize(device: torch.device) -> None:
    """Wait for queued GPU work, so a clock measures it (no-op on CPU)."""
    if device.type == "cuda":
        torch.cuda.synchronize(device)


class Stopwatch:
    """``with Stopwatch(device) as sw: ...`` then ``sw.seconds``; synchronizes CUDA at both ends."""

    def __init__(self, device: torch.device) -> None:
        self.device = device
        self.seconds = 0.0
        self._start: Optional[float] = None

    def __enter__(self) -> Stopwatch:
        synchronize(self.device)
        self._start = time.perf_counter()
        return self

    def __exit__(self, *exc: object) -> None:
        synchronize(self.device)
        self.seconds = time.perf_counter() - (self._start or 0.0)


def mps_available() -> bool:
    """Whether Apple's Metal (MPS) backend can run here: Apple silicon and a torch built with it."""
    mps = getattr(torch.backends, "mps", None)
    return bool(mps is not None and mps.is_available())


def select_device(name: str, local_rank: int | None = None) -> torch.device:
    """``auto`` picks CUDA when present, else Apple's MPS when present, else the CPU; asking for
    CUDA or MPS where it is missing is a user error (one line).

    ``local_rank`` (one process per GPU under torchrun) picks ``cuda:<local_rank>`` and makes
    it the current device; it does not change a CPU choice.
    """
    from nmt.util.errors import UserError

    if name == "auto":
        device = torch.device("cuda" if torch.cuda.is_available() else "mps" if mps_available() else "cpu")
    elif name == "cuda" and not torch.cuda.is_available():
        raise UserError("train.device=cuda but no CUDA device is available; use auto or cpu")
    elif name == "mps" and not mps_available():
        raise UserError("device mps: Apple's MPS is not available here (it needs Apple silicon); use auto or cpu")
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
