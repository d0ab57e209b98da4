"""Forced decoding (:mod:`nmt.decode.forced`) on numpy arrays: it gives back a search's own scores."""

from __future__ import annotations

import numpy as np
import pytest

from nmt.data.tokenizer import EOS
from nmt.decode.beam import beam_search
from nmt.decode.forced import crop_pairs, force_batches, force_decode, pair_batches
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


def test_pair_batches_keep_the_order_and_end_with_the_short_batch() -> None:
    sources, targets = [[1], [2], [3], [4], [5]], [[6], [7], [8], [9], [10]]
    batches = list(pair_batches(sources, targets, 2))
    assert batches == [([[1], [2]], [[6], [7]]), ([[3], [4]], [[8], [9]]), ([[5]], [[10]])]
    with pytest.raises(ValueError, match="batch_size=0"):
        list(pair_batches(sources, targets, 0))


@pytest.mark.parametrize("lead", [(), (3, 2)], ids=["one map", "layers and heads"])
def test_crop_pairs_cut_each_row_to_its_target_and_eos_against_its_source(lead: tuple[int, ...]) -> None:
    """(B, T, S) forced attention and (B, layers, heads, T, S) layer maps alike: padding is left out."""
    sources, targets = [[5, 6, 7], [8]], [[9], [10, 11, 12]]
    batch = np.arange(2 * int(np.prod(lead)) * 4 * 3, dtype=float).reshape(2, *lead, 4, 3)  # T = 3 + EOS, S = 3
    first, second = crop_pairs(batch, sources, targets)
    assert first.shape == (*lead, 2, 3) and second.shape == (*lead, 4, 1)
    np.testing.assert_array_equal(first, batch[0, ..., :2, :3])
    np.testing.assert_array_equal(second, batch[1, ..., :4, :1])
