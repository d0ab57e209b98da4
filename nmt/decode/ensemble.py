"""Ensemble decoding: several models searched as one.

At every step each member scores the next token given the same prefix, and the ensemble's
score is the mean of the members' log-probabilities, log p(y_t) = 1/M sum_m log p_m(y_t)
+ const (a product of experts, renormalized by the search), which is what greedy and beam
search then rank.  The members share one source and one target vocabulary, so one batch of
source ids and one output token feed them all.  The attention the ensemble reports is the
mean of the members' weights.

:class:`Ensemble` offers what :mod:`nmt.decode.greedy` and :mod:`nmt.decode.beam` call on a model
(``encode``, ``init_state``, ``step``), with states that reorder like a single model's
(``index_select``), so the searches run unchanged.  An ensemble of one is its member.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple

import torch
from torch import Tensor, nn

from nmt.decode.common import StepModel
from nmt.model.build import TranslationModel
from nmt.model.state import DecoderState, EncoderOutput
from nmt.model.transformer import TransformerEncoding, TransformerState


class EnsembleEncoding(NamedTuple):
    """Every member's encoder output, with their rows in the same order."""

    members: tuple[EncoderOutput | TransformerEncoding, ...]

    def index_select(self, idx: Tensor) -> EnsembleEncoding:
        return EnsembleEncoding(tuple(enc.index_select(idx) for enc in self.members))


class EnsembleState(NamedTuple):
    """Every member's decoder state, with their rows in the same order."""

    members: tuple[DecoderState | TransformerState, ...]

    def index_select(self, idx: Tensor) -> EnsembleState:
        return EnsembleState(tuple(state.index_select(idx) for state in self.members))


class Ensemble(nn.Module):
    """Models with one source and one target vocabulary, decoded together."""

    def __init__(self, members: Sequence[TranslationModel]) -> None:
        super().__init__()
        if not members:
            raise ValueError("an ensemble needs at least one model")
        sizes = {m.target_vocab_size for m in members}
        if len(sizes) > 1:
            raise ValueError(f"members have different target vocabulary sizes: {sorted(sizes)}")
        self.members = nn.ModuleList(members)  # registers their parameters: .to() and .eval() reach them
        # The same models as the searches call them: a ModuleList yields plain Modules, untyped, and a
        # model's encoding and state are its own, passed back to it only.
        self._models: tuple[StepModel, ...] = tuple(members)
        self._vocab_size = members[0].target_vocab_size

    @property
    def target_vocab_size(self) -> int:
        return self._vocab_size

    def encode(self, src: Tensor, src_len: Tensor) -> EnsembleEncoding:
        return EnsembleEncoding(tuple(m.encode(src, src_len) for m in self._models))

    def init_state(self, enc: EnsembleEncoding) -> EnsembleState:
        return EnsembleState(tuple(m.init_state(e) for m, e in zip(self._models, enc.members)))

    def step(self, prev: Tensor, state: EnsembleState, enc: EnsembleEncoding) -> tuple[Tensor, EnsembleState, Tensor]:
        """Previous tokens (B,) -> mean log-probabilities (B, V), the new states, mean attention (B, S)."""
        log_probs: list[Tensor] = []
        states: list[DecoderState | TransformerState] = []
        weights: list[Tensor] = []
        for model, s, e in zip(self._models, state.members, enc.members):
            logits, new, attn = model.step(prev, s, e)
            log_probs.append(torch.log_softmax(logits.float(), dim=-1))
            states.append(new)
            weights.append(attn.float())
        return (torch.stack(log_probs).mean(0), EnsembleState(tuple(states)), torch.stack(weights).mean(0))
