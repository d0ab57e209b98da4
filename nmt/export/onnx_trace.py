"""Writing a model's two graphs (:mod:`nmt.export.onnx_graphs`) as ONNX files.

The exporter is ``torch.onnx.export(..., dynamo=True)``, the one torch 2.13 recommends (the
TorchScript exporter is deprecated since 2.9 and cannot take a packed RNN; the encoder's scan
becomes an ONNX ``Scan``).  torch.export fixes every dimension whose example has size 0 or 1, so
the example inputs have three sentences of five tokens, and the step's example state has two
decoded positions; batch, source length and positions so far are then free in the graphs.
"""

from __future__ import annotations

import logging
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import torch
from torch import Tensor, nn
from torch.export import Dim

from nmt.engine.manifest import EXPORT_FILES
from nmt.export.onnx_graphs import Fields, graphs

ENCODER_FILE = EXPORT_FILES["onnx"]["encoder"]  # encoder.onnx
STEP_FILE = EXPORT_FILES["onnx"]["step"]  # step.onnx
OPSET = 18
"""The ONNX opset the graphs are written in (onnxruntime 1.17 and later run it)."""

QUIET_LOGGERS = (
    "torch.onnx._internal.exporter._registration",  # "torchvision is not installed. Skipping torchvision::nms"
    "onnx_ir.passes.common.initializer_deduplication",  # "Skipped deduplication of initializer 'zeros' ..."
)
"""Loggers whose warnings read like a missing dependency or a broken graph but are neither: no model of
nmt's uses a torchvision operator, and a constant that is also a graph output is rightly kept."""

# Which axes of each field are free: 0 rows, and the source length or positions so far.
_SOURCE_AXIS = {"keys": 1, "values": 1, "mask": 1, "cross_keys": 2, "cross_values": 2}
_PAST_AXIS = {"past_keys": 1, "past_values": 1, "self_keys": 2, "self_values": 2}


def _examples() -> tuple[Tensor, Tensor]:
    """Three sources of different lengths (>= 2 each, so no dimension is taken for a constant)."""
    src = torch.tensor([[5, 6, 7, 8, 9], [5, 7, 9, 0, 0], [6, 8, 0, 0, 0]])
    return src, torch.tensor([5, 3, 2])


def _dims(fields: Fields, names: tuple[str, ...], arrays: dict[str, Tensor]) -> dict[str, dict[int, Dim]]:
    """The free axes of each step input.  A stateful attention's state has the shape its energy gives
    it: each of its axes (past the rows) as long as the example sources is taken for the source axis."""
    rows, source, past = Dim("rows"), Dim("source"), Dim("past")  # one object per axis: equal sizes
    source_length = int(_examples()[0].size(1))
    shapes: dict[str, dict[int, Dim]] = {}
    for name in names:
        if name in fields.unbatched:
            shapes[name] = {}
            continue
        axes = {0: rows}
        if name == "attention_state":
            axes.update({i: source for i, n in enumerate(arrays[name].shape) if i > 0 and n == source_length})
        if name in _SOURCE_AXIS:
            axes[_SOURCE_AXIS[name]] = source
        if name in _PAST_AXIS:
            axes[_PAST_AXIS[name]] = past
        shapes[name] = axes
    return shapes


def export_graphs(model: nn.Module, folder: Path) -> Fields:
    """Write ``encoder.onnx`` and ``step.onnx`` of ``model`` (evaluated on CPU, float32) into ``folder``."""
    model = model.float().cpu().eval()
    encode, step, fields = graphs(model)
    src, src_len = _examples()
    enc_names = (*fields.enc, *fields.state)
    step_inputs = ("prev", *fields.state, *fields.enc)
    with torch.no_grad():
        arrays = dict(zip(enc_names, encode(src, src_len)))
        prev = torch.tensor([5, 6, 7])
        for _ in range(2):  # two positions decoded, so the past has a free length too
            out = step(prev, *(arrays[n] for n in fields.state), *(arrays[n] for n in fields.enc))
            arrays.update(zip(fields.state, out[2:]))
    for name in ("onnx_ir", "onnxscript", "torch.onnx"):  # their notes on each graph pass are not the user's business
        logging.getLogger(name).setLevel(logging.WARNING)
    with warnings.catch_warnings(), _errors_only(QUIET_LOGGERS):
        warnings.simplefilter("ignore")  # nor the exporter's on renamed axes
        rows = Dim("rows")
        torch.onnx.export(
            encode,
            (src, src_len),
            folder / ENCODER_FILE,
            input_names=["src", "src_len"],
            output_names=list(enc_names),
            dynamic_shapes=({0: rows, 1: Dim("source")}, {0: rows}),
            opset_version=OPSET,
            dynamo=True,
            external_data=False,
            verbose=False,
        )
        example = (prev, *(arrays[n] for n in step_inputs[1:]))
        shapes = _dims(fields, step_inputs, arrays)
        torch.onnx.export(
            step,
            example,
            folder / STEP_FILE,
            input_names=list(step_inputs),
            output_names=["logits", "attention", *(f"next_{n}" for n in fields.state)],
            dynamic_shapes=(shapes["prev"], tuple(shapes[n] for n in step_inputs[1:])),  # forward(prev, *arrays)
            opset_version=OPSET,
            dynamo=True,
            external_data=False,
            verbose=False,
        )
    return fields


@contextmanager
def _errors_only(names: tuple[str, ...]) -> Iterator[None]:
    """Within the block, the loggers ``names`` pass errors only; their levels are restored after."""
    loggers = [logging.getLogger(name) for name in names]
    levels = [logger.level for logger in loggers]
    for logger in loggers:
        logger.setLevel(logging.ERROR)
    try:
        yield
    finally:
        for logger, level in zip(loggers, levels):
            logger.setLevel(level)


def tag_graphs(folder: Path, key: str, value: str) -> None:
    """Write ``key: value`` into the metadata of both graphs, so that a reader can tell that the two
    files came from one export (a step graph copied from another export of the same sizes runs, wrongly)."""
    import onnx

    for name in (ENCODER_FILE, STEP_FILE):
        model = onnx.load(str(folder / name))
        entry = model.metadata_props.add()
        entry.key, entry.value = key, value
        onnx.save(model, str(folder / name))
