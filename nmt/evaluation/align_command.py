"""``nmt align``: word alignments of given sentence pairs, and with ``--gold`` their alignment error rate.

Every file is read and checked before the model loads: the sentences (in ``--encoding``), the gold
links (one line per pair, each link inside its pair, the form named by ``--gold-format``) and the
output paths.  The alignments come from :func:`nmt.decode.alignment.align_pairs` (what
``Translator.align`` calls), the score from :func:`nmt.score.alignment.score_alignments` (what
``nmt.alignment_error`` calls); ``--report DIR`` keeps the score as ``alignment_error.json`` (every
count and setting) and ``alignment_error.txt`` (the line the command prints), replacing only files of
those names that nmt wrote there (:func:`nmt.util.owned.check_ours`: never a link, nor a folder that is one).
"""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Optional

from nmt.decode.alignment import AttentionChoice, align_pairs, describe_choice
from nmt.decode.engines import Engine
from nmt.decode.translate import check_output
from nmt.decode.word_merge import WordAlignment, links_alignment, merge_rule
from nmt.evaluation.statistical_aligner import JOINS, run_eflomal, training_pairs
from nmt.score.alignment import (
    GOLD_FORMATS,
    AlignmentScore,
    GoldAlignment,
    check_encoding,
    on_seen_words,
    parse_gold,
    read_lines,
    read_words,
    score_alignments,
)
from nmt.util.errors import UserError
from nmt.util.extras import require
from nmt.util.fileio import atomic_write_bytes, write_lines
from nmt.util.out_paths import check_can_create
from nmt.util.owned import check_ours, claim

REPORT_JSON, REPORT_TEXT = "alignment_error.json", "alignment_error.txt"
REPORT_FILES = (REPORT_JSON, REPORT_TEXT)


@dataclass(frozen=True)
class Aligned:
    """What ``nmt align`` found: one alignment per pair, and the score where a gold file was given."""

    alignments: list[WordAlignment]
    score: Optional[AlignmentScore]
    seen: Optional[AlignmentScore] = None  # on the links whose two words a training text holds (``seen``)

    @property
    def summary(self) -> list[str]:
        """The score's line, and the line on seen words where they were given."""
        lines = [] if self.score is None else [self.score.summary]
        if self.seen is not None:
            lines.append(f"on links whose two words the training text holds: {self.seen.summary}")
        return lines


def _check_paths(inputs: list[Path], output: Optional[Path], report: Optional[Path]) -> None:
    """Refuse an output that is one of the inputs, or that nmt could not write, before any work."""
    if output is not None:
        check_output(output)
        same = next((p for p in inputs if output.exists() and p.exists() and os.path.samefile(p, output)), None)
        if same is not None:
            raise UserError(f"-o {output}: is the input {same}; writing the alignments there would replace it")
    if report is not None:
        check_can_create(report, "--report")
        check_ours(report, REPORT_FILES, "--report", legacy=_aligned_before_manifests)


def _aligned_before_manifests(folder: Path) -> bool:
    """Whether a folder without a manifest holds a report of an ``nmt align`` from before manifests:
    an alignment_error.json with the keys this command writes."""
    try:
        record = json.loads((folder / REPORT_JSON).read_bytes())
    except (OSError, ValueError):
        return False
    return isinstance(record, dict) and {"aer", "settings"} <= record.keys()


@dataclass(frozen=True)
class Pairs:
    """The sentence pairs read, their gold links and the words of a training text, where given."""

    sources: list[str]
    targets: list[str]
    truth: Optional[list[GoldAlignment]]
    seen: Optional[tuple[frozenset[str], frozenset[str]]]


def _read_pairs(
    src: Path,
    tgt: Path,
    encoding: str,
    gold: Optional[Path],
    gold_format: Optional[str],
    gold_reverse: bool,
    output: Optional[Path],
    report: Optional[Path],
    seen: Optional[tuple[Path, Path]] = None,
) -> Pairs:
    """The sentence pairs, the gold links and the seen words, every file and output path checked before any work."""
    scoring = {"--gold-format": gold_format is not None, "--gold-reverse": gold_reverse, "--report": report is not None}
    given = [name for name, set_ in {**scoring, "--seen-src and --seen-tgt": seen is not None}.items() if set_]
    if gold is None and given:
        raise UserError(f"{', '.join(given)} go with --gold FILE (the gold alignments)")
    if gold_format is not None and gold_format not in GOLD_FORMATS:
        raise UserError(f"--gold-format {gold_format}: unknown; give one of {', '.join(GOLD_FORMATS)}")
    if gold is not None and gold_format is None:
        raise UserError(
            f"--gold {gold}: name its form with --gold-format: {' or '.join(GOLD_FORMATS)} "
            "(rwth: words counted from 1, as the RWTH files; pharaoh: from 0)"
        )
    check_encoding(encoding, "--encoding")
    sources = read_lines(src, f"--src {src}", encoding)
    targets = read_lines(tgt, f"--tgt {tgt}", encoding)
    if len(sources) != len(targets):
        raise UserError(f"--src {src} has {len(sources)} lines but --tgt {tgt} has {len(targets)}; give one per pair")
    truth = None
    if gold is not None and gold_format is not None:
        sizes = [(len(s.split()), len(t.split())) for s, t in zip(sources, targets)]
        lines = read_lines(gold, f"--gold {gold}", encoding)
        truth = parse_gold(lines, gold_format, name=f"--gold {gold}", reverse=gold_reverse, sizes=sizes)
    words = None
    if seen is not None:
        words = (
            read_words(seen[0], f"--seen-src {seen[0]}"),
            read_words(seen[1], f"--seen-tgt {seen[1]}"),
        )
    _check_paths([p for p in (src, tgt, gold, *(seen or ())) if p is not None], output, report)
    return Pairs(sources, targets, truth, words)


def _input_settings(
    src: Path,
    tgt: Path,
    gold: Optional[Path],
    gold_format: Optional[str],
    gold_reverse: bool,
    seen: Optional[tuple[Path, Path]] = None,
) -> dict[str, Any]:
    """What a report records of the files aligned and scored, whichever aligner read them."""
    return {
        "source": str(src),
        "target": str(tgt),
        "gold": str(gold),
        "gold_format": gold_format,
        "gold_reverse": gold_reverse,
        "seen": [str(p) for p in seen] if seen is not None else None,
    }


def _write_and_score(
    alignments: list[WordAlignment],
    pairs: Pairs,
    output: Optional[Path],
    report: Optional[Path],
    settings: dict[str, Any],
) -> Aligned:
    """Write the alignments (``output``), score them against the gold links (on every link, and on the
    links of seen words where given) and keep the scores in ``report``."""
    if output is not None:
        write_lines(output, [a.pharaoh for a in alignments])
    if pairs.truth is None:
        return Aligned(alignments, None)
    links = [a.links for a in alignments]
    found = Aligned(alignments, score_alignments(links, pairs.truth))
    if pairs.seen is not None:
        kept = on_seen_words(links, pairs.truth, pairs.sources, pairs.targets, pairs.seen)
        found = Aligned(alignments, found.score, score_alignments(*kept))
    if report is not None and found.score is not None:
        record = {**found.score.to_dict(), "settings": settings}
        if found.seen is not None:
            record["seen"] = found.seen.to_dict()
        claim(report, REPORT_FILES)
        atomic_write_bytes(report / REPORT_JSON, (json.dumps(record, indent=2) + "\n").encode("utf-8"))
        atomic_write_bytes(report / REPORT_TEXT, "".join(line + "\n" for line in found.summary).encode("utf-8"))
    return found


def align_files(
    open_engine: Callable[[], Engine],
    src: Path,
    tgt: Path,
    output: Optional[Path] = None,
    *,
    encoding: str = "utf-8",
    choice: AttentionChoice = AttentionChoice(),
    batch_size: Optional[int] = None,
    gold: Optional[Path] = None,
    gold_format: Optional[str] = None,
    gold_reverse: bool = False,
    report: Optional[Path] = None,
    seen: Optional[tuple[Path, Path]] = None,
) -> Aligned:
    """Align the pairs of lines of ``src`` and ``tgt`` (written to ``output`` when given) and score
    them against ``gold`` when given (also on the links whose words the training text ``seen``, its
    source and target side, holds); ``open_engine`` loads the model once every file has been checked."""
    pairs = _read_pairs(src, tgt, encoding, gold, gold_format, gold_reverse, output, report, seen)
    engine = open_engine()
    files = {"sources": f"--src {src}", "targets": f"--tgt {tgt}"}
    alignments = align_pairs(
        engine,
        pairs.sources,
        pairs.targets,
        choice,
        batch_size=batch_size,
        where=lambda side, k: f"{files[side]}: line {k + 1}",
    )
    settings: dict[str, Any] = {
        **_input_settings(src, tgt, gold, gold_format, gold_reverse, seen),
        "engine": engine.name,
        "step": engine.step,
        "attention": describe_choice(engine, choice),
        "layer": choice.layer,
        "head": choice.head,
        "reading": choice.reading,
        "merge": merge_rule(choice.merge),
    }
    return _write_and_score(alignments, pairs, output, report, settings)


def align_with_baseline(
    src: Path,
    tgt: Path,
    output: Optional[Path] = None,
    *,
    encoding: str = "utf-8",
    join: str = "grow-diag-final-and",
    train: Optional[tuple[Path, Path]] = None,
    samplers: int = 1,
    gold: Optional[Path] = None,
    gold_format: Optional[str] = None,
    gold_reverse: bool = False,
    report: Optional[Path] = None,
    seen: Optional[tuple[Path, Path]] = None,
) -> Aligned:
    """``nmt align --baseline eflomal``: the pairs aligned by eflomal (Östling and Tiedemann 2016), trained
    on ``train`` (a parallel corpus, pairs with a blank side left out) plus the pairs themselves, its two
    directions joined by ``join`` (:data:`~nmt.evaluation.statistical_aligner.JOINS`); scored as
    :func:`align_files` scores a model's alignments."""
    if join not in JOINS:
        raise UserError(f"--join {join}: give one of {', '.join(JOINS)}")
    pairs = _read_pairs(src, tgt, encoding, gold, gold_format, gold_reverse, output, report, seen)
    sources, targets = pairs.sources, pairs.targets
    corpus = training_pairs(train[0], train[1], "whitespace") if train is not None else []
    require("eflomal", "align", "--baseline eflomal")
    live = [k for k, (s, t) in enumerate(zip(sources, targets)) if s.split() and t.split()]
    with tempfile.TemporaryDirectory(prefix="nmt-eflomal-") as folder:
        run = run_eflomal(
            [sources[k] for k in live],
            [targets[k] for k in live],
            corpus,
            samplers=samplers,
            folder=Path(folder),
            repeat=0,
        )
    found = dict(zip(live, run.links[join]))
    alignments = [links_alignment(sources[k], targets[k], found.get(k, frozenset())) for k in range(len(sources))]
    settings: dict[str, Any] = {
        **_input_settings(src, tgt, gold, gold_format, gold_reverse, seen),
        "aligner": "eflomal",
        "join": join,
        "train": [str(p) for p in train] if train is not None else None,
        **run.facts,
    }
    return _write_and_score(alignments, pairs, output, report, settings)
