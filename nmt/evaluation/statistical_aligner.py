"""eflomal, the classical aligner that scripts/align_rwth.py sets beside attention: its training text,
one run, and its two directions joined.

eflomal (Östling and Tiedemann 2016, "Efficient Word Alignment with Markov Chain Monte Carlo";
``pip install 'nmt-attention[align]'``) is trained on a parallel corpus plus the sentences to align, and
writes two directional alignments: "forward" links each target word to at most one source word,
"reverse" each source word to at most one target word, both as Pharaoh lines (source word first).
eflomal 2.0.0 ships no symmetrizer (its README points to fast_align's atools), so the two are also
joined here: by grow-diag-final-and (:mod:`nmt.score.symmetrize`) and by their intersection.
"""

from __future__ import annotations

import re
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Optional

from nmt.score.alignment import parse_predicted, read_lines
from nmt.score.symmetrize import Link, symmetrize_corpus
from nmt.util.errors import UserError

DEFAULT_TRAIN = ("data/multi30k/de-en/train.de", "data/multi30k/de-en/train.en")
PUNCTUATION = re.compile(r"""([.,!?;:"()])""")
JOINS = ("forward", "reverse", "grow-diag-final-and", "intersection")
"""The alignments of one run, in the order their lines are written."""


def training_pairs(src: Path, tgt: Path, tokens: str) -> list[tuple[str, str]]:
    """The parallel training corpus for eflomal, pairs with a blank side left out; ``tokens``
    "punct" puts spaces around . , ! ? ; : " ( ) first (the RWTH text is tokenized that way)."""
    src_lines, tgt_lines = read_lines(src, str(src)), read_lines(tgt, str(tgt))
    if len(src_lines) != len(tgt_lines):
        raise UserError(f"{src} has {len(src_lines):,} lines but {tgt} {len(tgt_lines):,}; give a parallel corpus")

    def tokenize(line: str) -> str:
        return " ".join(PUNCTUATION.sub(r" \1 ", line).split() if tokens == "punct" else line.split())

    pairs = [(tokenize(s), tokenize(t)) for s, t in zip(src_lines, tgt_lines)]
    return [(s, t) for s, t in pairs if s and t]


def unseen(train: Sequence[str], sentences: Sequence[str]) -> tuple[int, int]:
    """(running words of ``sentences``, those absent from ``train``), lowercased as eflomal reads words."""
    known = {word.lower() for line in train for word in line.split()}
    words = [word.lower() for line in sentences for word in line.split()]
    return len(words), sum(1 for word in words if word not in known)


def share(part: int, whole: int) -> Optional[float]:
    return part / whole if whole else None


@dataclass(frozen=True)
class EflomalRun:
    """One eflomal run on the set: each alignment of :data:`JOINS` (one link set per pair) and the
    facts every line of the run carries."""

    links: dict[str, list[frozenset[Link]]]
    facts: dict[str, Any]


def run_eflomal(
    sources: Sequence[str],
    targets: Sequence[str],
    train: Sequence[tuple[str, str]],
    *,
    samplers: int,
    folder: Path,
    repeat: int,
) -> EflomalRun:
    """eflomal trained on ``train`` plus the pairs (``sources``, ``targets``), its links for the pairs
    in both directions (files in ``folder``) and their two joins."""
    from importlib.metadata import version

    import eflomal

    files = {"forward": folder / f"forward{repeat}", "reverse": folder / f"reverse{repeat}"}
    start = time.perf_counter()
    eflomal.Aligner(n_samplers=samplers).align(
        [s for s, _ in train] + list(sources),
        [t for _, t in train] + list(targets),
        links_filename_fwd=str(files["forward"]),
        links_filename_rev=str(files["reverse"]),
    )
    seconds = time.perf_counter() - start
    links = {}
    for direction, path in files.items():
        lines = read_lines(path, str(path))[len(train) :]
        if len(lines) != len(sources):
            raise UserError(f"eflomal wrote {len(lines):,} {direction} lines for {len(sources):,} pairs")
        links[direction] = [parse_predicted(line, f"{path}:{len(train) + k + 1}") for k, line in enumerate(lines)]
    sizes = [(len(s.split()), len(t.split())) for s, t in zip(sources, targets)]
    grown = symmetrize_corpus(links["forward"], links["reverse"], sizes)
    links["grow-diag-final-and"] = [frozenset(pair) for pair in grown]
    links["intersection"] = [f & r for f, r in zip(links["forward"], links["reverse"])]
    src_words, src_unseen = unseen([s for s, _ in train], sources)
    tgt_words, tgt_unseen = unseen([t for _, t in train], targets)
    facts = {
        "eflomal": version("eflomal"),
        "samplers": samplers,
        "src_words": src_words,
        "src_unseen_share": share(src_unseen, src_words),
        "tgt_words": tgt_words,
        "tgt_unseen_share": share(tgt_unseen, tgt_words),
        "seconds": round(seconds, 1),
    }
    return EflomalRun({name: links[name] for name in JOINS}, facts)
