"""The model factory, the only reader of the model config: an RNN encoder-decoder or a Transformer.

Also the one initialization both kinds share (:func:`init_weights`) and the parameter count.
"""

from __future__ import annotations

from typing import Union

import torch
from torch import nn

from nmt.config import ModelConfig, SelfAttentionConfig
from nmt.data.tokenizer import PAD
from nmt.model.attention import Attention
from nmt.model.decoder import Decoder
from nmt.model.encoder import Encoder
from nmt.model.energies import Energy
from nmt.model.self_attention import SelfAttentionBlock, SelfAttentionEncoder
from nmt.model.seq2seq import Seq2Seq
from nmt.model.transformer import Transformer

__all__ = ["TranslationModel", "build_model", "count_parameters", "init_weights"]

TranslationModel = Union[Seq2Seq, Transformer]
"""Either model kind: both offer forward, encode, init_state, step and target_vocab_size."""


def init_weights(model: nn.Module) -> None:
    """Initialize every parameter.

    - Linear layers: Xavier/Glorot uniform weights, zero biases.
    - Embeddings: normal with std E^-1/2 (unit-norm rows on average), padding row zero.
    - Recurrent layers: input weights Xavier uniform per gate block, recurrent weights
      orthogonal per gate block (Saxe et al. 2014), zero biases except the LSTM forget
      gate, whose bias b_ih is 1 so that memory is kept at first (Jozefowicz et al. 2015).
    - Additive attention's v: uniform in +-A^-1/2, set where it is created.
    - Attention maps learned on a smaller scale (W_o = g W_o', bilinear W = g W') start with
      W_o' = Xavier x ``out_init_gain`` and W' = Xavier x ``bilinear_init_gain`` (1/g: the map
      itself starts as a Xavier map); the gaussian's scaled query and key maps start at Xavier / g.
    - The dot energies' learned log-scale s (``learn_scale``): 0, set where it is created.
    - Layer norms (self-attention blocks, the Transformer): unit scale, zero shift, as created.
    - Learned position tables are embeddings too (std D^-1/2); sinusoids have no parameters.
    A tied output layer shares the target embedding, which is initialized as an embedding; an
    untied RNN one is re-drawn by :func:`build_model` as ``model.output_init`` says.
    """
    for module in model.modules():
        if isinstance(module, nn.Linear):
            nn.init.xavier_uniform_(module.weight)
            if module.bias is not None:
                nn.init.zeros_(module.bias)
    for module in model.modules():  # after Linear, so a tied matrix ends as an embedding
        if isinstance(module, nn.Embedding):
            nn.init.normal_(module.weight, std=module.embedding_dim**-0.5)
            if module.padding_idx is not None:
                with torch.no_grad():
                    module.weight[module.padding_idx].zero_()
        elif isinstance(module, (nn.GRU, nn.LSTM)):
            H = module.hidden_size
            for name, param in module.named_parameters():
                blocks = param.data.split(H, dim=0)  # one block per gate
                if name.startswith("weight_ih"):
                    for block in blocks:
                        nn.init.xavier_uniform_(block)
                elif name.startswith("weight_hh"):
                    for block in blocks:
                        nn.init.orthogonal_(block)
                else:
                    nn.init.zeros_(param)
                    if isinstance(module, nn.LSTM) and name.startswith("bias_ih"):
                        nn.init.ones_(blocks[1])  # forget gate (i, f, g, o)
        elif isinstance(module, Energy):
            module.after_init()  # after Linear: e.g. the bilinear W scaled from its Xavier draw
        elif isinstance(module, Attention):
            with torch.no_grad():  # after Linear: scales the Xavier weights just drawn
                if module.out_proj is not None:
                    module.out_proj.weight.mul_(module.out_init_gain)
                for proj in (module.query_proj, module.key_proj):
                    if proj is not None:
                        proj.weight.div_(module.qk_gain)


def _block(cfg: SelfAttentionConfig, size: int, dropout: float) -> SelfAttentionBlock:
    """One self-attention block over states of ``size``."""
    return SelfAttentionBlock(
        Attention(size, size, **cfg.axes(), dim=cfg.dim, max_len=cfg.max_len, normalize=cfg.normalize),
        dropout,
        norm=cfg.norm,
        gate=cfg.gate,
    )


def build_model(cfg: ModelConfig, src_vocab: int, tgt_vocab: int) -> TranslationModel:
    """The model described by ``cfg`` for the given vocabulary sizes, initialized."""
    if cfg.arch == "transformer":
        transformer = Transformer(
            cfg.transformer,
            src_vocab,
            tgt_vocab,
            dropout=cfg.dropout,
            emb_dropout=cfg.emb_dropout,
            tie_embeddings=cfg.tie_embeddings,
            src_word_dropout=cfg.src_word_dropout,
            tgt_word_dropout=cfg.tgt_word_dropout,
        )
        init_weights(transformer)
        return transformer
    att, enc_self, dec_self = cfg.attention, cfg.enc_self_attention, cfg.dec_self_attention
    attention = Attention(
        cfg.hidden_size,
        cfg.key_size,
        **att.axes(),
        dim=att.dim,
        max_len=att.max_src_len,
        scale_bilinear=att.scale_bilinear,
        scale_out_proj=att.scale_out_proj,
        out_proj_start=att.out_proj_start,
        bilinear_start=att.bilinear_start,
        scale_gaussian=att.scale_gaussian,
        learn_scale=att.learn_scale,
        normalize=att.normalize,
        params=att.params,
    )
    blocks = [_block(enc_self, cfg.key_size, cfg.dropout) for _ in range(enc_self.layers)]
    encoder = Encoder(
        src_vocab,
        cfg.emb_size,
        cfg.enc_size,
        num_layers=cfg.enc_layers,
        bidirectional=cfg.bidirectional,
        cell=cfg.cell,
        dropout=cfg.dropout,
        emb_dropout=cfg.emb_dropout,
        pad_id=PAD,
    )
    decoder = Decoder(
        tgt_vocab,
        cfg.emb_size,
        cfg.hidden_size,
        attention,
        enc_state_size=encoder.output_size,
        enc_directions=encoder.directions,
        num_layers=cfg.dec_layers,
        cell=cfg.cell,
        style=att.resolved_style,
        input_feeding=att.input_feeding,
        init_state=cfg.init_state,
        dropout=cfg.dropout,
        emb_dropout=cfg.emb_dropout,
        tie_embeddings=cfg.tie_embeddings,
        pad_id=PAD,
        self_attention=_block(dec_self, cfg.hidden_size, cfg.dropout) if dec_self.enabled else None,
        combine=att.combine,
    )
    model = Seq2Seq(
        encoder,
        decoder,
        SelfAttentionEncoder(blocks) if blocks else None,
        src_word_dropout=cfg.src_word_dropout,
        tgt_word_dropout=cfg.tgt_word_dropout,
    )
    init_weights(model)
    if cfg.output_init == "embedding" and not cfg.tie_embeddings:
        # W_out starts as a tied one would: Xavier's std sqrt(2 / (H + V)) is sqrt(2H / (H + V)) of H^-1/2
        # (1/2 at V = 7H), and a Luong readout then saturates its tanh for logit scale (docs/attention_diagnosis.md).
        nn.init.normal_(decoder.output.weight, std=cfg.hidden_size**-0.5)
    return model


def count_parameters(model: nn.Module) -> int:
    """Trainable parameters, each shared tensor counted once."""
    return sum(p.numel() for p in model.parameters() if p.requires_grad)
