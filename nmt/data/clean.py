"""Text normalization for every split and length filters for the training split.

Evaluation splits (valid, test) are only normalized: dropping or reordering a test sentence
would make scores incomparable with everyone else's, and an empty source line must still get
an (empty) translation so that the output stays line-aligned with the reference. Training
pairs are also filtered, because empty, very long or badly misaligned pairs waste compute and
teach the model to hallucinate or to stop early.

Lengths here are counted in whitespace-separated words, before subword segmentation, so the
filters do not depend on the tokenizer (which is trained on the filtered text).

The settings have no defaults here: their one home is :class:`nmt.config.DataConfig`
(``min_len``, ``max_len``, ``max_ratio``, ``normalization``), which
:mod:`nmt.data.prepare` passes on.
"""

from __future__ import annotations

import logging
import unicodedata
from collections.abc import Sequence
from typing import Literal

from tqdm import tqdm

from nmt.config import NORMALIZATIONS
from nmt.util.errors import ConfigError, DataError

logger = logging.getLogger(__name__)

FILTERS = ("empty", "too_short", "too_long", "ratio")
"""Names of the training filters, in the order they are applied and reported."""

_UNICODE_FORMS: dict[str, Literal["NFC", "NFKC"]] = {"nfc": "NFC", "nfkc": "NFKC"}
"""The Unicode normal form of each ``data.normalization`` but ``none``."""


def normalize(line: str, normalization: str) -> str:
    """Return ``line`` in a Unicode normal form with runs of whitespace collapsed to one space.

    NFC makes visually identical strings (a precomposed "ü" versus "u" plus a combining
    diaeresis) byte-identical, so they share subwords and BLEU does not count them as
    different. NFKC also folds compatibility characters (ligatures, full-width forms).
    Every Unicode whitespace character counts as a space, including the line and paragraph
    separators (U+0085, U+2028, U+2029) that would otherwise split a line in two for tools
    that use ``str.splitlines`` and break the alignment of a parallel corpus.
    """
    if normalization not in NORMALIZATIONS:
        raise ConfigError(f"unknown normalization '{normalization}'; choose one of {', '.join(NORMALIZATIONS)}")
    form = _UNICODE_FORMS.get(normalization)
    if form is not None:
        line = unicodedata.normalize(form, line)
    return " ".join(line.split())


def normalize_lines(lines: Sequence[str], normalization: str) -> list[str]:
    """Normalize every line of an evaluation split, keeping count, order and empty lines."""
    return [normalize(line, normalization) for line in lines]


def _rejection(n_src: int, n_tgt: int, min_len: int, max_len: int, max_ratio: float) -> str | None:
    """Name of the first filter that rejects a pair of word counts, or None to keep it."""
    if n_src == 0 or n_tgt == 0:
        return "empty"
    if n_src < min_len or n_tgt < min_len:
        return "too_short"
    if n_src > max_len or n_tgt > max_len:
        return "too_long"
    if max(n_src, n_tgt) > max_ratio * min(n_src, n_tgt):
        return "ratio"
    return None


def clean_pairs(
    src: Sequence[str],
    tgt: Sequence[str],
    *,
    min_len: int,
    max_len: int,
    max_ratio: float,
    normalization: str,
    progress: bool = False,
) -> tuple[list[str], list[str], dict[str, int]]:
    """Normalize a training split and drop the pairs that fail a filter.

    A pair is removed when either side is empty (``empty``), has fewer than ``min_len`` words
    (``too_short``) or more than ``max_len`` words (``too_long``), or when the longer side has
    more than ``max_ratio`` times the words of the shorter one (``ratio``). A pair is counted
    under the first filter, in that order, that rejects it, so the counts add up to the
    number of removed pairs. The kept pairs stay in their original order. ``progress``
    shows a bar (the caller decides, as ``--progress`` does; see :mod:`nmt.data`).

    Returns:
        kept source lines, kept target lines, and ``{filter name: pairs removed}`` with the
        keys in the order of :data:`FILTERS`.

    Raises:
        DataError: when no pair survives, with the per-filter counts.
    """
    if len(src) != len(tgt):
        raise ValueError(f"clean_pairs got {len(src)} source lines but {len(tgt)} target lines")
    removed = dict.fromkeys(FILTERS, 0)
    kept_src: list[str] = []
    kept_tgt: list[str] = []
    for s, t in tqdm(zip(src, tgt), total=len(src), desc="cleaning", unit=" pairs", disable=not progress, leave=False):
        s, t = normalize(s, normalization), normalize(t, normalization)
        reason = _rejection(len(s.split()), len(t.split()), min_len, max_len, max_ratio)
        if reason is None:
            kept_src.append(s)
            kept_tgt.append(t)
        else:
            removed[reason] += 1
    counts = ", ".join(f"{name}={n}" for name, n in removed.items())
    if not kept_src:
        raise DataError(
            f"the filters removed all {len(src)} training pairs ({counts}); "
            f"check min_len={min_len}, max_len={max_len}, max_ratio={max_ratio} and the input files"
        )
    logger.info("kept %d of %d training pairs (removed: %s)", len(kept_src), len(src), counts)
    return kept_src, kept_tgt, removed


def within_words(src_text: Sequence[str], tgt_text: Sequence[str], max_words: int) -> list[int]:
    """The indices, in corpus order, of the pairs with at most ``max_words`` words (whitespace-separated)
    on each side: the training pairs of ``train.max_words``, chosen when a run starts."""
    return [i for i, (s, t) in enumerate(zip(src_text, tgt_text)) if max(len(s.split()), len(t.split())) <= max_words]
