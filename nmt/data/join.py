"""Long sentence pairs made of consecutive short ones: ``data.join_captions``.

Bahdanau et al. (2015, figure 2) read BLEU by sentence length up to 60 words; Multi30k's captions
stop near 30.  Joining consecutive captions gives longer pairs whose length the experiment
controls: the pairs of each split are taken in their order in groups of 1, 2, ..., N, 1, 2, ...
(N = ``data.join_captions``), and a group's sources are joined by a space, as are its targets, so a
joined pair is still a translation of itself.  The construction is fixed by N alone, so the same
test set comes out on every machine.  Joined captions are not natural long sentences: they have no
clause structure across the joins, only more content to carry.
"""

from __future__ import annotations

from nmt.data.sources import Raw


def group_sizes(count: int, largest: int) -> list[int]:
    """Sizes 1, 2, ..., ``largest``, 1, 2, ... covering ``count`` items (the last group may be short)."""
    sizes, size = [], 1
    while count > 0:
        sizes.append(min(size, count))
        count -= size
        size = size % largest + 1
    return sizes


def join_pairs(raw: Raw, largest: int) -> Raw:
    """``raw`` with each split's consecutive pairs joined in groups of :func:`group_sizes`; 1: as it is."""
    if largest <= 1:
        return raw
    joined: Raw = {}
    for split, (src, tgt) in raw.items():
        out_src, out_tgt, start = [], [], 0
        for size in group_sizes(len(src), largest):
            out_src.append(" ".join(line.strip() for line in src[start : start + size]))
            out_tgt.append(" ".join(line.strip() for line in tgt[start : start + size]))
            start += size
        joined[split] = (out_src, out_tgt)
    return joined
