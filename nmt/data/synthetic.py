"""A procedural English->German parallel corpus, the same for the same seed everywhere.

Why: a toy corpus on which attention visibly matters. Sentences run from 3 to 40 words, and the
German departs from the English where a fixed-size summary of the source does badly: agreement
(der/den/dem/des, adjective endings), "not a" -> "kein", verb-final subordinate and relative
clauses, separable particles and infinitives sent to the clause end, inversion after a fronted
clause. The English decides the German (one German lemma per English word or fixed phrase, one
word order per structure; "and" only joins main clauses, relative clauses hold no adverbs, a noun
takes a modifier or a relative clause, not both), so a model can learn it almost perfectly.
Only ``Random.random()`` is drawn from (Python promises its stream, not that of ``choice``), and
no ``hash()`` of strings or set order is used: nothing depends on machine, version or PYTHONHASHSEED.
"""

from __future__ import annotations

import pathlib
import re
import zlib
from random import Random
from typing import Optional

from nmt.data.lexicon import (
    _ADJS,
    _ANIMATE,
    _CASES,
    _CITIES,
    _CONTRACT,
    _DEF,
    _DIES,
    _EIN,
    _FRAMES,
    _FRAMES_NOSAY,
    _FRAMES_REL,
    _GEN_PL_DETS,
    _MANNER,
    _MIXED,
    _MOD_PREPS,
    _MODALS,
    _NAMES,
    _NOUN_ALL,
    _PL_DETS,
    _PL_DETS_NUM,
    _PLACE_PREPS,
    _PRONOUNS,
    _REL,
    _SG_DETS,
    _STRONG,
    _SUB_CONJ,
    _THAT,
    _TIME,
    _TO,
    _VERBS,
    _WEAK,
    _WHERE,
    _Prep,
    _Word,
)


class _Gen:
    """Builds sentences top-down, English and German side by side, each part within a word budget.

    The English side is a list of single words, so its length is ``len()``; German comes out as
    tokens with "," standing alone until :func:`_finish` attaches it.
    """

    def __init__(self, rng: Random) -> None:
        self.rng = rng

    def pick(self, seq):
        return seq[int(self.rng.random() * len(seq))]

    def np(
        self,
        room: int,
        case: int,
        depth: int,
        kein: bool = False,
        pool=_NOUN_ALL,
        dets=_PL_DETS,
        plural_p: float = 0.35,
        names: bool = True,
    ) -> tuple[list[str], list[str], int, bool]:
        """A noun phrase of 1..room English words, German in `case` -> (english, german, g, kein used).

        g is the gender, 3 for a plural. Pronouns only as subjects (case 0), names neither in the
        genitive nor where names=False (room >= 2 there). At depth 0 the noun may take a modifier
        ("with the ball", "of the teacher") or a relative clause, deeper ones only adjectives.
        """
        rng = self.rng
        r = rng.random()
        if case == 0 and (r < 0.1 or (room == 1 and r < 0.5)):
            w, plural = self.pick(_PRONOUNS)
            return [w.en], [w.de], 3 if plural else 0, False
        if case != 3 and names and (0.1 <= r < 0.14 or room == 1):
            w = self.pick(_NAMES)
            return [w.en], [w.de], 0, False
        noun, plural = self.pick(pool), rng.random() < plural_p
        det, g = self.pick(dets if plural else _SG_DETS), 3 if plural else noun.g
        adjs: list[_Word] = []
        for _ in range(int(rng.random() * (min(1 if depth else 3, room - 1 - (det.kind != "bare")) + 1))):
            a = self.pick(_ADJS)
            adjs += [a] * (a not in adjs)
        kein = kein and det.key in ("a", "bare")  # not a dog -> kein Hund, not dogs -> keine Hunde
        if kein or det.kind == "ein":
            de, table = [("kein" if kein else det.stem) + _EIN[case][g]], _MIXED
        elif det.kind in ("def", "dies"):
            de, table = [_DEF[case][g] if det.kind == "def" else det.stem + _DIES[case][g]], _WEAK
        else:  # numbers, viele, einige or nothing: strong endings
            table = _STRONG
            de = [det.stem + (_STRONG[case][g] if det.kind == "strong" else "")] * (det.kind != "bare")
        de += [(a.de[:-1] if a.de[-1] == "e" else a.de) + table[case][g] for a in adjs]  # müde -> müden
        de.append((noun.de_dat_pl if case == 2 else noun.de_pl) if plural else noun.de_gen if case == 3 else noun.de)
        w = det.en_pl if plural else det.en_sg
        w = "an" if w == "a" and (adjs[0].en if adjs else noun.en)[0] in "aeiou" else w
        en = [w] * bool(w) + [a.en for a in adjs] + [noun.en_pl if plural else noun.en]
        left = room - len(en)
        if depth == 0 and left >= 3 and rng.random() < 0.5:
            if rng.random() < 0.5:
                rel = self.clause(left, 2, _THAT, gap=-1 if rng.random() < 0.5 else 0, ante_g=g)
                if rel:
                    en, de = en + rel[0], de + [","] + rel[1] + [","]
            else:
                pe, pd = self.pp(self.pick(_MOD_PREPS), left)
                en, de = en + pe, de + pd
        return en, de, g, kein

    def pp(self, prep: _Prep, room: int, place: bool = False) -> tuple[list[str], list[str]]:
        """Preposition and noun phrase in its case within `room` words; in dem -> im, zu der -> zur."""
        if prep.de_city and self.rng.random() < 0.3:
            w = self.pick(_CITIES)
            return prep.en.split() + [w.en], [prep.de_city, w.de]
        dets = _GEN_PL_DETS if prep.case == 3 else _PL_DETS if place else _PL_DETS_NUM
        en, de, _, _ = self.np(
            room - prep.n,
            prep.case,
            1,
            pool=_WHERE if place else _NOUN_ALL,
            dets=dets,
            plural_p=0.1 if place else 0.3,
            names=not place,
        )
        short = _CONTRACT.get((prep.de, de[0]))
        return prep.en.split() + en, [short] + de[1:] if short else [prep.de] * bool(prep.de) + de

    def clause(
        self,
        room: int,
        mode: int,
        conj: Optional[_Word] = None,
        gap: Optional[int] = None,
        ante_g: int = 0,
        say: bool = True,
    ) -> Optional[tuple[list[str], list[str]]]:
        """A clause of at most `room` English words -> (english, german), None if nothing fits.

        mode 0: main clause, 1: inverted (after a fronted clause), 2: verb-final. A relative clause
        has a gap: -1 its subject, 0 its object is the antecedent, of gender ante_g. German order:
        time, objects (dative before accusative), nicht, manner, place, then particle or infinitive.
        """
        rng = self.rng
        frames = (_FRAMES if say else _FRAMES_NOSAY) if gap is None else _FRAMES_REL[gap]
        for attempt in range(20):  # draw a skeleton that fits; the last try is "he sleeps"
            last = attempt == 19 and gap is None
            frame = "i" if last else self.pick(frames)
            verb, cases = _VERBS[frame][0] if last else self.pick(_VERBS[frame]), _CASES.get(frame, ())
            modal = self.pick(_MODALS) if gap is None and not last and rng.random() < 0.2 else None
            neg = not last and rng.random() < 0.25 and (modal is None or modal.neg is not None)
            n_verb = (modal.n_neg if neg else modal.n) if modal else (1 if frame == "c" else 2) * neg
            fixed = (conj.n if conj else 0) + verb.n + n_verb + (frame == "c") + 3 * (frame == "s")
            n_np = (gap != -1) + len(cases) - (gap == 0)
            np_min = 2 if fixed + 2 * n_np <= room else 1  # "the dog"; a name or pronoun when tight
            if fixed + np_min * n_np <= room:
                break
        else:
            return None
        extra, g, pending = room - fixed - np_min * n_np, ante_g, neg  # pending: "not" not yet turned kein
        subj_en: list[str] = []
        subj_de: list[str] = []
        objs_en: list[str] = []
        objs_de: list[str] = []
        if gap != -1:
            subj_en, subj_de, g, _ = self.np(
                np_min + int(rng.random() * (extra + 1)),
                0,
                gap is not None,
                pool=_ANIMATE if rng.random() < 0.85 else _NOUN_ALL,
                dets=_PL_DETS_NUM,
            )
            extra -= len(subj_en) - np_min
        for i, case in enumerate(cases):
            if i != gap:
                oe, od, _, used = self.np(
                    np_min + int(rng.random() * (extra + 1)),
                    case,
                    gap is not None,
                    pending,
                    pool=_ANIMATE if case == 2 else _NOUN_ALL,
                )
                objs_en, objs_de, pending = objs_en + oe, objs_de + od, pending and not used
                extra -= len(oe) - np_min
        pred = self.pick(_ADJS) if frame == "c" else None
        time = manner = place = None
        if gap is None and frame != "s":  # adverbials use what the noun phrases left over
            if rng.random() < 0.35 and (t := self.pick(_TIME)).n <= extra:
                time, extra = t, extra - t.n
            if frame != "c" and extra and rng.random() < 0.3:
                manner, extra = self.pick(_MANNER), extra - 1
            prep = _TO if frame == "m" and rng.random() < 0.5 else self.pick(_PLACE_PREPS)
            if extra >= prep.n + 2 and rng.random() < 0.35:
                place = self.pp(prep, prep.n + 2 + int(rng.random() * (extra - prep.n - 1)), place=True)
                extra -= len(place[0])
        comp = self.clause(3 + extra, 2, _THAT, say=False) if frame == "s" else None  # "that he sleeps" fits

        pl = int(g == 3)
        if modal:
            verb_en = (modal.neg if neg else modal.en)[pl].split() + verb.en.split()
            fin, tail = modal.de[pl], verb.de_inf
        else:
            verb_en = (
                (
                    [verb.en_pl if pl else verb.en3, "not"]
                    if frame == "c"
                    else ["do" if pl else "does", "not"] + verb.en.split()
                )
                if neg
                else (verb.en_pl if pl else verb.en3).split()
            )
            fin, tail = (verb.part if mode == 2 else "") + (verb.de_pl if pl else verb.de3), verb.part
        en = (conj.en.split() if conj else []) + subj_en + verb_en + objs_en + [w.en for w in (pred, manner) if w]
        en += (place[0] if place else []) + (time.en.split() if time else []) + (comp[0] if comp else [])
        place_de = place[1] if place else []
        mid = ([time.de] if time else []) + objs_de + (place_de if frame == "c" else [])  # ist im Park nicht müde
        mid += ["nicht"] * pending + ([manner.de] if manner else []) + ([] if frame == "c" else place_de)
        mid += [pred.de] if pred else []
        if mode == 2:
            if gap is not None:
                first = _REL[cases[0] if gap == 0 else 0][ante_g]  # den, dem, die, ...
            elif conj is not None:
                first = conj.de
            else:
                raise ValueError("a verb-final clause starts with a conjunction or a relative pronoun")
            de = [first] + subj_de + mid + ([tail, fin] if modal else [fin])
        else:
            de = (subj_de + [fin] if mode == 0 else [fin] + subj_de) + mid + [tail] * bool(tail)
        return en, de + ([","] + comp[1] + [","] if comp else [])

    def sentence(self, target: int) -> tuple[list[str], list[str]]:
        """Clauses joined by and/und, subordinating conjunctions or a fronted clause, up to `target` words."""
        rng = self.rng

        def chunk(room: int) -> int:  # long sentences get several clauses of 4..15 words
            return room if room <= 15 else 4 + int(rng.random() * 12)

        en: list[str] = []
        de: list[str] = []
        if target >= 8 and rng.random() < 0.15:  # "if the dog barks, the man sleeps" / "..., schläft der Mann"
            front = self.clause(min(target - 2, 4 + int(rng.random() * 8)), 2, self.pick(_SUB_CONJ[:4]), say=False)
            if front:
                en, de = front[0], front[1] + [","]
                en[-1] += ","
        main = self.clause(chunk(target - len(en)), 1 if en else 0)
        if main is None:
            return [], []
        en, de, fails = en + main[0], de + main[1], 0
        while target - len(en) >= 3 and fails < 5:
            room = target - len(en)
            if rng.random() < 0.35:  # "and" only ever joins main clauses
                c = self.clause(chunk(room - 1), 0)
                if c:
                    en, de = en + ["and"] + c[0], de + ["und"] + c[1]
            else:  # each subordinate clause hangs on the one before; the German is the same either way
                c = self.clause(chunk(room), 2, self.pick(_SUB_CONJ))
                if c:
                    en, de = en + c[0], de + [","] + c[1] + [","]
            fails += c is None
        return en, de


def _finish(tokens: list[str]) -> str:
    """Attach commas to the word before, drop doubled or trailing ones, capitalize, add the period."""
    s = re.sub(r"( ,)+", ",", " ".join(tokens)).rstrip(",")
    return s[0].upper() + s[1:] + "."


# ------------------------------------------------------------------ public interface
def generate_pairs(n: int, seed: int, min_words: int = 3, max_words: int = 40) -> list[tuple[str, str]]:
    """n (english, german) sentence pairs; same (n, seed, ...) -> identical output, on any machine/python.

    Each pair draws a length uniformly from [min_words, max_words] and grows the sentence to it (or a
    word or two short; redrawn if that falls outside), counting English words split at whitespace.
    """
    if n < 0 or min_words < 3 or max_words < min_words:
        raise ValueError(f"need n >= 0 and 3 <= min_words <= max_words, got {n=}, {min_words=}, {max_words=}")
    gen = _Gen(Random(seed))
    pairs: list[tuple[str, str]] = []
    while len(pairs) < n:
        target = min_words + int(gen.rng.random() * (max_words - min_words + 1))
        en, de = gen.sentence(target)
        if min_words <= len(en) <= max_words:
            pairs.append((_finish(en), _finish(de)))
    return pairs


def split_seed(seed: int, split: str) -> int:
    """The generator seed of one split: ``seed * 2**32 + crc32(split name)`` (stable across runs)."""
    return seed * 2**32 + zlib.crc32(split.encode("utf-8"))


def write_corpus(
    out_dir: pathlib.Path, sizes: dict[str, int], seed: int, min_words: int = 3, max_words: int = 40
) -> dict[str, int]:
    """Write {split}.en and {split}.de (UTF-8, one sentence per line, '\\n' endings) for each split.

    Each split draws from its own seed, ``seed * 2**32 + crc32(split name)`` (not the salted
    ``hash()``), so splits are independent streams and adding a split changes no other; the same
    arguments give byte-identical files. Returns the number of lines written per split.
    """
    out_dir = pathlib.Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    counts = {}
    for split, size in sizes.items():
        pairs = generate_pairs(size, split_seed(seed, split), min_words, max_words)
        for side, lang in enumerate(("en", "de")):
            with open(out_dir / f"{split}.{lang}", "w", encoding="utf-8", newline="\n") as f:
                f.writelines(p[side] + "\n" for p in pairs)
        counts[split] = len(pairs)
    return counts
