"""What the model carries between calls: the encoded source and the decoder state.

Both are plain dataclasses of tensors, passed in and returned explicitly (nothing is
cached on a module between calls), so greedy and beam search can reorder, expand
and discard hypotheses with :meth:`index_select` alone.  Inside a loop over time the
decoder carries the same state as a :class:`StepState`, its layers kept apart.

Shapes: B batch, S source length, L decoder layers, H decoder hidden size,
K encoder output size (hidden size x directions), A attention key size, A_v value
size, t decoder steps so far.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple, Optional, Union

import torch
from torch import Tensor

# The encoder's final state: (L_enc, B, K) for a GRU, (h, c) of that shape for an LSTM.
FinalState = Union[Tensor, tuple[Tensor, Tensor]]


@dataclass
class EncoderOutput:
    """Everything computed once per batch from the source sentence."""

    memory: Tensor  # (B, S, K) encoder outputs (after any self-attention), zeros at padding
    keys: Tensor  # (B, S, A) cross-attention keys, projected once per batch
    values: Tensor  # (B, S, A_v) cross-attention values, projected once per batch
    mask: Tensor  # (B, S) bool, True at real tokens
    final: FinalState  # encoder final state per layer, directions concatenated

    def index_select(self, idx: Tensor) -> EncoderOutput:
        """Rows ``idx`` (1-D long tensor) along the batch: beam expansion and reordering."""
        if isinstance(self.final, tuple):
            final: FinalState = (self.final[0].index_select(1, idx), self.final[1].index_select(1, idx))
        else:
            final = self.final.index_select(1, idx)
        return EncoderOutput(
            memory=self.memory.index_select(0, idx),
            keys=self.keys.index_select(0, idx),
            values=self.values.index_select(0, idx),
            mask=self.mask.index_select(0, idx),
            final=final,
        )


def _rows(x: Optional[Tensor], idx: Tensor) -> Optional[Tensor]:
    return None if x is None else x.index_select(0, idx)


@dataclass
class SelfAttentionMemory:
    """What the decoder self-attention keeps of the query states so far.

    Cached (the default): their projected keys and values, one row appended per step.
    Uncached (``Decoder.cache_self_attention = False``, for tests): the raw states,
    re-projected as a whole at every step.
    """

    keys: Optional[Tensor] = None  # (B, t, A) cached keys
    values: Optional[Tensor] = None  # (B, t, A_v) cached values
    states: Optional[Tensor] = None  # (B, t, H) the block's inputs when not caching

    def index_select(self, idx: Tensor) -> SelfAttentionMemory:
        return SelfAttentionMemory(_rows(self.keys, idx), _rows(self.values, idx), _rows(self.states, idx))


@dataclass
class DecoderState:
    """The decoder's recurrent state after some prefix of the target."""

    hidden: Tensor  # (L, B, H) hidden state of every layer
    cell: Optional[Tensor] = None  # (L, B, H) LSTM memory cell; None for a GRU
    feed: Optional[Tensor] = None  # (B, H) previous attentional vector (Luong input feeding), else None
    past: Optional[SelfAttentionMemory] = None  # decoder self-attention memory, else None
    attention: Optional[Tensor] = None  # (B, ...) a stateful energy's state (coverage (B, S)), else None

    def index_select(self, idx: Tensor) -> DecoderState:
        """Rows ``idx`` (1-D long tensor) along the batch: beam expansion and reordering."""
        return DecoderState(
            hidden=self.hidden.index_select(1, idx),
            cell=None if self.cell is None else self.cell.index_select(1, idx),
            feed=_rows(self.feed, idx),
            past=None if self.past is None else self.past.index_select(idx),
            attention=_rows(self.attention, idx),
        )

    def unstacked(self) -> StepState:
        """The same state with one (B, H) tensor per layer, as the decoder's step reads it."""
        cell = None if self.cell is None else list(self.cell.unbind(0))
        return StepState(list(self.hidden.unbind(0)), cell, self.feed, self.past, self.attention)


class StepState(NamedTuple):
    """The decoder state between two steps of a loop over time (a :class:`DecoderState` unstacked).

    Each layer is its own tensor, so a step neither unbinds nor stacks (L, B, H) and autograd
    keeps no stacked copies over a whole target.  A NamedTuple, so ``torch.compile`` takes
    and returns it as it is.
    """

    hidden: list[Tensor]  # L x (B, H) hidden state of every layer
    cell: Optional[list[Tensor]]  # L x (B, H) LSTM memory cells; None for a GRU
    feed: Optional[Tensor]  # (B, H) attentional vector h~_t, the next step's input (Luong input feeding), else None
    past: Optional[SelfAttentionMemory]  # decoder self-attention memory, else None
    attention: Optional[Tensor] = None  # (B, ...) a stateful energy's state, else None

    def stacked(self) -> DecoderState:
        """The same state with layers stacked, as :meth:`Decoder.step` returns it."""
        cell = None if self.cell is None else torch.stack(self.cell)
        return DecoderState(torch.stack(self.hidden), cell, self.feed, self.past, self.attention)
