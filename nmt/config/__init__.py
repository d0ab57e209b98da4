"""Typed experiment configuration, parsed and validated once at the edge.

One YAML file holds four sections (``data``, ``model``, ``train``, ``decode``, each a model:
``data`` and ``decode`` in :mod:`nmt.config.sections`, ``model`` in :mod:`nmt.config.model_sections`,
``train`` in :mod:`nmt.config.train_section`) plus a run ``name``.  Every option has a default and a
one-line description (``nmt config`` prints them).  :func:`load` merges the YAML file with
``--set section.key=value`` overrides and validates the result; every problem becomes a
:class:`~nmt.util.errors.ConfigError` that names the full key path.  This module holds the root
:class:`Config` (checks across sections), loading, overrides and dumping; the section
models are re-exported, so ``from nmt.config import DataConfig`` works.
"""

from __future__ import annotations

import copy
import difflib
import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel, Field, ValidationError, field_validator, model_validator
from pydantic_core import ErrorDetails

from nmt.config.attention_space import ATTENTION_ENERGIES, ATTENTION_TYPES
from nmt.config.model_sections import (
    AttentionConfig,
    DecoderSelfAttentionConfig,
    EncoderSelfAttentionConfig,
    ModelConfig,
    SelfAttentionConfig,
    TransformerConfig,
)
from nmt.config.named_code import admit_named_code, import_named_code, importing
from nmt.config.saved_defaults import SAVED_RUN_DEFAULTS as SAVED_RUN_DEFAULTS
from nmt.config.saved_defaults import fill_saved_defaults
from nmt.config.section import Section
from nmt.config.sections import NORMALIZATIONS, SPM_MODEL_TYPES, DataConfig, DecodeConfig
from nmt.config.train_section import TrainConfig

# The limits are re-exported: they are part of what loading a config promises.
from nmt.config.yaml_reader import MAX_CONFIG_BYTES as MAX_CONFIG_BYTES
from nmt.config.yaml_reader import MAX_YAML_DEPTH as MAX_YAML_DEPTH
from nmt.config.yaml_reader import MAX_YAML_NODES as MAX_YAML_NODES
from nmt.config.yaml_reader import parse_value, read_yaml
from nmt.util.errors import MAX_PHRASE_CHARS as MAX_PHRASE_CHARS
from nmt.util.errors import SHOWN_VALUE_CHARS, ConfigError, UserError, short_repr, shorten

__all__ = [
    "ATTENTION_ENERGIES",
    "ATTENTION_TYPES",
    "NORMALIZATIONS",
    "RUN_NAME_PATTERN",
    "SAVED_RUN_DEFAULTS",
    "SPM_MODEL_TYPES",
    "AttentionConfig",
    "Config",
    "ConfigError",
    "DataConfig",
    "DecodeConfig",
    "DecoderSelfAttentionConfig",
    "EncoderSelfAttentionConfig",
    "ModelConfig",
    "Section",
    "SelfAttentionConfig",
    "TrainConfig",
    "TransformerConfig",
    "apply_override",
    "describe_options",
    "dump",
    "fill_saved_defaults",
    "from_dict",
    "load",
    "read_yaml",
    "short_repr",
    "with_decode_overrides",
]

TRANSFORMER_WARMUP = 4000
"""``train.warmup_steps`` when model.arch=transformer leaves it unset (Vaswani et al. 2017)."""

RUN_NAME_PATTERN = re.compile(r"[A-Za-z0-9._-]+")
"""A run name is one plain folder name, so ``runs_dir/<name>`` never leaves ``runs_dir``."""

NAME_MAX_BYTES = 255
"""Longest file or folder name most file systems take (NAME_MAX), in bytes."""

RUN_NAME_MAX_BYTES = 200
"""Longest run name, in bytes (= characters: run names are ASCII).  The margin below
:data:`NAME_MAX_BYTES` leaves room for what may be written beside a name, such as an atomic
write's temporary ``.NAME.PID.HEX.tmp``."""

MAX_PROBLEMS_SHOWN = 5
"""An error names at most this many problems, then says how many more there are."""


class Config(Section):
    """The whole experiment: run name and folder, the four sections, and checks across them."""

    name: str = Field("run", description="Run name: the run directory is runs/<name> (letters, digits, '.', '_', '-').")
    runs_dir: str = Field("runs", description="Folder holding run directories.")
    data: DataConfig = Field(default_factory=DataConfig, description="Corpus, cleaning and tokenization.")
    model: ModelConfig = Field(default_factory=ModelConfig, description="Encoder, attention and decoder.")
    train: TrainConfig = Field(default_factory=TrainConfig, description="Optimization and validation.")
    decode: DecodeConfig = Field(default_factory=DecodeConfig, description="Search settings.")

    @field_validator("name")
    @classmethod
    def _plain_name(cls, name: str) -> str:
        if not RUN_NAME_PATTERN.fullmatch(name) or name in (".", ".."):
            raise ValueError(
                f"name={short_repr(name)}: a run name is one folder name of letters, digits, '.', "
                f"'_' and '-' (not '.' or '..'); put folders in runs_dir"
            )
        if len(name.encode("utf-8")) > RUN_NAME_MAX_BYTES:
            raise ValueError(
                f"name={short_repr(name)}: a run name of {len(name.encode('utf-8'))} characters is too "
                f"long for a folder name (at most {RUN_NAME_MAX_BYTES})"
            )
        return name

    @field_validator("runs_dir")
    @classmethod
    def _folder_names_fit(cls, runs_dir: str) -> str:
        for part in Path(runs_dir).parts:
            size = len(part.encode("utf-8", errors="surrogateescape"))
            if size > NAME_MAX_BYTES:
                raise ValueError(
                    f"runs_dir: the folder name {short_repr(part)} is {size} bytes long; "
                    f"file systems take at most {NAME_MAX_BYTES}"
                )
        return runs_dir

    @model_validator(mode="before")
    @classmethod
    def _transformer_schedule(cls, raw: Any) -> Any:
        """For model.arch=transformer, a schedule not given is warm-up + inverse square root."""
        model, train = (raw.get(k) if isinstance(raw, dict) else None for k in ("model", "train"))
        if isinstance(model, dict) and model.get("arch") == "transformer":
            train = dict(train) if isinstance(train, dict) else {}
            train.setdefault("schedule", "inverse_sqrt")
            train.setdefault("warmup_steps", TRANSFORMER_WARMUP)
            raw = {**raw, "train": train}
        return raw

    @model_validator(mode="after")
    def _check_combinations(self) -> Config:
        m, t, d = self.model, self.train, self.decode
        att = m.attention
        if m.arch == "transformer":
            self._check_transformer()
        if m.arch == "rnn" and m.tie_embeddings and m.emb_size != m.hidden_size:
            raise ValueError(
                f"model.tie_embeddings=true needs model.emb_size == model.hidden_size "
                f"(got {m.emb_size} and {m.hidden_size})"
            )
        longest = max(t.max_len, d.max_src_len)  # the longest source a model may see
        enc_sa = m.enc_self_attention
        for key, energy, limit in (
            ("attention.max_src_len", att.axes()["energy"], att.max_src_len),
            ("enc_self_attention.max_len", enc_sa.energy if enc_sa.layers else None, enc_sa.max_len),
        ):
            if energy == "location" and limit < longest:
                raise ValueError(
                    f"model.{key.split('.')[0]}.energy=location scores {limit} source positions (model.{key}), "
                    f"but train.max_len={t.max_len} and decode.max_src_len={d.max_src_len} let {longest} through; "
                    f"raise model.{key} or lower those"
                )
        if (t.max_tokens is None) == (t.batch_size is None):
            raise ValueError("set exactly one of train.max_tokens and train.batch_size (the other null)")
        if t.min_lr > t.lr:
            raise ValueError(f"train.min_lr={t.min_lr} exceeds train.lr={t.lr}")
        if d.n_best > d.beam:
            raise ValueError(f"decode.n_best={d.n_best} exceeds decode.beam={d.beam}")
        if self.data.min_len > self.data.max_len:
            raise ValueError(f"data.min_len={self.data.min_len} exceeds data.max_len={self.data.max_len}")
        if self.data.synthetic_min_words > self.data.synthetic_max_words:
            raise ValueError(
                f"data.synthetic_min_words={self.data.synthetic_min_words} exceeds "
                f"data.synthetic_max_words={self.data.synthetic_max_words}"
            )
        if self.data.src == self.data.tgt:
            raise ValueError(f"data.src and data.tgt are both {short_repr(self.data.src)}")
        return self

    def _check_transformer(self) -> None:
        m, t = self.model, self.train
        if m.transformer.share_embeddings and not self.data.joint_vocab:
            raise ValueError(
                "model.transformer.share_embeddings=true needs data.joint_vocab=true "
                "(one vocabulary for both languages)"
            )
        if t.teacher_forcing < 1.0:
            raise ValueError(
                f"train.teacher_forcing={t.teacher_forcing}: the Transformer decodes a whole "
                "reference in parallel, so it trains with teacher forcing 1 only"
            )
        if t.decoder_loop != "sampled":
            raise ValueError(
                f"train.decoder_loop={t.decoder_loop}: the Transformer decodes a whole reference in parallel, "
                "with no loop over positions (leave it sampled)"
            )
        if t.compile != "off":
            raise ValueError(
                f"train.compile={t.compile} compiles the RNN decoder step; model.arch=transformer "
                "has none (leave it off)"
            )


# ---------------------------------------------------------------- loading


def _section_model(path: tuple[str | int, ...]) -> type[BaseModel] | None:
    """The pydantic model that owns the key at ``path`` (None if not a section)."""
    model: type[BaseModel] = Config
    for part in path[:-1]:
        field = model.model_fields.get(str(part))
        ann = field.annotation if field else None
        if not (isinstance(ann, type) and issubclass(ann, BaseModel)):
            return None
        model = ann
    return model


def _describe(err: ErrorDetails) -> str:
    """One readable phrase for one pydantic error, naming the full key path (values shortened)."""
    loc = tuple(p for p in err["loc"] if not str(p).startswith("function-"))
    path = ".".join(str(p) if isinstance(p, int) else shorten(str(p), SHOWN_VALUE_CHARS) for p in loc)
    kind = err["type"]
    if kind == "extra_forbidden":
        owner = _section_model(loc)
        options = list(owner.model_fields) if owner else []
        key = str(loc[-1])
        close = difflib.get_close_matches(key, options, n=1, cutoff=0.5) if len(key) <= SHOWN_VALUE_CHARS else []
        hint = f"did you mean '{close[0]}'?" if close else "valid keys: " + ", ".join(options)
        section = ".".join(str(p) for p in loc[:-1]) or "top level"
        return f"{path}: unknown key in {shorten(section, SHOWN_VALUE_CHARS)}; {hint}"
    if kind == "value_error":
        return shorten(err["msg"].removeprefix("Value error, "))
    got = err.get("input")
    shown = "" if isinstance(got, dict) else f" (got {short_repr(got)})"
    return shorten(f"{path or 'config'}: {err['msg']}") + shown


def _one_line(errors: Sequence[ErrorDetails]) -> str:
    """The first :data:`MAX_PROBLEMS_SHOWN` problems of a validation, joined into one line."""
    phrases = [_describe(e) for e in errors[:MAX_PROBLEMS_SHOWN]]
    if len(errors) > MAX_PROBLEMS_SHOWN:
        phrases.append(f"and {len(errors) - MAX_PROBLEMS_SHOWN} more problems")
    return "; ".join(phrases)


def apply_override(raw: dict[str, Any], assignment: str) -> None:
    """Apply one ``a.b.c=value`` override to the raw dict (value parsed as YAML)."""
    key, sep, value = assignment.partition("=")
    if not sep or not key.strip():
        raise ConfigError(f"--set {short_repr(assignment)}: expected KEY=VALUE, e.g. model.attention.type=luong_dot")
    parts = key.strip().split(".")
    node = raw
    for i, part in enumerate(parts[:-1]):
        child = node.setdefault(part, {})
        if not isinstance(child, dict):
            raise ConfigError(
                f"--set {shorten(key, SHOWN_VALUE_CHARS)}: "
                f"{shorten('.'.join(parts[: i + 1]), SHOWN_VALUE_CHARS)} is a value, not a section"
            )
        node = child
    _assign(node, tuple(parts), parse_value(key.strip(), value))


def _assign(node: dict[str, Any], path: tuple[str, ...], value: Any) -> None:
    """Set ``path``'s last key in ``node`` to ``value``; a mapping given for a section is merged into
    what the section holds (``train={"max_steps": 3}`` changes max_steps alone), never replacing
    the section's other options with their defaults."""
    key = path[-1]
    is_section = _section_model((*path, "")) is not None  # train, model.attention: not an option
    if isinstance(value, dict) and is_section and isinstance(node.get(key, {}), dict):
        section = node.setdefault(key, {})
        for inner, inner_value in value.items():
            _assign(section, (*path, str(inner)), inner_value)
    else:
        node[key] = value


def apply_decode_overrides(raw: dict[str, Any], overrides: Sequence[str]) -> None:
    """Apply ``--set decode.*`` overrides to a raw config in place; any other section is refused
    (a trained or exported model's other options are fixed)."""
    for assignment in overrides:
        if not assignment.startswith("decode."):
            raise UserError(
                f"--set {shorten(assignment, SHOWN_VALUE_CHARS)}: only decode.* options can change at translation time"
            )
        apply_override(raw, assignment)


def with_decode_overrides(config: Config, overrides: Sequence[str]) -> Config:
    """Apply ``--set decode.*`` overrides to a checkpoint's config (other sections are fixed)."""
    raw = config.model_dump(mode="json")
    apply_decode_overrides(raw, overrides)
    return from_dict(raw)


def from_dict(raw: dict[str, Any]) -> Config:
    """Validate a raw mapping into a :class:`Config` or raise one ConfigError."""
    try:
        return Config.model_validate(raw)
    except ValidationError as exc:
        raise ConfigError(_one_line(exc.errors())) from None


def load(
    path: Path | str | Mapping[str, Any] | Config | None = None,
    overrides: Sequence[str] = (),
    saved: bool = False,
    import_code: bool = False,
) -> Config:
    """Load a YAML config (or the defaults when ``path`` is None) plus ``--set`` overrides.

    ``path`` may also be the config itself, as a nested mapping (``{"model": {"hidden_size": 64}}``,
    what the YAML file would hold) or a :class:`Config` (the library takes either); it is copied,
    never changed.  ``saved``: ``path`` is a run's own config.yaml (see :func:`fill_saved_defaults`).
    ``import_code``: the user passed this config to train from, so the code it names by import path
    is imported (also inside :func:`~nmt.config.named_code.importing_config_code`); otherwise, and
    always for a saved config, only modules allowed by name supply it (:mod:`nmt.config.named_code`).
    """
    if isinstance(path, Config):
        raw = path.model_dump(mode="json")
    elif isinstance(path, Mapping):
        raw = copy.deepcopy(dict(path))
    else:
        raw = read_yaml(Path(path)) if path is not None else {}
    if saved:
        fill_saved_defaults(raw)
    for assignment in overrides:
        apply_override(raw, assignment)
    if not saved and (import_code or importing()):
        import_named_code(raw, Path(path).parent if isinstance(path, (str, Path)) else None)
    else:
        admit_named_code(raw)
    return from_dict(raw)


def dump(config: Config) -> str:
    """The resolved config as YAML: enough to rebuild the model and rerun the experiment."""
    return yaml.safe_dump(config.model_dump(mode="json"), sort_keys=False, allow_unicode=True)


def describe_options(model: type[BaseModel] = Config, prefix: str = "") -> list[tuple[str, str, str]]:
    """(key path, default, description) for every option, sections expanded."""
    rows: list[tuple[str, str, str]] = []
    for name, field in model.model_fields.items():
        ann = field.annotation
        if isinstance(ann, type) and issubclass(ann, BaseModel):
            rows.extend(describe_options(ann, f"{prefix}{name}."))
            continue
        default = field.get_default(call_default_factory=True)
        rows.append(
            (
                prefix + name,
                yaml.safe_dump(default, default_flow_style=True).strip().removesuffix("...").strip(),
                field.description or "",
            )
        )
    return rows
