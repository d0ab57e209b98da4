"""``nmt export --format ctranslate2``: a Transformer checkpoint as a CTranslate2 model folder.

The model is described with CTranslate2's own specification classes (``TransformerSpec`` and
its encoder, decoder and layer specs), filled weight by weight from our modules and saved by
``spec.save``; nothing here writes CTranslate2's binary format itself.  The folder also holds
both SentencePiece models and ``export.json`` (:mod:`nmt.engine.manifest`); it is read by
:class:`nmt.decode.ct2.CT2Translator`, which needs no torch.

How our Transformer maps (every weight has one home; the search differences are listed in
:mod:`nmt.decode.ct2`):

- pre-norm x + f(LN(x)) with a final LN on each stack, or post-norm LN(x + f(x)): the spec's
  ``pre_norm`` flag, the same formulas; each sublayer's LN is the spec's ``layer_norm`` of that
  attention or feed-forward block; LN epsilon is taken from our modules (torch: 1e-5).
- Embeddings x sqrt(D) (``scale_embeddings``); a shared source/target table and an output layer
  tied to the target table are the same array written twice, which ``spec.optimize`` aliases.
- Positions: CTranslate2's built-in sinusoids are [sin | cos] halves at positions 1, 2, ... with
  another frequency scale, while ours interleave sin and cos from position 0, so the table is
  always stored explicitly (``position_encodings.encodings``, row p = position p), for learned
  positions too, with rows past ``max_len`` repeating the last one as our model does.  It has
  :func:`nmt.decode.ct2.position_rows` rows; a longer input is cut by the engine.
- Attention: our query and key maps have no bias, the value map and W_o have one.  Self-attention
  is one fused [W_q; W_k; W_v] map (bias [0; 0; b_v]), cross-attention a query map and a fused
  [W_k; W_v] map (bias [0; b_v]), then W_o; queries are scaled by 1/sqrt(D/h) in both.
- Feed-forward W_2 ReLU(W_1 x + b_1) + b_2; the output layer W_out h + b_out.
- Tokens are SentencePiece pieces: the vocabularies list each model's pieces in id order, so a
  piece's index is its id; unk/bos/eos are the pieces of our ids 1/2/3, the decoder starts
  from BOS and stops at EOS; no BOS/EOS is added to the source (as in training).
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import numpy as np
import torch
from ctranslate2.specs import TransformerDecoderSpec, TransformerEncoderSpec, TransformerSpec
from torch import Tensor, nn

from nmt.data.tokenizer import BOS, EOS, UNK, Tokenizer
from nmt.decode.ct2 import FORMAT, position_rows
from nmt.decode.inference import load_checkpoint
from nmt.decode.model_info import describe_model
from nmt.engine.export_folder import check_new_folder, new_folder
from nmt.engine.manifest import EXPORT_FILES, SPM_FILES, SRC_SPM, TGT_SPM, ExportError, Manifest, write_manifest
from nmt.model.attention import Attention
from nmt.model.transformer import Transformer
from nmt.model.transformer_layers import DecoderLayer, EncoderLayer, FeedForward, sinusoids

log = logging.getLogger(__name__)


def _array(t: Tensor) -> np.ndarray:
    return t.detach().to("cpu", torch.float32).numpy().copy()


def _set_linear(spec: Any, layers: list[nn.Linear]) -> None:
    """One linear spec from maps stacked along their outputs; a bias of zeros where a map has none."""
    spec.weight = np.concatenate([_array(layer.weight) for layer in layers])  # (sum of outputs, inputs)
    if any(layer.bias is not None for layer in layers):
        spec.bias = np.concatenate(
            [
                _array(layer.bias) if layer.bias is not None else np.zeros(layer.out_features, np.float32)
                for layer in layers
            ]
        )


def _set_norm(spec: Any, norm: nn.Module) -> None:
    if not isinstance(norm, nn.LayerNorm):
        raise TypeError(f"expected a LayerNorm, got {type(norm).__name__}")
    spec.gamma, spec.beta = _array(norm.weight), _array(norm.bias)


def _maps(att: Attention) -> tuple[nn.Linear, nn.Linear, nn.Linear, nn.Linear]:
    """W_q, W_k, W_v and W_o of one of our Transformer attentions (all present by construction)."""
    q, k, v, o = att.query_proj, att.key_proj, att.value_proj, att.out_proj
    if q is None or k is None or v is None or o is None:
        raise TypeError("a Transformer attention has query, key, value and output maps")
    return q, k, v, o


def _set_attention(spec: Any, att: Attention, norm: nn.Module, self_attention: bool) -> None:
    q, k, v, o = _maps(att)
    if self_attention:  # linear: [fused q|k|v, output]
        _set_linear(spec.linear[0], [q, k, v])
        _set_linear(spec.linear[1], [o])
    else:  # linear: [query, fused k|v, output]
        _set_linear(spec.linear[0], [q])
        _set_linear(spec.linear[1], [k, v])
        _set_linear(spec.linear[2], [o])
    _set_norm(spec.layer_norm, norm)


def _set_ffn(spec: Any, ff: FeedForward, norm: nn.Module) -> None:
    _set_linear(spec.linear_0, [ff.inner])
    _set_linear(spec.linear_1, [ff.outer])
    _set_norm(spec.layer_norm, norm)


def _set_encoder_layer(spec: Any, layer: EncoderLayer) -> None:
    _set_attention(spec.self_attention, layer.self_attention, layer.attend_res.norm, True)
    _set_ffn(spec.ffn, layer.feed_forward, layer.ff_res.norm)


def _set_decoder_layer(spec: Any, layer: DecoderLayer) -> None:
    _set_attention(spec.self_attention, layer.self_attention, layer.self_res.norm, True)
    _set_attention(spec.attention, layer.cross_attention, layer.cross_res.norm, False)
    _set_ffn(spec.ffn, layer.feed_forward, layer.ff_res.norm)


def position_table(model: Transformer, rows: int) -> np.ndarray:
    """(rows, D) the vectors our model adds at positions 0..rows-1: sinusoids, or the learned
    table with positions past its end reading its last row."""
    if model.learned_positions is None:
        return _array(sinusoids(rows, model.d_model))
    table = model.learned_positions.weight
    return _array(table[torch.arange(rows).clamp(max=table.size(0) - 1)])


def transformer_spec(model: Transformer, src_tok: Tokenizer, tgt_tok: Tokenizer, rows: int) -> TransformerSpec:
    """The CTranslate2 specification of ``model`` with every weight set, vocabularies registered, validated."""
    encoders = [layer for layer in model.encoder if isinstance(layer, EncoderLayer)]
    decoders = [layer for layer in model.decoder if isinstance(layer, DecoderLayer)]
    heads = encoders[0].self_attention.heads
    encoder = TransformerEncoderSpec(len(encoders), heads, pre_norm=model.pre_norm)
    decoder = TransformerDecoderSpec(len(decoders), heads, pre_norm=model.pre_norm, alignment_heads=0)
    # alignment_heads=0: the attention CTranslate2 returns is the last layer's mean over heads, as ours
    encoder.embeddings[0].weight = _array(model.src_embedding.weight)
    decoder.embeddings.weight = _array(model.tgt_embedding.weight)
    table = position_table(model, rows)
    encoder.position_encodings.encodings = table
    decoder.position_encodings.encodings = table.copy()
    for spec, layer in zip(encoder.layer, encoders):
        _set_encoder_layer(spec, layer)
    for spec, d_layer in zip(decoder.layer, decoders):
        _set_decoder_layer(spec, d_layer)
    if model.pre_norm:
        _set_norm(encoder.layer_norm, model.enc_norm)
        _set_norm(decoder.layer_norm, model.dec_norm)
    _set_linear(decoder.projection, [model.output])

    spec = TransformerSpec(encoder, decoder)
    eps = {m.eps for m in model.modules() if isinstance(m, nn.LayerNorm)}
    if len(eps) != 1:
        raise TypeError(f"CTranslate2 takes one layer-norm epsilon; this model has {sorted(eps)}")
    spec.config.layer_norm_epsilon = eps.pop()
    spec.config.unk_token = tgt_tok.sp.id_to_piece(UNK)
    spec.config.bos_token = spec.config.decoder_start_token = tgt_tok.sp.id_to_piece(BOS)
    spec.config.eos_token = tgt_tok.sp.id_to_piece(EOS)
    spec.register_source_vocabulary([src_tok.sp.id_to_piece(i) for i in range(src_tok.vocab_size)])
    spec.register_target_vocabulary([tgt_tok.sp.id_to_piece(i) for i in range(tgt_tok.vocab_size)])
    spec.validate()
    return spec


def export_ctranslate2(checkpoint: Path, out: Path, *, force: bool = False) -> Path:
    """Write ``out``: the CTranslate2 model of a Transformer ``checkpoint`` (float32 weights; the
    engine may run them as int8), both SentencePiece models and export.json; returns ``out``.

    An RNN checkpoint is refused in one line before anything is written.
    """
    check_new_folder(Path(out), force)  # before the checkpoint is read
    loaded = load_checkpoint(Path(checkpoint), torch.device("cpu"))
    if not isinstance(loaded.model, Transformer):
        raise ExportError(f"{checkpoint}: CTranslate2 holds Transformers only, use --format onnx")
    decode = loaded.config.decode.model_dump(mode="json")
    spec = transformer_spec(loaded.model, loaded.src_tok, loaded.tgt_tok, position_rows(decode))
    spec.optimize(quantization="float32")  # aliases the arrays written twice (shared or tied tables)
    with new_folder(Path(out), force) as folder:
        spec.save(str(folder))
        for role, tok in ((SRC_SPM, loaded.src_tok), (TGT_SPM, loaded.tgt_tok)):
            (folder / SPM_FILES[role]).write_bytes(tok.model_bytes)
        # the format's names that were written (one shared vocabulary, or one per side); a file
        # spec.save wrote under any other name fails the check of the staged folder
        files = {role: name for role, name in EXPORT_FILES[FORMAT].items() if (folder / name).is_file()}
        manifest = Manifest(
            format=FORMAT,
            arch="transformer",
            src_vocab=loaded.src_tok.vocab_size,
            tgt_vocab=loaded.tgt_tok.vocab_size,
            decode=decode,
            files=files,
            step=loaded.step,
            model=describe_model(loaded.config, loaded.model),
        )
        write_manifest(folder, manifest)
    log.info("wrote the CTranslate2 model of %s to %s", checkpoint, out)
    return Path(out)
