"""The seed-mean BLEU of a group of sentences and its bootstrap interval over the sentences."""

from __future__ import annotations

import numpy as np
import pytest

from nmt.score.intervals import seed_mean_interval
from nmt.score.metrics import bleu_metric
from nmt.score.significance import segment_statistics

REFS = [f"the cat number {i} sat on the mat today" for i in range(40)]


def stats(hyps):
    return segment_statistics(bleu_metric(), hyps, REFS)


def test_the_mean_is_the_seeds_corpus_bleu_averaged_and_lies_in_its_interval():
    perfect = stats(REFS)
    half = stats([r if i % 2 else "a dog" for i, r in enumerate(REFS)])
    result = seed_mean_interval(bleu_metric(), [perfect, half], resamples=200, seed=1)
    corpus = bleu_metric().corpus_score([r if i % 2 else "a dog" for i, r in enumerate(REFS)], [REFS]).score
    assert result.per_seed == pytest.approx((100.0, corpus)) and result.mean == pytest.approx((100.0 + corpus) / 2)
    assert result.low <= result.mean <= result.high and result.high - result.low > 1.0
    assert result.ratio < 1.0  # the two-word outputs are short


def test_identical_sentences_leave_no_uncertainty_and_the_seed_fixes_the_draws():
    same = stats(REFS)
    result = seed_mean_interval(bleu_metric(), [same], resamples=50, seed=3)
    assert result.low == result.high == result.mean == pytest.approx(100.0) and result.ratio == 1.0
    mixed = stats([r if i % 3 else r.split(" on ")[0] for i, r in enumerate(REFS)])
    once, again = (seed_mean_interval(bleu_metric(), [mixed], resamples=100, seed=7) for _ in range(2))
    assert once == again
    wider = seed_mean_interval(bleu_metric(), [mixed], resamples=100, seed=7, level=0.99)
    assert wider.low <= once.low and wider.high >= once.high and (wider.low, wider.high) != (once.low, once.high)


def test_bad_input_is_refused():
    with pytest.raises(ValueError, match="at least one seed"):
        seed_mean_interval(bleu_metric(), [], resamples=10, seed=1)
    with pytest.raises(ValueError, match="at least one sentence"):
        seed_mean_interval(bleu_metric(), [stats(REFS)[:0]], resamples=10, seed=1)
    with pytest.raises(ValueError, match="same sentences"):
        seed_mean_interval(bleu_metric(), [stats(REFS), stats(REFS)[:5]], resamples=10, seed=1)
    with pytest.raises(ValueError, match="resamples must be positive"):
        seed_mean_interval(bleu_metric(), [np.zeros((3, 10))], resamples=0, seed=1)
