"""What the alignment scorer takes and refuses (issue 70): gold links in ASCII digits only, NumPy
integers taken as links, ``sizes`` checked, ``gold_format`` never silently ignored, and an
``encoding`` that turns bytes into text (rot13 does not)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import nmt
from nmt.score.alignment import check_encoding, parse_gold, read_lines
from nmt.util.errors import UserError


@pytest.mark.parametrize("token", ["١-١", "１-１", "١p١", "1-١", "²-1"])
def test_a_link_in_digits_other_than_ascii_is_refused(token: str) -> None:
    """``\\d`` matched Arabic-Indic and full-width digits, so ``١-١`` was read as the link 1-1."""
    with pytest.raises(UserError, match="is not a link") as refused:
        parse_gold([token], "pharaoh", name="gold.txt")
    assert "gold.txt: line 1" in str(refused.value) and "\n" not in str(refused.value)


def test_a_gold_file_in_other_digits_is_refused_naming_its_line(tmp_path: Path) -> None:
    path = tmp_path / "gold.txt"
    path.write_text("1-1\n１-１\n", encoding="utf-8")
    with pytest.raises(UserError, match=r"gold\.txt: line 2: '１-１' is not a link"):
        nmt.read_gold_alignments(path, "rwth")


def test_numpy_integers_are_links() -> None:
    truth = parse_gold(["0-0 1-1"], "pharaoh", name="gold")
    plain = nmt.alignment_error([[(0, 0), (1, 1)]], truth)
    as_numpy = nmt.alignment_error([[(np.int64(0), np.int64(0)), (np.int32(1), np.int32(1))]], truth)
    rows = nmt.alignment_error([np.array([[0, 0], [1, 1]])], truth)  # np.argwhere's shape
    assert as_numpy == plain == rows and plain.aer == 0.0
    with pytest.raises(UserError, match=r"predicted\[0\] holds"):
        nmt.alignment_error([[(np.bool_(True), 0)]], truth)


def test_gold_format_encoding_and_reverse_are_refused_for_gold_already_read() -> None:
    """They were ignored: a list of GoldAlignment is 0-based links already, whatever gold_format said."""
    truth = parse_gold(["1-1"], "rwth", name="gold")
    for kwargs, named in (
        ({"gold_format": "rwth"}, "gold_format"),
        ({"gold_format": "pharaoh"}, "gold_format"),
        ({"reverse": True}, "reverse"),
        ({"encoding": "latin-1"}, "encoding"),
    ):
        with pytest.raises(UserError, match=f"^{named}: for a gold file") as refused:
            nmt.alignment_error(["0-0"], truth, **kwargs)
        assert "\n" not in str(refused.value)
    assert nmt.alignment_error(["0-0"], truth).aer == 0.0


@pytest.mark.parametrize(
    "sizes, needle",
    [
        (5, "sizes=5: give a list of (source words, target words)"),
        ("3,3", "sizes='3,3': give a list"),
        ([(3,)], "sizes[0]=[3]: give (source words, target words)"),
        ([("3", 3)], "sizes[0]=['3', 3]: give"),
        ([(3, -1)], "sizes[0]=[3, -1]: give"),
        ([(True, 3)], "sizes[0]=[True, 3]: give"),
        ([(3.0, 3)], "sizes[0]=[3.0, 3]: give"),
        ([None], "sizes[0]=None: give"),
    ],
)
def test_sizes_are_checked_naming_the_parameter(tmp_path: Path, sizes: object, needle: str) -> None:
    """They went unchecked into the line count and range checks: a TypeError or IndexError."""
    path = tmp_path / "gold.txt"
    path.write_text("0-0\n", encoding="utf-8")
    with pytest.raises(UserError) as refused:
        nmt.read_gold_alignments(path, "pharaoh", sizes=sizes)  # type: ignore[arg-type]
    assert needle in str(refused.value) and "\n" not in str(refused.value)


def test_sizes_may_be_numpy_integers(tmp_path: Path) -> None:
    path = tmp_path / "gold.txt"
    path.write_text("0-1\n", encoding="utf-8")
    assert nmt.read_gold_alignments(path, "pharaoh", sizes=[(np.int64(1), np.int64(2))])[0].sure == {(0, 1)}
    assert nmt.read_gold_alignments(path, "pharaoh", sizes=np.array([[1, 2]]))[0].sure == {(0, 1)}
    with pytest.raises(UserError, match="out of range"):
        nmt.read_gold_alignments(path, "pharaoh", sizes=np.array([[1, 1]]))


@pytest.mark.parametrize("encoding", ["rot13", "rot_13", "base64", "hex", "zlib", "bz2"])
def test_a_codec_that_does_not_decode_bytes_is_refused_in_one_line(tmp_path: Path, encoding: str) -> None:
    """rot13 is a codec Python knows, but of text to text: bytes.decode raised a LookupError traceback."""
    path = tmp_path / "gold.txt"
    path.write_text("0-0\n", encoding="utf-8")
    with pytest.raises(UserError, match=f"^encoding '{encoding}': not a text encoding") as refused:
        nmt.read_gold_alignments(path, "pharaoh", encoding=encoding)
    assert "\n" not in str(refused.value)
    with pytest.raises(UserError, match=f"^--encoding '{encoding}': not a text encoding"):
        check_encoding(encoding, "--encoding")
    with pytest.raises(UserError, match="not a text encoding"):
        read_lines(path, "gold.txt", encoding)


def test_an_unknown_or_malformed_encoding_name_is_one_line(tmp_path: Path) -> None:
    path = tmp_path / "gold.txt"
    path.write_text("0-0\n", encoding="utf-8")
    for name in ("nosuch", "utf\0-8", ""):
        with pytest.raises(UserError, match="unknown"):
            nmt.read_gold_alignments(path, "pharaoh", encoding=name)
    assert check_encoding("latin-1") == "iso8859-1" and check_encoding("UTF8", "--encoding") == "utf-8"


def test_a_text_codec_that_refuses_the_whole_text_is_one_line(tmp_path: Path) -> None:
    """idna decodes bytes, but raises a UnicodeError (not a UnicodeDecodeError) on a bad punycode label."""
    path = tmp_path / "gold.txt"
    path.write_bytes(b"xn--zz\n")
    with pytest.raises(UserError, match=r"gold\.txt: not valid idna") as refused:
        read_lines(path, "gold.txt", "idna")
    assert "\n" not in str(refused.value)
