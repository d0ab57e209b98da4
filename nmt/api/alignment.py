"""``nmt.read_gold_alignments`` and ``nmt.alignment_error``: word alignments scored against gold links.

:meth:`~nmt.api.translator.Translator.align` aligns; these score, with no model: alignment error
rate, precision and recall against sure and possible links (Och and Ney 2003), the numbers ``nmt
align --gold`` prints.  The counting lives in :mod:`nmt.score.alignment`; here are the arguments.
"""

from __future__ import annotations

import numbers
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Optional, Union

import numpy as np

from nmt.api import arguments as check
from nmt.decode.word_merge import WordAlignment
from nmt.score.alignment import (
    GOLD_FORMATS,
    AlignmentScore,
    GoldAlignment,
    Link,
    check_encoding,
    check_sizes,
    parse_gold,
    parse_predicted,
    read_lines,
    score_alignments,
)
from nmt.util.errors import UserError, short_repr

Predicted = Union[WordAlignment, str, Iterable[tuple[int, int]]]
"""One pair's predicted links: a :class:`WordAlignment`, a Pharaoh line (``"0-0 1-2"``) or (i, j) pairs."""


def read_gold_alignments(
    path: Union[str, Path],
    gold_format: str,
    *,
    encoding: str = "utf-8",
    reverse: bool = False,
    sizes: Optional[Sequence[tuple[int, int]]] = None,
) -> list[GoldAlignment]:
    """Read a gold alignment file: one :class:`~nmt.score.alignment.GoldAlignment` (sure and
    possible links, 0-based) per line.

    Args:
        path: the file, one line of links per sentence pair.
        gold_format: ``"rwth"`` (``i-j`` sure, ``ipj`` possible, words counted from 1, as the RWTH
            German-English set) or ``"pharaoh"`` (the same, counted from 0).  Named, never guessed.
        encoding: the file's text encoding.
        reverse: the file's i is the target word and j the source word (e.g. the RWTH de-en file
            read for an English-to-German model).
        sizes: (source words, target words) per pair: the file must have one line per pair and
            no link outside its pair.

    Raises:
        nmt.util.errors.UserError: a missing file, an ``encoding`` that is no text encoding (rot13)
            or a byte not in it, a malformed link (indices in the digits 0-9 only), index 0 in an rwth
            file, ``sizes`` that are not pairs of whole numbers, a line count or a link that does not
            fit ``sizes``; one line.
    """
    where = check.path("path", path)
    check.choice("gold_format", gold_format, GOLD_FORMATS)
    check_encoding(check.text("encoding", encoding), "encoding")
    check.flag("reverse", reverse)
    pairs = _sizes(sizes)
    lines = read_lines(where, str(where), encoding)
    return parse_gold(lines, gold_format, name=str(where), reverse=reverse, sizes=pairs)


def _is_index(value: object) -> bool:
    """A word index from 0: a Python or NumPy integer (a bool is no index)."""
    return isinstance(value, numbers.Integral) and not isinstance(value, bool) and int(value) >= 0


def _is_link(value: object) -> bool:
    """A (source word, target word) pair of indices from 0: a tuple, a list or a NumPy row of two."""
    if not isinstance(value, (tuple, list, np.ndarray)) or len(value) != 2 or np.ndim(value) != 1:
        return False
    return all(_is_index(v) for v in value)


def _sizes(sizes: object) -> Optional[list[tuple[int, int]]]:
    """``sizes`` as (source words, target words) pairs of whole numbers, or one line naming ``sizes``."""
    if sizes is None:
        return None
    if isinstance(sizes, (str, bytes)) or not isinstance(sizes, (Sequence, np.ndarray)):
        raise UserError(f"sizes={short_repr(sizes)}: give a list of (source words, target words), one per pair")
    pairs = []
    for k, item in enumerate(sizes):
        if not _is_link(item):
            raise UserError(f"sizes[{k}]={short_repr(item)}: give (source words, target words), two whole numbers")
        pairs.append((int(item[0]), int(item[1])))
    return pairs


def _links(index: int, item: Predicted) -> frozenset[Link]:
    if isinstance(item, WordAlignment):
        return frozenset(item.links)
    if isinstance(item, str):
        return parse_predicted(item, f"predicted[{index}]")
    if isinstance(item, bytes) or not isinstance(item, Iterable):
        raise UserError(f"predicted[{index}]={short_repr(item)}: give a WordAlignment, a Pharaoh line or (i, j) pairs")
    links = list(item)
    bad = next((x for x in links if not _is_link(x)), None)
    if bad is not None:
        raise UserError(f"predicted[{index}] holds {short_repr(bad)}: give (i, j) pairs of 0-based word indices")
    return frozenset((int(i), int(j)) for i, j in links)  # NumPy integers become Python ints


def alignment_error(
    predicted: Sequence[Predicted],
    gold: Union[str, Path, Sequence[GoldAlignment]],
    *,
    gold_format: Optional[str] = None,
    encoding: str = "utf-8",
    reverse: bool = False,
) -> AlignmentScore:
    """Alignment error rate, precision and recall of ``predicted`` against ``gold`` (Och and Ney 2003),
    each count summed over the corpus: AER = 1 - (|A n S| + |A n P|) / (|A| + |S|), precision
    |A n P| / |A|, recall |A n S| / |S|, with A the predicted links, S the sure and P the possible
    gold links (sure ones included).

    Args:
        predicted: one item per sentence pair: a :class:`~nmt.decode.word_merge.WordAlignment`
            (what :meth:`Translator.align` returns), a Pharaoh line (``"0-0 1-2"``, 0-based) or
            (source word, target word) pairs of Python or NumPy integers (an (n, 2) array too).
        gold: a gold file (then ``gold_format`` names its form) or what
            :func:`read_gold_alignments` returned.
        gold_format: ``"rwth"`` (1-based) or ``"pharaoh"`` (0-based), for a gold file (and,
            like ``encoding`` and ``reverse``, refused with gold alignments already read).
        encoding: the gold file's text encoding.
        reverse: the gold file's i is the target word (see :func:`read_gold_alignments`).

    Where ``predicted`` are WordAlignments, their word counts check the gold: one line per pair,
    every link inside its pair.

    Raises:
        nmt.util.errors.UserError: a count of gold lines that differs from the pairs, a gold link
            out of range, a malformed link, a file that is missing or not in ``encoding``, or a setting
            of a gold file given with gold alignments already read; one line.
    """
    if isinstance(predicted, (str, bytes)) or not isinstance(predicted, Sequence):
        raise UserError(f"predicted={short_repr(predicted)}: give a list with one alignment per sentence pair")
    aligned = [p for p in predicted if isinstance(p, WordAlignment)]
    sizes = [(len(p.source_words), len(p.target_words)) for p in aligned] if len(aligned) == len(predicted) else None
    if isinstance(gold, (str, Path)):
        if gold_format is None:
            raise UserError(f"gold_format: name the form of {short_repr(str(gold))}: one of {', '.join(GOLD_FORMATS)}")
        truth = read_gold_alignments(gold, gold_format, encoding=encoding, reverse=reverse, sizes=sizes)
    else:
        given = [
            name for name, used in (("gold_format", gold_format is not None), ("reverse", reverse is not False)) if used
        ]
        if encoding != "utf-8":
            given.append("encoding")
        if given:
            raise UserError(
                f"{', '.join(given)}: for a gold file; the gold alignments read_gold_alignments returned "
                "are already 0-based (source word, target word) links, so leave them out"
            )
        truth = [g for g in gold if isinstance(g, GoldAlignment)] if isinstance(gold, Sequence) else []
        if not isinstance(gold, Sequence) or len(truth) != len(gold):
            raise UserError(f"gold={short_repr(gold)}: give a gold file or the list read_gold_alignments returns")
    if len(predicted) != len(truth):
        raise UserError(
            f"{len(predicted)} predicted alignments for {len(truth)} gold lines; give one per sentence pair"
        )
    for k, (pair, size) in enumerate(zip(truth, sizes or [])):  # a file's links were checked as it was read
        check_sizes(pair.possible, *size, where=f"gold[{k}]", one_based=False)
    return score_alignments([_links(k, item) for k, item in enumerate(predicted)], truth)
