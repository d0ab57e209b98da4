"""Typed experiment configuration, parsed and validated once at the edge.

One YAML file holds four sections (``data``, ``model``, ``train``, ``decode``, each a model
in :mod:`nmt.config_sections`) plus a run ``name``.  Every option has a default and a
one-line description (``nmt config`` prints them).  :func:`load` merges the YAML file with
``--set section.key=value`` overrides and validates the result; every problem becomes a
:class:`~nmt.errors.ConfigError` that names the full key path.  This module holds the root
:class:`Config` (checks across sections), loading, overrides and dumping; the section
models are re-exported, so ``from nmt.config import DataConfig`` works.
"""

from __future__ import annotations

import difflib
import re
from pathlib import Path
from typing import Any, Callable, Sequence

import yaml
from pydantic import BaseModel, Field, ValidationError, field_validator, model_validator

from nmt.attention_space import ATTENTION_ENERGIES, ATTENTION_TYPES
from nmt.config_sections import (NORMALIZATIONS, RNN_ONLY, SPM_MODEL_TYPES, AttentionConfig, DataConfig,
                                 DecodeConfig, DecoderSelfAttentionConfig, EncoderSelfAttentionConfig, ModelConfig, Section,
                                 SelfAttentionConfig, TrainConfig, TransformerConfig)
from nmt.errors import ConfigError, UserError

__all__ = [
    "ATTENTION_ENERGIES", "ATTENTION_TYPES", "NORMALIZATIONS", "RUN_NAME_PATTERN", "SAVED_RUN_DEFAULTS",
    "SPM_MODEL_TYPES", "AttentionConfig", "Config", "ConfigError", "DataConfig", "DecodeConfig",
    "DecoderSelfAttentionConfig", "EncoderSelfAttentionConfig", "ModelConfig", "Section", "SelfAttentionConfig",
    "TrainConfig", "TransformerConfig", "apply_override", "describe_options", "dump", "fill_saved_defaults", "from_dict", "load",
    "read_yaml", "with_decode_overrides",
]

TRANSFORMER_WARMUP = 4000
"""``train.warmup_steps`` when model.arch=transformer leaves it unset (Vaswani et al. 2017)."""

RUN_NAME_PATTERN = re.compile(r"[A-Za-z0-9._-]+")
"""A run name is one plain folder name, so ``runs_dir/<name>`` never leaves ``runs_dir``."""


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
            raise ValueError(f"name={name!r}: a run name is one folder name of letters, digits, '.', '_' "
                             f"and '-' (not '.' or '..'); put folders in runs_dir")
        return name

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
    def _check_combinations(self) -> "Config":
        m, t, d = self.model, self.train, self.decode
        att = m.attention
        if m.arch == "transformer":
            self._check_transformer()
        if m.arch == "rnn" and m.tie_embeddings and m.emb_size != m.hidden_size:
            raise ValueError(
                f"model.tie_embeddings=true needs model.emb_size == model.hidden_size "
                f"(got {m.emb_size} and {m.hidden_size})")
        longest = max(t.max_len, d.max_src_len)  # the longest source a model may see
        enc_sa = m.enc_self_attention
        for key, energy, limit in (("attention.max_src_len", att.axes()["energy"], att.max_src_len),
                                   ("enc_self_attention.max_len", enc_sa.energy if enc_sa.layers else None, enc_sa.max_len)):
            if energy == "location" and limit < longest:
                raise ValueError(
                    f"model.{key.split('.')[0]}.energy=location scores {limit} source positions (model.{key}), "
                    f"but train.max_len={t.max_len} and decode.max_src_len={d.max_src_len} let {longest} through; "
                    f"raise model.{key} or lower those")
        if (t.max_tokens is None) == (t.batch_size is None):
            raise ValueError("set exactly one of train.max_tokens and train.batch_size (the other null)")
        if t.min_lr > t.lr:
            raise ValueError(f"train.min_lr={t.min_lr} exceeds train.lr={t.lr}")
        if d.n_best > d.beam:
            raise ValueError(f"decode.n_best={d.n_best} exceeds decode.beam={d.beam}")
        if self.data.min_len > self.data.max_len:
            raise ValueError(f"data.min_len={self.data.min_len} exceeds data.max_len={self.data.max_len}")
        if self.data.synthetic_min_words > self.data.synthetic_max_words:
            raise ValueError(f"data.synthetic_min_words={self.data.synthetic_min_words} exceeds "
                             f"data.synthetic_max_words={self.data.synthetic_max_words}")
        if self.data.src == self.data.tgt:
            raise ValueError(f"data.src and data.tgt are both '{self.data.src}'")
        return self

    def _check_transformer(self) -> None:
        m, t = self.model, self.train
        if m.transformer.share_embeddings and not self.data.joint_vocab:
            raise ValueError("model.transformer.share_embeddings=true needs data.joint_vocab=true "
                             "(one vocabulary for both languages)")
        if t.teacher_forcing < 1.0:
            raise ValueError(f"train.teacher_forcing={t.teacher_forcing}: the Transformer decodes a whole "
                             "reference in parallel, so it trains with teacher forcing 1 only")
        if t.compile != "off":
            raise ValueError(f"train.compile={t.compile} compiles the RNN decoder step; model.arch=transformer "
                             "has none (leave it off)")


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


def _describe(err: dict[str, Any]) -> str:
    """One readable phrase for one pydantic error, naming the full key path."""
    loc = tuple(p for p in err["loc"] if not str(p).startswith("function-"))
    path = ".".join(str(p) for p in loc)
    kind = err["type"]
    if kind == "extra_forbidden":
        owner = _section_model(loc)
        options = list(owner.model_fields) if owner else []
        close = difflib.get_close_matches(str(loc[-1]), options, n=1, cutoff=0.5)
        hint = f"did you mean '{close[0]}'?" if close else "valid keys: " + ", ".join(options)
        section = ".".join(str(p) for p in loc[:-1]) or "top level"
        return f"{path}: unknown key in {section}; {hint}"
    if kind == "value_error":
        return err["msg"].removeprefix("Value error, ")
    got = err.get("input")
    shown = "" if isinstance(got, dict) else f" (got {got!r})"
    return f"{path or 'config'}: {err['msg']}{shown}"


def _parse_value(text: str) -> Any:
    try:
        return yaml.safe_load(text) if text != "" else ""
    except yaml.YAMLError:
        return text


def apply_override(raw: dict[str, Any], assignment: str) -> None:
    """Apply one ``a.b.c=value`` override to the raw dict (value parsed as YAML)."""
    key, sep, value = assignment.partition("=")
    if not sep or not key.strip():
        raise ConfigError(f"--set {assignment!r}: expected KEY=VALUE, e.g. model.attention.type=luong_dot")
    parts = key.strip().split(".")
    node = raw
    for i, part in enumerate(parts[:-1]):
        child = node.setdefault(part, {})
        if not isinstance(child, dict):
            raise ConfigError(f"--set {key}: {'.'.join(parts[: i + 1])} is a value, not a section")
        node = child
    node[parts[-1]] = _parse_value(value)


def with_decode_overrides(config: Config, overrides: Sequence[str]) -> Config:
    """Apply ``--set decode.*`` overrides to a checkpoint's config (other sections are fixed)."""
    raw = config.model_dump(mode="json")
    for assignment in overrides:
        if not assignment.startswith("decode."):
            raise UserError(f"--set {assignment}: only decode.* options can change at translation time")
        apply_override(raw, assignment)
    return from_dict(raw)


class _StrictLoader(yaml.SafeLoader):
    """YAML's safe loader, refusing a key given twice in one mapping (YAML keeps the last silently)."""

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
        seen: dict[Any, yaml.Mark] = {}
        for key_node, _ in node.value:
            key = self.construct_object(key_node, deep=True)
            if key in seen:
                raise yaml.constructor.ConstructorError(
                    None, None, f"key {key!r} appears twice (lines {seen[key].line + 1} and "
                    f"{key_node.start_mark.line + 1})", key_node.start_mark)
            seen[key] = key_node.start_mark
        return super().construct_mapping(node, deep=deep)


def read_yaml(path: Path) -> dict[str, Any]:
    """Read a YAML mapping; malformed YAML and repeated keys are reported with line and column."""
    try:
        text = Path(path).read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ConfigError(f"{path}: config file not found") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"{path}: cannot read config ({exc})") from None
    try:
        raw = yaml.load(text, Loader=_StrictLoader)  # noqa: S506 - a SafeLoader subclass
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f":{mark.line + 1}:{mark.column + 1}" if mark else ""
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        raise ConfigError(f"{path}{where}: malformed YAML: {problem}") from None
    if raw is None:
        return {}
    if not isinstance(raw, dict):
        raise ConfigError(f"{path}: expected a mapping of sections, got {type(raw).__name__}")
    return raw


# Options added after runs were saved, with the value that rebuilds those runs' models.  A saved
# config (a run's config.yaml, a checkpoint's) holds every option of its day, so a missing one
# means it was saved before the option existed.  The *_start options act only on the
# initialization: a saved model loads the same whatever their value, but nmt compare reads them
# to tell how a run was trained.
SAVED_RUN_DEFAULTS: dict[tuple[str, ...], Any] = {
    ("model", "output_init"): "xavier",  # initialization only
    ("model", "attention", "scale_out_proj"): False,
    ("model", "attention", "out_proj_start"): "scaled",  # initialization only: how the run was trained
    ("model", "attention", "scale_bilinear"): False,
    ("model", "attention", "bilinear_start"): "scaled",
    ("model", "attention", "scale_gaussian"): False,
    ("model", "attention", "learn_scale"): False,
    ("model", "enc_self_attention", "norm"): "post",
    ("model", "enc_self_attention", "gate"): False,
    ("model", "dec_self_attention", "norm"): "post",
    ("model", "dec_self_attention", "gate"): False,
}
# A section's saved defaults apply only where the section is in use; elsewhere its options change
# no model, and taking today's defaults keeps such a config equal to a new one (nmt compare reuse).
_IN_USE: dict[tuple[str, ...], Callable[[dict[str, Any]], bool]] = {
    ("model", "enc_self_attention"): lambda section: bool(section.get("layers")),
    ("model", "dec_self_attention"): lambda section: bool(section.get("enabled")),
}


def fill_saved_defaults(raw: dict[str, Any]) -> dict[str, Any]:
    """``raw`` (a saved config) with :data:`SAVED_RUN_DEFAULTS` set where it lacks them.

    A saved Transformer's RNN-only options are dropped: they built nothing, and a default
    changed since would otherwise read as an RNN option given to a Transformer.
    """
    model = raw.get("model")
    if isinstance(model, dict) and model.get("arch") == "transformer":
        for key in RNN_ONLY:
            model.pop(key, None)
        return raw
    for path, value in SAVED_RUN_DEFAULTS.items():
        node = raw
        for key in path[:-1]:
            node = node.setdefault(key, {}) if isinstance(node, dict) else {}
        in_use = _IN_USE.get(path[:-1])
        if isinstance(node, dict) and (in_use is None or in_use(node)):
            node.setdefault(path[-1], value)
    return raw


def from_dict(raw: dict[str, Any]) -> Config:
    """Validate a raw mapping into a :class:`Config` or raise one ConfigError."""
    try:
        return Config.model_validate(raw)
    except ValidationError as exc:
        raise ConfigError("; ".join(_describe(e) for e in exc.errors())) from None


def load(path: Path | str | None = None, overrides: list[str] | tuple[str, ...] = (), saved: bool = False) -> Config:
    """Load a YAML config (or the defaults when ``path`` is None) plus ``--set`` overrides.

    ``saved``: ``path`` is a run's own config.yaml (see :func:`fill_saved_defaults`).
    """
    raw = read_yaml(Path(path)) if path is not None else {}
    if saved:
        fill_saved_defaults(raw)
    for assignment in overrides:
        apply_override(raw, assignment)
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
        rows.append((prefix + name, yaml.safe_dump(default, default_flow_style=True).strip().removesuffix("..."
                     ).strip(), field.description or ""))
    return rows
