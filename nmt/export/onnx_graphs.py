"""The two graphs an ONNX export holds: the encoder, and one decoder step.

The searches call a model through ``encode``, ``init_state`` and ``step``
(:class:`nmt.decode.common.StepModel`), passing dataclasses of tensors.  An ONNX graph takes and
returns flat lists of named arrays, so each model kind is wrapped here in two modules with flat
signatures, and :class:`Fields` names what flows between them:

- ``encode(src, src_len) -> enc fields + start state fields`` (``init_state`` is folded in);
- ``step(prev, state fields, enc fields) -> logits, attention, next state fields``.

A stateful energy's own state (coverage, local-m's step count) is one more state field,
``attention_state``, batch-first like the rest.

Every field is batch-first (axis 0 is the row a search reorders), so the reading side selects
rows of every array alike (:mod:`nmt.engine.onnx_model`); the RNN's (L, B, H) states travel as
(B, L, H).  The Transformer's position t is the one field without a batch axis.

The RNN encoder is packed in training (:mod:`nmt.model.encoder`); packing does not export, so
:class:`MaskedEncoder` runs the same recurrence as an ONNX Scan over the padded batch, keeping
each row's state unchanged past its last real token and reversing each row within its length for
the backward direction.  Both give the same outputs and final states (tests check it).

Shapes: B batch (or rows), S source length, L layers, H hidden size, K encoder output size,
A attention key size, t decoder positions so far, D model size, V target vocabulary.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Optional, cast

import torch
import torch.nn.functional as F
from torch import Tensor, nn
from torch._higher_order_ops.scan import scan

from nmt.config.sections import MAX_OUTPUT_TOKENS
from nmt.model.cells import gru_cell, lstm_cell
from nmt.model.encoder import Encoder
from nmt.model.seq2seq import Seq2Seq
from nmt.model.state import DecoderState, EncoderOutput, SelfAttentionMemory
from nmt.model.transformer import Transformer
from nmt.model.transformer_layers import SelfCache, sinusoids


@dataclass(frozen=True)
class Fields:
    """The names of what a model's two graphs pass: the encoding, and the decoder state."""

    enc: tuple[str, ...]  # read by every step, never changed
    state: tuple[str, ...]  # changed by every step: step input ``name``, output ``next_name``
    unbatched: tuple[str, ...] = ()  # state fields without a batch axis (the Transformer's position)


# ---------------------------------------------------------------- the RNN encoder without packing


def _reverse_within(length: Tensor, S: int) -> Tensor:
    """(B, S) time indices reading each row backwards within its length; padding stays in place.

    The same index undoes it (it is its own inverse)."""
    t = torch.arange(S, device=length.device).unsqueeze(0)  # (1, S)
    last = length.unsqueeze(1) - 1  # (B, 1)
    return torch.where(t <= last, last - t, t)


def _along_time(x: Tensor, index: Tensor) -> Tensor:
    """x (B, S, F) with its time axis read in ``index`` (B, S) order."""
    return x.gather(1, index.unsqueeze(-1).expand(-1, -1, x.size(2)))


class MaskedEncoder(nn.Module):
    """:class:`~nmt.model.encoder.Encoder`'s recurrence as a scan over padded time steps.

    At step t a row past its length keeps its state: the state after the last real token is
    the final state, as packing gives.  Outputs at padding are zero, as ``pad_packed_sequence``
    leaves them.  It reads the encoder's own parameters (nothing is copied).
    """

    def __init__(self, encoder: Encoder) -> None:
        super().__init__()
        self.encoder = encoder

    def _weights(self, layer: int, reverse: bool) -> tuple[Tensor, Tensor, Tensor, Tensor]:
        rnn, suffix = self.encoder.rnn, "_reverse" if reverse else ""
        names = ("weight_ih", "weight_hh", "bias_ih", "bias_hh")
        w_ih, w_hh, b_ih, b_hh = (getattr(rnn, f"{name}_l{layer}{suffix}") for name in names)
        return w_ih, w_hh, b_ih, b_hh

    def _direction(self, x: Tensor, real: Tensor, layer: int, reverse: bool) -> tuple[Tensor, Tensor, Optional[Tensor]]:
        """One layer, one direction over x (B, S, I): outputs (B, S, H), final h and c (B, H)."""
        w_ih, w_hh, b_ih, b_hh = self._weights(layer, reverse)
        B, H = x.size(0), self.encoder.hidden_size
        x_gates = F.linear(x, w_ih, b_ih).transpose(0, 1)  # (S, B, G): the input's share, all steps at once
        keep = real.transpose(0, 1).unsqueeze(-1)  # (S, B, 1)
        h0 = x.new_zeros(B, H)
        lstm = self.encoder.cell == "lstm"

        def advance(
            carry: tuple[Tensor, Tensor], inputs: tuple[Tensor, Tensor]
        ) -> tuple[tuple[Tensor, Tensor], Tensor]:
            (h, c), (gates, k) = carry, inputs
            if lstm:
                h_new, c_new = lstm_cell(gates, h, c, w_hh, b_hh, H)
            else:
                h_new, c_new = gru_cell(gates, h, w_hh, b_hh, H), c
            output = torch.where(k, h_new, torch.zeros_like(h_new))  # zero at padding, as packing leaves it
            h, c = torch.where(k, h_new, h), torch.where(k, c_new, c)
            return (h, c.clone()), output  # (no output may alias an input of a scan step: hence the clone)

        (h, c), outputs = scan(advance, (h0, h0.clone()), (x_gates, keep))
        return outputs.transpose(0, 1), h, (c if lstm else None)  # (B, S, H)

    def forward(self, src: Tensor, lengths: Tensor) -> tuple[Tensor, Tensor, Optional[Tensor]]:
        """Ids (B, S), lengths (B,) >= 1 -> memory (B, S, K) zero at padding, final h and c (L, B, K)."""
        enc = self.encoder
        S = src.size(1)
        real = torch.arange(S, device=src.device).unsqueeze(0) < lengths.unsqueeze(1)  # (B, S)
        backwards = _reverse_within(lengths, S)
        x = enc.embedding(src)  # (B, S, E); dropout is off in an exported (eval) model
        finals_h, finals_c = [], []
        for layer in range(enc.num_layers):
            out, h, c = self._direction(x, real, layer, reverse=False)
            outs, hs, cs = [out], [h], [c]
            if enc.directions == 2:
                out, h, c = self._direction(_along_time(x, backwards), real, layer, reverse=True)
                outs.append(_along_time(out, backwards))
                hs.append(h)
                cs.append(c)
            x = torch.cat(outs, -1) * real.unsqueeze(-1)  # (B, S, K)
            finals_h.append(torch.cat(hs, -1))
            if cs[0] is not None:
                finals_c.append(torch.cat([c for c in cs if c is not None], -1))
        final_c = torch.stack(finals_c) if finals_c else None
        return x, torch.stack(finals_h), final_c


# ---------------------------------------------------------------- the RNN encoder-decoder


def rnn_fields(model: Seq2Seq) -> Fields:
    """What :class:`RnnEncode` and :class:`RnnStep` pass for this model."""
    dec = model.decoder
    state = ["hidden"]
    if dec.lstm:
        state.append("cell")
    if dec.input_feeding:
        state.append("feed")
    if dec.self_attention is not None:
        state += ["past_keys", "past_values"]
    if dec.attention.stateful:
        state.append("attention_state")
    return Fields(enc=("keys", "values", "mask"), state=tuple(state))


def _rnn_state(model: Seq2Seq, state: DecoderState) -> list[Tensor]:
    """A decoder state as the flat, batch-first fields of :func:`rnn_fields`."""
    fields = [state.hidden.transpose(0, 1)]  # (B, L, H)
    if state.cell is not None:
        fields.append(state.cell.transpose(0, 1))
    if state.feed is not None:
        fields.append(state.feed)
    if model.decoder.self_attention is not None:
        assert state.past is not None and state.past.keys is not None and state.past.values is not None
        fields += [state.past.keys, state.past.values]
    if state.attention is not None:
        fields.append(state.attention)
    return fields


class RnnEncode(nn.Module):
    """(src, src_len) -> keys, values, mask, then the decoder's start state."""

    def __init__(self, model: Seq2Seq) -> None:
        super().__init__()
        self.model, self.encoder = model, MaskedEncoder(model.encoder)

    def forward(self, src: Tensor, src_len: Tensor) -> tuple[Tensor, ...]:
        lengths = src_len.clamp(min=1)  # an empty source reads one padding token, as Seq2Seq.encode
        memory, final_h, final_c = self.encoder(src, lengths)
        final = final_h if final_c is None else (final_h, final_c)
        enc = self.model.finish_encoding(memory, final, lengths)
        state = self.model.init_state(enc)
        return (enc.keys, enc.values, enc.mask, *_rnn_state(self.model, state))


class RnnStep(nn.Module):
    """(prev, state fields, keys, values, mask) -> logits, attention, next state fields."""

    def __init__(self, model: Seq2Seq) -> None:
        super().__init__()
        self.model, self.fields = model, rnn_fields(model)

    def forward(self, prev: Tensor, *arrays: Tensor) -> tuple[Tensor, ...]:
        named = dict(zip(self.fields.state + self.fields.enc, arrays))
        past = None
        if "past_keys" in named:
            past = SelfAttentionMemory(keys=named["past_keys"], values=named["past_values"])
        state = DecoderState(
            hidden=named["hidden"].transpose(0, 1),
            cell=named["cell"].transpose(0, 1) if "cell" in named else None,
            feed=named.get("feed"),
            past=past,
            attention=named.get("attention_state"),
        )
        keys, values, mask = named["keys"], named["values"], named["mask"]
        # the step reads keys, values and mask only; memory and final are the encoder's business
        enc = EncoderOutput(memory=keys, keys=keys, values=values, mask=mask, final=keys)
        logits, new, weights = self.model.step(prev, state, enc)
        return (logits, weights, *_rnn_state(self.model, new))


# ---------------------------------------------------------------- the Transformer


def transformer_fields(model: Transformer) -> Fields:
    """What :class:`TransformerEncode` and :class:`TransformerStep` pass: per-layer arrays stacked on axis 1."""
    return Fields(
        enc=("mask", "cross_keys", "cross_values"),
        state=("position", "self_keys", "self_values"),
        unbatched=("position",),
    )


class TransformerEncode(nn.Module):
    """(src, src_len) -> mask, every decoder layer's cross keys and values (B, L, S, D), the empty caches."""

    def __init__(self, model: Transformer) -> None:
        super().__init__()
        self.model = model

    def forward(self, src: Tensor, src_len: Tensor) -> tuple[Tensor, ...]:
        enc = self.model.encode(src, src_len)
        B, L, D = src.size(0), len(enc.keys), self.model.d_model
        empty = enc.memory.new_zeros(B, L, 0, D)  # (B, L, 0, D): no position decoded yet
        position = torch.zeros((), dtype=torch.long, device=src.device)
        return (enc.mask, torch.stack(enc.keys, 1), torch.stack(enc.values, 1), position, empty, empty.clone())


class TransformerStep(nn.Module):
    """(prev, position, self keys, self values, mask, cross keys, cross values) -> logits, attention, next state.

    Position encodings come from a table of :data:`MAX_OUTPUT_TOKENS` rows indexed by the position
    tensor (the model's own step slices a table with a Python int, which a graph cannot take).
    """

    def __init__(self, model: Transformer) -> None:
        super().__init__()
        self.model = model
        if model.learned_positions is None:
            self.register_buffer("table", sinusoids(MAX_OUTPUT_TOKENS + 1, model.d_model), persistent=False)

    def _position(self, position: Tensor) -> Tensor:
        """The position encoding of ``position`` (a 0-d long tensor): (D,)."""
        learned = self.model.learned_positions
        if learned is None:
            return cast(Tensor, self.table)[position]
        return learned(position.clamp(max=learned.num_embeddings - 1))  # past the table: its last row

    def forward(self, prev: Tensor, *arrays: Tensor) -> tuple[Tensor, ...]:
        position, self_keys, self_values, mask, cross_keys, cross_values = arrays
        m = self.model
        table = m.tgt_embedding
        y = table(prev.unsqueeze(1)) * math.sqrt(m.d_model) + self._position(position).to(table.weight.dtype)
        new_keys, new_values = [], []
        weights = y  # replaced by the last layer's cross-attention
        for i, layer in enumerate(m._decoder_layers):
            cache = SelfCache(self_keys[:, i], self_values[:, i])
            y, cache, weights = layer.step(y, cache, cross_keys[:, i], cross_values[:, i], mask)
            new_keys.append(cache.keys)
            new_values.append(cache.values)
        logits = m.output(m.dec_norm(y).squeeze(1))  # (B, V)
        attention = weights[:, :, 0].mean(1)  # (B, S), mean over heads as Transformer.step
        return (logits, attention, position + 1, torch.stack(new_keys, 1), torch.stack(new_values, 1))


def graphs(model: nn.Module) -> tuple[nn.Module, nn.Module, Fields]:
    """The encode and step modules of a model, and the fields they pass."""
    if isinstance(model, Transformer):
        return TransformerEncode(model), TransformerStep(model), transformer_fields(model)
    if isinstance(model, Seq2Seq):
        return RnnEncode(model), RnnStep(model), rnn_fields(model)
    raise TypeError(f"cannot export a {type(model).__name__}")
