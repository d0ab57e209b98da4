"""Alignment error rate (Och and Ney 2003): hard word alignments scored against gold sure and possible links.

A gold alignment holds *sure* links S (the annotators agreed) and *possible* links P, with S a
subset of P; a predicted alignment A is a set of links (source word i, target word j).  Over a
corpus, with each count summed over the sentence pairs before dividing (Och and Ney 2003, section 5):

    precision = |A n P| / |A|,   recall = |A n S| / |S|,   AER = 1 - (|A n S| + |A n P|) / (|A| + |S|)

so a sentence with many links weighs more than a short one, as in every published AER.

Gold files come in two forms, and the caller names which (``gold_format``; nothing is guessed
from the numbers, since a 0-based and a 1-based file can hold the same lines):

- ``rwth``: the RWTH German-English set (Vilar et al. 2006) and the Hansards files of the 2003
  shared task: ``i-j`` a sure link, ``ipj`` a possible one, **1-based** indices;
- ``pharaoh``: the same two separators with **0-based** indices (what ``nmt align``, fast_align
  and eflomal write, where every link is ``i-j``).

In both, i indexes the source sentence's words (whitespace tokens) and j the target's; a file
written the other way round (i the target) is read with ``reverse``.  Predicted alignments are
Pharaoh lines of sure links only.  Pure Python: no model, no NumPy.
"""

from __future__ import annotations

import codecs
import math
import re
from collections.abc import Collection, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Optional

from nmt.util.errors import DataError, UserError, short_repr

Link = tuple[int, int]
"""(source word, target word), 0-based."""

GOLD_FORMATS = ("rwth", "pharaoh")
"""How a gold file numbers words: ``rwth`` from 1, ``pharaoh`` from 0 (``i-j`` sure, ``ipj`` possible in both)."""

_LINK = re.compile(r"([0-9]{1,9})([-p])([0-9]{1,9})")  # ASCII digits: \d would read "١-١" and "１-１" as 1-1


@dataclass(frozen=True)
class GoldAlignment:
    """One sentence pair's gold links, 0-based (source word, target word): ``sure`` (S) and
    ``possible`` (P), which holds the sure links too (S is a subset of P, as Och and Ney define them)."""

    sure: frozenset[Link]
    possible: frozenset[Link]


def _index(text: str, one_based: bool, where: str, token: str) -> int:
    value = int(text)
    if one_based and value == 0:
        raise UserError(f"{where}: link {token!r} holds index 0, but rwth files count words from 1 (give pharaoh?)")
    return value - 1 if one_based else value


def parse_links(
    line: str, *, one_based: bool, where: str, reverse: bool = False, sure_only: bool = False
) -> tuple[list[Link], list[Link]]:
    """The sure and the possible-only links of one line of ``i-j`` and ``ipj`` tokens, 0-based.

    ``where`` names the file and line in messages; ``reverse`` swaps i and j (a file whose i is
    the target word); ``sure_only`` refuses ``ipj`` (a predicted alignment is a set of links).
    """
    sure: list[Link] = []
    possible: list[Link] = []
    for token in line.split():
        match = _LINK.fullmatch(token)
        if match is None or (sure_only and match[2] == "p"):
            shape = "i-j" if sure_only else "i-j or ipj"
            raise UserError(
                f"{where}: {short_repr(token, 30)} is not a link ({shape}, i and j whole numbers in the digits 0-9)"
            )
        i, j = _index(match[1], one_based, where, token), _index(match[3], one_based, where, token)
        (sure if match[2] == "-" else possible).append((j, i) if reverse else (i, j))
    return sure, possible


def check_sizes(
    links: Collection[Link], source_words: int, target_words: int, where: str, one_based: bool, reverse: bool = False
) -> None:
    """Refuse a link past the end of its sentence pair (``source_words`` and ``target_words`` whitespace
    tokens), shown as the file writes it (counted from 1 where ``one_based``, j-i where ``reverse``)."""
    past = next(((i, j) for i, j in sorted(links) if i >= source_words or j >= target_words), None)
    if past is not None:
        first, second = (past[1], past[0]) if reverse else past
        shown = f"{first + one_based}-{second + one_based}"
        raise UserError(
            f"{where}: link {shown} is out of range: the pair has {source_words} source and {target_words} "
            f"target words ({'1' if one_based else '0'}-based; is the format or the direction wrong?)"
        )


def parse_gold(
    lines: Sequence[str],
    gold_format: str,
    *,
    name: str,
    reverse: bool = False,
    sizes: Optional[Sequence[tuple[int, int]]] = None,
) -> list[GoldAlignment]:
    """One :class:`GoldAlignment` per line of a gold file called ``name`` in ``gold_format``.

    With ``sizes`` (source and target word counts per pair) the line count must match it and
    every link must fall inside its pair; each mistake is one line naming the file and line.
    """
    if gold_format not in GOLD_FORMATS:
        raise UserError(f"gold format {short_repr(gold_format, 20)}: unknown; give one of {', '.join(GOLD_FORMATS)}")
    if sizes is not None and len(sizes) != len(lines):
        raise UserError(f"{name}: {len(lines)} lines of gold links for {len(sizes)} sentence pairs; give one line each")
    one_based = gold_format == "rwth"
    gold = []
    for number, line in enumerate(lines, start=1):
        where = f"{name}: line {number}"
        sure, possible = parse_links(line, one_based=one_based, where=where, reverse=reverse)
        if sizes is not None:
            source_words, target_words = sizes[number - 1]
            check_sizes([*sure, *possible], source_words, target_words, where, one_based, reverse)
        gold.append(GoldAlignment(frozenset(sure), frozenset(sure) | frozenset(possible)))
    return gold


def parse_predicted(line: str, where: str) -> frozenset[Link]:
    """The links of one Pharaoh line (``i-j``, 0-based)."""
    return frozenset(parse_links(line, one_based=False, where=where, sure_only=True)[0])


def check_encoding(encoding: str, option: str = "encoding") -> str:
    """The codec's name if ``encoding`` turns bytes into text; else one line naming ``option``: an
    unknown name, or a codec of another kind (rot13 maps text to text, base64 bytes to bytes)."""
    try:
        codec = codecs.lookup(encoding).name
    except (LookupError, ValueError):  # ValueError: a NUL in the name
        raise UserError(f"{option} {short_repr(encoding, 30)}: unknown (e.g. utf-8, latin-1)") from None
    try:
        b"\n\n".decode(codec)  # empty bytes never reach the codec
    except UnicodeError:
        pass  # a text encoding that needs more bytes (utf-32)
    except LookupError:
        raise UserError(
            f"{option} {short_repr(encoding, 30)}: not a text encoding (it does not turn bytes into text); "
            "give one such as utf-8 or latin-1"
        ) from None
    return codec


def read_lines(path: Path, name: str, encoding: str = "utf-8") -> list[str]:
    """The lines of a text file in ``encoding`` (lines end at ``\\n``; a ``\\r`` before it and a
    UTF-8 byte-order mark are dropped); a missing file or a byte not in ``encoding`` is one line."""
    codec = check_encoding(encoding)
    try:
        data = Path(path).read_bytes()
    except FileNotFoundError:
        raise UserError(f"{name}: no such file") from None
    except IsADirectoryError:
        raise UserError(f"{name}: is a directory, not a text file") from None
    except OSError as exc:
        raise UserError(f"{name}: cannot read it ({exc.strerror or exc})") from None
    try:
        text = data.decode(codec)
    except UnicodeDecodeError as exc:
        line = 1 + data.count(b"\n", 0, exc.start)
        raise DataError(
            f"{name}: line {line} is not valid {codec} (byte 0x{data[exc.start]:02x}); give the file's encoding "
            "(latin-1 for the RWTH sentences) or convert it: iconv -f latin1 -t utf-8"
        ) from None
    except UnicodeError as exc:  # a codec such as idna refusing the text as a whole
        raise DataError(f"{name}: not valid {codec} ({str(exc)[:80]}); give the file's encoding") from None
    lines = text.removeprefix("\ufeff").split("\n")
    if lines[-1] == "":  # a final newline ends the last line; it starts no new one
        lines.pop()
    return [line.removesuffix("\r") for line in lines]


def _ratio(part: int, whole: int) -> float:
    return part / whole if whole else math.nan


@dataclass(frozen=True)
class AlignmentScore:
    """Corpus-level alignment error rate, precision and recall, and the link counts they come from.

    The rates are fractions (0.25 is 25 %); one whose denominator is 0 (no link predicted, no
    sure gold link) is NaN.
    """

    pairs: int
    predicted: int  # |A|
    sure: int  # |S|
    possible: int  # |P|, sure links included
    predicted_sure: int  # |A n S|
    predicted_possible: int  # |A n P|

    @property
    def aer(self) -> float:
        """1 - (|A n S| + |A n P|) / (|A| + |S|) (Och and Ney 2003)."""
        whole = self.predicted + self.sure
        return 1.0 - (self.predicted_sure + self.predicted_possible) / whole if whole else math.nan

    @property
    def precision(self) -> float:
        """|A n P| / |A|: predicted links that the gold allows."""
        return _ratio(self.predicted_possible, self.predicted)

    @property
    def recall(self) -> float:
        """|A n S| / |S|: sure gold links that were predicted."""
        return _ratio(self.predicted_sure, self.sure)

    def to_dict(self) -> dict[str, Any]:
        """The counts and the rates (None where undefined), for JSON."""
        rates = {"aer": self.aer, "precision": self.precision, "recall": self.recall}
        counts = {name: getattr(self, name) for name in self.__dataclass_fields__}
        return {**{k: None if math.isnan(v) else v for k, v in rates.items()}, **counts}

    @property
    def summary(self) -> str:
        """One line: the three rates in percent and the counts."""

        def pct(value: float) -> str:
            return "n/a" if math.isnan(value) else f"{100 * value:.1f}%"

        return (
            f"AER {pct(self.aer)}, precision {pct(self.precision)}, recall {pct(self.recall)} on {self.pairs:,} "
            f"pairs ({self.predicted:,} links predicted, {self.sure:,} sure and {self.possible:,} possible in the gold)"
        )


def score_alignments(predicted: Sequence[Collection[Link]], gold: Sequence[GoldAlignment]) -> AlignmentScore:
    """AER, precision and recall of ``predicted`` (one set of links per pair) against ``gold``, summed over pairs."""
    if len(predicted) != len(gold):
        raise UserError(f"{len(predicted)} predicted alignments for {len(gold)} gold ones; give one per sentence pair")
    counts = [0, 0, 0, 0, 0]
    for links, truth in zip(predicted, gold):
        found = set(links)
        for k, n in enumerate(
            (len(found), len(truth.sure), len(truth.possible), len(found & truth.sure), len(found & truth.possible))
        ):
            counts[k] += n
    return AlignmentScore(len(gold), *counts)


def on_seen_words(
    predicted: Sequence[Collection[Link]],
    gold: Sequence[GoldAlignment],
    sources: Sequence[str],
    targets: Sequence[str],
    seen: tuple[frozenset[str], frozenset[str]],
) -> tuple[list[frozenset[Link]], list[GoldAlignment]]:
    """The predicted and gold links whose source and target words both occur in a training text
    (``seen``: its source-side and target-side words), every other link dropped from both sides:
    what :func:`score_alignments` then scores is alignment of words a model could have learned."""
    src_seen, tgt_seen = seen
    kept_links, kept_gold = [], []
    for links, truth, source, target in zip(predicted, gold, sources, targets):
        src, tgt = source.split(), target.split()

        def known(link: Link, src: list[str] = src, tgt: list[str] = tgt) -> bool:
            return src[link[0]] in src_seen and tgt[link[1]] in tgt_seen

        kept_links.append(frozenset(filter(known, links)))
        kept_gold.append(GoldAlignment(frozenset(filter(known, truth.sure)), frozenset(filter(known, truth.possible))))
    return kept_links, kept_gold


def read_words(path: Path, name: str, encoding: str = "utf-8") -> frozenset[str]:
    """The whitespace-separated words of a text file (a training side): what :func:`on_seen_words` keeps."""
    return frozenset(word for line in read_lines(path, name, encoding) for word in line.split())
