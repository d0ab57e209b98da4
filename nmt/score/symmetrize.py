"""Two directional word alignments of a sentence pair joined into one: grow-diag-final-and.

A directional aligner (IBM models, fast_align, eflomal) links each word of one side to at most one
word of the other, so each direction misses the many-to-one links of the other.  Och and Ney
(2003, "A Systematic Comparison of Various Statistical Alignment Models", section 4.4) join the two
directions by a heuristic between their intersection (precise, sparse) and their union (dense,
noisy); Koehn et al. (2005, "Edinburgh System Description for the 2005 IWSLT Speech Translation
Evaluation") name the variant that phrase-based systems (Moses) use, grow-diag-final-and:

1. start from the intersection of the two directions;
2. grow-diag: while anything changes, for each link in the alignment, add each of its eight
   neighbours (the links one word away on either side, diagonals included) that is in the union
   and of which the source word or the target word is still unaligned;
3. final-and: for each link of the forward direction, then of the reverse one, add it where both
   its source word and its target word are still unaligned.

The sweeps follow the order of Koehn's pseudo-code (target word outer, source word inner, each
link seen as the alignment stands at that moment), which decides the rare cases where the order
matters.  Links are (source word, target word) pairs, 0-based.  Pure Python: no model, no NumPy.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable

Link = tuple[int, int]
"""(source word, target word), 0-based."""

NEIGHBOURS: tuple[Link, ...] = ((-1, 0), (0, -1), (1, 0), (0, 1), (-1, -1), (-1, 1), (1, -1), (1, 1))
"""Offsets (source, target) of a link's neighbours: the four beside it, then the four diagonal ones."""


def _check(links: Collection[Link], source_words: int, target_words: int, what: str) -> None:
    outside = next((link for link in links if not (0 <= link[0] < source_words and 0 <= link[1] < target_words)), None)
    if outside is not None:
        raise ValueError(f"{what} link {outside} lies outside a pair of {source_words} x {target_words} words")


def grow_diag_final_and(
    forward: Collection[Link], reverse: Collection[Link], source_words: int, target_words: int
) -> set[Link]:
    """The grow-diag-final-and join (module docstring) of one pair's ``forward`` and ``reverse`` links,
    the pair having ``source_words`` and ``target_words`` words.  Always between the intersection and
    the union of the two; a link outside the pair is a ValueError."""
    _check(forward, source_words, target_words, "forward")
    _check(reverse, source_words, target_words, "reverse")
    union = set(forward) | set(reverse)
    alignment = set(forward) & set(reverse)
    aligned_source = {i for i, _ in alignment}
    aligned_target = {j for _, j in alignment}

    def add(link: Link) -> None:
        alignment.add(link)
        aligned_source.add(link[0])
        aligned_target.add(link[1])

    grown = True
    while grown:  # grow-diag
        grown = False
        for j in range(target_words):
            for i in range(source_words):
                if (i, j) not in alignment:
                    continue
                for di, dj in NEIGHBOURS:
                    near = (i + di, j + dj)
                    loose = near[0] not in aligned_source or near[1] not in aligned_target
                    if loose and near in union and near not in alignment:
                        add(near)
                        grown = True
    for direction in (forward, reverse):  # final-and
        for i, j in sorted(direction, key=lambda link: (link[1], link[0])):
            if i not in aligned_source and j not in aligned_target:
                add((i, j))
    return alignment


def symmetrize_corpus(
    forward: Iterable[Collection[Link]], reverse: Iterable[Collection[Link]], sizes: Iterable[tuple[int, int]]
) -> list[set[Link]]:
    """:func:`grow_diag_final_and` of every pair: its forward links, reverse links and (source, target) word counts."""
    return [grow_diag_final_and(f, r, s, t) for f, r, (s, t) in zip(forward, reverse, sizes, strict=True)]
