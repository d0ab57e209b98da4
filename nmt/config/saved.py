"""Saved configs: a run's config.yaml or a checkpoint's, read as a Config, and whether one fits.

A run saves its resolved config beside it and inside every checkpoint.  Later commands ask
whether that saved config fits the one in hand, each about a different part of it:

* resume (``nmt train --resume``): every option but those a resumed run may change
  (:data:`RESUME`, compared as written);
* restoring a checkpoint into a run: the model section as written (:data:`SAME_MODEL`);
* averaging (``nmt average``): the network the checkpoints hold (:data:`SAME_NETWORK`: up to
  inert options, e.g. ``enc_hidden_size: half`` equals ``128`` for hidden 256, and the
  dropout rates, which shape training, not the network);
* reusing a finished run (``nmt compare``): everything that can change the weights
  (:data:`SAME_TRAINING`: up to inert and speed-only options).

Ensembles need no rule here: their members may differ in any option (even the architecture),
and only their vocabularies must match, which the tokenizers' hashes decide.  One function,
:func:`changes`, answers all of them; each caller words its own message.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass
from typing import Any

from nmt.config import (
    AttentionConfig,
    Config,
    DecoderSelfAttentionConfig,
    EncoderSelfAttentionConfig,
    ModelConfig,
    TrainConfig,
    fill_saved_defaults,
    from_dict,
)
from nmt.config.attention_space import scores_unscalable


def saved_config(raw: dict[str, Any]) -> Config:
    """A saved config (a checkpoint's ``config`` dict) as a :class:`Config`, read as a saved run
    is read on resume: an option added since takes the value that rebuilds the saved model.

    ``raw`` is left as it was (:func:`~nmt.config.fill_saved_defaults` edits its argument).
    """
    return from_dict(fill_saved_defaults(copy.deepcopy(raw)))


SPEED_ONLY = ("threads", "log_every", "tensorboard", "valid_attention_map")
"""``train`` options that change how fast a run trains or what it logs, not what it learns:
``threads`` (the thread count changes the order of floating-point sums, so runs of different
counts part by rounding over hundreds of updates, docs/training.md, but not in quality; on a toy
model one thread and two give identical scores, tests/integration/test_compare.py),
``log_every`` (how often a training line is written), ``tensorboard`` (a copy of the events) and
``valid_attention_map`` (a picture per validation).
Options that can change the weights or which checkpoint is best (device, amp, compile, validation
batching) are not here."""

TRAINING_ONLY = ("dropout", "emb_dropout", "src_word_dropout", "tgt_word_dropout", "transformer.attention_dropout")
"""``model`` options that change training but not the network, so averaged checkpoints may differ in them."""


def _inert_attention(attention: AttentionConfig) -> dict[str, Any]:
    """The attention options that do nothing for this attention, with their defaults."""
    axes, default = attention.axes(), AttentionConfig()
    inert: dict[str, Any] = {}
    if axes["energy"] != "bilinear" or not attention.scale_bilinear:
        inert["bilinear_start"] = default.bilinear_start
        if axes["energy"] != "bilinear":
            inert["scale_bilinear"] = default.scale_bilinear
    if axes["energy"] != "gaussian":
        inert["scale_gaussian"] = default.scale_gaussian
    if not scores_unscalable(axes["energy"], axes["query_map"], axes["key_map"]):
        inert["learn_scale"] = default.learn_scale
    if not axes["out_proj"] or not attention.scale_out_proj:
        inert["out_proj_start"] = default.out_proj_start
        if not axes["out_proj"]:
            inert["scale_out_proj"] = default.scale_out_proj
    return inert


def without_inert_options(config: Config) -> Config:
    """``config`` with options that change nothing in its model or its training set to their defaults.

    Those are the attention's scalings where their map is absent (``scale_bilinear`` without the
    bilinear energy, ``scale_gaussian`` without the gaussian one, ``learn_scale`` but for a dot
    energy over identity maps, ``scale_out_proj`` without an output projection), a ``*_start``
    where its scaling is off, ``output_init`` with a tied output layer, and the self-attention
    sections that are off; ``enc_hidden_size`` is compared as the size it gives (``half`` of 256,
    128 and, for 256, null build one model); and the :data:`SPEED_ONLY` train options.  Two configs
    equal after this train the same model the same way.
    """
    model = config.model
    sections: dict[str, Any] = {
        "attention": model.attention.model_copy(update=_inert_attention(model.attention)),
        "enc_hidden_size": None if model.enc_size == model.hidden_size else model.enc_size,
    }
    if model.tie_embeddings:
        sections["output_init"] = ModelConfig().output_init
    if not model.enc_self_attention.layers:
        sections["enc_self_attention"] = EncoderSelfAttentionConfig()
    if not model.dec_self_attention.enabled:
        sections["dec_self_attention"] = DecoderSelfAttentionConfig()
    train_defaults = TrainConfig()
    train = config.train.model_copy(update={name: getattr(train_defaults, name) for name in SPEED_ONLY})
    return config.model_copy(update={"model": model.model_copy(update=sections), "train": train})


@dataclass(frozen=True)
class Fit:
    """What a saved config must share with a new one for one purpose.

    ``within``: only options under these dotted names are compared (empty: all);
    ``free``: options (or whole sections) that may differ; ``up_to_inert``: compare the
    configs as :func:`without_inert_options` leaves them, i.e. as the models they build.
    """

    within: tuple[str, ...] = ()
    free: tuple[str, ...] = ()
    up_to_inert: bool = False


RESUME = Fit(free=("train", "decode", "data.mirror"))
"""``--set`` on ``--resume`` may change train.*, decode.* and data.mirror; the rest fix the data,
the model or the run's place."""
SAME_MODEL = Fit(within=("model",))
"""A checkpoint restored into a run was trained with its model options, as written."""
SAME_NETWORK = Fit(within=("model",), free=tuple(f"model.{k}" for k in TRAINING_ONLY), up_to_inert=True)
"""Checkpoints averaged together hold one network."""
SAME_TRAINING = Fit(free=("data.mirror",), up_to_inert=True)
"""A finished run reused for a new plan was trained as the plan would train it (``data.mirror`` only
says where the raw files were read from)."""


@dataclass(frozen=True)
class Change:
    """One option that differs: its dotted name, the saved value and the new one."""

    key: str
    old: Any
    new: Any

    def __str__(self) -> str:
        return f"{self.key}: {self.old!r} -> {self.new!r}"


def flat_options(tree: dict[str, Any], prefix: str = "") -> dict[str, Any]:
    """``{"a": {"b": 1}}`` -> ``{"a.b": 1}``: one entry per option (and per key of a dict option)."""
    out: dict[str, Any] = {}
    for key, value in tree.items():
        if isinstance(value, dict) and value:
            out.update(flat_options(value, f"{prefix}{key}."))
        else:
            out[prefix + key] = value
    return out


def _under(key: str, names: tuple[str, ...]) -> bool:
    """Whether ``key`` is one of ``names`` or an option inside one of them."""
    return any(key == name or key.startswith(name + ".") for name in names)


def _frozen(value: Any) -> Any:
    """A JSON value as a hashable one that compares as the value does (lists as tuples)."""
    if isinstance(value, list):
        return tuple(_frozen(v) for v in value)
    if isinstance(value, dict):
        return tuple(sorted((k, _frozen(v)) for k, v in value.items()))
    return value


def fingerprint(config: Config, fit: Fit = Fit()) -> tuple[tuple[str, Any], ...]:
    """A hashable key of what ``fit`` compares: two configs have the same one exactly when
    :func:`changes` finds none between them, so a set or dict of them finds equal configs among
    many in one pass, not one comparison per pair."""
    if fit.up_to_inert:
        config = without_inert_options(config)
    flat = flat_options(config.model_dump(mode="json"))
    return tuple(
        (key, _frozen(value))
        for key, value in sorted(flat.items())
        if value is not None and (not fit.within or _under(key, fit.within)) and not _under(key, fit.free)
    )


def changes(saved: Config, new: Config, fit: Fit = Fit()) -> list[Change]:
    """The options in which ``saved`` and ``new`` differ although ``fit`` says they may not,
    sorted by name; empty when the saved config fits the new one."""
    if fit.up_to_inert:
        saved, new = without_inert_options(saved), without_inert_options(new)
    old, now = flat_options(saved.model_dump(mode="json")), flat_options(new.model_dump(mode="json"))
    return [
        Change(key, old.get(key), now.get(key))
        for key in sorted(old.keys() | now.keys())
        if old.get(key) != now.get(key) and (not fit.within or _under(key, fit.within)) and not _under(key, fit.free)
    ]
