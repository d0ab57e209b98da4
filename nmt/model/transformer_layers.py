"""The Transformer's layers (Vaswani et al. 2017), built on our :class:`~nmt.model.attention.Attention`.

Every attention here is the design space's ``qkv`` point with the scaled-dot energy: linear
query, key and value maps, ``h`` heads and an output projection W_o, so its weights are the
same objects the RNN presets return.  A sublayer f (attention or feed-forward) is wrapped as

    pre-norm:  x + dropout(f(LN(x)))      (Xiong et al. 2020; a final LN follows the stack)
    post-norm: LN(x + dropout(f(x)))      (the original)

- :class:`EncoderLayer`: self-attention over the source, padding masked, then feed-forward.
- :class:`DecoderLayer`: causal self-attention over the target so far, cross-attention over
  the encoder output, feed-forward.  ``forward`` runs a whole target under a causal mask;
  ``step`` runs one new position against the keys and values cached for the earlier ones
  (incremental decoding), which gives the same result.

Shapes: B batch, S source length, T target length, t positions so far, D model size,
h heads, F feed-forward size.
"""

from __future__ import annotations

from typing import Any, NamedTuple, Optional

import torch
from torch import Tensor, nn

from nmt.model.attention import Attention
from nmt.model.dropout import Dropout


class AttentionChoice(NamedTuple):
    """The steps every attention of a Transformer is built with (``model.transformer.energy``, ``normalize``)."""

    energy: str = "scaled_dot"
    normalize: str = "softmax"
    params: tuple[tuple[str, Any], ...] = ()  # the energy's own options (model.transformer.params), as items


def multi_head(
    d_model: int, heads: int, dropout: float = 0.0, choice: AttentionChoice = AttentionChoice()
) -> Attention:
    """Scaled dot-product attention with h heads over D-sized states: softmax(QK^T / sqrt(D/h)) V, then W_o;
    ``dropout`` on the softmax weights in training (attention dropout).  ``choice`` replaces the energy
    (QK^T / sqrt(D/h)) or the normalization (softmax) by registered ones."""
    return Attention(
        d_model,
        d_model,
        energy=choice.energy,
        normalize=choice.normalize,
        params=dict(choice.params),
        query_map="linear",
        key_map="linear",
        value_map="linear",
        out_proj=True,
        heads=heads,
        dim=d_model,
        dropout=dropout,
    )


class FeedForward(nn.Module):
    """Position-wise feed-forward network: W_2 dropout(ReLU(W_1 x + b_1)) + b_2, D -> F -> D."""

    def __init__(self, d_model: int, ff_size: int, dropout: float) -> None:
        super().__init__()
        self.inner = nn.Linear(d_model, ff_size)
        self.outer = nn.Linear(ff_size, d_model)
        self.dropout = Dropout(dropout)

    def forward(self, x: Tensor) -> Tensor:
        return self.outer(self.dropout(torch.relu(self.inner(x))))


class Residual(nn.Module):
    """The wrapper of one sublayer: its layer norm and dropout, placed before or after (see module doc)."""

    def __init__(self, d_model: int, dropout: float, pre_norm: bool) -> None:
        super().__init__()
        self.norm = nn.LayerNorm(d_model)
        self.dropout = Dropout(dropout)
        self.pre_norm = pre_norm

    def input(self, x: Tensor) -> Tensor:
        """What the sublayer reads: LN(x) under pre-norm, else x."""
        return self.norm(x) if self.pre_norm else x

    def output(self, x: Tensor, fx: Tensor) -> Tensor:
        """The layer's new state from its input x and the sublayer's result f."""
        y = x + self.dropout(fx)
        return y if self.pre_norm else self.norm(y)


class SelfCache(NamedTuple):
    """One decoder layer's self-attention keys and values for the positions so far."""

    keys: Tensor  # (B, t, D)
    values: Tensor  # (B, t, D)


class EncoderLayer(nn.Module):
    """Self-attention over the source, then feed-forward."""

    def __init__(
        self,
        d_model: int,
        heads: int,
        ff_size: int,
        dropout: float,
        pre_norm: bool,
        attention_dropout: float = 0.0,
        choice: AttentionChoice = AttentionChoice(),
    ) -> None:
        super().__init__()
        self.self_attention = multi_head(d_model, heads, attention_dropout, choice)
        self.feed_forward = FeedForward(d_model, ff_size, dropout)
        self.attend_res, self.ff_res = (Residual(d_model, dropout, pre_norm) for _ in range(2))

    def forward(self, x: Tensor, mask: Tensor) -> tuple[Tensor, Tensor]:
        """States (B, S, D), mask (B, S) True at real tokens -> states (B, S, D), weights (B, h, S, S)."""
        att, h = self.self_attention, self.attend_res.input(x)
        context, weights = att(h, att.project_keys(h), att.project_values(h), mask, per_head=True)
        x = self.attend_res.output(x, context)
        return self.ff_res.output(x, self.feed_forward(self.ff_res.input(x))), weights


class DecoderLayer(nn.Module):
    """Causal self-attention, cross-attention over the encoder output, feed-forward."""

    def __init__(
        self,
        d_model: int,
        heads: int,
        ff_size: int,
        dropout: float,
        pre_norm: bool,
        attention_dropout: float = 0.0,
        choice: AttentionChoice = AttentionChoice(),
    ) -> None:
        super().__init__()
        self.self_attention = multi_head(d_model, heads, attention_dropout, choice)
        self.cross_attention = multi_head(d_model, heads, attention_dropout, choice)
        self.feed_forward = FeedForward(d_model, ff_size, dropout)
        self.self_res, self.cross_res, self.ff_res = (Residual(d_model, dropout, pre_norm) for _ in range(3))

    def project_memory(self, memory: Tensor) -> tuple[Tensor, Tensor]:
        """Encoder output (B, S, D) -> this layer's cross-attention keys and values, once per batch."""
        return self.cross_attention.project_keys(memory), self.cross_attention.project_values(memory)

    def _rest(self, x: Tensor, keys: Tensor, values: Tensor, src_mask: Tensor) -> tuple[Tensor, Tensor]:
        """Cross-attention and feed-forward after the self-attention: states (B, T, D), weights (B, h, T, S)."""
        context, weights = self.cross_attention(self.cross_res.input(x), keys, values, src_mask, per_head=True)
        x = self.cross_res.output(x, context)
        return self.ff_res.output(x, self.feed_forward(self.ff_res.input(x))), weights

    def forward(
        self, y: Tensor, keys: Tensor, values: Tensor, src_mask: Tensor, causal: Tensor
    ) -> tuple[Tensor, Tensor, Tensor]:
        """A whole target (B, T, D) -> states (B, T, D), self weights (B, h, T, T), cross weights (B, h, T, S).

        ``causal`` (B, T, T) lets position i see positions j <= i (padding comes after the
        real tokens, so it is never seen by a real one).
        """
        att, h = self.self_attention, self.self_res.input(y)
        context, self_weights = att(h, att.project_keys(h), att.project_values(h), causal, per_head=True)
        y, cross_weights = self._rest(self.self_res.output(y, context), keys, values, src_mask)
        return y, self_weights, cross_weights

    def step(
        self, y: Tensor, cache: SelfCache, keys: Tensor, values: Tensor, src_mask: Tensor
    ) -> tuple[Tensor, SelfCache, Tensor]:
        """One new position (B, 1, D) -> its state (B, 1, D), the cache grown by it, cross weights (B, h, 1, S)."""
        att, h = self.self_attention, self.self_res.input(y)
        cache = SelfCache(
            torch.cat([cache.keys, att.project_keys(h)], 1), torch.cat([cache.values, att.project_values(h)], 1)
        )  # (B, t, D)
        context, _ = att(h, cache.keys, cache.values, None)  # every cached position is in the past
        y, cross_weights = self._rest(self.self_res.output(y, context), keys, values, src_mask)
        return y, cache, cross_weights


def sinusoids(length: int, d_model: int, device: Optional[torch.device] = None) -> Tensor:
    """Fixed position encodings (length, D): PE[p, 2i] = sin(p / 10000^(2i/D)), PE[p, 2i+1] = cos(...)."""
    position = torch.arange(length, device=device, dtype=torch.float32).unsqueeze(1)  # (length, 1)
    rate = torch.pow(10000.0, -torch.arange(0, d_model, 2, device=device, dtype=torch.float32) / d_model)
    table = torch.zeros(length, d_model, device=device)
    table[:, 0::2] = torch.sin(position * rate)
    table[:, 1::2] = torch.cos(position * rate)[:, : d_model // 2]
    return table
