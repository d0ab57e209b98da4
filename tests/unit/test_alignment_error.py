"""Alignment error rate (Och and Ney 2003) on small hand-computed cases, both gold forms, and the refusals.

Every case is computed by hand from the three definitions: precision |A n P| / |A|, recall
|A n S| / |S|, AER = 1 - (|A n S| + |A n P|) / (|A| + |S|), each count summed over the corpus.
The gold files are made up and written in tmp_path; no real gold set is read.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest

import nmt
from nmt.score.alignment import GoldAlignment, parse_gold, read_lines, score_alignments
from nmt.util.errors import DataError, UserError

# One pair: S = {0-0, 1-1}, P = S + {2-1}; predicted A = {0-0, 2-1, 2-2}.
# |A| = 3, |S| = 2, |A n S| = 1 (0-0), |A n P| = 2 (0-0, 2-1): precision 2/3, recall 1/2, AER 1 - 3/5.
GOLD_0 = "0-0 1-1 2p1"
GOLD_RWTH = "1-1 2-2 3p2"  # the same links counted from 1
PREDICTED = "0-0 2-1 2-2"


def gold(*lines: str, form: str = "pharaoh") -> list[GoldAlignment]:
    return parse_gold(list(lines), form, name="gold")


def test_one_pair_computed_by_hand() -> None:
    score = nmt.alignment_error([PREDICTED], gold(GOLD_0))
    assert (score.predicted, score.sure, score.possible) == (3, 2, 3)
    assert (score.predicted_sure, score.predicted_possible) == (1, 2)
    assert score.precision == pytest.approx(2 / 3)
    assert score.recall == pytest.approx(1 / 2)
    assert score.aer == pytest.approx(1 - 3 / 5)


def test_counts_are_summed_over_the_corpus_before_dividing() -> None:
    """A perfect 1-link pair and a wrong 3-link pair: AER 1 - 2/8, not the mean of 0 and 1."""
    score = nmt.alignment_error(["0-0", "0-1 1-2 2-0"], gold("0-0", "0-0 1-1 2-2"))
    assert score.aer == pytest.approx(1 - (1 + 1) / (4 + 4))
    assert score.aer != pytest.approx((0 + 1) / 2)


def test_the_gold_alignment_scores_perfectly_and_nothing_scores_worst() -> None:
    truth = gold("0-0 1-1 2p1", "0-1 1-0")
    perfect = nmt.alignment_error([[(0, 0), (1, 1)], [(0, 1), (1, 0)]], truth)
    assert (perfect.aer, perfect.precision, perfect.recall) == (0.0, 1.0, 1.0)
    possible_too = nmt.alignment_error(["0-0 1-1 2-1", "0-1 1-0"], truth)
    assert possible_too.aer == 0.0  # a possible link costs nothing; recall counts sure links only
    none = nmt.alignment_error(["", ""], truth)
    assert none.aer == 1.0 and none.recall == 0.0 and math.isnan(none.precision)
    assert json.loads(json.dumps(none.to_dict()))["precision"] is None  # NaN is no JSON number


def test_rwth_and_pharaoh_forms_read_the_same_links() -> None:
    assert gold(GOLD_RWTH, form="rwth") == gold(GOLD_0)
    (one,) = gold(GOLD_0)
    assert one.sure == {(0, 0), (1, 1)} and one.possible == {(0, 0), (1, 1), (2, 1)}  # S is part of P
    assert parse_gold([GOLD_0], "pharaoh", name="g", reverse=True)[0].sure == {(0, 0), (1, 1)}
    assert parse_gold(["0-2 1p3"], "pharaoh", name="g", reverse=True)[0].possible == {(2, 0), (3, 1)}


def test_a_reversed_file_is_read_and_refused_as_it_is_written() -> None:
    (one,) = parse_gold(["3-1 2p2"], "rwth", name="g", reverse=True, sizes=[(2, 3)])
    assert one.sure == {(0, 2)} and one.possible == {(0, 2), (1, 1)}
    with pytest.raises(UserError, match=r"g: line 1: link 3-1 is out of range: the pair has 3 source and 2 target"):
        parse_gold(["3-1"], "rwth", name="g", reverse=True, sizes=[(3, 2)])


def test_the_library_reads_both_forms_from_files(tmp_path: Path) -> None:
    rwth, pharaoh = tmp_path / "gold.talp", tmp_path / "gold.txt"
    rwth.write_text(f"{GOLD_RWTH}\n\n", encoding="ascii")  # a blank line: a pair without links
    pharaoh.write_text(f"{GOLD_0}\n\n", encoding="ascii")
    assert nmt.read_gold_alignments(rwth, "rwth") == nmt.read_gold_alignments(pharaoh, "pharaoh")
    a = nmt.alignment_error([PREDICTED, ""], rwth, gold_format="rwth")
    b = nmt.alignment_error([PREDICTED, ""], str(pharaoh), gold_format="pharaoh")
    assert a == b and a.pairs == 2 and a.aer == pytest.approx(0.4)


def test_word_alignments_check_the_gold_against_their_word_counts(tmp_path: Path) -> None:
    aligned = nmt.WordAlignment(["a", "b", "c"], ["x", "y"], [(0, 0), (2, 1)], np.zeros((2, 3)))
    path = tmp_path / "gold.txt"
    path.write_text("0-0 2-1\n", encoding="ascii")
    assert nmt.alignment_error([aligned], path, gold_format="pharaoh").aer == 0.0
    path.write_text("0-0 2-2\n", encoding="ascii")
    with pytest.raises(UserError, match=r"line 1: link 2-2 is out of range: the pair has 3 source and 2 target"):
        nmt.alignment_error([aligned], path, gold_format="pharaoh")
    path.write_text("1-1 3-3\n", encoding="ascii")  # in range only if read from 0, which rwth does not
    with pytest.raises(UserError, match=r"link 3-3 is out of range.*1-based"):
        nmt.alignment_error([aligned], path, gold_format="rwth")
    with pytest.raises(UserError, match=r"gold\[0\]: link 3-3 is out of range"):  # a list read before, from 0
        nmt.alignment_error([aligned], nmt.read_gold_alignments(path, "pharaoh"))


@pytest.mark.parametrize(
    ("lines", "form", "sizes", "needle"),
    [
        (["0-0", "0-0"], "pharaoh", [(1, 1)], "2 lines of gold links for 1 sentence pairs"),
        (["0-0 1-"], "pharaoh", None, "line 1: '1-' is not a link (i-j or ipj"),
        (["0-0 a-b"], "pharaoh", None, "'a-b' is not a link"),
        (["0:0"], "pharaoh", None, "'0:0' is not a link"),
        (["1-1", "0-1"], "rwth", None, "line 2: link '0-1' holds index 0, but rwth files count words from 1"),
        (["0-0 5p0"], "pharaoh", [(2, 2)], "link 5-0 is out of range"),
        (["0-0"], "talp", None, "gold format 'talp': unknown; give one of rwth, pharaoh"),
    ],
)
def test_malformed_gold_is_refused_in_one_line(lines, form, sizes, needle) -> None:
    with pytest.raises(UserError) as error:
        parse_gold(lines, form, name="gold.txt", sizes=sizes)
    assert needle in str(error.value) and "\n" not in str(error.value)


def test_predicted_links_are_sure_links_and_counts_must_match() -> None:
    with pytest.raises(UserError, match=r"predicted\[0\]: '0p0' is not a link \(i-j,"):
        nmt.alignment_error(["0p0"], gold("0-0"))
    with pytest.raises(UserError, match="2 predicted alignments for 1 gold"):
        nmt.alignment_error(["0-0", "0-0"], gold("0-0"))
    with pytest.raises(UserError, match=r"holds \[0, -1\]: give \(i, j\) pairs"):
        nmt.alignment_error([[(0, -1)]], gold("0-0"))
    assert nmt.alignment_error([[[0, 0]]], gold("0-0")).aer == 0.0  # pairs as lists, as JSON gives them
    with pytest.raises(UserError, match="gold_format: name the form"):
        nmt.alignment_error(["0-0"], "gold.talp")
    with pytest.raises(UserError, match="1 predicted alignments for 0 gold ones"):
        score_alignments([{(0, 0)}], [])


def test_text_is_read_in_the_encoding_named(tmp_path: Path) -> None:
    path = tmp_path / "de"
    path.write_bytes("Wir glauben nicht , daß wir\r\nDas stimmt\n".encode("latin-1"))
    with pytest.raises(DataError) as error:
        read_lines(path, "--src de")
    message = str(error.value)
    assert "--src de: line 1 is not valid utf-8 (byte 0xdf)" in message and "latin-1" in message
    assert read_lines(path, "--src de", "latin-1") == ["Wir glauben nicht , daß wir", "Das stimmt"]
    with pytest.raises(UserError, match="encoding 'klingon': unknown"):
        read_lines(path, "--src de", "klingon")
    with pytest.raises(UserError, match="no such file"):
        read_lines(tmp_path / "missing", "--gold missing")


def test_the_summary_line_shows_percent_and_counts() -> None:
    line = nmt.alignment_error([PREDICTED], gold(GOLD_0)).summary
    assert line.startswith("AER 40.0%, precision 66.7%, recall 50.0% on 1 pairs")
    assert "3 links predicted, 2 sure and 3 possible" in line
