"""What a server says of a model, whatever engine runs it: :class:`ModelInfo` and the attention label.

Apart from :mod:`nmt.decode.engines` so that the torch engine, which that module opens on
demand, can fill one in without importing it back.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Optional

from nmt.config import Config


def attention_label(config: Config) -> str:
    """How ``nmt serve`` (GET /models, its page, its log) names a model's attention."""
    if config.model.arch == "transformer":
        return "transformer"
    attention = config.model.attention
    return f"custom ({attention.energy})" if attention.type == "custom" else attention.type


@dataclass(frozen=True)
class ModelInfo:
    """What a server says of a model it holds, whatever engine runs it.

    An export folder records less than a checkpoint (no config, so neither the RNN's attention
    type nor the languages), and the engines show different attention; the fields that an
    engine cannot fill are None, so a client can tell "unknown" from a value.
    """

    arch: str  # model.arch: rnn or transformer
    attention: str  # attention_label(); an ONNX export of an RNN records only "rnn"
    device: str  # where the searches run: cpu, cuda:0
    search_attention: bool  # translate(..., attention=True) gives the best hypothesis's weights
    layer_attention: bool  # layer_attention() gives every layer's and head's cross-attention
    attention_note: Optional[str] = None  # one line on what this engine cannot show, for the page
    parameters: Optional[int] = None  # counted where the weights are torch tensors
    languages: Optional[tuple[str, str]] = None  # source, target (a run's config names them)
    config: Optional[dict[str, Any]] = None  # the run's whole config, where the engine has it
