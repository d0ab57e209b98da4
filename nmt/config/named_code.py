"""Code a user's config names by import path (``model.attention.type: my_attention:CosineEnergy``).

The rule of what runs: a config's code is imported only where nmt trains from a config the user
passes (``nmt train --config``, ``nmt.train(config)``, ``nmt compare`` when it trains, ``nmt diagnose
attention``: :func:`nmt.config.load` with ``import_code``, or inside :func:`importing_config_code`),
the config file's folder searched first, so the name is registered when the config's checks look it
up.  Every other reading of a config (a run's saved ``config.yaml`` on resume, in a comparison, a
report or ``Run.open``; ``nmt config``, ``nmt data prepare``, ``nmt compare --dry-run``) admits its
code as a checkpoint does: only from modules allowed by name (``--module``, ``modules=``).
"""

from __future__ import annotations

import contextlib
import contextvars
from collections.abc import Iterator
from pathlib import Path
from typing import Annotated, Any

from pydantic import AfterValidator
from pydantic_core import PydanticCustomError

from nmt.config.attention_space import ATTENTION_PRESETS, ATTENTION_TYPES, ATTENTIONS
from nmt.config.combines import COMBINES
from nmt.config.decoder_loops import DECODER_LOOPS
from nmt.config.normalizations import NORMALIZATIONS
from nmt.config.schedules import TF_SCHEDULES
from nmt.config.variants import VARIANTS
from nmt.util.errors import ConfigError
from nmt.util.registry import NAME, PATH, PluginError, import_path

ATTENTIONS.take((*ATTENTION_PRESETS, "custom"), "an attention preset (nmt presets)")
ATTENTIONS.take((v for v in VARIANTS if NAME.fullmatch(v) and v not in ATTENTION_PRESETS), "a variant (nmt variants)")


def _attention_type(value: str) -> str:
    if value not in ATTENTION_PRESETS and value != "custom" and value not in ATTENTIONS:
        presets = ", ".join(repr(t) for t in (*ATTENTION_TYPES, "custom"))
        raise PydanticCustomError(
            "unknown_attention",
            f"expected a preset ({presets}), a registered energy or an import path module:Class (an energy "
            "registered by a module of yours: import it first with --module, or modules=[...] in Python)",
        )
    return value


def _registered(registry: Any, what: str) -> Any:
    def check(value: str) -> str:
        if value not in registry:
            names = ", ".join(repr(n) for n in registry.names())
            raise PydanticCustomError(
                "unknown_name",
                f"expected one of {names}, a registered {what} or an import path (a {what} registered by a "
                "module of yours: import it first with --module, or modules=[...] in Python)",
            )
        return value

    return check


AttentionType = Annotated[str, AfterValidator(_attention_type)]
"""``model.attention.type``: a preset, ``custom``, or an energy's registered name or import path."""
EnergyName = Annotated[str, AfterValidator(_registered(ATTENTIONS, "energy"))]
"""An ``energy`` option: nmt's own, or a registered energy's name or import path."""
ScheduleName = Annotated[str, AfterValidator(_registered(TF_SCHEDULES, "schedule"))]
"""``train.tf_schedule``: nmt's own, or a registered schedule's name or import path."""
LoopName = Annotated[str, AfterValidator(_registered(DECODER_LOOPS, "decoder loop"))]
"""``train.decoder_loop``: nmt's own, or a registered decoder loop's name or import path."""
NormalizationName = Annotated[str, AfterValidator(_registered(NORMALIZATIONS, "normalization"))]
"""A ``normalize`` option: nmt's own, or a registered normalization's name or import path."""
CombineName = Annotated[str, AfterValidator(_registered(COMBINES, "combine"))]
"""``model.attention.combine``: nmt's own, or a registered combine step's name or import path."""

_NAMED_CODE = {
    ("model", "attention", "type"): ATTENTIONS,
    ("model", "attention", "energy"): ATTENTIONS,
    ("model", "enc_self_attention", "energy"): ATTENTIONS,
    ("model", "dec_self_attention", "energy"): ATTENTIONS,
    ("train", "tf_schedule"): TF_SCHEDULES,
    ("train", "decoder_loop"): DECODER_LOOPS,
    ("model", "attention", "normalize"): NORMALIZATIONS,
    ("model", "enc_self_attention", "normalize"): NORMALIZATIONS,
    ("model", "dec_self_attention", "normalize"): NORMALIZATIONS,
    ("model", "transformer", "energy"): ATTENTIONS,
    ("model", "transformer", "normalize"): NORMALIZATIONS,
    ("model", "attention", "combine"): COMBINES,
}
"""The options that may name code by import path (module:Name), and the registry it joins."""


_IMPORTING: contextvars.ContextVar[bool] = contextvars.ContextVar("nmt_importing_config_code", default=False)


@contextlib.contextmanager
def importing_config_code(on: bool = True) -> Iterator[None]:
    """Within the block (with ``on``), :func:`nmt.config.load` imports the code that configs it reads
    name, as a command that trains from the user's config does; saved configs still only admit."""
    token = _IMPORTING.set(on)
    try:
        yield
    finally:
        _IMPORTING.reset(token)


def importing() -> bool:
    """Whether configs read now may import what they name (:func:`importing_config_code`)."""
    return _IMPORTING.get()


def import_named_code(raw: dict[str, Any], folder: Path | None) -> None:
    """Import what the user's config names by import path (``folder``, the config's, searched first).

    Only a config the user gives to train is read this way; any other (:func:`admit_named_code`)
    names code that only an allowed module may supply.
    """
    for option, registry, name in _named(raw):
        if name not in registry and PATH.fullmatch(name):
            try:
                import_path(name, registry, folder)
            except PluginError as exc:
                raise ConfigError(f"{option}: {exc}") from None


def admit_named_code(raw: dict[str, Any]) -> None:
    """Make the code a config names by import path usable only where its module is allowed by name
    (:meth:`~nmt.util.registry.Registry.import_allowed`): what reading a saved or printed config does."""
    for option, registry, name in _named(raw):
        if name not in registry and PATH.fullmatch(name):
            try:
                registry.import_allowed(name, option)
            except PluginError as exc:
                raise ConfigError(str(exc)) from None


def _named(raw: dict[str, Any]) -> list[tuple[str, Any, str]]:
    """(option, registry, name) of every option of ``raw`` that names registered code."""
    out = []
    for path, registry in _NAMED_CODE.items():
        node: Any = raw
        for key in path:
            node = node.get(key) if isinstance(node, dict) else None
        if isinstance(node, str):
            out.append((".".join(path), registry, node))
    return out


def code_record(raw: dict[str, Any]) -> list[dict[str, Any]]:
    """What a checkpoint of config ``raw`` keeps of the user's code it names: kind, name, origin
    (module:qualname) and the sha256 of the module's source; empty for nmt's own."""
    return [record for _, registry, name in _named(raw) for record in registry.record([name])]


def admit_code(records: Any, source: str) -> None:
    """Make a checkpoint's recorded code usable, importing only allowed modules (see
    :meth:`~nmt.util.registry.Registry.admit`); an altered record is refused like the rest of ``source``."""
    registries = {registry.kind: registry for registry in _NAMED_CODE.values()}
    for record in records or []:
        registry = registries.get(str(record.get("kind"))) if isinstance(record, dict) else None
        if registry is None:
            raise PluginError(f"{source}: its record of user code is not one nmt writes (an altered file?)")
        registry.admit(record, source)
