"""What translates: PyTorch (checkpoints or a safetensors release), onnxruntime, or CTranslate2.

``nmt translate``, ``nmt eval`` and ``nmt serve`` open one :class:`Engine` and ask it to
translate id sequences; the engines differ in what they load and run, not in what they return
(:class:`~nmt.decode.batched.Translation`).  The torch engine runs nmt's searches on tensors,
the onnxruntime engine runs the same searches on numpy arrays (:mod:`nmt.engine.onnx_model`),
and the ctranslate2 engine runs CTranslate2's own search (:mod:`nmt.decode.ct2`).  Only the
torch engine imports torch, and only when it is opened.

They differ in the attention they can show: the torch engine returns the searches' weights and,
for a Transformer, every layer's and head's maps; the onnxruntime engine the searches' weights
(a Transformer's last layer, mean over heads); the ctranslate2 engine none.  :class:`ModelInfo`
says which, so ``nmt serve`` and its page can tell a user instead of failing.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Optional, Protocol

from nmt.config import DecodeConfig, apply_decode_overrides, from_dict
from nmt.config.sections import MAX_BEAM_ROWS
from nmt.data.tokenizer import Tokenizer
from nmt.decode.batched import IdBatch, Translation, check_beam_size, check_n_best, translate_arrays
from nmt.decode.forced import Forced, force_batches, force_decode
from nmt.decode.model_info import ModelInfo as ModelInfo
from nmt.decode.model_info import attention_label as attention_label
from nmt.decode.model_info import model_info
from nmt.engine.manifest import ENGINES, Manifest, check_vocab_sizes, read_manifest
from nmt.util.errors import UserError, short_repr
from nmt.util.extras import require

ENGINE_NAMES = ("torch", "onnxruntime", "ctranslate2")
FORMAT_OF = {engine: fmt for fmt, engine in ENGINES.items()}
"""The export format each engine reads from a folder (``--model DIR``)."""
DEVICES = ("auto", "cpu", "cuda", "mps")
"""``--device`` choices (auto: CUDA, then Apple's MPS, then the CPU); only the torch engine runs anywhere
but the CPU."""


class Engine(Protocol):
    """A model ready to translate, whatever runs it."""

    @property
    def name(self) -> str:
        """The ``--engine`` that runs it."""
        ...

    @property
    def src_tok(self) -> Tokenizer: ...

    @property
    def tgt_tok(self) -> Tokenizer: ...

    @property
    def step(self) -> int:
        """The update the model was saved at."""
        ...

    def decode_config(self, overrides: Sequence[str]) -> DecodeConfig:
        """The run's decode options with ``decode.*`` overrides applied (others refused)."""
        ...

    def check(self, decode: DecodeConfig, beam: int, n_best: int, overrides: Sequence[str]) -> None:
        """Refuse, before any input is read, a search this engine cannot run."""
        ...

    def translate(
        self, ids: IdBatch, decode: DecodeConfig, *, beam: int, n_best: int, attention: bool
    ) -> list[Translation]: ...

    def force(self, sources: IdBatch, targets: IdBatch, decode: DecodeConfig, *, attention: bool) -> list[Forced]:
        """Score each target (ids, no EOS) given its source by forced decoding (:mod:`nmt.decode.forced`);
        ``attention`` where the engine has weights (not ctranslate2's)."""
        ...

    def write_layer_attention(
        self, folder: Path, index: int, src_ids: list[int], out_ids: list[int], src: list[str], tgt: list[str]
    ) -> None:
        """Every layer's and head's maps of one output where the engine has them (a PyTorch
        Transformer); the others write only the cross-attention that the searches return."""
        ...

    def describe(self) -> ModelInfo:
        """What the model is and which attention this engine shows (``nmt serve``'s GET /models)."""
        ...

    def layer_attention(
        self, sources: Sequence[list[int]], outputs: Sequence[list[int]], batch_size: int = 64
    ) -> Optional[list[Any]]:
        """Cross-attention of every layer and head for each output given its source (ids, the source
        not empty), (layers, heads, len(output) + 1, len(source)) per pair on the host, ``batch_size``
        pairs at a time; None where the engine has no such maps."""
        ...


def _decode_from(raw: dict[str, Any], overrides: Sequence[str]) -> DecodeConfig:
    """An exported run's decode section (export.json) with ``decode.*`` overrides applied, validated as
    a checkpoint's are (a bad value is one line)."""
    whole: dict[str, Any] = {"decode": dict(raw)}
    apply_decode_overrides(whole, overrides)
    return from_dict(whole).decode


@dataclass
class OnnxEngine:
    """An ONNX export searched by nmt's own greedy and beam search on onnxruntime."""

    model: Any  # nmt.engine.onnx_model.OnnxModel
    manifest: Manifest
    src_tok: Tokenizer
    tgt_tok: Tokenizer
    name: str = "onnxruntime"

    @property
    def step(self) -> int:
        return self.manifest.step

    def decode_config(self, overrides: Sequence[str]) -> DecodeConfig:
        return _decode_from(self.manifest.decode, overrides)

    def check(self, decode: DecodeConfig, beam: int, n_best: int, overrides: Sequence[str]) -> None:
        if decode.sample:
            raise UserError("--engine onnxruntime searches (greedy or beam); sampling needs --engine torch")
        check_beam_size(beam, self.manifest.tgt_vocab)
        check_n_best(n_best, beam, False, MAX_BEAM_ROWS)

    def translate(
        self, ids: IdBatch, decode: DecodeConfig, *, beam: int, n_best: int, attention: bool
    ) -> list[Translation]:
        return translate_arrays(
            self.model,
            ids,
            decode,
            vocab_size=self.manifest.tgt_vocab,
            beam=beam,
            n_best=n_best,
            return_attention=attention,
        )

    def force(self, sources: IdBatch, targets: IdBatch, decode: DecodeConfig, *, attention: bool) -> list[Forced]:
        return force_batches(
            sources,
            targets,
            lambda src, src_len, tgt: force_decode(self.model, src, src_len, tgt, attention),
            batch_size=decode.batch_size,
        )

    def write_layer_attention(
        self, folder: Path, index: int, src_ids: list[int], out_ids: list[int], src: list[str], tgt: list[str]
    ) -> None:
        """Nothing: the exported step returns the last layer's cross-attention only."""

    def describe(self) -> ModelInfo:
        transformer = self.manifest.arch == "transformer"
        return model_info(
            self.manifest.arch,
            self.manifest.model,  # export.json's record of the model
            device="cpu",
            search_attention=True,
            layer_attention=False,
            attention_note=(
                "onnxruntime gives the last layer's cross-attention, mean over heads; "
                "every layer and head needs --engine torch"
            )
            if transformer
            else None,
        )

    def layer_attention(
        self, sources: Sequence[list[int]], outputs: Sequence[list[int]], batch_size: int = 64
    ) -> Optional[list[Any]]:
        """None: the exported step returns the last layer's cross-attention only."""
        return None


@dataclass
class CT2Engine:
    """A CTranslate2 export (Transformers only) translated by CTranslate2's own search."""

    translator: Any  # nmt.decode.ct2.CT2Translator
    name: str = "ctranslate2"
    src_tok: Tokenizer = field(init=False)
    tgt_tok: Tokenizer = field(init=False)
    step: int = field(init=False)

    def __post_init__(self) -> None:
        self.src_tok, self.tgt_tok = self.translator.src_tok, self.translator.tgt_tok
        self.step = int(self.translator.manifest.step)

    def decode_config(self, overrides: Sequence[str]) -> DecodeConfig:
        return _decode_from(self.translator.manifest.decode, overrides)

    def check(self, decode: DecodeConfig, beam: int, n_best: int, overrides: Sequence[str]) -> None:
        self.translator.check_search(decode, beam, n_best)

    def translate(
        self, ids: IdBatch, decode: DecodeConfig, *, beam: int, n_best: int, attention: bool
    ) -> list[Translation]:
        if attention:
            raise UserError("--engine ctranslate2 returns no attention weights; use --engine torch or onnxruntime")
        return self.translator.translate_ids(ids, decode, beam=beam, n_best=n_best)

    def force(self, sources: IdBatch, targets: IdBatch, decode: DecodeConfig, *, attention: bool) -> list[Forced]:
        if attention:
            raise UserError("--engine ctranslate2 returns no attention weights; use --engine torch or onnxruntime")
        if len(sources) != len(targets):
            raise UserError(f"{len(sources)} sources but {len(targets)} targets: give one target per source")
        if any(len(s) == 0 for s in sources):
            blank = next(i for i, s in enumerate(sources) if len(s) == 0)
            raise UserError(f"source {blank} is blank: a model scores an output only given some source text")
        return [Forced(lp) for lp in self.translator.score_ids(sources, targets, decode.batch_size)]

    def write_layer_attention(
        self, folder: Path, index: int, src_ids: list[int], out_ids: list[int], src: list[str], tgt: list[str]
    ) -> None:
        """Nothing: CTranslate2 returns no attention here."""

    def describe(self) -> ModelInfo:
        return model_info(
            self.translator.manifest.arch,
            self.translator.manifest.model,  # export.json's record of the model
            device="cpu",
            search_attention=False,
            layer_attention=False,
            attention_note="ctranslate2 returns no attention weights; serve the model with "
            "--engine torch or onnxruntime to see them",
        )

    def layer_attention(
        self, sources: Sequence[list[int]], outputs: Sequence[list[int]], batch_size: int = 64
    ) -> Optional[list[Any]]:
        """None: CTranslate2 returns no attention here."""
        return None


def check_device(engine: str, device: str) -> None:
    """Refuse, in one line, a ``--device`` that is not a choice, or that ``engine`` does not run on."""
    if device not in DEVICES:
        raise UserError(f"--device {device}: unknown; valid options: {', '.join(DEVICES)}")
    if engine != "torch" and device not in ("auto", "cpu"):
        raise UserError(
            f"--device {device}: --engine {engine} runs on the CPU; leave out --device or use --engine torch"
        )


def check_compute_type(engine: str, compute_type: str) -> None:
    """Refuse, in one line, a ``--compute-type`` that ``engine`` would ignore: only CTranslate2 quantizes
    (:data:`nmt.decode.ct2.COMPUTE_TYPES`); the others run the weights as exported, in float32."""
    if engine != "ctranslate2" and compute_type != "float32":
        shown = compute_type if compute_type.isprintable() and len(compute_type) <= 20 else short_repr(compute_type, 20)
        raise UserError(
            f"--compute-type {shown}: only --engine ctranslate2 quantizes weights; "
            f"--engine {engine} runs them in float32 (leave out --compute-type)"
        )


def choose_engine(name: Optional[str], models: Sequence[Path] = ()) -> str:
    """``name`` when given, else the engine that runs the export folders ``models`` (their
    export.json's format), else torch; export folders of several formats need ``--engine``."""
    if name is not None:
        return name
    engines = sorted({ENGINES[read_manifest(Path(m)).format] for m in models})
    if len(engines) > 1:
        raise UserError(
            f"the --model folders are exports for {' and '.join(engines)}: one engine runs every model, "
            "so give folders of one format (one nmt serve per format)"
        )
    return engines[0] if engines else "torch"


def require_export(name: str, model: Optional[Path]) -> None:
    """Refuse, in one line, an engine other than torch without an export folder to run."""
    if name != "torch" and model is None:
        raise UserError(f"--engine {name} runs an export folder: give --model DIR (write one with `nmt export`)")


def open_engine(
    name: Optional[str],
    checkpoints: Sequence[Path],
    model: Optional[Path],
    *,
    compute_type: str = "float32",
    threads: int = 0,
    device: str = "auto",
) -> Engine:
    """The engine ``name`` over ``checkpoints`` (torch only) or an export folder ``model``
    (``name`` None: the engine of ``model``'s format, torch for checkpoints; :func:`choose_engine`).

    ``threads``: the engine's CPU threads (0: torch follows the free cores, the others use their
    own default); ``device``: one of :data:`DEVICES`, anything but the CPU for torch only.
    """
    if (model is None) == (not checkpoints):
        raise UserError("give either --checkpoint (PyTorch checkpoints) or --model DIR (an `nmt export` folder)")
    name = choose_engine(name, [model] if model is not None else [])
    if name not in ENGINE_NAMES:
        raise UserError(f"--engine {name}: unknown; valid options: {', '.join(ENGINE_NAMES)}")
    require_export(name, model)
    check_device(name, device)
    check_compute_type(name, compute_type)
    if name == "torch":
        from nmt.decode.torch_engine import TorchEngine  # torch: imported only for this engine

        return TorchEngine.open(checkpoints, model, device=device, threads=threads)
    assert model is not None
    manifest = read_manifest(model, FORMAT_OF[name])
    if name == "onnxruntime":
        from nmt.engine.onnx_model import OnnxModel

        src_tok, tgt_tok = _tokenizers(model, manifest)
        check_vocab_sizes(model, manifest, src_tok.vocab_size, tgt_tok.vocab_size)
        return OnnxEngine(OnnxModel(model, threads=threads), manifest, src_tok, tgt_tok)
    require("ctranslate2", "export", "--engine ctranslate2")
    from nmt.decode.ct2 import CT2Translator

    return CT2Engine(CT2Translator(model, compute_type=compute_type, threads=threads))


def _tokenizers(folder: Path, manifest: Manifest) -> tuple[Tokenizer, Tokenizer]:
    from nmt.engine.manifest import SRC_SPM, TGT_SPM

    return tuple(  # type: ignore[return-value]
        Tokenizer((folder / manifest.files[role]).read_bytes(), source=f"{folder / manifest.files[role]}")
        for role in (SRC_SPM, TGT_SPM)
    )
