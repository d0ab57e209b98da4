"""Repeated n-grams in translations: the symptom coverage attention was proposed against.

Tu et al. (2016) name two faults of attention without coverage: words translated twice
(over-translation) and words never translated (under-translation).  The first shows in the output
as a repeated n-gram ("a man in a blue shirt in a blue shirt"), the second as short output (a
length ratio below 1, :class:`nmt.score.metrics.Score`).  References repeat n-grams too (articles,
"in a"), so the rate of a system is read beside the references' own.
"""

from __future__ import annotations

from collections.abc import Sequence


def has_repeated_ngram(text: str, n: int) -> bool:
    """Whether ``text`` (whitespace tokens, case-folded) holds some n-gram twice."""
    words = text.lower().split()
    grams = [tuple(words[i : i + n]) for i in range(len(words) - n + 1)]
    return len(set(grams)) < len(grams)


def repeated_ngram_rate(texts: Sequence[str], n: int) -> float:
    """The share of ``texts`` holding a repeated n-gram, in percent (0.0 for no texts)."""
    if n < 1:
        raise ValueError(f"n must be at least 1, not {n}")
    if not texts:
        return 0.0
    return 100.0 * sum(has_repeated_ngram(t, n) for t in texts) / len(texts)
