"""Subword attention merged into word alignments: the rule ``nmt align`` states, on NumPy arrays.

Words are the whitespace tokens of a sentence (``str.split``), as gold alignments count them.
Each word is split into SentencePiece pieces on its own (:func:`word_pieces`); SentencePiece never
lets a piece cross a space, so the pieces of a sentence are its words' pieces one after another.
A model's attention over pieces, (target pieces, source pieces), then becomes a hard word
alignment (:func:`merge_pieces`, :func:`hard_links`):

1. sum the rows of a target word's pieces (the weight each of its pieces gives every source piece);
2. sum the columns of a source word's pieces (a word read as several pieces gets all their weight);
3. link each target word to the source word of highest weight (the first on a tie).

So every target word is linked to exactly one source word, and a source word may have any
number of links, none included (as in attention-based alignment since Bahdanau et al. 2015,
figure 3; the sum is one of the rules Zenkel et al. 2019 and Garg et al. 2019 compare).  A word
the tokenizer reads as nothing (a zero-width character alone) has no pieces: no weight and no link.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from nmt.data.tokenizer import Tokenizer

MERGE_RULE = "sum over a target word's pieces, then over a source word's pieces; argmax per target word"
"""The rule in words, as ``nmt align`` writes it into its report."""


@dataclass(frozen=True)
class WordAlignment:
    """A sentence pair's hard word alignment and the word-level attention it was read from.

    ``links`` are (source word, target word) pairs, 0-based, sorted; ``weights`` is
    (len(target_words), len(source_words)): the attention summed over pieces, each row divided
    by its sum (a distribution over the source words; a word without pieces has a row of zeros).
    """

    source_words: list[str]
    target_words: list[str]
    links: list[tuple[int, int]]
    weights: np.ndarray

    @property
    def pharaoh(self) -> str:
        """The links as one line of the Pharaoh format: ``i-j`` pairs, 0-based, space-separated."""
        return " ".join(f"{i}-{j}" for i, j in self.links)


def word_pieces(tok: Tokenizer, sentences: Sequence[str]) -> list[tuple[list[int], list[int]]]:
    """For each sentence: the ids of its words' pieces, in order, and the word each piece belongs to.

    One SentencePiece call for all the words of all the sentences.
    """
    words = [sentence.split() for sentence in sentences]
    flat = tok.encode([word for sentence in words for word in sentence]) if any(words) else []
    out, k = [], 0
    for sentence in words:
        ids: list[int] = []
        owner: list[int] = []
        for index in range(len(sentence)):
            ids += flat[k]
            owner += [index] * len(flat[k])
            k += 1
        out.append((ids, owner))
    return out


def merge_pieces(
    attention: np.ndarray,
    source_owner: Sequence[int],
    target_owner: Sequence[int],
    source_words: int,
    target_words: int,
) -> np.ndarray:
    """Piece attention (T pieces, S pieces) -> word attention (target_words, source_words): rows summed
    over each target word's pieces, then columns over each source word's pieces; rows then normalized."""
    T, S = attention.shape
    assert (len(target_owner), len(source_owner)) == (T, S), (attention.shape, len(target_owner), len(source_owner))
    by_target = np.zeros((target_words, S))
    np.add.at(by_target, np.asarray(target_owner, dtype=np.int64), attention)  # (target_words, S)
    words = np.zeros((source_words, target_words))
    np.add.at(words, np.asarray(source_owner, dtype=np.int64), by_target.T)  # (source_words, target_words)
    words = words.T  # (target_words, source_words)
    total = words.sum(1, keepdims=True)
    return np.divide(words, total, out=np.zeros_like(words), where=total > 0)


def hard_links(weights: np.ndarray) -> list[tuple[int, int]]:
    """(source word, target word) for each target word (row of ``weights``) that has weight: its argmax, sorted."""
    links = [(int(np.argmax(row)), j) for j, row in enumerate(weights) if row.sum() > 0]
    return sorted(links)


def word_alignment(
    attention: np.ndarray,
    source: str,
    target: str,
    source_owner: Sequence[int],
    target_owner: Sequence[int],
) -> WordAlignment:
    """The :class:`WordAlignment` of one pair from its piece attention (T pieces, S pieces) and the
    word of each piece (:func:`word_pieces`)."""
    source_words, target_words = source.split(), target.split()
    weights = merge_pieces(attention, source_owner, target_owner, len(source_words), len(target_words))
    return WordAlignment(source_words, target_words, hard_links(weights), weights)


def empty_alignment(source: str, target: str) -> WordAlignment:
    """A pair with a blank side: no links, zero weights."""
    source_words, target_words = source.split(), target.split()
    return WordAlignment(source_words, target_words, [], np.zeros((len(target_words), len(source_words))))
