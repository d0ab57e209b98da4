"""Padded batches and the sampler that groups sentences of similar length into them.

Conventions (``n`` = subword tokens of a sentence, after optional truncation to ``max_len``):

- source row: ``x1 .. xn`` then PAD, so ``src_len = n``, which is 0 for an empty line
  (evaluation splits keep them); ``S >= 1`` always, so such a row is one PAD cell and the
  encoder, which clamps lengths to 1, still gets a position to attend to. Inference pads
  sources the same way, without BOS or EOS.
- target rows: ``tgt_in = BOS y1 .. yn`` and ``tgt_out = y1 .. yn EOS``, then PAD, so
  ``tgt_len = n + 1``: the decoder reads ``tgt_in`` and is scored on ``tgt_out``.
- token budget: a batch of ``B`` sentences costs ``B * max_i(max(src_n_i, tgt_n_i + 1))``
  cells, i.e. rows times the width of the wider of its two padded tensors. This bounds both
  the encoder's (B, S) and the decoder's (B, T) work, and a batch never costs more than
  ``max_tokens`` unless one sentence alone does, in which case it forms a batch by itself.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import torch

from nmt.data.dataset import EncodedSplit
from nmt.data.tokenizer import BOS, EOS, PAD
from nmt.util.errors import ConfigError


@dataclass
class Batch:
    """One padded batch; all tensors are ``torch.long``."""

    src: torch.Tensor  # (B, S) source ids, PAD-padded, S >= 1
    src_len: torch.Tensor  # (B,) real source positions, 0 for an empty line
    tgt_in: torch.Tensor  # (B, T) decoder input: BOS y1..yn, PAD-padded
    tgt_out: torch.Tensor  # (B, T) decoder target: y1..yn EOS, PAD-padded
    tgt_len: torch.Tensor  # (B,) n + 1
    index: torch.Tensor  # (B,) position of each sentence in its split, to restore corpus order

    def __len__(self) -> int:
        return self.src.size(0)

    def to(self, device: torch.device | str, non_blocking: bool = False) -> Batch:
        """A copy with every tensor on ``device``."""
        moved = {f.name: getattr(self, f.name).to(device, non_blocking=non_blocking) for f in dataclasses.fields(self)}
        return Batch(**moved)

    @property
    def src_mask(self) -> torch.Tensor:
        """(B, S) bool, True at real source positions (the attention mask)."""
        return torch.arange(self.src.size(1), device=self.src.device)[None, :] < self.src_len[:, None]

    @property
    def n_src_tokens(self) -> int:
        return int(self.src_len.sum())

    @property
    def n_tgt_tokens(self) -> int:
        """Scored target positions (EOS included): the loss normalizer."""
        return int(self.tgt_len.sum())

    @property
    def padding_ratio(self) -> float:
        """Padding cells over all cells of ``src`` and ``tgt_out`` together."""
        cells = self.src.numel() + self.tgt_out.numel()
        return 1.0 - (self.n_src_tokens + self.n_tgt_tokens) / cells


def pad_sources(srcs: Sequence[Sequence[int] | np.ndarray]) -> tuple[torch.Tensor, torch.Tensor]:
    """Source rows as ``(src (B, S) PAD-padded with S >= 1, src_len (B,))``, in the given order."""
    src = np.full((len(srcs), max(1, max(len(x) for x in srcs))), PAD, dtype=np.int64)
    for b, x in enumerate(srcs):
        src[b, : len(x)] = x
    return torch.from_numpy(src), torch.tensor([len(x) for x in srcs], dtype=torch.long)


def collate(split: EncodedSplit, indices: Sequence[int], max_len: int | None = None) -> Batch:
    """Pad the sentences ``indices`` of ``split`` into a :class:`Batch`, in the given order.

    ``max_len`` truncates each side to that many subword tokens (before BOS/EOS are added to
    the target).
    """
    if len(indices) == 0:
        raise ValueError("cannot collate an empty batch")
    srcs = [split.src(i)[:max_len] for i in indices]
    tgts = [split.tgt(i)[:max_len] for i in indices]
    B, T = len(indices), max(len(y) for y in tgts) + 1
    tgt_in = np.full((B, T), PAD, dtype=np.int64)
    tgt_out = np.full((B, T), PAD, dtype=np.int64)
    for b, y in enumerate(tgts):
        tgt_in[b, 0], tgt_in[b, 1 : len(y) + 1] = BOS, y
        tgt_out[b, : len(y)], tgt_out[b, len(y)] = y, EOS
    src, src_len = pad_sources(srcs)
    return Batch(
        src=src,
        src_len=src_len,
        tgt_in=torch.from_numpy(tgt_in),
        tgt_out=torch.from_numpy(tgt_out),
        tgt_len=torch.tensor([len(y) + 1 for y in tgts], dtype=torch.long),
        index=torch.tensor(list(indices), dtype=torch.long),
    )


class BatchSampler:
    """Length-bucketed batches of sentence indices, reproducible per (seed, epoch).

    Sentences are sorted by target then source length, with seeded random tie-breaking so
    equal-length sentences meet different partners each epoch; the sorted list is cut into
    batches (by token budget or by count), and with ``shuffle`` the batch order is permuted.
    ``batches(epoch)`` depends only on the lengths, the settings, ``seed`` and ``epoch``, so
    training can resume in the middle of an epoch by skipping the batches already done.
    Without ``shuffle`` the order is the deterministic length order (for evaluation; restore
    corpus order with :attr:`Batch.index`).

    ``curriculum_epochs`` = N > 0 is a length curriculum (in the spirit of Platanios et al.
    2019): epoch e < N uses only the shortest (e + 1) / (N + 1) of the sentences, so the
    model learns to align on short sentences before it meets long ones.
    """

    def __init__(
        self,
        src_lengths: np.ndarray,
        tgt_lengths: np.ndarray,
        *,
        max_tokens: int | None,
        batch_size: int | None,
        shuffle: bool,
        seed: int,
        max_len: int | None = None,
        curriculum_epochs: int = 0,
    ) -> None:
        given = [n for n in (max_tokens, batch_size) if n is not None]
        if len(given) != 1:
            raise ConfigError("set exactly one of max_tokens and batch_size")
        if given[0] < 1:
            raise ConfigError(f"max_tokens/batch_size must be at least 1, got {given[0]}")
        if len(src_lengths) != len(tgt_lengths):
            raise ValueError(f"{len(src_lengths)} source but {len(tgt_lengths)} target lengths")
        # Clip as collate(max_len=...) truncates, so budgets count what the batch really holds.
        self.src_lengths = np.minimum(np.asarray(src_lengths, dtype=np.int64), max_len or np.iinfo(np.int64).max)
        self.tgt_lengths = np.minimum(np.asarray(tgt_lengths, dtype=np.int64), max_len or np.iinfo(np.int64).max)
        self.max_tokens, self.batch_size = max_tokens, batch_size
        self._limit = given[0]  # tokens per batch, or sentences per batch: whichever was set
        self.shuffle, self.seed = shuffle, seed
        self.curriculum_epochs = curriculum_epochs
        self._memo: tuple[int, list[list[int]]] | None = None  # the last epoch's batches

    def _cut_by_tokens(self, order: np.ndarray) -> list[list[int]]:
        widths = np.maximum(self.src_lengths, self.tgt_lengths + 1)[order].tolist()
        batches: list[list[int]] = []
        current: list[int] = []
        width = 0
        for i, w in zip(order.tolist(), widths):
            new_width = max(width, w)
            if current and (len(current) + 1) * new_width > self._limit:
                batches.append(current)
                current, new_width = [], w
            current.append(i)
            width = new_width
        if current:
            batches.append(current)
        return batches

    def batches(self, epoch: int) -> list[list[int]]:
        """The batches of ``epoch``: each sentence index exactly once. Do not modify the lists."""
        if self._memo is not None and self._memo[0] == epoch:
            return self._memo[1]
        rng = np.random.default_rng((self.seed, epoch))
        if self.shuffle:  # np.lexsort sorts by the last key first
            order = np.lexsort((rng.random(len(self.src_lengths)), self.src_lengths, self.tgt_lengths))
        else:
            order = np.lexsort((self.src_lengths, self.tgt_lengths))  # stable: ties keep corpus order
        if epoch < self.curriculum_epochs:  # the order runs from short to long
            order = order[: max(1, len(order) * (epoch + 1) // (self.curriculum_epochs + 1))]
        if self.max_tokens is not None:
            batches = self._cut_by_tokens(order)
        else:
            batches = [order[i : i + self._limit].tolist() for i in range(0, len(order), self._limit)]
        if self.shuffle:
            batches = [batches[j] for j in rng.permutation(len(batches))]
        self._memo = (epoch, batches)
        return batches

    def n_batches(self, epoch: int) -> int:
        """Number of batches in ``epoch`` (with a token budget it can vary by one or two)."""
        return len(self.batches(epoch))

    def __len__(self) -> int:
        return self.n_batches(0)


def padding_ratio(batches: Sequence[Sequence[int]], src_lengths: np.ndarray, tgt_lengths: np.ndarray) -> float:
    """Padding cells over all cells of the source and target tensors, over all ``batches``.

    Uses the same layout as :func:`collate` (``S = max(1, longest source)``, ``T = longest
    target + 1``), so it equals the cell-weighted mean of :attr:`Batch.padding_ratio` without
    building tensors.
    """
    src_lengths, tgt_lengths = np.asarray(src_lengths), np.asarray(tgt_lengths)
    cells = real = 0
    for batch in batches:
        s, t = src_lengths[list(batch)], tgt_lengths[list(batch)] + 1
        cells += len(batch) * (max(1, int(s.max())) + int(t.max()))
        real += int(s.sum()) + int(t.sum())
    return 1.0 - real / cells if cells else 0.0
