"""A model's size before it is built, and whether training it can fit in memory.

``model.hidden_size: 100000000`` asks for about 10^17 parameters; building it ends in the
allocator's ``RuntimeError`` (or the kernel's OOM killer) after the corpus has loaded.  The
factory can build the same network on PyTorch's ``meta`` device, where tensors have shapes but
no storage, so the exact parameter count costs milliseconds and no memory; training then needs
about :data:`TRAINING_COPIES` fp32 copies of it (weights, gradients, Adam's two moments) before
any activation, and a model whose copies exceed the memory free on its device is refused in one line.
"""

from __future__ import annotations

import torch

from nmt.config import ModelConfig
from nmt.model.build import build_model, count_parameters
from nmt.util.errors import ConfigError

TRAINING_COPIES = 4
"""fp32 copies of the parameters that training holds: weights, gradients, Adam's first and second moments."""
BYTES_PER_VALUE = 4  # fp32; mixed precision keeps fp32 master weights, so this is the floor there too


def parameter_count(cfg: ModelConfig, src_vocab: int, tgt_vocab: int) -> int:
    """The trainable parameters of the model ``cfg`` describes, counted on a storage-less build."""
    with torch.device("meta"):
        return count_parameters(build_model(cfg, src_vocab, tgt_vocab))


def free_bytes(device: torch.device) -> int | None:
    """Memory free for a new allocation on ``device`` (CPU: the kernel's MemAvailable); None where
    it cannot be read (then nothing is refused)."""
    if device.type == "cuda":
        free, _total = torch.cuda.mem_get_info(device)
        return int(free)
    if device.type != "cpu":
        return None
    try:
        with open("/proc/meminfo", encoding="ascii") as handle:
            for line in handle:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        return None
    return None


def _gib(n: float) -> str:
    return f"{n / 2**30:,.1f} GiB"


def check_fits(cfg: ModelConfig, src_vocab: int, tgt_vocab: int, device: torch.device) -> int:
    """Refuse, in one line, a model whose training copies do not fit in the memory free on
    ``device``; returns its parameter count."""
    params = parameter_count(cfg, src_vocab, tgt_vocab)
    needed = params * BYTES_PER_VALUE * TRAINING_COPIES
    free = free_bytes(device)
    if free is not None and needed > free:
        raise ConfigError(
            f"model: {params:,} parameters need at least {_gib(needed)} to train (weights, gradients and "
            f"Adam's two moments in fp32) and {device.type} has {_gib(free)} free; lower model.hidden_size, "
            f"model.emb_size, model.*layers or data.vocab_size"
        )
    return params
