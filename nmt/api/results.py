"""What :class:`~nmt.api.translator.Translator` returns: plain dataclasses of strings, floats and NumPy arrays.

No tensor leaves the library: attention weights are float64 arrays on the host, rows the target
tokens (EOS last, as ``</s>``) and columns the source tokens, so a result can be pickled, shown
in a notebook or drawn with :func:`nmt.plot_attention` without torch.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Optional

import numpy as np

EOS_PIECE = "</s>"
"""The label of the end-of-sentence token, the last target token of every result."""


@dataclass(frozen=True)
class Hypothesis:
    """One output of a search: detokenized text, its subword tokens (``</s>`` last), and its scores.

    ``log_prob`` is log P(tokens | source), the sum of the per-token log-probabilities, which
    :meth:`~nmt.api.translator.Translator.score` gives back for the same tokens; ``score`` is
    what the search ranked by: the same for greedy search and sampling, divided by the GNMT length
    penalty (and with the coverage penalty added) for beam search.
    """

    text: str
    tokens: list[str]
    score: float
    log_prob: float


@dataclass(frozen=True)
class TranslationResult:
    """The translation of one input sentence: its best hypothesis, and the n-best list.

    ``attention`` (only when asked for) is the best hypothesis's cross-attention, shape
    ``(len(tokens), len(source_tokens))``, each row a distribution over the source tokens.  A
    blank input has no tokens: empty text and token lists, score 0, and a (0, 0) attention.
    """

    source: str
    source_tokens: list[str]
    hypotheses: list[Hypothesis]
    attention: Optional[np.ndarray] = None

    @property
    def text(self) -> str:
        """The best translation."""
        return self.hypotheses[0].text

    @property
    def tokens(self) -> list[str]:
        """The best translation's subword tokens, ``</s>`` last (none for a blank input)."""
        return self.hypotheses[0].tokens

    @property
    def score(self) -> float:
        """The best translation's search score (see :class:`Hypothesis`)."""
        return self.hypotheses[0].score

    @property
    def log_prob(self) -> float:
        """The best translation's log-probability under the model."""
        return self.hypotheses[0].log_prob


@dataclass(frozen=True)
class ScoreResult:
    """A given target scored by forced decoding: one log-probability per target token (``</s>`` last),
    their sum, and the attention (``(len(tokens), len(source_tokens))``) where the engine has it."""

    source_tokens: list[str]
    tokens: list[str]
    log_probs: np.ndarray
    attention: Optional[np.ndarray] = field(default=None)

    @property
    def total(self) -> float:
        """log P(target | source): what a search reports as the hypothesis's ``log_prob``."""
        return float(self.log_probs.sum())


def host_array(weights: Any) -> np.ndarray:
    """A float64 NumPy copy of ``weights``: a torch tensor on any device (checked by duck type, so
    torch is never imported here) or anything NumPy reads."""
    if hasattr(weights, "detach"):
        weights = weights.detach().float().cpu().numpy()
    return np.asarray(weights, dtype=np.float64)
