"""Options added after runs were saved, and the values that rebuild those runs' models.

A saved config (a run's config.yaml, a checkpoint's) holds every option of its day, so a missing one
means it was saved before the option existed: :func:`fill_saved_defaults` gives it the value that run
was built with, not today's default.  Comparing saved configs with new ones is :mod:`nmt.config.saved`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from nmt.config.model_sections import RNN_ONLY
from nmt.config.sections import DecodeConfig

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
    Its decode section is relaxed to today's checks (:meth:`DecodeConfig.relax_saved`).
    """
    DecodeConfig.relax_saved(raw.get("decode"))
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
