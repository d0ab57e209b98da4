"""The models a server holds: opened once, named, described, and turned into response rows.

Each model is an :class:`~nmt.decode.engines.Engine`: a checkpoint or a safetensors export on
torch, an ONNX export on onnxruntime, or a CTranslate2 export.  Nothing here imports torch, so
a server of exports runs without it; the torch engine imports it when it is opened.

Every method that runs a model is called from the batcher's single worker thread
(:mod:`nmt.serve.batcher`), so no two searches share a model at once.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NamedTuple, Optional

import numpy as np

from nmt.config import DecodeConfig
from nmt.decode.batched import Translation
from nmt.decode.engines import ENGINE_NAMES, FORMAT_OF, Engine, ModelInfo, check_device, choose_engine, open_engine
from nmt.engine.manifest import read_manifest
from nmt.run.paths import run_of_checkpoint
from nmt.util.errors import UserError

EOS_PIECE = "</s>"


class SearchKey(NamedTuple):
    """What must be equal for requests to share one search call."""

    model: str
    beam: int
    n_best: int
    max_len: Optional[int]  # None: the model's a * source length + b
    attention: bool


def parse_checkpoint_arg(arg: str) -> tuple[Optional[str], Path]:
    """``NAME=PATH`` or ``PATH`` (the name is then derived by :func:`default_name`); also ``--model``'s ``NAME=DIR``."""
    name, sep, path = arg.partition("=")
    if sep and name and "/" not in name and not Path(arg).exists():
        return name, Path(path)
    return None, Path(arg)


def default_name(path: Path) -> str:
    """runs/<run>/checkpoints/<file>.pt -> <run>; an export folder -> its name; any other A.pt -> A."""
    run = run_of_checkpoint(path)
    if run is not None:
        return run.name
    return path.name if path.is_dir() else path.stem


@dataclass
class ServedModel:
    """One model, opened for serving: from a checkpoint (``exported`` False) or an export folder."""

    name: str
    path: Path
    engine: Engine
    exported: bool = False
    decode: DecodeConfig = field(init=False)  # the run's decode options: the searches' defaults
    about: ModelInfo = field(init=False)

    def __post_init__(self) -> None:
        self.decode = self.engine.decode_config([])
        self.about = self.engine.describe()

    def info(self) -> dict[str, Any]:
        """The row of GET /models (fields an export does not record are null)."""
        about = self.about
        return {
            "name": self.name,
            "engine": self.engine.name,
            "device": about.device,
            "checkpoint": None if self.exported else str(self.path),
            "model_dir": str(self.path) if self.exported else None,
            "step": self.engine.step,
            "arch": about.arch,
            "attention": about.attention,
            "attention_weights": about.search_attention,
            "layer_attention": about.layer_attention,
            "attention_note": about.attention_note,
            "parameters": about.parameters,
            "vocabulary": {
                "source": self.engine.src_tok.vocab_size,
                "target": self.engine.tgt_tok.vocab_size,
                "languages": list(about.languages) if about.languages else None,
            },
            "default_beam": self.decode.beam,
            "config": about.config,
        }

    def encode(self, lines: Sequence[str], max_tokens: int) -> list[list[int]]:
        """Source ids; a sentence over ``max_tokens`` subwords is refused (a UserError naming it)."""
        ids = self.engine.src_tok.encode(lines)
        for i, seq in enumerate(ids):
            if len(seq) > max_tokens:
                raise UserError(f"text[{i}] has {len(seq)} subword tokens; this server takes at most {max_tokens}")
        return ids

    def translate(self, key: SearchKey, sentences: list[list[int]]) -> list[dict[str, Any]]:
        """One search call over ``sentences``; one response row per sentence, in order."""
        # the model's length penalty, coverage penalty, n-gram block and a * source + b: as nmt translate
        # searches, except that a server never samples (a request names a beam instead)
        decode = self.decode.model_copy(
            update={
                "batch_size": max(len(sentences), 1),
                "sample": False,
                **({"max_len_a": 0.0, "max_len_b": key.max_len} if key.max_len else {}),
            }
        )
        results = self.engine.translate(sentences, decode, beam=key.beam, n_best=key.n_best, attention=key.attention)
        return [self._row(src, result, key.attention) for src, result in zip(sentences, results)]

    def _row(self, src: list[int], result: Translation, attention: bool) -> dict[str, Any]:
        tgt_tok = self.engine.tgt_tok
        hypotheses = [
            {"text": tgt_tok.decode(ids), "score": round(score, 4), "log_prob": round(log_prob, 4)}
            for ids, score, log_prob in zip(result.ids, result.scores, result.log_probs)
        ]
        row: dict[str, Any] = {"translation": hypotheses[0]["text"], "hypotheses": hypotheses}
        if attention:
            row["attention"] = self._attention(src, result)
        return row

    def _attention(self, src: list[int], result: Translation) -> Optional[dict[str, Any]]:
        """Weights of the best hypothesis: rows = its tokens and EOS, columns = source tokens.

        None for a model without attention or an empty source.  A Transformer on torch adds
        ``layers``: its cross-attention per layer and head (layer, head, row, column), as does a
        multi-head RNN attention (one layer); on another engine, ``note`` says what it shows instead.
        """
        if result.attention is None or not src:
            return None
        out = result.ids[0]
        view: dict[str, Any] = {
            "source_tokens": self.engine.src_tok.decode_pieces(src),
            "target_tokens": self.engine.tgt_tok.decode_pieces(out) + [EOS_PIECE],
            "weights": rounded(result.attention),
        }
        layers = self.engine.layer_attention([src], [out])
        if layers is not None:
            view["layers"] = rounded(layers[0])
        elif self.about.attention_note:
            view["note"] = self.about.attention_note
        return view


def rounded(weights: Any) -> list[Any]:
    """Nested lists of weights to 4 decimals (the JSON stays small; a heat map needs no more).

    ``weights`` is a numpy array (the onnxruntime engine) or a torch tensor on the host (the torch
    engine), read through numpy so that this module needs no torch.
    """
    if hasattr(weights, "detach"):  # a torch tensor: numpy reads it once it has no graph and is on the CPU
        weights = weights.detach().cpu()
    return (np.round(np.asarray(weights, dtype=np.float64) * 10_000) / 10_000).tolist()


def check_sources(checkpoints: Sequence[str], model_dirs: Sequence[str], engine: Optional[str], device: str) -> str:
    """Refuse, in one line and before anything loads, options that cannot go together; returns the
    engine (``engine`` None: torch beside a checkpoint, else the export folders' own)."""
    if engine is None:
        engine = "torch" if checkpoints else choose_engine(None, [parse_checkpoint_arg(a)[1] for a in model_dirs])
    if engine not in ENGINE_NAMES:
        raise UserError(f"--engine {engine}: unknown; valid options: {', '.join(ENGINE_NAMES)}")
    if not checkpoints and not model_dirs:
        raise UserError("give at least one --checkpoint or --model (a folder written by nmt export)")
    if checkpoints and engine != "torch":
        raise UserError(
            f"--checkpoint needs --engine torch; --engine {engine} serves export folders: "
            "give --model NAME=DIR (write one with `nmt export`)"
        )
    check_device(engine, device)
    return engine


def _checked(path: Path, exported: bool, engine: str) -> Path:
    """``path`` if it can be opened: a checkpoint file, or an export folder of the engine's format."""
    if exported:
        read_manifest(path, FORMAT_OF[engine])  # not an export, altered, or another engine's: one line
        return path
    from nmt.run.checkpoint import check_checkpoint_path  # torch: a checkpoint is served by torch only

    return check_checkpoint_path(path)  # the wording translate and eval give


def load_served(
    checkpoints: Sequence[str],
    device: Any = "auto",
    *,
    model_dirs: Sequence[str] = (),
    engine: Optional[str] = None,
    threads: int = 0,
    compute_type: str = "float32",
) -> dict[str, ServedModel]:
    """Open every ``--checkpoint`` and ``--model`` once, keyed by name; clashing names are a UserError.

    Every name and path is checked before the first model loads, so a typo in the last one
    costs no loading time.  ``device`` is a ``--device`` choice (or a torch device).
    """
    device = str(device)
    engine = check_sources(checkpoints, model_dirs, engine, device)
    wanted: dict[str, tuple[Path, bool]] = {}
    for option, args in (("--checkpoint", checkpoints), ("--model", model_dirs)):
        for arg in args:
            name, path = parse_checkpoint_arg(arg)
            name = name or default_name(path)
            if name in wanted:
                raise UserError(
                    f"{option} {arg}: the name {name!r} is taken by {wanted[name][0]}; "
                    f"name them yourself: {option} NAME={'DIR' if option == '--model' else 'PATH'}"
                )
            exported = option == "--model"
            wanted[name] = (_checked(path, exported, engine), exported)
    served = {}
    for name, (path, exported) in wanted.items():
        opened = open_engine(
            engine,
            [] if exported else [path],
            path if exported else None,
            compute_type=compute_type,
            threads=threads,
            device=device,
        )
        served[name] = ServedModel(name, path, opened, exported)
    return served


def describe(model: ServedModel) -> str:
    """One log line naming what a model is and what runs it."""
    about = model.about
    return (
        f"model {model.name}: {model.path}, {about.attention} attention, update {model.engine.step}, "
        f"--engine {model.engine.name} on {about.device}"
    )
