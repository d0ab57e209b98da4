"""The reversal task (after Sockeye's system tests): the target is the source reversed, each word
upper-cased.  Learning it needs attention over the whole source (the reordering) and a lexicon, so
a tiny model learns it in minutes if and only if its attention works: the tests' toy task and
``nmt.check_attention(..., learn=True)``."""

from __future__ import annotations

import random
from pathlib import Path

TOY_WORDS = (
    "ant",
    "bee",
    "cat",
    "dog",
    "eel",
    "fox",
    "gnu",
    "hen",
    "ibis",
    "jay",
    "kiwi",
    "lark",
    "mole",
    "newt",
    "owl",
    "pig",
)


def reversal_pairs(n: int, seed: int, min_len: int = 2, max_len: int = 9) -> list[tuple[str, str]]:
    """``n`` pairs of ``min_len`` to ``max_len`` words: (source, the source reversed and upper-cased)."""
    rng = random.Random(seed)
    pairs = []
    for _ in range(n):
        words = [rng.choice(TOY_WORDS) for _ in range(rng.randint(min_len, max_len))]
        pairs.append((" ".join(words), " ".join(w.upper() for w in reversed(words))))
    return pairs


def write_reversal(
    folder: Path, sizes: dict[str, int], seed: int = 100, min_len: int = 2, max_len: int = 9
) -> dict[str, list[str]]:
    """The task as plain-text split files in ``folder`` (split k drawn with seed ``seed + k``); returns
    ``data.local_files``."""
    folder.mkdir(parents=True, exist_ok=True)
    files = {}
    for offset, (split, n) in enumerate(sizes.items()):
        pairs = reversal_pairs(n, seed + offset, min_len, max_len)
        src, tgt = folder / f"{split}.src.txt", folder / f"{split}.tgt.txt"
        src.write_text("".join(s + "\n" for s, _ in pairs), encoding="utf-8")
        tgt.write_text("".join(t + "\n" for _, t in pairs), encoding="utf-8")
        files[split] = [str(src), str(tgt)]
    return files
