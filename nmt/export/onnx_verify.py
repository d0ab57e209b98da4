"""Before an ONNX export is written: its graphs must compute what the model computes at other sizes.

The exporter traces each graph at one size (three sentences of five tokens, :mod:`nmt.export.onnx_trace`).
Python control flow on a tensor's size (``if k.size(2) > 4:`` in a user's energy) runs once, at
that size, and the graph keeps the branch taken for every length: the export then loads, runs and
translates differently from the checkpoint, without a word.  So the graphs are run on onnxruntime
at other numbers of sentences and source lengths, shorter and longer than the traced ones, beside
the same two modules in PyTorch (:func:`nmt.export.onnx_graphs.graphs`), fed the same inputs for
the encoder and a few decoder steps; outputs that differ are one ExportError, and nothing is written.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np
import torch
from torch import Tensor, nn

from nmt.engine.manifest import ExportError
from nmt.engine.onnx_model import import_onnxruntime
from nmt.export.onnx_graphs import Fields, graphs
from nmt.export.onnx_trace import ENCODER_FILE, STEP_FILE
from nmt.model.attention_check import raised

PROBES = ((2, 3), (4, 12), (3, 40))
"""(sentences, source length) the graphs are run at: the trace had 3 sentences of 5 tokens."""
STEPS = 3
"""Decoder steps run at each probe (the trace had two positions decoded before its step)."""
TOLERANCE = 1e-4
"""Largest difference allowed, relative to the size of the output (1 + its largest value): the graphs
agree with PyTorch within 1e-5 where they trace right (tests/unit/test_export_onnx.py); a branch
fixed at the traced size changes outputs by far more."""
FIRST_ID = 4
"""The smallest id drawn: the special tokens (padding, unknown, BOS, EOS) come before it."""


def _sources(rows: int, length: int, vocab: int) -> tuple[Tensor, Tensor]:
    """``rows`` sources (rows, length) of random ids, the first of ``length`` tokens, the others shorter."""
    g = torch.Generator().manual_seed(length)
    lengths = torch.tensor([length, max(length // 2, 1), 1, max(length - 1, 1)][:rows])
    src = torch.randint(FIRST_ID, max(vocab, FIRST_ID + 1), (rows, length), generator=g)
    src[torch.arange(length) >= lengths.unsqueeze(1)] = 0
    return src, lengths


def _difference(ours: np.ndarray, theirs: np.ndarray) -> float:
    """How far ``theirs`` is from ``ours``, relative to the size of ``ours``; inf for another shape.
    Equal non-finite values (NaN in both, from a checkpoint's NaN weights) are no difference."""
    if ours.shape != theirs.shape:
        return float("inf")
    ours, theirs = ours.astype(np.float64), theirs.astype(np.float64)
    same = (ours == theirs) | (np.isnan(ours) & np.isnan(theirs))
    finite = np.abs(ours[np.isfinite(ours)])
    scale = 1.0 + (float(finite.max()) if finite.size else 0.0)
    with np.errstate(invalid="ignore"):  # inf - inf: nan, a difference (unless the two are the same)
        gaps = np.where(same, 0.0, np.nan_to_num(np.abs(ours - theirs), nan=np.inf))
    return float(gaps.max(initial=0.0)) / scale


class _Graphs:
    """The two written graphs in onnxruntime sessions, run on the inputs of the PyTorch modules."""

    def __init__(self, folder: Path) -> None:
        ort = import_onnxruntime()
        options = ort.SessionOptions()
        options.intra_op_num_threads = 1  # tiny inputs: no thread pool worth starting
        options.log_severity_level = 4  # fatal only: a failed run is an exception, reported in one line
        self.sessions = {
            role: ort.InferenceSession(str(folder / name), sess_options=options, providers=["CPUExecutionProvider"])
            for role, name in (("encoder", ENCODER_FILE), ("step", STEP_FILE))
        }

    def run(self, role: str, feeds: dict[str, Tensor], where: str) -> list[np.ndarray]:
        session = self.sessions[role]
        wanted = [i.name for i in session.get_inputs()]  # the graph may drop an input it does not read
        try:
            return list(session.run(None, {name: feeds[name].numpy() for name in wanted}))
        except Exception as exc:  # onnxruntime's own error types: a graph fixed to the traced sizes refuses others
            lines = [line.strip() for line in str(exc).splitlines() if line.strip()]
            reason = lines[0][:200] if lines else type(exc).__name__
            raise _Differs(f"{where}: onnxruntime cannot run it ({reason})") from None


def _compare(where: str, names: Sequence[str], ours: Sequence[Tensor], theirs: Sequence[np.ndarray]) -> None:
    for name, a, b in zip(names, ours, theirs):
        gap = _difference(a.numpy(), b)
        if gap > TOLERANCE:
            shown = "has another shape or is not finite" if gap == float("inf") else f"differs by {gap:.3g}"
            raise _Differs(f"{where}, output {name} {shown}")


class _Differs(Exception):
    """What differs, and where: for the one ExportError :func:`check_graphs` raises."""


def _probe(
    encode: nn.Module, step: nn.Module, fields: Fields, onnx: _Graphs, rows: int, length: int, vocab: tuple[int, int]
) -> None:
    """Run both graphs at ``rows`` sentences of up to ``length`` tokens; a _Differs where they disagree."""
    src, src_len = _sources(rows, length, vocab[0])
    where = f"at {rows} sentences of up to {length} tokens"
    enc_names = (*fields.enc, *fields.state)
    ours = encode(src, src_len)
    theirs = onnx.run("encoder", {"src": src, "src_len": src_len}, f"{where}, the encoder")
    _compare(f"{where}, the encoder", enc_names, ours, theirs)
    arrays = dict(zip(enc_names, ours))
    out_names = ("logits", "attention", *(f"next_{n}" for n in fields.state))
    g = torch.Generator().manual_seed(rows)
    for t in range(STEPS):
        prev = torch.randint(FIRST_ID, max(vocab[1], FIRST_ID + 1), (rows,), generator=g)
        inputs = (prev, *(arrays[n] for n in fields.state), *(arrays[n] for n in fields.enc))
        out = step(*inputs)
        theirs = onnx.run("step", {"prev": prev, **arrays}, f"{where}, decoder step {t + 1}")
        _compare(f"{where}, decoder step {t + 1}", out_names, out, theirs)
        arrays.update(zip(fields.state, out[2:]))


def check_graphs(model: nn.Module, folder: Path, fields: Fields, vocab: tuple[int, int], theirs: Sequence[str]) -> None:
    """Run the graphs written in ``folder`` beside ``model`` (float32, CPU) at :data:`PROBES`; outputs
    that differ are one ExportError, naming the user's attentions ``theirs`` where the model has any.
    ``vocab``: the source and target vocabulary sizes (the ids drawn stay below them)."""
    model = model.float().cpu().eval()
    encode, step, _ = graphs(model)
    onnx = _Graphs(folder)
    try:
        with torch.no_grad():
            for rows, length in PROBES:
                _probe(encode, step, fields, onnx, rows, length, vocab)
        return
    except _Differs as differs:
        what = str(differs)
    except Exception as exc:  # the PyTorch modules themselves: the user's forward, at a size it was not checked at
        if not theirs:
            raise
        raise ExportError(
            f"attention {', '.join(theirs)} raised {raised(exc)} when the export was checked at other sizes; "
            "translate with the checkpoint (--engine torch) instead"
        ) from exc
    if theirs:
        raise ExportError(
            f"attention {', '.join(theirs)} does not export to ONNX: {what} from the checkpoint; its forward "
            "depends on a tensor's shape through Python control flow, which the graph fixed at the traced size; "
            "translate with the checkpoint (--engine torch) instead"
        )
    raise ExportError(
        f"the ONNX export does not compute what the checkpoint does: {what}; this is nmt's fault, please "
        "report it, and translate with the checkpoint (--engine torch) meanwhile"
    )
