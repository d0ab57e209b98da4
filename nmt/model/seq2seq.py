"""The RNN encoder-decoder with attention (:func:`nmt.model.build.build_model` builds it).

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

from nmt.model.decoder import Decoder
from nmt.model.decoder_loop import Loop
from nmt.model.encoder import Encoder
from nmt.model.self_attention import SelfAttentionEncoder
from nmt.model.state import DecoderState, EncoderOutput, FinalState
from nmt.model.word_dropout import word_dropout

__all__ = ["DecoderState", "EncoderOutput", "Seq2Seq"]


class Seq2Seq(nn.Module):
    """Encoder, optional encoder self-attention, and decoder (which holds the cross-attention)."""

    def __init__(
        self,
        encoder: Encoder,
        decoder: Decoder,
        enc_self_attention: Optional[SelfAttentionEncoder] = None,
        src_word_dropout: float = 0.0,
        tgt_word_dropout: float = 0.0,
    ) -> None:
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
        return self.finish_encoding(memory, final, lengths)

    def finish_encoding(self, memory: Tensor, final: FinalState, lengths: Tensor) -> EncoderOutput:
        """The encoder's outputs (B, S, K), final state and lengths (B,) >= 1 -> what the decoder reads:
        self-attention over the source when configured, the mask, the cross-attention keys and values.
        (:mod:`nmt.export.onnx_graphs` runs the recurrence its own way and finishes here.)"""
        mask = torch.arange(memory.size(1), device=memory.device) < lengths.unsqueeze(1)  # (B, S)
        if self.enc_self_attention is not None:
            memory = self.enc_self_attention(memory, mask)  # (B, S, K)
        attention = self.decoder.attention  # keys and values once per batch, never per step
        return EncoderOutput(
            memory=memory,
            keys=attention.project_keys(memory),
            values=attention.project_values(memory),
            mask=mask,
            final=final,
        )

    def init_state(self, enc: EncoderOutput) -> DecoderState:
        """The decoder's start state."""
        return self.decoder.init_state(enc.final, enc.mask)

    def step(self, prev: Tensor, state: DecoderState, enc: EncoderOutput) -> tuple[Tensor, DecoderState, Tensor]:
        """Previous tokens (B,) -> un-normalized logits (B, V), new state, attention weights (B, S)."""
        return self.decoder.step(prev, state, enc)

    def forward(
        self,
        src: Tensor,
        src_len: Tensor,
        tgt_in: Tensor,
        teacher_forcing: float = 1.0,
        fast: Optional[bool] = None,
        loop: Optional[Loop] = None,
    ) -> tuple[Tensor, Tensor]:
        """Logits (B, T, V) and attention weights (B, T, S) for ``tgt_in`` (B, T) = [BOS, y_1, ...].

        ``teacher_forcing`` p: at each step t > 0 each sentence reads the reference with
        probability p, else its own previous argmax; ``loop``: a registered decoder loop that
        decides instead (:mod:`nmt.model.decoder_loop`).  ``fast``: None = automatic, True =
        require the one-call path (ValueError when not applicable), False = step by step.
        """
        if self.training:
            src = word_dropout(src, self.src_word_dropout)
            tgt_in = word_dropout(tgt_in, self.tgt_word_dropout, skip_first=True)  # BOS stays
        enc = self.encode(src, src_len)
        return self.decoder(tgt_in, self.init_state(enc), enc, teacher_forcing=teacher_forcing, fast=fast, loop=loop)
