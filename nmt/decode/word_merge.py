"""Subword attention merged into word alignments: the rule ``nmt align`` states, on NumPy arrays.

Words are the whitespace tokens of a sentence (``str.split``), as gold alignments count them.
Each word is split into SentencePiece pieces on its own (:func:`word_pieces`); SentencePiece never
lets a piece cross a space, so the pieces of a sentence are its words' pieces one after another.
A model's attention over pieces, (target pieces, source pieces), then becomes a hard word
alignment (:func:`merge_pieces`, :func:`hard_links`):

1. sum the rows of a target word's pieces (the weight each of its pieces gives every source piece);
2. merge the columns of a source word's pieces by the ``merge`` rule (:data:`MERGES`): ``sum`` (a word
   read as several pieces gets all their weight: diffuse attention then favours the word with the most
   pieces), ``mean`` or ``max`` (a word weighs what its pieces do on average, or its strongest piece,
   however many pieces it has);
3. link each target word to the source word of highest weight (the first on a tie).

So every target word is linked to exactly one source word, and a source word may have any
number of links, none included (as in attention-based alignment since Bahdanau et al. 2015,
figure 3; the sum is one of the rules Zenkel et al. 2019 and Garg et al. 2019 compare).  A word
the tokenizer reads as nothing (a zero-width character alone) has no pieces: no weight and no link.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import numpy as np

from nmt.data.tokenizer import Tokenizer

MERGES = ("sum", "mean", "max")
"""How a source word's pieces merge into the word's weight (``nmt align --merge``)."""


def merge_rule(merge: str = "sum") -> str:
    """The rule in words, as ``nmt align`` writes it into its report."""
    return f"sum over a target word's pieces, then the {merge} over a source word's pieces; argmax per target word"


MERGE_RULE = merge_rule("sum")
"""The default rule in words."""


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
    merge: str = "sum",
) -> np.ndarray:
    """Piece attention (T pieces, S pieces) -> word attention (target_words, source_words): rows summed
    over each target word's pieces, then columns merged over each source word's pieces (``merge``: sum,
    mean or max); rows then normalized."""
    T, S = attention.shape
    assert (len(target_owner), len(source_owner)) == (T, S), (attention.shape, len(target_owner), len(source_owner))
    if merge not in MERGES:
        raise ValueError(f"unknown merge {merge!r}; valid options: {', '.join(MERGES)}")
    by_target = np.zeros((target_words, S))
    np.add.at(by_target, np.asarray(target_owner, dtype=np.int64), attention)  # (target_words, S)
    owner = np.asarray(source_owner, dtype=np.int64)
    words = np.zeros((source_words, target_words))  # (source_words, target_words)
    if merge == "max":
        np.maximum.at(words, owner, by_target.T)  # weights are >= 0, so the zeros start no higher than a piece
    else:
        np.add.at(words, owner, by_target.T)
        if merge == "mean":
            pieces = np.bincount(owner, minlength=source_words).astype(float)  # 0 for a word without pieces
            words = np.divide(words, pieces[:, None], out=np.zeros_like(words), where=pieces[:, None] > 0)
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
    merge: str = "sum",
) -> WordAlignment:
    """The :class:`WordAlignment` of one pair from its piece attention (T pieces, S pieces) and the
    word of each piece (:func:`word_pieces`), source pieces merged by ``merge``."""
    source_words, target_words = source.split(), target.split()
    weights = merge_pieces(attention, source_owner, target_owner, len(source_words), len(target_words), merge)
    return WordAlignment(source_words, target_words, hard_links(weights), weights)


def links_alignment(source: str, target: str, links: Iterable[tuple[int, int]]) -> WordAlignment:
    """A pair's alignment from links alone (a statistical aligner's): ``weights`` marks each link, each
    target word's row divided by its links (a row of zeros for a target word without one)."""
    source_words, target_words = source.split(), target.split()
    weights = np.zeros((len(target_words), len(source_words)))
    for i, j in links:
        weights[j, i] = 1.0
    total = weights.sum(1, keepdims=True)
    weights = np.divide(weights, total, out=np.zeros_like(weights), where=total > 0)
    return WordAlignment(source_words, target_words, sorted(links), weights)


def empty_alignment(source: str, target: str) -> WordAlignment:
    """A pair with a blank side: no links, zero weights."""
    source_words, target_words = source.split(), target.split()
    return WordAlignment(source_words, target_words, [], np.zeros((len(target_words), len(source_words))))
