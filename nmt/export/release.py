"""``nmt export --format safetensors``: a checkpoint as a release folder that loads without pickle.

A checkpoint (``torch.save``) is read with torch's restricted unpickler; a folder handed to other
people should need no unpickling at all.  The release folder holds

* ``model.safetensors``: the weights (a JSON header and raw tensor bytes), each tied tensor once;
* ``config.yaml``: the run's config exactly as the checkpoint saved it, which rebuilds the model;
* ``spm.src.model``, ``spm.tgt.model``: the SentencePiece models, as the checkpoint holds them;
* ``export.json``: the manifest (:mod:`nmt.engine.manifest`), written last.

:func:`nmt.decode.release.load_release` reads it back.  One checkpoint file makes one release:
an average (``nmt average``) is one file and exports like any checkpoint; an ensemble of several
checkpoints cannot be exported (export each member).  The optimizer and training state stay
behind: a release translates, it does not resume training.
"""

from __future__ import annotations

import json
import logging
from pathlib import Path

import torch
import yaml
from safetensors.torch import save

from nmt.config.named_code import code_record
from nmt.config.saved import saved_config
from nmt.data.tokenizer import Tokenizer
from nmt.decode.model_info import describe_model
from nmt.decode.release import CONFIG, FORMAT, WEIGHTS, shared_names
from nmt.engine.export_folder import check_new_folder, new_folder
from nmt.engine.manifest import EXPORT_FILES, SPM_FILES, SRC_SPM, TGT_SPM, ExportError, Manifest, write_manifest
from nmt.model.build import TranslationModel, build_model
from nmt.run import checkpoint as ckpt
from nmt.util.errors import CheckpointError
from nmt.util.fileio import atomic_write_bytes

log = logging.getLogger(__name__)


def write_release(checkpoint: Path, out: Path, force: bool) -> Path:
    """Export one checkpoint file as a safetensors release folder ``out``; returns ``out``.

    ``out`` must be absent or empty, or an earlier export replaced with ``force``
    (:func:`~nmt.engine.export_folder.check_new_folder`, checked before the checkpoint is read).  The
    weights are loaded into the model their config builds first, so a checkpoint that does not
    match its config is refused here rather than when someone loads the release.
    """
    check_new_folder(out, force)
    saved = ckpt.load(checkpoint)
    theirs = [record["name"] for record in code_record(saved.config)]
    if theirs:
        raise ExportError(
            f"{checkpoint}: a release holds weights, not code, and this model needs yours ({', '.join(theirs)}); "
            "export --format onnx (the graphs hold the code), or share the checkpoint with its module"
        )
    try:
        config = saved_config(saved.config)
        src_tok = Tokenizer(saved.tokenizers["src"], source=f"{checkpoint} (source tokenizer)")
        tgt_tok = Tokenizer(saved.tokenizers["tgt"], source=f"{checkpoint} (target tokenizer)")
        model = build_model(config.model, src_tok.vocab_size, tgt_tok.vocab_size)
        model.load_state_dict(saved.model)
    except (KeyError, RuntimeError, ValueError) as exc:
        raise CheckpointError(
            f"{checkpoint}: checkpoint does not match its model config: {str(exc).splitlines()[0][:200]}"
        ) from None
    tensors, tied = _unique_tensors(model)
    files = dict(EXPORT_FILES[FORMAT])  # weights, config and both SentencePiece models
    manifest = Manifest(
        format=FORMAT,
        arch=config.model.arch,
        src_vocab=src_tok.vocab_size,
        tgt_vocab=tgt_tok.vocab_size,
        decode=config.decode.model_dump(mode="json"),  # as saved, options added since at their defaults
        files=files,
        step=saved.state.step,
        model=describe_model(config, model),
    )
    with new_folder(out, force) as folder:
        # "tied" tells a reader of the file alone (another program) which names it leaves out.  Written
        # as the other files are (save_file would make it readable by its owner only, mode 0600).
        weights = save(tensors, metadata={"format": "pt", "tied": json.dumps(tied)})
        atomic_write_bytes(folder / WEIGHTS, weights)
        config_yaml = yaml.safe_dump(saved.config, sort_keys=False, allow_unicode=True)
        atomic_write_bytes(folder / CONFIG, config_yaml.encode("utf-8"))
        atomic_write_bytes(folder / SPM_FILES[SRC_SPM], src_tok.model_bytes)
        atomic_write_bytes(folder / SPM_FILES[TGT_SPM], tgt_tok.model_bytes)
        write_manifest(folder, manifest)
    log.info("exported %s (step %d) to %s: %d tensors", checkpoint, manifest.step, out, len(tensors))
    return Path(out)


def _unique_tensors(model: TranslationModel) -> tuple[dict[str, torch.Tensor], dict[str, str]]:
    """The state dict with each tied tensor once, under its first name, as separate contiguous CPU
    copies (safetensors refuses tensors that share memory); and the names left out -> the name kept."""
    tied = shared_names(model)
    tensors = {
        name: tensor.detach().to("cpu").contiguous().clone()
        for name, tensor in model.state_dict().items()
        if name not in tied
    }
    return tensors, tied
