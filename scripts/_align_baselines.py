"""The scores scripts/align_rwth.py writes, and its two baselines: a diagonal that reads no words and
eflomal (the classical aligner of ``nmt align --baseline eflomal``).

Every aligner's record carries the same rates and link counts (:func:`scores`); with a training
text's words (``--seen-src``/``--seen-tgt``) also the same scores on the links whose German and
English words that text holds (:func:`seen_scores`, ``seen_*`` fields), models and baselines alike.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any, Optional

import nmt
from _rwth_gold import GoldSet
from nmt.decode.word_merge import WordAlignment
from nmt.evaluation.statistical_aligner import run_eflomal, training_pairs
from nmt.score.alignment import AlignmentScore, on_seen_words, score_alignments

Seen = tuple[frozenset[str], frozenset[str]]
"""The German and English words a training text holds (``--seen-src``, ``--seen-tgt``)."""


def scores(score: AlignmentScore) -> dict[str, Any]:
    """The rates (fractions) and link counts of one aligner on the set."""
    return {k: score.to_dict()[k] for k in ("aer", "precision", "recall", "pairs", "predicted", "sure", "possible")}


def seen_scores(predicted: Sequence[Any], rwth: GoldSet, seen: Optional[Seen]) -> dict[str, Any]:
    """The rates and counts on the links whose German and English words both occur in the training
    text ``seen`` (:func:`nmt.score.alignment.on_seen_words`, as ``nmt align --seen-src/--seen-tgt``
    scores them), as ``seen_*`` fields; nothing without ``seen``."""
    if seen is None:
        return {}
    links = [item.links if isinstance(item, WordAlignment) else item for item in predicted]
    kept = on_seen_words(links, rwth.gold, rwth.sources, rwth.targets, seen)
    return {f"seen_{k}": v for k, v in scores(score_alignments(*kept)).items()}


def diagonal(rwth: GoldSet, seen: Optional[Seen] = None) -> dict[str, Any]:
    """The record of a baseline that reads no words: target word j (of T) linked to source word
    floor((j + 0.5) * S / T) (of S), one link per target word as the models give."""
    links = []
    for source, target in zip(rwth.sources, rwth.targets):
        S, T = len(source.split()), len(target.split())
        links.append([(min(S - 1, int((j + 0.5) * S / T)), j) for j in range(T)] if S else [])
    return {
        "aligner": "diagonal",
        "run": None,
        "variant": "diagonal",
        "seed": None,
        "rule": "target word j of T linked to source word floor((j + 0.5) * S / T) of S",
        **scores(nmt.alignment_error(links, rwth.gold)),
        **seen_scores(links, rwth, seen),
    }


def align_eflomal(
    rwth: GoldSet,
    train_files: tuple[Path, Path],
    *,
    tokens: str,
    samplers: int,
    folder: Path,
    repeat: int,
    seen: Optional[Seen] = None,
) -> list[dict[str, Any]]:
    """eflomal's records of one run (``repeat``) trained on the parallel files ``train_files``
    (German, English; split into ``tokens``) plus the gold pairs, ``samplers`` samplers: forward,
    reverse, grow-diag-final-and and intersection."""
    train_src, train_tgt = train_files
    train = training_pairs(train_src, train_tgt, tokens)
    run = run_eflomal(rwth.sources, rwth.targets, train, samplers=samplers, folder=folder, repeat=repeat)
    return [
        {
            "aligner": "eflomal",
            "run": None,
            "variant": f"eflomal {name}",
            "seed": None,
            "repeat": repeat,
            "direction": name,
            "train": f"{train_src} + {train_tgt} ({len(train):,} pairs) + the {len(rwth.gold)} RWTH pairs",
            "train_tokens": f"{tokens}, lowercased (eflomal lowercases every word)",
            **scores(nmt.alignment_error(links, rwth.gold)),
            **seen_scores(links, rwth, seen),
            **run.facts,
        }
        for name, links in run.links.items()
    ]
