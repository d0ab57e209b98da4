"""Two more real corpora beside Multi30k's captions: the Europarl sample (long sentences, the RWTH gold's
domain) and Tatoeba's German-English pairs (short everyday sentences, d2l.ai's kind of file).

Neither comes with splits, so both are split here by a seeded hash of one side's sentence
(:func:`hash_split`): every translation of one sentence lands on one side, the same on every machine,
whatever the file's order (Tatoeba's lines are sorted by length).  The Europarl sample is also the
domain of the RWTH gold alignments, and a few of the gold's sentences occur in it: every pair whose
German or English line is a gold sentence is removed before the split, and counted
(:class:`Excluded`), so no model is trained or selected on the text it is then aligned on.

- **Europarl** (``data.corpus: europarl``, de-en or en-de): NLTK's ComTrans sample, 23,580 pairs
  (Koehn 2005).  Read from a mirror folder holding ``comtrans.g.gz`` (German, UTF-8),
  ``comtrans.e.gz`` (English, Latin-1) or NLTK's ``comtrans.zip``; downloaded as NLTK's zip
  otherwise.  Needs the RWTH gold (``data.gold_alignments``).
- **Tatoeba** (``data.corpus: tatoeba``, de-en or en-de): manythings.org's ``deu-eng.zip``
  (``deu.txt``: English, a tab, German), 169,813 pairs (CC BY 2.0, tatoeba.org).

Shares of the splits are per mille of the split key's hash: :data:`SPLIT_SHARES`.
"""

from __future__ import annotations

import hashlib
import io
import logging
import os
import tarfile
import zipfile
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from nmt.data.sources import MIRROR_ENV, Raw, _download
from nmt.util.errors import DataError

logger = logging.getLogger(__name__)

EUROPARL_URL = "https://raw.githubusercontent.com/nltk/nltk_data/gh-pages/packages/corpora/comtrans.zip"
TATOEBA_URL = "https://www.manythings.org/anki/deu-eng.zip"
SPLIT_SHARES = {"europarl": {"valid": 45, "test": 45}, "tatoeba": {"valid": 15, "test": 15}}
"""Per mille of each corpus's split keys that go to valid and test; the rest is train."""
PAIRS = ("de-en", "en-de")


@dataclass(frozen=True)
class Excluded:
    """What was taken out before the split: pairs sharing a line with the gold set, and the gold's identity."""

    pairs: int  # pairs removed
    german_lines: int  # gold German sentences that occur in the corpus
    english_lines: int  # gold English sentences that occur in the corpus
    gold_sha256: str  # of the gold's German and English sentences as read

    def to_dict(self) -> dict[str, object]:
        return {
            "reason": "a German or English line of the RWTH gold alignments",
            "pairs": self.pairs,
            "gold_german_lines_found": self.german_lines,
            "gold_english_lines_found": self.english_lines,
            "gold_sentences_sha256": self.gold_sha256,
        }


def hash_split(key: str, seed: int, shares: dict[str, int]) -> str:
    """The split of a pair whose split key is ``key``: ``valid`` or ``test`` for the first per mille of
    the key's seeded hash given by ``shares``, else ``train``.  Stable across machines and runs."""
    bucket = int.from_bytes(hashlib.sha256(f"{seed}\t{key}".encode()).digest()[:8], "big") % 1000
    for split in ("valid", "test"):
        if bucket < shares[split]:
            return split
        bucket -= shares[split]
    return "train"


def _split(
    pairs: Iterable[tuple[str, str, str]], seed: int, shares: dict[str, int]
) -> dict[str, list[tuple[str, str]]]:
    """(key, German, English) -> {split: [(German, English)]}."""
    splits: dict[str, list[tuple[str, str]]] = {"train": [], "valid": [], "test": []}
    for key, de, en in pairs:
        splits[hash_split(key, seed, shares)].append((de, en))
    return splits


def _as_raw(splits: dict[str, list[tuple[str, str]]], src: str) -> Raw:
    """German-English pairs per split as a loader's source and target lines."""
    raw: Raw = {}
    for name, pairs in splits.items():
        de, en = [p[0] for p in pairs], [p[1] for p in pairs]
        raw[name] = (de, en) if src == "de" else (en, de)
    return raw


def _check_pair(corpus: str, src: str, tgt: str) -> None:
    if f"{src}-{tgt}" not in PAIRS:
        raise DataError(f"the {corpus} corpus is German-English; got {src}-{tgt} (use de-en or en-de)")


def _mirror(mirror: str | Path | None) -> Path | None:
    mirror = mirror if mirror is not None else (os.environ.get(MIRROR_ENV) or None)
    if mirror is None:
        return None
    folder = Path(mirror)
    if not folder.is_dir():
        raise DataError(f"mirror folder {folder} does not exist")
    return folder


def _fetched(url: str, mirror: Path | None, names: tuple[str, ...], download_dir: Path) -> Path:
    """The first of ``names`` in ``mirror``, or ``url`` downloaded once into ``download_dir``."""
    if mirror is not None:
        for name in names:
            if (mirror / name).is_file():
                return mirror / name
        raise DataError(f"mirror {mirror} holds none of {', '.join(names)}")
    dest = Path(download_dir) / url.rsplit("/", 1)[-1]
    if dest.is_file():
        logger.info("reusing %s", dest)
        return dest
    if not _download(url, dest):
        raise DataError(f"{url} is not there (HTTP 404); use --mirror DIR with a local copy")
    return dest


def _decode(line: bytes) -> str:
    """A line of the ComTrans files: UTF-8 where it is valid (the German side), else Latin-1 (the English)."""
    try:
        return line.decode("utf-8")
    except UnicodeDecodeError:
        return line.decode("latin-1")


def _lines(data: bytes) -> list[str]:
    """Lines of ``data`` without their CR LF ends, each decoded by :func:`_decode`."""
    text = data.split(b"\n")
    if text and text[-1] == b"":
        text.pop()
    return [_decode(line.rstrip(b"\r")) for line in text]


def _read(path: Path) -> bytes:
    import gzip

    try:
        data = path.read_bytes()
        return gzip.decompress(data) if path.suffix == ".gz" else data
    except (OSError, EOFError) as exc:
        raise DataError(f"cannot read {path}: {exc}") from None


# ---------------------------------------------------------------- the RWTH gold sentences


def gold_sentences(path: str | Path) -> tuple[list[str], list[str]]:
    """The German and English sentences of the RWTH gold alignments: the archive
    ``DeEnGoldAlignment.tar.gz`` or a folder holding ``DeEn/de`` and ``DeEn/en`` (Latin-1)."""
    where = Path(path)
    try:
        if where.is_dir():
            sides = [(where / "DeEn" / lang).read_bytes() for lang in ("de", "en")]
        else:
            with tarfile.open(where) as archive:
                sides = []
                for lang in ("de", "en"):
                    member = archive.extractfile(f"DeEn/{lang}")
                    if member is None:
                        raise KeyError(lang)
                    sides.append(member.read())
    except (OSError, KeyError, tarfile.TarError) as exc:
        raise DataError(
            f"data.gold_alignments={where}: cannot read the RWTH gold sentences (DeEn/de, DeEn/en) from it ({exc})"
        ) from None
    german, english = ([line.decode("latin-1").strip() for line in side.split(b"\n")] for side in sides)
    return [s for s in german if s], [s for s in english if s]


def _without_gold(pairs: list[tuple[str, str]], gold: str | Path) -> tuple[list[tuple[str, str]], Excluded]:
    german, english = gold_sentences(gold)
    de_set, en_set = set(german), set(english)
    kept = [(de, en) for de, en in pairs if de.strip() not in de_set and en.strip() not in en_set]
    seen_de = {de.strip() for de, _ in pairs} & de_set
    seen_en = {en.strip() for _, en in pairs} & en_set
    digest = hashlib.sha256("\n".join([*german, "", *english]).encode("utf-8")).hexdigest()
    return kept, Excluded(len(pairs) - len(kept), len(seen_de), len(seen_en), digest)


# ---------------------------------------------------------------- Europarl (ComTrans sample)


def _europarl_pairs(path: Path) -> list[tuple[str, str]]:
    """German-English pairs from NLTK's ``comtrans.zip`` (``alignment-de-en.txt``: German, English and
    links, three lines a pair) or from ``comtrans.g.gz`` beside ``comtrans.e.gz``."""
    if path.suffix == ".zip":
        try:
            with zipfile.ZipFile(path) as archive:
                name = next(n for n in archive.namelist() if n.endswith("alignment-de-en.txt"))
                lines = [line for line in _lines(archive.read(name)) if line.strip()]
        except (OSError, StopIteration, zipfile.BadZipFile) as exc:
            raise DataError(f"{path}: not NLTK's comtrans.zip with alignment-de-en.txt ({exc})") from None
        if len(lines) % 3:
            raise DataError(f"{path}: alignment-de-en.txt has {len(lines)} lines, not three per pair")
        return [(lines[i], lines[i + 1]) for i in range(0, len(lines), 3)]
    german = _lines(_read(path))
    english = _lines(_read(path.with_name(path.name.replace(".g.", ".e."))))
    if len(german) != len(english):
        raise DataError(f"{path} has {len(german)} lines but its English file {len(english)}")
    return list(zip(german, english))


def load_europarl(
    src: str, tgt: str, mirror: str | Path | None, download_dir: Path, gold: str | Path | None, seed: int
) -> tuple[Raw, Excluded]:
    """The Europarl sample split by a seeded hash of the German sentence, without the gold's sentences."""
    _check_pair("europarl", src, tgt)
    if gold is None:
        raise DataError(
            "data.corpus=europarl removes the RWTH gold alignments' sentences before splitting: run "
            "`nmt data fetch-alignments` first, or give --gold (data.gold_alignments) DeEnGoldAlignment.tar.gz"
        )
    path = _fetched(EUROPARL_URL, _mirror(mirror), ("comtrans.g.gz", "comtrans.g", "comtrans.zip"), download_dir)
    pairs, excluded = _without_gold(_europarl_pairs(path), gold)
    logger.info("europarl: %d pairs removed (a line of the RWTH gold set)", excluded.pairs)
    splits = _split(((de.strip(), de, en) for de, en in pairs), seed, SPLIT_SHARES["europarl"])
    return _as_raw(splits, src), excluded


# ---------------------------------------------------------------- Tatoeba (manythings.org)


def load_tatoeba(src: str, tgt: str, mirror: str | Path | None, download_dir: Path, seed: int) -> Raw:
    """Tatoeba's German-English pairs split by a seeded hash of the English sentence."""
    _check_pair("tatoeba", src, tgt)
    path = _fetched(TATOEBA_URL, _mirror(mirror), ("deu-eng.zip", "deu.txt"), download_dir)
    try:
        if path.suffix == ".zip":
            with zipfile.ZipFile(path) as archive:
                data = archive.read("deu.txt")
        else:
            data = path.read_bytes()
        text = io.TextIOWrapper(io.BytesIO(data), encoding="utf-8", newline="").read()
    except (OSError, KeyError, zipfile.BadZipFile, UnicodeDecodeError) as exc:
        raise DataError(f"{path}: not manythings.org's deu-eng.zip holding deu.txt in UTF-8 ({exc})") from None
    triples = []
    for number, line in enumerate(text.split("\n"), 1):
        if not line.strip():
            continue
        fields = line.rstrip("\r").split("\t")
        if len(fields) < 2:
            raise DataError(f"{path}: line {number} has no tab between the English and the German sentence")
        triples.append((fields[0].strip(), fields[1], fields[0]))
    splits = _split(triples, seed, SPLIT_SHARES["tatoeba"])
    return _as_raw(splits, src)
