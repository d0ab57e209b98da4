"""Loading a safetensors export (``nmt export --format safetensors``) for the torch engine, without pickle.

A checkpoint is a pickle read by torch's restricted unpickler; an export folder holds nothing a
loader must unpickle: the weights as safetensors (a JSON header and raw tensor bytes), the run's
config as YAML (read by :func:`nmt.config.read_yaml`) and the two SentencePiece models.  The
model is rebuilt from its config as :func:`~nmt.decode.inference.load_checkpoint` rebuilds it,
and the result is the same :class:`~nmt.decode.inference.Loaded`, so translate, eval and serve
use an export as they use a checkpoint.

Tied weights (``tie_embeddings``, ``share_embeddings``) are one tensor shared by several
parameter names; the file stores it once, under the first name, and the rebuilt model ties the
others to it itself.
"""

from __future__ import annotations

from pathlib import Path

import safetensors
import torch
from safetensors import safe_open

from nmt.config import Config, read_yaml
from nmt.config.saved import saved_config
from nmt.data.tokenizer import Tokenizer
from nmt.decode.inference import Loaded
from nmt.engine.manifest import EXPORT_FILES, SRC_SPM, TGT_SPM, ExportError, is_export_folder, read_manifest
from nmt.model.build import TranslationModel, build_model
from nmt.util.errors import UserError

__all__ = ["CONFIG", "FORMAT", "ROLES", "WEIGHTS", "Loaded", "is_export_folder", "load_release", "shared_names"]

FORMAT = "safetensors"
WEIGHTS = EXPORT_FILES[FORMAT]["weights"]  # model.safetensors
CONFIG = EXPORT_FILES[FORMAT]["config"]  # config.yaml, the name a run folder gives its config too
ROLES = {"weights": WEIGHTS, "config": CONFIG}
"""The files a safetensors export holds beside the SentencePiece models, by role in export.json."""


def shared_names(model: torch.nn.Module) -> dict[str, str]:
    """Each state-dict name whose tensor is an earlier name's (a tied weight) -> that earlier name."""
    first: dict[int, str] = {}
    aliases: dict[str, str] = {}
    for name, tensor in model.state_dict(keep_vars=True).items():
        if id(tensor) in first:
            aliases[name] = first[id(tensor)]
        else:
            first[id(tensor)] = name
    return aliases


def load_release(folder: Path, device: torch.device) -> Loaded:
    """The model, config and tokenizers of a safetensors export, on ``device``, ready to translate.

    Every way the folder can be wrong is one :class:`~nmt.engine.manifest.ExportError` (or the
    tokenizer's DataError): see :func:`~nmt.engine.manifest.read_manifest`, plus a config that
    does not validate, a model kind or vocabulary that differs from export.json, and weights that
    lack a parameter, hold one the model has not, or hold one of another shape or type.
    """
    folder = Path(folder)
    manifest = read_manifest(folder, FORMAT)
    files = manifest.files
    lacking = [role for role in (*ROLES, SRC_SPM, TGT_SPM) if role not in files]
    if lacking:
        raise ExportError(f"{folder}/export.json lists no {', '.join(lacking)} file (an altered file?)")
    config = _config(folder / files["config"])
    src_tok, tgt_tok = Tokenizer.load(folder / files[SRC_SPM]), Tokenizer.load(folder / files[TGT_SPM])
    found = (config.model.arch, src_tok.vocab_size, tgt_tok.vocab_size)
    if found != (manifest.arch, manifest.src_vocab, manifest.tgt_vocab):
        raise ExportError(
            f"{folder}: {CONFIG} and the SentencePiece models give model {found[0]} with vocabularies "
            f"{found[1]}/{found[2]}, export.json says {manifest.arch} with {manifest.src_vocab}/{manifest.tgt_vocab} "
            "(files from two exports?); export the checkpoint again"
        )
    try:
        model = build_model(config.model, src_tok.vocab_size, tgt_tok.vocab_size)
    except ValueError as exc:  # a combination the config validators let through but the model refuses
        raise ExportError(f"{folder}: its config builds no model: {str(exc).splitlines()[0][:200]}") from None
    _load_weights(model, folder / files["weights"])
    model.to(device).eval()
    return Loaded(config, model, src_tok, tgt_tok, manifest.step)


def _config(path: Path) -> Config:
    """The run config an export saved, validated as a checkpoint's is."""
    raw = read_yaml(path)  # a ConfigError naming the file if it is not YAML
    try:
        return saved_config(raw)
    except (UserError, TypeError, ValueError, AttributeError, KeyError) as exc:
        reason = str(exc).splitlines()[0][:300] if str(exc) else type(exc).__name__
        raise ExportError(f"{path} is not a valid run config (an altered file?): {reason}") from None


def _load_weights(model: TranslationModel, path: Path) -> None:
    """Copy the tensors of ``path`` into ``model``, strictly: each parameter and buffer once, in its shape."""
    expected = model.state_dict()
    aliases = shared_names(model)
    try:
        with safe_open(str(path), framework="pt", device="cpu") as weights:
            names = list(weights.keys())
            for name in names:
                if name not in expected:
                    raise ExportError(f"{path} holds {name!r}, which this model has not (files from two exports?)")
                shape = tuple(weights.get_slice(name).get_shape())
                if shape != tuple(expected[name].shape):
                    raise ExportError(
                        f"{path}: {name} has shape {list(shape)}, the model's is {list(expected[name].shape)}"
                    )
            held = set(names)
            for name in expected:
                if name not in held and aliases.get(name) not in held:
                    raise ExportError(
                        f"{path} lacks the model's {name} (an altered file?); export the checkpoint again"
                    )
            state = {name: weights.get_tensor(name) for name in names}
            for name, tensor in state.items():  # load_state_dict would cast another type silently
                if tensor.dtype != expected[name].dtype:
                    raise ExportError(
                        f"{path}: {name} is stored as {str(tensor.dtype).removeprefix('torch.')}, the model's is "
                        f"{str(expected[name].dtype).removeprefix('torch.')} (an altered file?); export the checkpoint again"
                    )
    except (safetensors.SafetensorError, OSError) as exc:
        reason = str(exc).splitlines()[0][:200] if str(exc) else type(exc).__name__
        raise ExportError(f"{path}: not a readable safetensors file (truncated or altered): {reason}") from None
    model.load_state_dict(state, strict=False)  # strict above: only tied names, set through their twin, are absent
