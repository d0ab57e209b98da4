"""The embedded English->German generator: determinism, lengths, vocabulary and German syntax.

Properties are checked over a few thousand generated pairs rather than against copied outputs,
so the tests hold for any seed and survive changes to the lexicon.
"""

from __future__ import annotations

import hashlib
import os
import re
import subprocess
import sys
import zlib
from collections import Counter
from pathlib import Path
from random import Random

import pytest

from nmt.data import synthetic
from nmt.data.synthetic import generate_pairs, write_corpus

VERBS = [v for frame in synthetic._VERBS.values() for v in frame]
FINITE = {p + f for v in VERBS for f in (v.de3, v.de_pl) for p in ("", v.part)}
FINITE |= {f for m in synthetic._MODALS for f in m.de}
MODAL_EN = {"can", "cannot", "must", "should", "want", "wants", "would"}


def words(sentence: str) -> list[str]:
    return sentence.rstrip(".").replace(",", "").split()


@pytest.fixture(scope="module")
def pairs() -> list[tuple[str, str]]:
    return generate_pairs(20_000, seed=11)


def test_same_seed_same_pairs_and_different_seed_different() -> None:
    a = generate_pairs(400, seed=5)
    assert a == generate_pairs(400, seed=5)
    assert generate_pairs(100, seed=5) == a[:100]  # n only truncates the stream
    b = generate_pairs(400, seed=6)
    assert sum(x != y for x, y in zip(a, b)) > 390


def test_output_does_not_depend_on_the_process_hash_seed() -> None:
    code = (
        "import hashlib; from nmt.data.synthetic import generate_pairs; "
        "print(hashlib.sha256(repr(generate_pairs(300, seed=9)).encode()).hexdigest())"
    )
    here = hashlib.sha256(repr(generate_pairs(300, seed=9)).encode()).hexdigest()
    root = Path(__file__).resolve().parents[2]
    for hash_seed in ("0", "4242"):
        env = {**os.environ, "PYTHONHASHSEED": hash_seed}
        out = subprocess.run(
            [sys.executable, "-c", code], env=env, cwd=root, capture_output=True, text=True, check=True, timeout=300
        )
        assert out.stdout.strip() == here


def test_write_corpus_is_byte_identical_and_splits_are_separate_streams(tmp_path: Path) -> None:
    sizes = {"train": 300, "valid": 40, "test": 40}
    assert write_corpus(tmp_path / "a", sizes, seed=1) == sizes
    write_corpus(tmp_path / "b", sizes, seed=1)
    write_corpus(tmp_path / "c", {"train": 300}, seed=1)  # adding splits changes no other
    for split, n in sizes.items():
        for lang in ("en", "de"):
            data = (tmp_path / "a" / f"{split}.{lang}").read_bytes()
            assert data == (tmp_path / "b" / f"{split}.{lang}").read_bytes()
            assert data.count(b"\n") == n and data.endswith(b"\n") and b"\r" not in data
            data.decode("utf-8")
    assert (tmp_path / "a" / "train.de").read_bytes() == (tmp_path / "c" / "train.de").read_bytes()
    train = (tmp_path / "a" / "train.en").read_text(encoding="utf-8").splitlines()
    test = (tmp_path / "a" / "test.en").read_text(encoding="utf-8").splitlines()
    assert sum(x != y for x, y in zip(train, test)) > 35
    # the derived seed is a contract shared with nmt.data.sources.load_synthetic
    expected = generate_pairs(40, seed=1 * 2**32 + zlib.crc32(b"test"))
    assert [en for en, _ in expected] == test


def test_lengths_respect_range_and_spread_evenly(pairs: list[tuple[str, str]]) -> None:
    counts = Counter(len(en.split()) for en, _ in pairs)
    assert set(counts) == set(range(3, 41))  # every length from 3 to 40 occurs, nothing outside
    assert sum(c for n, c in counts.items() if n <= 5) > 0.05 * len(pairs)
    assert sum(c for n, c in counts.items() if n >= 35) > 0.10 * len(pairs)
    assert max(counts.values()) < 2 * len(pairs) / 38


def test_custom_length_range() -> None:
    assert {len(en.split()) for en, _ in generate_pairs(300, seed=2, min_words=10, max_words=12)} <= {10, 11, 12}
    assert {len(en.split()) for en, _ in generate_pairs(50, seed=2, min_words=25, max_words=25)} == {25}
    for bad in ({"min_words": 2}, {"min_words": 9, "max_words": 8}):
        with pytest.raises(ValueError):
            generate_pairs(3, seed=0, **bad)
    assert generate_pairs(0, seed=0) == []


def test_lexicon_has_hundreds_of_english_word_types(pairs: list[tuple[str, str]]) -> None:
    assert len({w.lower() for en, _ in pairs for w in words(en)}) >= 300


def test_the_german_is_a_function_of_the_english(pairs: list[tuple[str, str]]) -> None:
    short = generate_pairs(5000, seed=12, max_words=6)  # short sentences repeat: a strong check
    seen: dict[str, str] = {}
    for en, de in pairs + short:
        assert seen.setdefault(en, de) == de, en
    assert len(seen) < len(pairs) + len(short) - 100  # the check did meet repeated sentences


def test_surface_form(pairs: list[tuple[str, str]]) -> None:
    for en, de in pairs:
        for s in (en, de):
            assert s[0].isupper() and s.endswith(".") and s == s.strip() and "  " not in s
            assert " ," not in s and ",," not in s and ",." not in s
        assert "," not in en or en.count(",") == 1  # English has a comma only after a fronted clause


def test_negation_maps_to_nicht_or_kein(pairs: list[tuple[str, str]]) -> None:
    negated = re.compile(r"\b(not|cannot)\b")
    neg = [(en, de) for en, de in pairs if negated.search(en)]
    assert len(neg) > 2000
    assert all(re.search(r"\b(nicht|kein\w*)\b", de) for _, de in neg)
    assert all(negated.search(en) for en, de in pairs if re.search(r"\b(nicht|kein\w*)\b", de))
    # "does not see a dog" -> "sieht keinen Hund": an indefinite object takes the negation
    single = [(en, de) for en, de in neg if "," not in de and " und " not in de]  # one clause, no relative
    indefinite = [de for en, de in single if re.search(r"\bdo(es)? not \w+ an? ", en)]
    assert len(indefinite) > 20 and all(re.search(r"\bkein\w*\b", de) for de in indefinite)


@pytest.mark.parametrize("en_word, de_word", [("because", "weil"), ("although", "obwohl"), (None, "dass")])
def test_subordinate_clauses_put_the_finite_verb_last(pairs: list[tuple[str, str]], en_word, de_word) -> None:
    checked = 0
    for en, de in pairs:
        if en_word:
            assert len(re.findall(rf"\b{en_word}\b", en, re.I)) == len(re.findall(rf"\b{de_word}\b", de, re.I))
        tail = re.split(rf"\b{de_word}\b", de, flags=re.I)
        if len(tail) > 1 and "," not in tail[-1] and " und " not in tail[-1]:  # the last clause of the pair
            assert words(tail[-1])[-1] in FINITE, de
            checked += 1
    assert checked > 200


def test_separable_particle_ends_a_simple_main_clause(pairs: list[tuple[str, str]]) -> None:
    separable = [v for v in VERBS if v.part]
    checked = 0
    for en, de in pairs:
        if "," in de or " und " in de or MODAL_EN & set(words(en.lower())):
            continue  # one main clause without a modal: "the child calls the teacher"
        for v in separable:
            if re.search(rf"\b({v.en}|{v.en3})\b", en):
                assert words(de)[-1] == v.part, (en, de)  # "das Kind ruft den Lehrer an"
                checked += 1
    assert checked > 100


def test_relative_clauses_and_inverted_main_clauses_exist(pairs: list[tuple[str, str]]) -> None:
    assert sum(bool(re.search(r", (den|dem|denen) ", de)) for _, de in pairs) > 300
    fronted = [
        de
        for en, de in pairs
        if re.match(r"(Because|If|Although|While) [^,]*, ", en) and " that " not in en.split(",")[0]
    ]  # no relative clause: the first German comma ends it
    assert len(fronted) > 200
    assert all(words(de.split(", ")[1])[0] in FINITE for de in fronted)  # "Weil ..., schläft der Mann"


def test_article_and_adjective_endings_agree(pairs: list[tuple[str, str]]) -> None:
    """After der/die/das/den/dem/des an adjective ends in -e/-en; after ein- by the mixed table."""
    endings = {"": ("er", "es"), "e": ("e",), "en": ("en",), "em": ("en",), "er": ("en",), "es": ("en",)}
    checked = 0
    # not right after a comma (relative pronoun), and "ein und" is a particle (schaltet ... ein), not an article
    article = re.compile(r"(?<!, )\b(der|die|das|den|dem|des|ein(e|en|em|er|es)?) (?!und )([a-zäöüß]\w*)")
    for _, de in pairs:
        for m in article.finditer(de):
            adj = m.group(3)
            if m.group(1).startswith("ein"):
                assert adj.endswith(endings[m.group(2) or ""]), (m.group(0), de)
            else:
                assert adj.endswith(("e", "en")), (m.group(0), de)
            checked += 1
    assert checked > 5000


def test_work_per_word_is_bounded(monkeypatch: pytest.MonkeyPatch) -> None:
    """Generation costs a few random draws per word and rarely redraws a sentence, so 50k pairs
    take seconds on any machine.  Work is counted, not timed: a clock measures the machine too."""
    draws = Counter()

    class CountingRandom(Random):
        def random(self) -> float:
            draws["random"] += 1
            return super().random()

    sentence = synthetic._Gen.sentence

    def counted_sentence(self: synthetic._Gen, target: int) -> tuple[list[str], list[str]]:
        draws["sentence"] += 1
        return sentence(self, target)

    plain = generate_pairs(5_000, seed=3)
    monkeypatch.setattr(synthetic, "Random", CountingRandom)
    monkeypatch.setattr(synthetic._Gen, "sentence", counted_sentence)
    pairs = generate_pairs(5_000, seed=3)
    assert pairs == plain  # counting changes nothing
    assert len(pairs) <= draws["random"] < 10 * sum(len(en.split()) for en, _ in pairs)  # a length each, at least
    assert draws["sentence"] < 1.05 * len(pairs)
