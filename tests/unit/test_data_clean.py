"""Normalization of every split and the training filters with their removal counts."""

from __future__ import annotations

import pytest

from nmt.config import DataConfig
from nmt.data.clean import FILTERS, clean_pairs, normalize, normalize_lines
from nmt.data.prepare import filter_settings
from nmt.util.errors import ConfigError, DataError

CLI = filter_settings(DataConfig())
"""The filters ``nmt data prepare`` applies when the config leaves them alone."""


def test_nfc_composes_and_whitespace_collapses() -> None:
    decomposed = "Mu\u0308nchen\t  ist\u00a0scho\u0308n\u2028 "
    assert normalize(decomposed, "nfc") == "München ist schön"
    assert normalize(decomposed, "none") == "Mu\u0308nchen ist scho\u0308n"


def test_nfkc_folds_compatibility_characters() -> None:
    assert normalize("\ufb01ne \uff21", "nfkc") == "fine A"
    assert normalize("\ufb01ne", "nfc") == "\ufb01ne"


def test_unknown_normalization_lists_the_choices() -> None:
    with pytest.raises(ConfigError, match="nfc, nfkc, none"):
        normalize("x", "nfd")


def test_filters_and_their_counts() -> None:
    pairs = [
        ("ein hund", "a dog"),  # kept
        ("", "nothing on the left"),  # empty
        ("   ", "whitespace only is empty too"),  # empty
        ("eins", "one"),  # too_short (min_len=2)
        ("w " * 12, "w " * 12),  # too_long (max_len=10)
        ("a b", "a b c d e f g"),  # ratio 3.5 > 3
        ("a b", "a b c d e f"),  # ratio 3.0: kept, the limit is inclusive
        ("zwei  katzen", "two cats"),  # kept, whitespace collapsed
    ]
    src, tgt = [p[0] for p in pairs], [p[1] for p in pairs]
    kept_src, kept_tgt, removed = clean_pairs(src, tgt, min_len=2, max_len=10, max_ratio=3.0, normalization="nfc")
    assert kept_src == ["ein hund", "a b", "zwei katzen"]
    assert kept_tgt == ["a dog", "a b c d e f", "two cats"]
    assert removed == {"empty": 2, "too_short": 1, "too_long": 1, "ratio": 1}
    assert list(removed) == list(FILTERS)
    assert len(kept_src) + sum(removed.values()) == len(pairs)


def test_a_pair_counts_under_the_first_filter_only() -> None:
    # Empty on one side and far too long on the other: counted once, as empty.
    _, _, removed = clean_pairs(["a", ""], ["a", "w " * 500], **CLI)
    assert removed == {"empty": 1, "too_short": 0, "too_long": 0, "ratio": 0}


def test_all_removed_is_a_data_error_with_counts() -> None:
    with pytest.raises(DataError, match=r"all 2 training pairs.*empty=1.*too_long=1"):
        clean_pairs(["", "w " * 300], ["x", "w " * 300], **CLI)


def test_eval_normalization_keeps_count_order_and_empty_lines() -> None:
    lines = ["b  zwei", "", "a eins ", "\u3000"]
    assert normalize_lines(lines, CLI["normalization"]) == ["b zwei", "", "a eins", ""]


def test_a_ten_thousand_word_line_is_filtered_from_training_only():
    huge = " ".join(["wort"] * 10_000)
    src, _tgt, removed = clean_pairs(["ein Hund", huge], ["a dog", "a word"], **CLI)
    assert src == ["ein Hund"] and removed["too_long"] == 1
    assert normalize_lines([huge], CLI["normalization"])[0] == huge  # evaluation splits keep it, untouched
