"""Forced decoding (:mod:`nmt.decode.forced`) on numpy arrays: it gives back a search's own scores."""

from __future__ import annotations

import numpy as np
import pytest

from nmt.data.tokenizer import EOS
from nmt.decode.beam import beam_search
from nmt.decode.forced import force_batches, force_decode
from nmt.util.errors import UserError
from test_search_numpy import ToyModel, numpy_batch


def test_forced_scores_equal_beam_scores_and_attention_rows_are_distributions() -> None:
    model, (src, src_len) = ToyModel(), numpy_batch()
    hyp = beam_search(model, src, src_len, beam=3, alpha=0.6, n_best=3)
    sources = [src[i, : src_len[i]].tolist() for i in range(len(src))]
    for k in range(3):
        targets = [hyp.tokens[i, k, : hyp.lengths[i, k] - 1].tolist() for i in range(len(src))]
        assert all(EOS not in t for t in targets)
        forced = force_batches(
            sources, targets, lambda s, n, t: force_decode(model, s, n, t, True), batch_size=3
        )  # batches of 3: padding differs from the search's, the scores may not
        for i, f in enumerate(forced):
            assert f.total == pytest.approx(float(hyp.log_probs[i, k]), abs=1e-4)
            assert f.log_probs.shape == (len(targets[i]) + 1,)
            assert f.attention is not None and f.attention.shape == (len(targets[i]) + 1, len(sources[i]))
            np.testing.assert_allclose(f.attention.sum(1), 1.0, atol=1e-5)


def test_a_blank_source_or_unpaired_lists_are_refused() -> None:
    model = ToyModel()
    run = lambda s, n, t: force_decode(model, s, n, t)  # noqa: E731
    with pytest.raises(UserError, match="source 1 is blank"):
        force_batches([[5], []], [[6], [7]], run, batch_size=2)
    with pytest.raises(UserError, match="2 sources but 1 targets"):
        force_batches([[5], [6]], [[6]], run, batch_size=2)
