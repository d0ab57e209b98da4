"""The attention design space as data: energies, maps, presets and their size rules.

A point of the space is (energy, query map, key map, value map, output projection,
heads).  The attention type names of the literature are presets, i.e. named points.
Both the config validation and the model's modules apply :func:`attention_problem`, so
a combination is accepted or refused for the same reason in both places.  Pure Python,
no torch: the config imports it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple, Optional

from pydantic import BaseModel, Field, ValidationError

from nmt.util.errors import short_repr
from nmt.util.registry import Registry

ATTENTION_TYPES = (
    "none",
    "bahdanau",
    "luong_dot",
    "luong_general",
    "luong_concat",
    "scaled_dot",
    "qkv",
    "gaussian",
    "coverage",
    "luong_local_p",
    "luong_local_m",
)

ATTENTION_ENERGIES = (
    "uniform",
    "dot",
    "scaled_dot",
    "bilinear",
    "mlp",
    "gaussian",
    "location",
    "coverage",
    "local_p",
    "local_m",
)
"""nmt's own energies (:mod:`nmt.model.energies`, :mod:`nmt.model.coverage`, :mod:`nmt.model.local_attention`);
a user's join them through :func:`register_attention`."""
STATEFUL_ENERGIES = ("coverage", "local_m")
"""nmt's energies that carry a state across decoder steps (the RNN decoder's cross-attention only)."""
ATTENTION_MAPS = ("identity", "linear")
# Energies that compare mapped queries and keys element by element, so their sizes must agree.
SAME_SIZE_ENERGIES = ("dot", "scaled_dot", "mlp", "gaussian", "coverage")

ENERGY_BASE = "nmt.model.energies.Energy"
"""Where the class every energy subclasses lives (named, so the config layer need not import torch)."""
STYLES = ("bahdanau", "luong")


def not_an_energy(target: Any) -> Optional[str]:
    """Why ``target`` cannot be registered as an energy (not a strict subclass of ``nmt.Energy``, or
    ``defaults`` a config cannot take), or None when it can."""
    bases = (
        [f"{c.__module__}.{c.__qualname__}" for c in getattr(target, "__mro__", ())] if isinstance(target, type) else []
    )
    if ENERGY_BASE not in bases[1:]:
        return "is not a subclass of nmt.Energy (class MyEnergy(nmt.Energy) with forward(q, k))"
    params = getattr(target, "Params", None)
    if params is not None and not (isinstance(params, type) and issubclass(params, BaseModel)):
        return f"has Params {short_repr(params)}: give a pydantic model of its options (class Params(BaseModel))"
    return _bad_defaults(getattr(target, "defaults", {}))


class LocalParams(BaseModel, extra="forbid"):
    """The options of Luong et al.'s (2015) local attention (``local_p``, ``local_m``)."""

    window: int = Field(
        10, ge=1, description="D: a query sees the keys within D of its aligned position p_t (10 in the paper)."
    )


BUILTIN_PARAMS: dict[str, type[BaseModel]] = {"local_p": LocalParams, "local_m": LocalParams}
"""nmt's energies with options of their own (``model.attention.params``), declared here for the config."""


def energy_params(energy: str, params: dict[str, Any], option: str) -> dict[str, Any]:
    """``params`` validated by energy ``energy``'s own ``Params`` model, every option filled in (what a
    saved config and ``nmt config`` show); ``option`` names them in a message (``model.attention.params``)."""
    if energy in _BUILTIN_TRAITS:
        declared: Optional[type[BaseModel]] = BUILTIN_PARAMS.get(energy)
    else:
        declared = getattr(ATTENTIONS.get(energy).target, "Params", None)
    if declared is None:
        if params:
            raise ValueError(
                f"{option}: energy {energy} takes no params (its class declares none), not {sorted(params)}"
            )
        return {}
    try:
        return dict(declared.model_validate(params).model_dump(mode="json"))
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(part) for part in first["loc"])
        raise ValueError(
            f"{option}.{where}: {first['msg']} (got {short_repr(first.get('input'))}; energy {energy})"
        ) from None


def _bad_defaults(defaults: Any) -> Optional[str]:
    """Why an energy's ``defaults`` is not axes a config takes, or None."""
    if not isinstance(defaults, dict):
        return f"has defaults {short_repr(defaults)}: give a dict of axes"
    if "energy" in defaults:
        return "sets energy in its defaults: the class is the energy (that key would train another one instead)"
    unknown = sorted(str(k) for k in set(defaults) - set(AXES) - {"style"})
    if unknown:
        return f"has defaults {', '.join(map(short_repr, unknown))}: they may set {', '.join((*AXES[1:], 'style'))}"
    for key, value in defaults.items():
        allowed = {
            "query_map": value in ATTENTION_MAPS,
            "key_map": value in ATTENTION_MAPS,
            "value_map": value in ATTENTION_MAPS,
            "style": value in STYLES,
            "out_proj": isinstance(value, bool),
            "heads": isinstance(value, int) and not isinstance(value, bool) and value >= 1,
        }[key]
        if not allowed:
            want = {"out_proj": "true or false", "heads": "an integer >= 1", "style": " or ".join(STYLES)}
            return f"has defaults {key}={short_repr(value)}: expected {want.get(key, ' or '.join(ATTENTION_MAPS))}"
    return None


ATTENTIONS = Registry("attention", "model.attention.energy", accepts=not_an_energy)
"""Every energy a config may name: nmt's own and the user's, one registry."""
ATTENTIONS.reserve(ATTENTION_ENERGIES)


def register_attention(name: str, energy: Optional[type] = None, replace: bool = False) -> Any:
    """Register an energy class (a subclass of ``nmt.Energy``) under ``name``, so configs can name it
    (``model.attention.type: NAME``, ``nmt compare --variants bahdanau,NAME``).

    ``register_attention("cosine", CosineEnergy)`` registers and returns the class;
    ``@register_attention("cosine")`` above the class does the same.  A name that a class of another
    module holds is refused unless ``replace``; the same module registering it again (a notebook
    cell run twice) replaces it.
    """
    if energy is None:
        return ATTENTIONS.decorator(name, replace)
    return ATTENTIONS.register(name, energy, replace)


class Traits(NamedTuple):
    """What an energy reads, which decides the maps and sizes it works with, and whether it keeps a state."""

    reads_query: bool
    reads_keys: bool
    same_size: bool
    stateful: bool = False


_BUILTIN_TRAITS = {
    "uniform": Traits(False, False, False),
    "location": Traits(True, False, False),
    "bilinear": Traits(True, True, False),
    **{name: Traits(True, True, True) for name in SAME_SIZE_ENERGIES},
    "coverage": Traits(True, True, True, stateful=True),
    "local_p": Traits(True, True, False),
    "local_m": Traits(True, True, False, stateful=True),
}
"""The built-in energies' class attributes, for configs read before :mod:`nmt.model` is imported
(tests/unit/test_attention_registry.py checks they agree)."""


def energy_traits(name: str) -> Traits:
    """The traits of energy ``name`` (registered, or nmt's own)."""
    if name in _BUILTIN_TRAITS:
        return _BUILTIN_TRAITS[name]
    cls = ATTENTIONS.get(name).target
    return Traits(*(bool(getattr(cls, trait, trait != "stateful")) for trait in Traits._fields))


def energy_defaults(name: str) -> dict[str, Any]:
    """The axes a config gets when its attention type names energy ``name`` (the class's ``defaults``)."""
    if name in _BUILTIN_TRAITS:
        return {}
    defaults = getattr(ATTENTIONS.get(name).target, "defaults", {})
    why = _bad_defaults(defaults)  # checked at registration; a class changed since is checked again
    if why is not None:
        raise ValueError(f"attention {name!r} {why}")
    return dict(defaults)


# Each attention type is a point of the design space (plus the decoder style it implies).
_IDENTITY = dict(query_map="identity", key_map="identity", value_map="identity", out_proj=False, heads=1)
_QK_LINEAR = dict(_IDENTITY, query_map="linear", key_map="linear")
ATTENTION_PRESETS: dict[str, dict[str, Any]] = {
    "none": dict(_IDENTITY, energy="uniform", style="bahdanau"),
    "bahdanau": dict(_QK_LINEAR, energy="mlp", style="bahdanau"),
    "luong_dot": dict(_IDENTITY, energy="dot", style="luong"),
    "luong_general": dict(_IDENTITY, energy="bilinear", style="luong"),
    "luong_concat": dict(_QK_LINEAR, energy="mlp", style="luong"),
    "scaled_dot": dict(_IDENTITY, energy="scaled_dot", style="luong"),
    "qkv": dict(_QK_LINEAR, energy="scaled_dot", value_map="linear", out_proj=True, style="luong"),
    "gaussian": dict(_QK_LINEAR, energy="gaussian", style="luong"),
    "coverage": dict(_QK_LINEAR, energy="coverage", style="bahdanau"),
    "luong_local_p": dict(_IDENTITY, energy="local_p", style="luong"),
    "luong_local_m": dict(_IDENTITY, energy="local_m", style="luong"),
}
# type=custom: no preset; energy must be given, every other axis defaults to this.
CUSTOM_ATTENTION: dict[str, Any] = dict(_IDENTITY, energy=None, style="luong")
AXES = ("energy", "query_map", "key_map", "value_map", "out_proj", "heads")


def attention_point(type_: str) -> dict[str, Any]:
    """The point (axes and style) an attention type starts from: a preset's; ``custom``'s (energy
    required); or, for a registered energy's name, ``custom`` with that energy and its class's ``defaults``."""
    if type_ in ATTENTION_PRESETS:
        return ATTENTION_PRESETS[type_]
    if type_ == "custom":
        return CUSTOM_ATTENTION
    return {**CUSTOM_ATTENTION, "energy": type_, **energy_defaults(type_)}


def scores_unscalable(energy: str, query_map: str, key_map: str) -> bool:
    """Whether no parameter can change the size of the scores: a dot energy over identity maps.

    ``learn_scale`` adds a learned scale exactly there (:class:`nmt.model.attention.Attention`).
    """
    return energy in ("dot", "scaled_dot") and query_map == key_map == "identity"


def attention_sizes(
    query_size: int, key_size: int, query_map: str, key_map: str, value_map: str, dim: Optional[int]
) -> tuple[int, int, int]:
    """Sizes of mapped (queries, keys, values); values come in with the key size.

    A linear map projects to ``dim``; with dim null, to the query size, except that a lone
    query map projects onto the key size (so that a lone map always makes the sizes agree).
    """
    if query_map == "linear":
        a_q = dim or (query_size if key_map == "linear" else key_size)
    else:
        a_q = query_size
    a_k = (dim or query_size) if key_map == "linear" else key_size
    a_v = (dim or query_size) if value_map == "linear" else key_size
    return a_q, a_k, a_v


def attention_problem(
    axes: dict[str, Any],
    query_size: int,
    key_size: int,
    dim: Optional[int],
    opt: Callable[[str], str] = str,
    sides: tuple[str, str] = ("query", "key"),
    note: str = "",
    residual: bool = False,
    size_fix: str = "",
) -> Optional[str]:
    """What is wrong with one point of the attention space, or None; ``opt`` renders option names.

    Shared by the config checks (full YAML paths) and the model's leaf modules (bare names).
    ``residual``: a self-attention block adds the context to its input, so sizes must agree.
    ``size_fix``: a fix the caller knows for unequal query and key sizes, named first.
    """
    e, qm, km, vm, heads = (axes[k] for k in ("energy", "query_map", "key_map", "value_map", "heads"))
    traits = energy_traits(e)
    if not traits.reads_query and not traits.reads_keys and "linear" in (qm, km):
        return (
            f"{opt('energy')}={e} scores neither query nor key, so {opt('query_map')}={qm} and "
            f"key_map={km} would be unused parameters; set both to identity"
        )
    if not traits.reads_keys and km == "linear":
        return (
            f"{opt('energy')}={e} scores positions from the query alone, so {opt('key_map')}=linear "
            f"would be an unused parameter; set key_map=identity"
        )
    if not traits.reads_query and qm == "linear":
        return (
            f"{opt('energy')}={e} scores the keys alone, so {opt('query_map')}=linear "
            f"would be an unused parameter; set query_map=identity"
        )
    a_q, a_k, a_v = attention_sizes(query_size, key_size, qm, km, vm, dim)
    if traits.same_size and a_q != a_k:
        fix = "key_map=linear" if km == "identity" else f"{opt('dim')}=null"
        return (
            f"{opt('energy')}={e} with {opt('query_map')}={qm} and key_map={km} needs equal query and key "
            f"sizes: {sides[0]} {a_q} vs {sides[1]} {a_k}{note}; use {size_fix + ', ' if size_fix else ''}{fix} "
            "or energy=bilinear"
        )
    split = [("query/key", a_q)] if traits.reads_keys else []
    for what, size in split + [("value", a_v)]:
        if size % heads:
            return (
                f"{opt('heads')}={heads} must divide the {what} size {size} "
                f"({opt('dim')} or the state size); change heads or dim"
            )
    if residual and not axes["out_proj"] and a_v != query_size:
        return (
            f"{opt('value_map')}=linear with {opt('dim')}={dim} and out_proj=false gives contexts of size "
            f"{a_v}, but the residual connection needs {query_size}; set out_proj=true or dim=null"
        )
    return None
