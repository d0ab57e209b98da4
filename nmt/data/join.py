"""Long sentence pairs made of consecutive short ones: ``data.join_captions``.

Bahdanau et al. (2015, figure 2) read BLEU by sentence length up to 60 words; Multi30k's captions
stop near 30.  Joining consecutive captions gives longer pairs whose length the experiment
controls: the pairs of each split are taken in their order in groups of 1, 2, ..., N, 1, 2, ...
(N = ``data.join_captions``), and a group's sources are joined by a space, as are its targets, so a
joined pair is still a translation of itself.  The construction is fixed by N alone, so the same
test set comes out on every machine.  The training split is also capped in length
(``data.max_len`` words, the paper's 30 or 50): a group longer than the cap is cut, in order, into
the longest runs of its captions that fit (:func:`fit_groups`), so every caption is trained on under
either cap and the two training conditions differ in pair length, not in how much text they hold.  Joined captions are not natural long sentences: they have no
clause structure across the joins, only more content to carry.
"""

from __future__ import annotations

from typing import Optional

from nmt.data.sources import Raw


def group_sizes(count: int, largest: int) -> list[int]:
    """Sizes 1, 2, ..., ``largest``, 1, 2, ... covering ``count`` items (the last group may be short)."""
    sizes, size = [], 1
    while count > 0:
        sizes.append(min(size, count))
        count -= size
        size = size % largest + 1
    return sizes


def fit_groups(lengths: list[int], sizes: list[int], cap: int) -> list[int]:
    """``sizes`` (consecutive groups of items with word counts ``lengths``) with each group longer than
    ``cap`` words cut, in order, into the longest runs that fit; an item longer than the cap alone
    stays a group of its own (the length filter then drops it)."""
    out, start = [], 0
    for size in sizes:
        run, words = 0, 0
        for n in lengths[start : start + size]:
            if run and words + n > cap:
                out.append(run)
                run, words = 0, 0
            run, words = run + 1, words + n
        out.append(run)
        start += size
    return out


def join_pairs(raw: Raw, largest: int, cap: Optional[int] = None, capped: tuple[str, ...] = ("train",)) -> Raw:
    """``raw`` with each split's consecutive pairs joined in groups of :func:`group_sizes`; 1: as it is.
    With ``cap``, the groups of the ``capped`` splits are cut to fit it (:func:`fit_groups`; a pair's
    length is the longer of its two sides, in whitespace words)."""
    if largest <= 1:
        return raw
    joined: Raw = {}
    for split, (src, tgt) in raw.items():
        sizes = group_sizes(len(src), largest)
        if cap is not None and split in capped:
            sizes = fit_groups([max(len(s.split()), len(t.split())) for s, t in zip(src, tgt)], sizes, cap)
        out_src, out_tgt, start = [], [], 0
        for size in sizes:
            out_src.append(" ".join(line.strip() for line in src[start : start + size]))
            out_tgt.append(" ".join(line.strip() for line in tgt[start : start + size]))
            start += size
        joined[split] = (out_src, out_tgt)
    return joined
