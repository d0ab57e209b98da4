"""What a server says of a model, whatever engine runs it: :class:`ModelInfo` and the attention label.

Apart from :mod:`nmt.decode.engines` so that the torch engine, which that module opens on
demand, can fill one in without importing it back.  :func:`describe_model` is the one place
that says what a model is (attention, languages, parameters, config): the torch engine calls it
on the model it loaded, and ``nmt export`` on the model it exports, writing the answer into
export.json, from which :func:`model_info` fills in the engines that run an export without
torch.  So a server says the same of an export as of its checkpoint.  Imports no torch.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, Optional, Protocol

from nmt.config import Config
from nmt.engine.manifest import ModelDescription


def attention_label(config: Config) -> str:
    """How ``nmt serve`` (GET /models, its page, its log) names a model's attention."""
    if config.model.arch == "transformer":
        return "transformer"
    attention = config.model.attention
    return f"custom ({attention.energy})" if attention.type == "custom" else attention.type


@dataclass(frozen=True)
class ModelInfo:
    """What a server says of a model it holds, whatever engine runs it.

    An export folder records what its checkpoint would show (:func:`model_info`), except one
    written before nmt recorded it, which gives no config, attention type, languages or
    parameter count; the engines show different attention.  The fields that an engine cannot
    fill are None, so a client can tell "unknown" from a value.
    """

    arch: str  # model.arch: rnn or transformer
    attention: str  # attention_label(); an export written before nmt recorded it gives only the arch
    device: str  # where the searches run: cpu, cuda:0
    search_attention: bool  # translate(..., attention=True) gives the best hypothesis's weights
    layer_attention: bool  # layer_attention() gives every layer's and head's cross-attention
    attention_note: Optional[str] = None  # one line on what this engine cannot show, for the page
    parameters: Optional[int] = None  # counted by torch: on the loaded model, or by nmt export
    languages: Optional[tuple[str, str]] = None  # source, target (a run's config names them)
    config: Optional[dict[str, Any]] = None  # the run's whole config, where the engine has it


class HasParameters(Protocol):
    """A torch module, as far as counting goes (this module imports no torch)."""

    def parameters(self) -> Iterable[Any]: ...


def describe_model(config: Config, model: HasParameters) -> ModelDescription:
    """What a model is, from its run's ``config`` and the loaded ``model`` (a torch module, whose
    ``parameters()`` yield each tied tensor once; an ensemble counts every member)."""
    return ModelDescription(
        attention=attention_label(config),
        languages=(config.data.src, config.data.tgt),
        parameters=sum(p.numel() for p in model.parameters()),
        config=config.model_dump(mode="json"),
    )


def model_info(
    arch: str,
    about: Optional[ModelDescription],
    *,
    device: str,
    search_attention: bool,
    layer_attention: bool,
    attention_note: Optional[str] = None,
) -> ModelInfo:
    """What a server says of a model: ``about`` it (:func:`describe_model` of the checkpoint, or
    export.json's record of it; None for an export written before nmt recorded one) and what the
    engine shows."""
    return ModelInfo(
        arch=arch,
        attention=about.attention if about else arch,
        device=device,
        search_attention=search_attention,
        layer_attention=layer_attention,
        attention_note=attention_note,
        parameters=about.parameters if about else None,
        languages=about.languages if about else None,
        config=about.config if about else None,
    )
