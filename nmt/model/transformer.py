"""The Transformer encoder-decoder (Vaswani et al. 2017): attention without recurrence.

It offers what training and the searches call on any model of ours (:class:`Seq2Seq` too):
``forward`` (a whole reference target, all positions at once under a causal mask),
``encode`` (once per batch: encoder stack, mask, and every decoder layer's cross-attention
keys and values), ``init_state`` and ``step`` (one token for the whole batch, with the
self-attention keys and values of earlier positions cached per layer), so greedy search,
beam search and ensembles run unchanged.  :meth:`Transformer.attention_maps` returns every
layer's and head's encoder self-, decoder self- and cross-attention for a given output.

Inputs: token embeddings scaled by sqrt(D), plus position encodings (sinusoids or a learned
table), then dropout.  Output: logits = W_out dropout(h_T) with W_out optionally tied to the
target embedding (Press & Wolf 2017); source and target may share one table.

Shapes: B batch, S source length, T target length, t positions so far, D model size,
h heads, V target vocabulary, L decoder layers.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Optional

import torch
from torch import Tensor, nn

from nmt.config.model_sections import TransformerConfig
from nmt.data.tokenizer import PAD
from nmt.model.decoder_loop import Loop
from nmt.model.dropout import Dropout
from nmt.model.self_attention import causal_mask
from nmt.model.transformer_layers import AttentionChoice, DecoderLayer, EncoderLayer, SelfCache, sinusoids
from nmt.model.word_dropout import word_dropout

__all__ = ["Transformer", "TransformerEncoding", "TransformerState"]


@dataclass
class TransformerEncoding:
    """What one batch's source gives every decoder step."""

    memory: Tensor  # (B, S, D) encoder output
    mask: Tensor  # (B, S) True at real tokens
    keys: list[Tensor]  # L x (B, S, D) cross-attention keys, one per decoder layer
    values: list[Tensor]  # L x (B, S, D) cross-attention values

    def index_select(self, idx: Tensor) -> TransformerEncoding:
        """Rows ``idx`` along the batch: beam expansion and reordering."""
        return TransformerEncoding(
            self.memory.index_select(0, idx),
            self.mask.index_select(0, idx),
            [k.index_select(0, idx) for k in self.keys],
            [v.index_select(0, idx) for v in self.values],
        )


@dataclass
class TransformerState:
    """The decoder after t tokens: the cached self-attention keys and values, or (uncached) the tokens."""

    position: int  # t, the position the next token takes (the same for every row)
    caches: Optional[list[SelfCache]]  # L x ((B, t, D), (B, t, D)), or None when not caching
    tokens: Tensor  # (B, t) the tokens so far (the uncached step re-reads them all)

    def index_select(self, idx: Tensor) -> TransformerState:
        caches = (
            None
            if self.caches is None
            else [SelfCache(c.keys.index_select(0, idx), c.values.index_select(0, idx)) for c in self.caches]
        )
        return TransformerState(self.position, caches, self.tokens.index_select(0, idx))


class Transformer(nn.Module):
    """Embeddings and positions, an encoder stack and a decoder stack, the output layer."""

    def __init__(
        self,
        cfg: TransformerConfig,
        src_vocab: int,
        tgt_vocab: int,
        *,
        dropout: float = 0.1,
        emb_dropout: float = 0.1,
        tie_embeddings: bool = False,
        src_word_dropout: float = 0.0,
        tgt_word_dropout: float = 0.0,
    ) -> None:
        super().__init__()
        D = cfg.d_model
        if cfg.share_embeddings and src_vocab != tgt_vocab:
            raise ValueError(
                f"share_embeddings needs one vocabulary (got {src_vocab} source and {tgt_vocab} target entries)"
            )
        self.d_model, self.pre_norm = D, cfg.pre_norm
        self.src_embedding = nn.Embedding(src_vocab, D, padding_idx=PAD)
        self.tgt_embedding = self.src_embedding if cfg.share_embeddings else nn.Embedding(tgt_vocab, D, padding_idx=PAD)
        self.learned_positions = nn.Embedding(cfg.max_len, D) if cfg.positions == "learned" else None
        self.emb_dropout = Dropout(emb_dropout)
        choice = AttentionChoice(cfg.energy, cfg.normalize, tuple(sorted(cfg.params.items())))
        layer = (D, cfg.heads, cfg.ff_size, dropout, cfg.pre_norm, cfg.attention_dropout, choice)
        self.encoder = nn.ModuleList(EncoderLayer(*layer) for _ in range(cfg.enc_layers))
        # The decoder layers also kept typed: iterating an nn.ModuleList yields plain Modules, whose
        # methods a type checker cannot see; the ModuleList is what registers their parameters.
        self._decoder_layers = tuple(DecoderLayer(*layer) for _ in range(cfg.dec_layers))
        self.decoder = nn.ModuleList(self._decoder_layers)
        # Pre-norm leaves the residual stream un-normalized: one last LN on top of each stack.
        self.enc_norm = nn.LayerNorm(D) if cfg.pre_norm else nn.Identity()
        self.dec_norm = nn.LayerNorm(D) if cfg.pre_norm else nn.Identity()
        self.dropout = Dropout(dropout)
        self.output = nn.Linear(D, tgt_vocab)
        if tie_embeddings:
            self.output.weight = self.tgt_embedding.weight
        self.src_word_dropout, self.tgt_word_dropout = src_word_dropout, tgt_word_dropout
        self.cache = True  # False: every step re-reads the whole prefix (slow; for tests)

    @property
    def target_vocab_size(self) -> int:
        """V, the size of the output layer."""
        return self.output.out_features

    # ------------------------------------------------------------ inputs

    def _embed(self, ids: Tensor, table: nn.Embedding, start: int = 0) -> Tensor:
        """Ids (B, N) at positions start.. -> dropout(sqrt(D) E[ids] + P[positions]) (B, N, D)."""
        n = ids.size(1)
        if self.learned_positions is None:
            pos = sinusoids(start + n, self.d_model, ids.device)[start:]
        else:  # positions past the table reuse its last row
            index = torch.arange(start, start + n, device=ids.device).clamp(
                max=self.learned_positions.num_embeddings - 1
            )
            pos = self.learned_positions(index)
        return self.emb_dropout(table(ids) * math.sqrt(self.d_model) + pos.to(table.weight.dtype))

    # ------------------------------------------------------------ encoder

    def _encode(self, src: Tensor, src_len: Tensor) -> tuple[Tensor, Tensor, list[Tensor]]:
        """Memory (B, S, D), mask (B, S), and each encoder layer's self-attention weights (B, h, S, S)."""
        lengths = src_len.to(src.device).clamp(min=1)  # an empty source reads one padding token
        mask = torch.arange(src.size(1), device=src.device) < lengths.unsqueeze(1)  # (B, S)
        x, maps = self._embed(src, self.src_embedding), []
        for layer in self.encoder:
            x, weights = layer(x, mask)
            maps.append(weights)
        return self.enc_norm(x), mask, maps

    def encode(self, src: Tensor, src_len: Tensor) -> TransformerEncoding:
        """Source ids (B, S) with lengths (B,) -> the encoding every decoder step reads."""
        memory, mask, _ = self._encode(src, src_len)
        keys, values = zip(*(layer.project_memory(memory) for layer in self._decoder_layers))
        return TransformerEncoding(memory, mask, list(keys), list(values))

    # ------------------------------------------------------------ decoder

    def _decode(
        self, tgt_in: Tensor, enc: TransformerEncoding, start: int = 0
    ) -> tuple[Tensor, list[Tensor], list[Tensor]]:
        """Target inputs (B, T) -> top states (B, T, D) and per layer self (B, h, T, T) and cross (B, h, T, S) weights."""
        y = self._embed(tgt_in, self.tgt_embedding, start)
        causal = causal_mask(tgt_in.size(1), tgt_in.size(0), tgt_in.device)  # (B, T, T)
        self_maps, cross_maps = [], []
        for layer, keys, values in zip(self.decoder, enc.keys, enc.values):
            y, self_weights, cross_weights = layer(y, keys, values, enc.mask, causal)
            self_maps.append(self_weights)
            cross_maps.append(cross_weights)
        return self.dec_norm(y), self_maps, cross_maps

    def _logits(self, states: Tensor) -> Tensor:
        return self.output(self.dropout(states))

    def forward(
        self,
        src: Tensor,
        src_len: Tensor,
        tgt_in: Tensor,
        teacher_forcing: float = 1.0,
        fast: Optional[bool] = None,
        loop: Optional[Loop] = None,
    ) -> tuple[Tensor, Tensor]:
        """Logits (B, T, V) and the last layer's cross-attention, mean over heads (B, T, S), for ``tgt_in`` (B, T).

        Every position reads the reference (``teacher_forcing`` must be 1 and ``loop`` None: the
        config refuses either); ``fast`` is accepted for the RNN's signature, every Transformer
        path is parallel.
        """
        if teacher_forcing < 1.0:
            raise ValueError(f"the Transformer trains with teacher forcing 1 (got {teacher_forcing})")
        if loop is not None:
            raise ValueError("the Transformer decodes a whole reference in parallel: it runs no decoder loop")
        if self.training:
            src = word_dropout(src, self.src_word_dropout)
            tgt_in = word_dropout(tgt_in, self.tgt_word_dropout, skip_first=True)  # BOS stays
        states, _, cross = self._decode(tgt_in, self.encode(src, src_len))
        return self._logits(states), cross[-1].mean(1)

    def init_state(self, enc: TransformerEncoding) -> TransformerState:
        """Nothing decoded yet."""
        B, D = enc.memory.size(0), self.d_model
        none = enc.memory.new_zeros(B, 0, D)
        caches = [SelfCache(none, none) for _ in self.decoder] if self.cache else None
        return TransformerState(0, caches, enc.mask.new_zeros(B, 0, dtype=torch.long))

    def step(
        self, prev: Tensor, state: TransformerState, enc: TransformerEncoding
    ) -> tuple[Tensor, TransformerState, Tensor]:
        """Previous tokens (B,) -> logits (B, V), the new state, last-layer cross-attention (B, S), mean over heads."""
        tokens = torch.cat([state.tokens, prev.unsqueeze(1)], 1)  # (B, t+1)
        if state.caches is None:  # uncached: the whole prefix again, keep its last position
            states, _, cross = self._decode(tokens, enc)
            top, weights = states[:, -1], cross[-1][:, :, -1]
            return self._logits(top), TransformerState(state.position + 1, None, tokens), weights.mean(1)
        y = self._embed(prev.unsqueeze(1), self.tgt_embedding, state.position)  # (B, 1, D)
        caches = []
        for layer, cache, keys, values in zip(self._decoder_layers, state.caches, enc.keys, enc.values):
            y, cache, weights = layer.step(y, cache, keys, values, enc.mask)
            caches.append(cache)
        top = self.dec_norm(y).squeeze(1)  # (B, D)
        return self._logits(top), TransformerState(state.position + 1, caches, tokens), weights[:, :, 0].mean(1)

    @torch.no_grad()
    def attention_maps(self, src: Tensor, src_len: Tensor, tgt_in: Tensor) -> dict[str, Tensor]:
        """Every attention weight for a given output, keyed by kind, each (B, L, h, rows, columns).

        ``encoder_self`` (rows and columns: source), ``decoder_self`` (target x target, causal)
        and ``cross`` (target x source); ``tgt_in`` (B, T) = [BOS, y_1, ...].
        """
        memory, mask, enc_maps = self._encode(src, src_len)
        keys, values = zip(*(layer.project_memory(memory) for layer in self._decoder_layers))
        _, self_maps, cross_maps = self._decode(tgt_in, TransformerEncoding(memory, mask, list(keys), list(values)))
        return {
            "encoder_self": torch.stack(enc_maps, 1),
            "decoder_self": torch.stack(self_maps, 1),
            "cross": torch.stack(cross_maps, 1),
        }
