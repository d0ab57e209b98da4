"""The experiment config as a JSON Schema, so an editor completes and checks a config as it is typed.

Built from the pydantic models (:class:`nmt.config.Config` and its sections), so the schema
names every option with the type, range, choices, default and description the models give it.
Three changes make it serve editors and match what :func:`nmt.config.load` accepts:

* It is written for JSON Schema draft 7, the draft the YAML language server implements: each
  section is inlined where it is used (no ``$ref``, whose sibling keys draft 7 ignores, so a
  section's description would not show), and the titles pydantic derives from field names go.
* Rules that a validator function holds, and so are missing from pydantic's schema, are
  added: ``model.enc_hidden_size`` is at least 1, and ``name`` is one plain folder name.
* Keys are kept in the models' order, so an editor offers options as the reference lists them.

The schema checks each option on its own; checks across options (``decode.n_best`` at most
``decode.beam``, the attention sizes, ...) run when the config loads.  ``nmt config --schema``
prints :func:`schema_text`; ``docs_build/config_reference.py`` writes it to ``configs/schema.json``.
"""

from __future__ import annotations

import json
from typing import Any

from nmt.config import RUN_NAME_MAX_BYTES, RUN_NAME_PATTERN, Config
from nmt.config.attention_space import ATTENTION_ENERGIES, ATTENTION_TYPES
from nmt.config.combines import COMBINE_NAMES
from nmt.config.decoder_loops import DECODER_LOOP_NAMES
from nmt.config.normalizations import NORMALIZATION_NAMES
from nmt.config.schedules import TF_SCHEDULE_NAMES
from nmt.util.registry import PATH

NORMALIZED = ("attention", "enc_self_attention", "dec_self_attention", "transformer")
"""The sections with a ``normalize`` option."""

DRAFT = "http://json-schema.org/draft-07/schema#"
"""The JSON Schema draft the YAML language server (and so most editors) validates with."""

TITLE = "nmt experiment config"

_SCHEMA_LISTS = ("anyOf", "allOf", "oneOf")
"""Keywords whose value is a list of schemas (pydantic emits only anyOf for these models)."""


def _inline(node: Any, defs: dict[str, Any]) -> Any:
    """``node`` with every ``$ref`` replaced by its definition and pydantic's titles dropped.

    Keys beside a ``$ref`` (a field's description) override the definition's (a class docstring),
    so a section reads as its field describes it.  Walks keywords, never property names, so an
    option called ``title`` would survive.
    """
    if not isinstance(node, dict):
        return node
    if "$ref" in node:
        target = defs[node["$ref"].rsplit("/", 1)[-1]]
        siblings = {k: v for k, v in node.items() if k != "$ref"}
        return _inline({**target, **siblings}, defs)
    out: dict[str, Any] = {}
    for key, value in node.items():
        if key == "title":
            continue
        if key == "properties":
            out[key] = {name: _inline(sub, defs) for name, sub in value.items()}
        elif key in ("additionalProperties", "items"):
            out[key] = _inline(value, defs)
        elif key in _SCHEMA_LISTS:
            out[key] = [_inline(sub, defs) for sub in value]
        else:
            out[key] = value
    return out


def option_schema(schema: dict[str, Any], path: str) -> dict[str, Any]:
    """The schema of the option at dotted ``path`` (e.g. ``model.attention.type``); KeyError if none."""
    node = schema
    for part in path.split("."):
        node = node["properties"][part]
    return node


def _add_validator_rules(schema: dict[str, Any]) -> None:
    """Write into ``schema`` the rules that field validators hold, which pydantic cannot see."""
    enc_size = option_schema(schema, "model.enc_hidden_size")
    (integer,) = [branch for branch in enc_size["anyOf"] if branch.get("type") == "integer"]
    integer["minimum"] = 1  # ModelConfig._one_line_encoder_size
    name = option_schema(schema, "name")  # Config._plain_name: one folder name, ASCII, not '.' or '..'
    name["pattern"] = rf"^(?!\.\.?$){RUN_NAME_PATTERN.pattern}$"
    name["maxLength"] = RUN_NAME_MAX_BYTES
    # Registry names (AttentionConfig._known_type, _registered_energy, TrainConfig._known_schedule):
    # nmt's own, or an import path; a name registered from Python is unknown to an editor.
    named = {
        "model.attention.type": (*ATTENTION_TYPES, "custom", *ATTENTION_ENERGIES),
        "model.attention.energy": ATTENTION_ENERGIES,
        "model.enc_self_attention.energy": ATTENTION_ENERGIES,
        "model.dec_self_attention.energy": ATTENTION_ENERGIES,
        "train.tf_schedule": TF_SCHEDULE_NAMES,
        "train.decoder_loop": DECODER_LOOP_NAMES,
        "model.transformer.energy": ATTENTION_ENERGIES,
        **{f"model.{section}.normalize": NORMALIZATION_NAMES for section in NORMALIZED},
        "model.attention.combine": COMBINE_NAMES,
    }
    for path, names in named.items():
        node = option_schema(schema, path)
        branches = [{"type": "string", "enum": list(names)}, {"type": "string", "pattern": f"^{PATH.pattern}$"}]
        if "anyOf" in node:  # Optional: null is one of them
            node["anyOf"] = [b for b in node["anyOf"] if b.get("type") != "string"] + branches
        else:
            node.pop("type", None)
            node["anyOf"] = branches


def config_schema() -> dict[str, Any]:
    """The JSON Schema (draft 7) of an experiment config file."""
    raw = Config.model_json_schema(mode="validation")
    body = _inline({k: v for k, v in raw.items() if k != "$defs"}, raw.get("$defs", {}))
    _add_validator_rules(body)
    return {"$schema": DRAFT, "title": TITLE, **body}


def schema_text() -> str:
    """:func:`config_schema` as the text of ``configs/schema.json``: indented, one final newline."""
    return json.dumps(config_schema(), indent=2, ensure_ascii=False) + "\n"
