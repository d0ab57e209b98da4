"""``nmt export --format onnx``: a checkpoint as two ONNX graphs that onnxruntime runs without torch.

The folder holds ``encoder.onnx`` and ``step.onnx`` (:mod:`nmt.export.onnx_trace`), both
SentencePiece models, and export.json, whose ``graph`` names the arrays the two graphs pass
(:class:`~nmt.export.onnx_graphs.Fields`), so :mod:`nmt.engine.onnx_model` can call them and
nmt's own searches (:mod:`nmt.decode.batched`) can reorder them.  Every model kind nmt trains
exports: the RNN with any attention, self-attention blocks and either decoder style, and the
Transformer, and a user's registered attention where its forward traces and the graphs compute what
it does at other sizes too (else one ExportError naming it, :mod:`nmt.export.onnx_verify`).
Ensembles do not (export each member, or average them first with ``nmt average``).
"""

from __future__ import annotations

import contextlib
import io
import logging
import re
import secrets
from dataclasses import asdict
from pathlib import Path
from typing import Any

import torch

from nmt.config.attention_space import ATTENTIONS
from nmt.decode.inference import Loaded, load_checkpoint
from nmt.decode.model_info import describe_model
from nmt.engine.export_folder import check_new_folder, new_folder
from nmt.engine.manifest import EXPORT_FILES, SPM_FILES, SRC_SPM, TGT_SPM, ExportError, Manifest, write_manifest
from nmt.engine.onnx_model import EXPORT_ID
from nmt.export.onnx_trace import OPSET, export_graphs, tag_graphs
from nmt.export.onnx_verify import check_graphs
from nmt.model.attention import Attention

FORMAT = "onnx"
ANSI = re.compile(r"\x1b\[[0-9;]*m")
"""The colour codes of the exporter's messages."""

log = logging.getLogger(__name__)


def _theirs(loaded: Loaded) -> list[str]:
    """The user's attentions (registered, not nmt's own) in the model."""
    return sorted(
        {m.kind for m in loaded.model.modules() if isinstance(m, Attention) and not ATTENTIONS.get(m.kind).builtin}
    )


def _traced(loaded: Loaded, folder: Path, theirs: list[str]) -> Any:
    """:func:`export_graphs`; a user's attention that does not trace is one ExportError naming it."""
    if not theirs:
        return export_graphs(loaded.model, folder)
    logging.disable(logging.ERROR)  # the exporter logs and prints its graphs when it fails: one line here
    try:
        with contextlib.redirect_stderr(io.StringIO()):
            return export_graphs(loaded.model, folder)
    except Exception as exc:  # the exporter's errors have no common type; ours trace, by the tests
        root: BaseException = exc
        while root.__cause__ is not None:  # the innermost cause names what did not trace
            root = root.__cause__
        lines = [line for line in ANSI.sub("", str(root)).splitlines() if line.strip()] or [type(root).__name__]
        raise ExportError(
            f"attention {', '.join(theirs)} does not export to ONNX (its forward does not trace: "
            f"{lines[0].strip()[:200]}); translate with the checkpoint (--engine torch) instead"
        ) from None
    finally:
        logging.disable(logging.NOTSET)


def export_onnx(checkpoint: Path, out: Path, *, force: bool = False) -> Path:
    """Write ``out``: the encoder and decoder-step graphs of ``checkpoint`` (float32), the SentencePiece
    models and export.json; returns ``out``.  Takes a minute or so: the exporter traces both graphs."""
    check_new_folder(Path(out), force)
    loaded = load_checkpoint(Path(checkpoint), torch.device("cpu"))
    with new_folder(Path(out), force) as folder:
        theirs = _theirs(loaded)
        fields = _traced(loaded, folder, theirs)
        # a branch on a size, fixed at the traced one, loads and runs but translates otherwise: refused here
        check_graphs(loaded.model, folder, fields, (loaded.src_tok.vocab_size, loaded.tgt_tok.vocab_size), theirs)
        export_id = secrets.token_hex(8)  # in both graphs and export.json: the three files belong together
        tag_graphs(folder, EXPORT_ID, export_id)
        for role, tok in ((SRC_SPM, loaded.src_tok), (TGT_SPM, loaded.tgt_tok)):
            (folder / SPM_FILES[role]).write_bytes(tok.model_bytes)
        manifest = Manifest(
            format=FORMAT,
            arch=loaded.config.model.arch,
            src_vocab=loaded.src_tok.vocab_size,
            tgt_vocab=loaded.tgt_tok.vocab_size,
            decode=loaded.config.decode.model_dump(mode="json"),
            files=dict(EXPORT_FILES[FORMAT]),  # both graphs and both SentencePiece models
            step=loaded.step,
            graph={"opset": OPSET, **{k: list(v) for k, v in asdict(fields).items()}, EXPORT_ID: export_id},
            model=describe_model(loaded.config, loaded.model),
        )
        write_manifest(folder, manifest)
    log.info("wrote the ONNX graphs of %s to %s", checkpoint, out)
    return Path(out)
