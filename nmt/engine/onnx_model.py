"""An exported ONNX model as the searches call a model, on numpy arrays and onnxruntime, without torch.

:class:`OnnxModel` offers ``encode``, ``init_state`` and ``step`` (the protocol of
:mod:`nmt.decode.common`), so nmt's own greedy and beam search (:mod:`nmt.decode.batched`) run
it unchanged.  The encoding and the decoder state are :class:`Rows`: the named arrays the two
graphs pass (export.json's ``graph``), all batch-first but the unbatched ones, so a search
reorders and expands hypotheses by selecting rows of every array alike.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from nmt.engine.manifest import ExportError, Manifest, read_manifest
from nmt.util.extras import require

FORMAT = "onnx"
EXPORT_ID = "nmt_export_id"
"""The key, in export.json's ``graph`` and in both graphs' metadata, of a random id that each export
draws: two graphs of one export carry the same.  Folders written before it lack it everywhere."""


def import_onnxruntime() -> Any:
    """The onnxruntime module, imported with its telemetry off.

    Imported with telemetry on, onnxruntime writes a device id and an events database under the
    user's cache folder (``~/.cache/Microsoft/DeveloperTools/.onnxruntime``) and warns, in colour, when
    it cannot; nmt writes nothing but the outputs it names.  Its switch is the environment variable
    ``ORT_DISABLE_TELEMETRY``, read when the module is first imported, so every import of onnxruntime
    in nmt goes through here; ``disable_telemetry_events`` then turns off the events of its session
    environment too.
    """
    os.environ["ORT_DISABLE_TELEMETRY"] = "1"
    ort = require("onnxruntime", "export", "--engine onnxruntime")  # imported here: listing commands need not load it

    ort.disable_telemetry_events()
    return ort


@dataclass(frozen=True)
class Rows:
    """Named arrays with one row per hypothesis (axis 0), besides the ``unbatched`` ones."""

    arrays: dict[str, np.ndarray]
    unbatched: frozenset[str] = frozenset()

    def index_select(self, idx: np.ndarray) -> Rows:
        """Rows ``idx`` (1-D int64) of every batched array: beam expansion and reordering."""
        picked = {k: (v if k in self.unbatched else v[idx]) for k, v in self.arrays.items()}
        return Rows(picked, self.unbatched)


class OnnxModel:
    """The two graphs of an ONNX export folder in onnxruntime sessions."""

    def __init__(self, folder: Path, threads: int = 0) -> None:
        ort = import_onnxruntime()
        self.folder = Path(folder)
        self.manifest: Manifest = read_manifest(self.folder, FORMAT)
        graph = self.manifest.graph
        try:
            self.enc_names = tuple(str(n) for n in graph["enc"])
            self.state_names = tuple(str(n) for n in graph["state"])
            self.unbatched = frozenset(str(n) for n in graph["unbatched"])
        except (KeyError, TypeError):
            raise ExportError(f"{self.folder}: export.json does not name the graphs' arrays; export again") from None
        options = ort.SessionOptions()
        options.intra_op_num_threads = threads  # 0: onnxruntime's choice
        options.log_severity_level = 4  # fatal only: a failed run is an exception, turned into one line here
        self._encoder = self._session(ort, "encoder", options)
        self._step = self._session(ort, "step", options)
        self._step_inputs = [i.name for i in self._step.get_inputs()]  # the graph may drop an unused one
        self._check_signatures()
        self._check_one_export()
        self._check_vocabularies()

    def _check_signatures(self) -> None:
        """Refuse graphs whose inputs and outputs are not the ones export.json names (not ours, or swapped)."""
        expected = {
            "encoder": (["src", "src_len"], [*self.enc_names, *self.state_names]),
            "step": (None, ["logits", "attention", *(f"next_{n}" for n in self.state_names)]),
        }
        allowed = {"prev", *self.state_names, *self.enc_names}
        for role, session in (("encoder", self._encoder), ("step", self._step)):
            inputs = [i.name for i in session.get_inputs()]
            outputs = [o.name for o in session.get_outputs()]
            want_in, want_out = expected[role]
            ok_in = inputs == want_in if want_in is not None else ("prev" in inputs and set(inputs) <= allowed)
            if not ok_in or outputs != want_out:
                raise ExportError(
                    f"{self.folder / self.manifest.files[role]} is not the {role} graph nmt exported "
                    f"(inputs {', '.join(inputs)[:120]}); export the checkpoint again"
                )

    def _check_one_export(self) -> None:
        """Refuse graphs whose export id is not export.json's (copied in from another export)."""
        want = self.manifest.graph.get(EXPORT_ID)
        if want is None:  # written before nmt tagged its graphs
            return
        for role, session in (("encoder", self._encoder), ("step", self._step)):
            if session.get_modelmeta().custom_metadata_map.get(EXPORT_ID) != want:
                raise ExportError(
                    f"{self.folder / self.manifest.files[role]} is not the {role} graph of this export "
                    "(a file from another export?); export the checkpoint again"
                )

    def _check_vocabularies(self) -> None:
        """Run the graphs once on the largest ids export.json allows: a graph whose vocabulary is smaller
        (an embedding lookup out of range), or two graphs that do not fit together, is refused here in one
        line rather than failing every request that reaches it."""
        src_vocab, tgt_vocab = self.manifest.src_vocab, self.manifest.tgt_vocab
        try:
            enc = self.encode(np.array([[src_vocab - 1]], dtype=np.int64), np.array([1], dtype=np.int64))
            logits, _, _ = self.step(np.array([tgt_vocab - 1], dtype=np.int64), self.init_state(enc), enc)
        except Exception as exc:  # onnxruntime's own error types: an index out of range, shapes that differ
            reason = str(exc).strip().splitlines()[0][:200] if str(exc).strip() else type(exc).__name__
            raise ExportError(
                f"{self.folder}: the graphs do not run with the vocabularies export.json gives "
                f"({src_vocab} source, {tgt_vocab} target tokens; files from two exports?): {reason}"
            ) from None
        if logits.shape != (1, tgt_vocab):
            raise ExportError(
                f"{self.folder / self.manifest.files['step']} scores {logits.shape[-1]} target tokens, export.json "
                f"says {tgt_vocab} (files from two exports?); export the checkpoint again"
            )

    def _session(self, ort: Any, role: str, options: Any) -> Any:
        path = self.folder / self.manifest.files[role]
        try:
            return ort.InferenceSession(str(path), sess_options=options, providers=["CPUExecutionProvider"])
        except Exception as exc:  # onnxruntime raises its own types for a broken or foreign file
            first = str(exc).strip().splitlines()[0][:200] if str(exc).strip() else type(exc).__name__
            raise ExportError(f"{path}: onnxruntime cannot load it ({first}); export the checkpoint again") from None

    @property
    def target_vocab_size(self) -> int:
        return self.manifest.tgt_vocab

    def encode(self, src: np.ndarray, src_len: np.ndarray) -> Rows:
        """Source ids (B, S) and lengths (B,) -> the encoding, which also holds the start state
        (the encoder graph computes both; :meth:`init_state` takes it out)."""
        outputs = self._encoder.run(None, {"src": src.astype(np.int64), "src_len": src_len.astype(np.int64)})
        return Rows(dict(zip((*self.enc_names, *self.state_names), outputs)), self.unbatched)

    def init_state(self, enc: Rows) -> Rows:
        """The decoder's start state, as the encoder graph computed it for these rows."""
        return Rows({n: enc.arrays[n] for n in self.state_names}, self.unbatched)

    def step(self, prev: np.ndarray, state: Rows, enc: Rows) -> tuple[np.ndarray, Rows, np.ndarray]:
        """Previous tokens (N,) -> logits (N, V) float32, the next state, attention weights (N, S)."""
        feeds = {"prev": prev.astype(np.int64), **state.arrays}
        feeds.update((n, enc.arrays[n]) for n in self.enc_names)
        logits, attention, *new = self._step.run(None, {n: feeds[n] for n in self._step_inputs})
        return logits, Rows(dict(zip(self.state_names, new)), self.unbatched), attention
