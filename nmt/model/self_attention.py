"""Self-attention: a sequence attends over itself (the *direction* axis of the design space).

A :class:`SelfAttentionBlock` wraps any :class:`~nmt.model.attention.Attention` whose
queries and keys are the same states, with a residual connection in one of two placements
of the layer norm, and an optional learned residual gate alpha (else alpha = 1):

    post:  x <- LayerNorm(x + alpha * dropout(attend(x)))      (Vaswani et al. 2017)
    pre:   x <- x + alpha * dropout(attend(LayerNorm(x)))      (Xiong et al. 2020)

With ``gate`` alpha is a learned scalar that starts at 0 (ReZero, Bachlechner et al. 2020): a
pre-norm gated block is the identity at initialization, so adding it starts from the model
without it (docs/attention_diagnosis.md measures why this matters).

- :class:`SelfAttentionEncoder`: N blocks after the RNN encoder, padding masked as keys
  and the outputs at padded positions set back to zero.
- In the decoder, one block refines the query state over the query states so far; it is
  causal by construction.  ``forward`` runs a whole target with a causal mask (T, T);
  ``step`` runs one position against a :class:`SelfAttentionMemory`, either appending the
  new projected key and value (cached) or re-projecting the whole prefix (uncached).

Shapes: B batch, N sequence length, D state size, t positions so far.
"""

from __future__ import annotations

from typing import Optional

import torch
from torch import Tensor, nn

from nmt.model.attention import Attention
from nmt.model.state import SelfAttentionMemory


def causal_mask(n: int, batch: int, device: torch.device) -> Tensor:
    """(B, N, N) bool, True where query position i may see key position j <= i."""
    return torch.ones(n, n, dtype=torch.bool, device=device).tril().expand(batch, n, n)


NORMS = ("post", "pre")


class SelfAttentionBlock(nn.Module):
    """A residual self-attention block for states of size D; ``norm`` and ``gate`` as in the module docstring."""

    def __init__(self, attention: Attention, dropout: float = 0.0, norm: str = "pre", gate: bool = True) -> None:
        super().__init__()
        if norm not in NORMS:
            raise ValueError(f"unknown norm {norm!r}; valid options: {', '.join(NORMS)}")
        D = attention.query_size
        if attention.key_size != D or attention.context_size != D:
            raise ValueError(
                f"self-attention needs query, key and context sizes equal for the residual connection "
                f"(got {D}, {attention.key_size} and {attention.context_size}); use out_proj or leave dim unset"
            )
        self.attention = attention
        self.dropout = nn.Dropout(dropout)
        self.norm = nn.LayerNorm(D)
        self.pre_norm = norm == "pre"
        self.gate = nn.Parameter(torch.zeros(())) if gate else None  # alpha, ReZero

    def _inputs(self, x: Tensor) -> Tensor:
        """What the attention reads, (..., D): LayerNorm(x) in a pre-norm block, x itself otherwise."""
        return self.norm(x) if self.pre_norm else x

    def _residual(self, x: Tensor, context: Tensor) -> Tensor:
        """x + alpha * dropout(context), both (..., D), normalized after a post-norm block."""
        update = self.dropout(context)
        if self.gate is not None:
            update = self.gate * update
        return x + update if self.pre_norm else self.norm(x + update)

    def forward(self, x: Tensor, mask: Optional[Tensor]) -> Tensor:
        """States (B, N, D) -> (B, N, D); ``mask`` (B, N) for padding or (B, N, N) per query."""
        att, y = self.attention, self._inputs(x)
        context, _ = att(y, att.project_keys(y), att.project_values(y), mask)
        return self._residual(x, context)

    def empty_memory(self, like: Tensor, cache: bool) -> SelfAttentionMemory:
        """Memory with no position yet for states shaped like ``like`` (B, D)."""
        none = like.new_zeros(like.size(0), 0, like.size(-1))  # (B, 0, D)
        if not cache:
            return SelfAttentionMemory(states=none)
        return SelfAttentionMemory(keys=self.attention.project_keys(none), values=self.attention.project_values(none))

    def step(self, x: Tensor, memory: SelfAttentionMemory) -> tuple[Tensor, SelfAttentionMemory]:
        """One new state (B, D): append it to ``memory`` and attend over all of it (itself included)."""
        att, y = self.attention, self._inputs(x)  # (B, D)
        new = y.unsqueeze(1)  # (B, 1, D)
        if memory.states is not None:  # uncached: keep the inputs, project the whole prefix again
            states = torch.cat([memory.states, new], 1)  # (B, t, D)
            memory = SelfAttentionMemory(states=states)
            keys, values = att.project_keys(states), att.project_values(states)
        elif memory.keys is not None and memory.values is not None:  # cached: project only the new state
            keys = torch.cat([memory.keys, att.project_keys(new)], 1)  # (B, t, A)
            values = torch.cat([memory.values, att.project_values(new)], 1)  # (B, t, A_v)
            memory = SelfAttentionMemory(keys=keys, values=values)
        else:
            raise ValueError("a self-attention memory holds either its states or its keys and values")
        context, _ = att(y, keys, values, None)  # (B, D)
        return self._residual(x, context), memory


class SelfAttentionEncoder(nn.Module):
    """N self-attention blocks over the encoder outputs, padding masked."""

    def __init__(self, blocks: list[SelfAttentionBlock]) -> None:
        super().__init__()
        self.blocks = nn.ModuleList(blocks)

    def forward(self, memory: Tensor, mask: Tensor) -> Tensor:
        """Encoder outputs (B, S, K) and mask (B, S) -> (B, S, K), zeros at padding."""
        pad = ~mask.unsqueeze(-1)  # (B, S, 1)
        for block in self.blocks:
            memory = block(memory, mask).masked_fill(pad, 0.0)
        return memory
