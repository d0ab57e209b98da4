"""The PyTorch engine: checkpoints (one, or several as an ensemble) or a safetensors release folder.

It runs nmt's searches on tensors on the best device there is (:mod:`nmt.decode.inference`); the
others engines are in :mod:`nmt.decode.engines`, which imports this module only when asked for it.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Optional

import numpy as np
import torch

from nmt.config import DecodeConfig, with_decode_overrides
from nmt.data.tokenizer import BOS, EOS, Tokenizer
from nmt.decode.batched import IdBatch, Translation, pad_ids
from nmt.decode.common import StepModel
from nmt.decode.forced import Forced, check_pairs, crop_pairs, force_batches, force_decode, pair_batches
from nmt.decode.inference import Loaded, check_search, load_models, translate_ids
from nmt.decode.model_info import ModelInfo, describe_model, model_info
from nmt.decode.release import load_release
from nmt.model.attention import Attention
from nmt.model.transformer import Transformer
from nmt.util import runtime
from nmt.util import threads as cpu_threads
from nmt.util.fileio import atomic_write


@dataclass
class TorchEngine:
    """A loaded PyTorch model and the device it runs on."""

    loaded: Loaded
    device: torch.device
    name: str = "torch"
    src_tok: Tokenizer = field(init=False)
    tgt_tok: Tokenizer = field(init=False)
    step: int = field(init=False)

    def __post_init__(self) -> None:
        self.src_tok, self.tgt_tok, self.step = self.loaded.src_tok, self.loaded.tgt_tok, self.loaded.step

    @classmethod
    def open(
        cls, checkpoints: Sequence[Path], release: Optional[Path], *, device: str = "auto", threads: int = 0
    ) -> TorchEngine:
        """Load on ``device`` (auto: CUDA when present) with ``threads`` CPU threads (0: follow the
        cores other processes leave free)."""
        chosen = runtime.select_device(device)
        cpu_threads.configure(threads)
        loaded = load_release(release, chosen) if release is not None else load_models(checkpoints, chosen)
        return cls(loaded, chosen)

    def decode_config(self, overrides: Sequence[str]) -> DecodeConfig:
        return with_decode_overrides(self.loaded.config, overrides).decode

    def check(self, decode: DecodeConfig, beam: int, n_best: int, overrides: Sequence[str]) -> None:
        check_search(decode, beam, n_best, self.loaded.model, overrides)

    def translate(
        self, ids: IdBatch, decode: DecodeConfig, *, beam: int, n_best: int, attention: bool
    ) -> list[Translation]:
        with torch.inference_mode():
            return translate_ids(
                self.loaded.model, ids, decode, self.device, beam=beam, n_best=n_best, return_attention=attention
            )

    def force(self, sources: IdBatch, targets: IdBatch, decode: DecodeConfig, *, attention: bool) -> list[Forced]:
        model, device = self.loaded.model, self.device

        def run(src: np.ndarray, src_len: np.ndarray, tgt: np.ndarray) -> tuple[torch.Tensor, Optional[torch.Tensor]]:
            src_t, len_t, tgt_t = (torch.from_numpy(a).to(device) for a in (src, src_len, tgt))
            return force_decode(model, src_t, len_t, tgt_t, return_attention=attention)

        was_training = model.training
        model.eval()
        try:
            return force_batches(sources, targets, run, batch_size=decode.batch_size)
        finally:
            model.train(was_training)

    def write_layer_attention(
        self, folder: Path, index: int, src_ids: list[int], out_ids: list[int], src: list[str], tgt: list[str]
    ) -> None:
        """A Transformer's every layer and head for one output: one grid PNG per kind, one JSON (else nothing)."""
        if isinstance(self.loaded.model, Transformer):
            write_layer_attention(folder, index, self.loaded.model, src_ids, out_ids, src, tgt, self.device)

    def describe(self) -> ModelInfo:
        config, model = self.loaded.config, self.loaded.model
        return model_info(
            config.model.arch,
            describe_model(config, model),  # what nmt export writes into export.json
            device=str(self.device),
            search_attention=True,
            layer_attention=isinstance(model, Transformer) or multi_head_attention(model) is not None,
        )

    def layer_attention(
        self, sources: Sequence[Sequence[int]], outputs: Sequence[Sequence[int]], batch_size: int = 64
    ) -> Optional[list[np.ndarray]]:
        """Cross-attention of each (source, output) pair, (layers, heads, len(output) + 1, len(source))
        per pair: a Transformer's every layer, or an RNN's one attention (layers 1) where it has
        several heads; else None.  ``batch_size`` pairs per forced pass, padded to the longest."""
        check_pairs(sources, outputs)  # on every model, so a mistake is not hidden by one without maps
        model = self.loaded.model
        attention = None if isinstance(model, Transformer) else multi_head_attention(model)
        if not isinstance(model, Transformer) and attention is None:
            return None
        maps: list[np.ndarray] = []
        was_training = model.training
        model.eval()
        try:
            for srcs, outs in pair_batches(sources, outputs, batch_size):
                if isinstance(model, Transformer):  # (B, layers, heads, T + 1, S)
                    batch = attention_maps(model, srcs, outs, self.device)["cross"]
                else:
                    assert attention is not None
                    batch = rnn_head_maps(model, attention, srcs, outs, self.device)[:, None]
                maps += crop_pairs(batch.float().cpu().numpy(), srcs, outs)
        finally:
            model.train(was_training)
        return maps


def multi_head_attention(model: object) -> Optional[Attention]:
    """An RNN decoder's cross-attention where it has several heads (``qkv`` with heads > 1); else None."""
    attention = getattr(getattr(model, "decoder", None), "attention", None)
    return attention if isinstance(attention, Attention) and attention.heads > 1 else None


def rnn_head_maps(
    model: StepModel,
    attention: Attention,
    sources: Sequence[Sequence[int]],
    outputs: Sequence[Sequence[int]],
    device: torch.device,
) -> torch.Tensor:
    """Each head's weights (B, heads, T + 1, S) of an RNN's attention while each output and its EOS
    are forced (sources and outputs padded to the longest, S and T).  The attention returns the mean
    of its heads; a hook asks it again for every head's own (``per_head``), so the context, and every
    prediction, is unchanged."""
    kept: list[torch.Tensor] = []

    def keep(module: torch.nn.Module, args: tuple[Any, ...], kwargs: dict[str, Any], output: Any) -> None:
        kept.append(module.forward(*args, **{**kwargs, "per_head": True})[1])  # (B, h, [T,] S); forward runs no hook

    src, src_len = pad_ids(sources)
    tgt, _ = pad_ids([[*out, EOS] for out in outputs])
    handle = attention.register_forward_hook(keep, with_kwargs=True)
    try:
        src_t, len_t, tgt_t = (torch.from_numpy(a).to(device) for a in (src, src_len, tgt))
        force_decode(model, src_t, len_t, tgt_t)
    finally:
        handle.remove()
    return torch.stack(kept, 2) if kept[0].dim() == 3 else torch.cat(kept, 2)  # (B, h, T + 1, S)


ATTENTION_KINDS = {
    "encoder_self": "encoder self-attention",
    "decoder_self": "decoder self-attention",
    "cross": "cross-attention",
}
"""The maps a Transformer adds per sentence (:meth:`~nmt.model.transformer.Transformer.attention_maps`)."""


def attention_maps(
    model: Transformer, sources: Sequence[Sequence[int]], outputs: Sequence[Sequence[int]], device: torch.device
) -> dict[str, torch.Tensor]:
    """Every map of :data:`ATTENTION_KINDS` for each source and its output, each (B, layers, heads, rows,
    columns), the pairs padded to the longest.

    The decoder reads [BOS] + the output, so the decoder's rows are the output tokens and EOS; the
    causal mask keeps a row from the padding after it, the source mask every row from the source's.
    """
    src, src_len = pad_ids(sources)
    tgt_in, _ = pad_ids([[BOS, *out] for out in outputs])
    src_t, len_t, tgt_t = (torch.from_numpy(a).to(device) for a in (src, src_len, tgt_in))
    with torch.inference_mode():
        return model.attention_maps(src_t, len_t, tgt_t)


def write_layer_attention(
    folder: Path,
    index: int,
    model: Transformer,
    src_ids: list[int],
    out_ids: list[int],
    src_pieces: list[str],
    tgt_pieces: list[str],
    device: torch.device,
) -> None:
    """Every layer's and head's maps of one sentence's best hypothesis: one grid PNG per kind, one JSON.

    The decoder reads [BOS] + the output, so its rows are the output tokens and EOS (``tgt_pieces``).
    """
    from nmt.util.plots import plot_attention_grid

    if not src_pieces:
        return
    maps = {
        kind: weights[0].float().cpu() for kind, weights in attention_maps(model, [src_ids], [out_ids], device).items()
    }
    axes = {
        "encoder_self": (src_pieces, src_pieces),
        "decoder_self": (["<s>"] + tgt_pieces[:-1], tgt_pieces),
        "cross": (src_pieces, tgt_pieces),
    }  # (columns, rows)
    stem = folder / f"{index:06d}"
    with atomic_write(stem.with_suffix(".layers.json")) as handle:
        handle.write(
            json.dumps(
                {
                    "src": src_pieces,
                    "tgt": tgt_pieces,
                    "dims": "layer, head, row, column",
                    **{kind: maps[kind].tolist() for kind in ATTENTION_KINDS},
                }
            ).encode("utf-8")
        )
    for kind, label in ATTENTION_KINDS.items():
        columns, rows = axes[kind]
        plot_attention_grid(
            maps[kind], columns, rows, folder / f"{index:06d}.{kind}.png", title=f"sentence {index}: {label}"
        )
