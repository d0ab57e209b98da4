"""The Europarl sample and Tatoeba (nmt.data.corpora): seeded hash splits that keep every translation of a
sentence on one side, the RWTH gold's sentences removed from Europarl and counted, NLTK's zip read like the
split files, and one-line errors for a wrong pair, a missing gold set or file, and a malformed line; on the
real files beside the repository (skipped without them), the counts the data README states.
"""

from __future__ import annotations

import gzip
import io
import tarfile
import zipfile
from collections import Counter
from pathlib import Path

import pytest

from nmt.data.corpora import SPLIT_SHARES, gold_sentences, hash_split, load_europarl, load_tatoeba
from nmt.util.errors import DataError

SHARED = Path(__file__).resolve().parents[3] / "shared" / "data"

GERMAN = ["Guten Tag .", "Die Sitzung ist eröffnet .", "Ich danke Ihnen .", "Das ist richtig ."] * 30
ENGLISH = ["Good day .", "The sitting is opened .", "Thank you .", "That is right ."] * 30


def gold_archive(folder: Path, german: list[str], english: list[str]) -> Path:
    path = folder / "DeEnGoldAlignment.tar.gz"
    with tarfile.open(path, "w:gz") as archive:
        for lang, lines in (("de", german), ("en", english)):
            data = ("\n".join(lines) + "\n\n").encode("latin-1")
            info = tarfile.TarInfo(f"DeEn/{lang}")
            info.size = len(data)
            archive.addfile(info, io.BytesIO(data))
    return path


def comtrans_files(folder: Path) -> Path:
    (folder / "comtrans.g.gz").write_bytes(gzip.compress("\r\n".join(GERMAN).encode("utf-8") + b"\r\n"))
    (folder / "comtrans.e.gz").write_bytes(gzip.compress("\r\n".join(ENGLISH).encode("latin-1") + b"\r\n"))
    return folder


def test_a_hash_split_is_stable_seeded_and_near_its_shares() -> None:
    shares = {"valid": 100, "test": 100}
    keys = [f"sentence {i}" for i in range(5000)]
    first = [hash_split(k, 1, shares) for k in keys]
    assert first == [hash_split(k, 1, shares) for k in keys]
    assert first != [hash_split(k, 2, shares) for k in keys]
    counts = Counter(first)
    assert 400 < counts["valid"] < 600 and 400 < counts["test"] < 600 and counts["train"] > 3800


def test_europarl_drops_the_gold_sentences_counts_them_and_keeps_a_sentence_on_one_side(tmp_path: Path) -> None:
    mirror = comtrans_files(tmp_path)
    gold = gold_archive(tmp_path, ["Ich danke Ihnen .", "Nicht im Korpus ."], ["That is right ."])
    raw, excluded = load_europarl("de", "en", mirror, tmp_path / "dl", gold, seed=3)
    assert excluded.pairs == 60 and (excluded.german_lines, excluded.english_lines) == (1, 1)
    everything = [pair for src, tgt in raw.values() for pair in zip(src, tgt)]
    assert len(everything) == 60 and {de for de, _ in everything} == {"Guten Tag .", "Die Sitzung ist eröffnet ."}
    sides = {de: {name for name, (src, _) in raw.items() if de in src} for de, _ in everything}
    assert all(len(names) == 1 for names in sides.values())  # every copy of a sentence in one split
    en_de, _ = load_europarl("en", "de", mirror, tmp_path / "dl", gold, seed=3)
    assert {k: (v[1], v[0]) for k, v in en_de.items()} == raw


def test_nltks_zip_reads_as_the_split_files(tmp_path: Path) -> None:
    gold = gold_archive(tmp_path, ["x"], ["y"])
    files = tmp_path / "files"
    files.mkdir()
    from_files, _ = load_europarl("de", "en", comtrans_files(files), tmp_path, gold, 1)
    blocks = b"".join(
        de.encode("utf-8") + b"\n" + en.encode("latin-1") + b"\n0-0 1-1\n" for de, en in zip(GERMAN, ENGLISH)
    )
    zipped = tmp_path / "nltk"
    zipped.mkdir()
    with zipfile.ZipFile(zipped / "comtrans.zip", "w") as archive:
        archive.writestr("comtrans/alignment-de-en.txt", blocks)
    from_zip, _ = load_europarl("de", "en", zipped, tmp_path, gold, 1)
    assert from_zip == from_files


def test_tatoeba_keeps_every_translation_of_an_english_sentence_in_one_split(tmp_path: Path) -> None:
    lines = [f"Sentence {i}.\tSatz {i}.\tCC-BY 2.0" for i in range(400)] + [
        f"Sentence {i}.\tDer Satz {i}." for i in range(400)
    ]
    with zipfile.ZipFile(tmp_path / "deu-eng.zip", "w") as archive:
        archive.writestr("deu.txt", "\n".join(lines) + "\n")
    raw = load_tatoeba("de", "en", tmp_path, tmp_path / "dl", seed=1)
    assert sum(len(src) for src, _ in raw.values()) == 800
    for name, (_, tgt) in raw.items():
        for other, (_, tgt2) in raw.items():
            assert other == name or not set(tgt) & set(tgt2)
    assert all(len(tgt) % 2 == 0 for _, tgt in raw.values())  # both translations of each English sentence


@pytest.mark.parametrize(
    "call,words",
    [
        (lambda d: load_tatoeba("fr", "en", d, d, 1), "German-English; got fr-en"),
        (lambda d: load_europarl("de", "en", d, d, None, 1), "data.gold_alignments"),
        (lambda d: load_europarl("de", "en", d, d, d / "none.tar.gz", 1), "cannot read the RWTH gold"),
        (lambda d: load_tatoeba("de", "en", d, d, 1), "holds none of deu-eng.zip, deu.txt"),
        (lambda d: load_tatoeba("de", "en", d / "missing", d, 1), "does not exist"),
    ],
)
def test_bad_input_is_one_line(tmp_path: Path, call, words: str) -> None:
    if "gold" in words or "RWTH" in words:
        comtrans_files(tmp_path)
    with pytest.raises(DataError, match=words) as caught:
        call(tmp_path)
    assert "\n" not in str(caught.value)


def test_a_tatoeba_line_without_a_tab_is_named(tmp_path: Path) -> None:
    (tmp_path / "deu.txt").write_text("Hi.\tHallo!\nno tab here\n", encoding="utf-8")
    with pytest.raises(DataError, match="line 2 has no tab"):
        load_tatoeba("de", "en", tmp_path, tmp_path, 1)


def test_the_real_files_give_the_counts_their_readmes_state(tmp_path: Path) -> None:
    europarl, gold = SHARED / "europarl_comtrans", SHARED / "alignments" / "DeEnGoldAlignment.tar.gz"
    if not (europarl / "comtrans.g.gz").is_file() or not gold.is_file():
        pytest.skip(f"the Europarl sample or the RWTH gold is not in {SHARED}")
    raw, excluded = load_europarl("de", "en", europarl, tmp_path, gold, 1)
    assert (excluded.german_lines, excluded.english_lines) == (8, 5)  # as data/europarl_comtrans/README.md says
    assert sum(len(src) for src, _ in raw.values()) + excluded.pairs == 23580
    german, english = gold_sentences(gold)
    for src, tgt in raw.values():
        assert not set(src) & set(german) and not set(tgt) & set(english)
    assert SPLIT_SHARES["europarl"] == {"valid": 45, "test": 45}
