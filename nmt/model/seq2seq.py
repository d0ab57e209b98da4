"""The encoder-decoder model and its factory, the only reader of the model config.

``encode`` runs once per batch (encoder, optional encoder self-attention, mask, the
cross-attention keys and values); ``init_state`` and
``step`` advance one token at a time for greedy and beam search; ``forward`` decodes a
whole reference target for training, with optional teacher forcing below 1
(scheduled sampling) and a fast path when nothing is fed back.

Shapes: B batch, S source length, T target length, V target vocabulary,
K encoder output size, H decoder hidden size, A attention key size.
"""

from __future__ import annotations

from typing import Optional

import torch
from torch import Tensor, nn

from nmt.config import ModelConfig, SelfAttentionConfig
from nmt.data.tokenizer import PAD, UNK
from nmt.model.attention import Attention
from nmt.model.decoder import Decoder
from nmt.model.encoder import Encoder
from nmt.model.self_attention import SelfAttentionBlock, SelfAttentionEncoder
from nmt.model.state import DecoderState, EncoderOutput

__all__ = ["EncoderOutput", "DecoderState", "Seq2Seq", "build_model", "count_parameters", "init_weights"]


class Seq2Seq(nn.Module):
    """Encoder, optional encoder self-attention, and decoder (which holds the cross-attention)."""

    def __init__(self, encoder: Encoder, decoder: Decoder, enc_self_attention: Optional[SelfAttentionEncoder] = None,
                 src_word_dropout: float = 0.0, tgt_word_dropout: float = 0.0) -> None:
        super().__init__()
        self.encoder = encoder
        self.enc_self_attention = enc_self_attention
        self.decoder = decoder
        self.src_word_dropout = src_word_dropout
        self.tgt_word_dropout = tgt_word_dropout

    @property
    def target_vocab_size(self) -> int:
        """V, the size of the output layer."""
        return self.decoder.output.out_features

    def encode(self, src: Tensor, src_len: Tensor) -> EncoderOutput:
        """Source ids (B, S) with lengths (B,) -> everything the decoder needs, computed once.

        An empty source (length 0) is read as one padding token, so that every sentence has
        at least one real position to attend to.
        """
        lengths = src_len.to(src.device).clamp(min=1)
        memory, final = self.encoder(src, lengths)  # (B, S, K)
        mask = torch.arange(src.size(1), device=src.device) < lengths.unsqueeze(1)  # (B, S)
        if self.enc_self_attention is not None:
            memory = self.enc_self_attention(memory, mask)  # (B, S, K)
        attention = self.decoder.attention  # keys and values once per batch, never per step
        return EncoderOutput(memory=memory, keys=attention.project_keys(memory),
                             values=attention.project_values(memory), mask=mask, final=final)

    def init_state(self, enc: EncoderOutput) -> DecoderState:
        """The decoder's start state."""
        return self.decoder.init_state(enc.final)

    def step(self, prev: Tensor, state: DecoderState, enc: EncoderOutput) -> tuple[Tensor, DecoderState, Tensor]:
        """Previous tokens (B,) -> un-normalized logits (B, V), new state, attention weights (B, S)."""
        return self.decoder.step(prev, state, enc)

    def forward(
        self, src: Tensor, src_len: Tensor, tgt_in: Tensor,
        teacher_forcing: float = 1.0, fast: Optional[bool] = None,
    ) -> tuple[Tensor, Tensor]:
        """Logits (B, T, V) and attention weights (B, T, S) for ``tgt_in`` (B, T) = [BOS, y_1, ...].

        ``teacher_forcing`` p: at each step t > 0 each sentence reads the reference with
        probability p, else its own previous argmax.  ``fast``: None = automatic, True =
        require the one-call path (ValueError when not applicable), False = step by step.
        """
        if self.training:
            src = word_dropout(src, self.src_word_dropout)
            tgt_in = word_dropout(tgt_in, self.tgt_word_dropout, skip_first=True)  # BOS stays
        enc = self.encode(src, src_len)
        return self.decoder(tgt_in, self.init_state(enc), enc, teacher_forcing=teacher_forcing, fast=fast)


def word_dropout(ids: Tensor, p: float, skip_first: bool = False) -> Tensor:
    """``ids`` (B, T) with each real token replaced by <unk> with probability ``p``.

    Word dropout (Gal & Ghahramani 2016, as Sennrich et al. 2016 applied it to NMT): the model
    cannot lean on any one input word, so it learns from context.  Padding is never replaced,
    nor column 0 with ``skip_first``.  Draws from the global generator only when ``p > 0``, so
    runs without it are unchanged and a resumed run draws what the uninterrupted one drew.
    """
    if p <= 0.0:
        return ids
    drop = (torch.rand(ids.shape, device=ids.device) < p) & (ids != PAD)
    if skip_first:
        drop[:, 0] = False
    return ids.masked_fill(drop, UNK)


def init_weights(model: nn.Module) -> None:
    """Initialize every parameter.

    - Linear layers: Xavier/Glorot uniform weights, zero biases.
    - Embeddings: normal with std E^-1/2 (unit-norm rows on average), padding row zero.
    - Recurrent layers: input weights Xavier uniform per gate block, recurrent weights
      orthogonal per gate block (Saxe et al. 2014), zero biases except the LSTM forget
      gate, whose bias b_ih is 1 so that memory is kept at first (Jozefowicz et al. 2015).
    - Additive attention's v: uniform in +-A^-1/2, set where it is created.
    - Layer norms (self-attention blocks): unit scale, zero shift, as created.
    A tied output layer shares the target embedding, which is initialized as an embedding.
    """
    for module in model.modules():
        if isinstance(module, nn.Linear):
            nn.init.xavier_uniform_(module.weight)
            if module.bias is not None:
                nn.init.zeros_(module.bias)
    for module in model.modules():  # after Linear, so a tied matrix ends as an embedding
        if isinstance(module, nn.Embedding):
            nn.init.normal_(module.weight, std=module.embedding_dim ** -0.5)
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


def _block(cfg: SelfAttentionConfig, size: int, dropout: float) -> SelfAttentionBlock:
    """One self-attention block over states of ``size``."""
    return SelfAttentionBlock(Attention(size, size, **cfg.axes(), dim=cfg.dim, max_len=cfg.max_len), dropout)


def build_model(cfg: ModelConfig, src_vocab: int, tgt_vocab: int) -> Seq2Seq:
    """The model described by ``cfg`` for the given vocabulary sizes, initialized."""
    att, enc_self, dec_self = cfg.attention, cfg.enc_self_attention, cfg.dec_self_attention
    attention = Attention(cfg.hidden_size, cfg.key_size, **att.axes(), dim=att.dim, max_len=att.max_src_len,
                          scale_bilinear=att.scale_bilinear, scale_out_proj=att.scale_out_proj)
    blocks = [_block(enc_self, cfg.key_size, cfg.dropout) for _ in range(enc_self.layers)]
    encoder = Encoder(
        src_vocab, cfg.emb_size, cfg.hidden_size, num_layers=cfg.enc_layers, bidirectional=cfg.bidirectional,
        cell=cfg.cell, dropout=cfg.dropout, emb_dropout=cfg.emb_dropout, pad_id=PAD)
    decoder = Decoder(
        tgt_vocab, cfg.emb_size, cfg.hidden_size, attention,
        enc_state_size=encoder.output_size, enc_directions=encoder.directions,
        num_layers=cfg.dec_layers, cell=cfg.cell, style=att.resolved_style, input_feeding=att.input_feeding,
        init_state=cfg.init_state, dropout=cfg.dropout, emb_dropout=cfg.emb_dropout,
        tie_embeddings=cfg.tie_embeddings, pad_id=PAD,
        self_attention=_block(dec_self, cfg.hidden_size, cfg.dropout) if dec_self.enabled else None)
    model = Seq2Seq(encoder, decoder, SelfAttentionEncoder(blocks) if blocks else None,
                    src_word_dropout=cfg.src_word_dropout, tgt_word_dropout=cfg.tgt_word_dropout)
    init_weights(model)
    return model


def count_parameters(model: nn.Module) -> int:
    """Trainable parameters, each shared tensor counted once."""
    return sum(p.numel() for p in model.parameters() if p.requires_grad)
