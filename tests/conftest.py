"""Shared pytest fixtures."""

from __future__ import annotations

from pathlib import Path

import pytest

# --- data ----------------------------------------------------------------------------------

MULTI30K_SHARED = Path(__file__).resolve().parents[2] / "shared" / "data" / "multi30k"
"""Real Multi30k files (train/val/test_2016_flickr) shared by the workspace; never copied here."""

TOY_TRAIN = [
    ("Ein Hund läuft über die Wiese.", "A dog runs across the meadow."),
    ("Zwei Kinder spielen im Park.", "Two children play in the park."),
    ("Eine Frau liest ein Buch.", "A woman reads a book."),
    ("Der Mann fährt mit dem Fahrrad.", "The man rides a bike."),
    ("Ein kleines Mädchen lacht.", "A little girl laughs."),
    ("Die Katze schläft auf dem Sofa.", "The cat sleeps on the sofa."),
    ("", "An empty source line."),
    ("Ein Hund bellt laut.", "A dog barks loudly."),
] * 6


@pytest.fixture(scope="session")
def toy_pairs() -> list[tuple[str, str]]:
    """The toy training pairs (German, English), one of them with an empty source."""
    return list(TOY_TRAIN)


@pytest.fixture(scope="session")
def multi30k_dir() -> Path:
    """The shared Multi30k mirror folder; tests that need it skip where it is absent."""
    if not (MULTI30K_SHARED / "train.de.gz").is_file():
        pytest.skip(f"Multi30k files not found in {MULTI30K_SHARED}")
    return MULTI30K_SHARED


@pytest.fixture()
def toy_raw() -> dict[str, tuple[list[str], list[str]]]:
    """A tiny de-en corpus: train with one empty source line, valid with oddly spaced lines."""
    de, en = [p[0] for p in TOY_TRAIN], [p[1] for p in TOY_TRAIN]
    valid_de = ["Ein  Hund\tläuft.", "", "Zwei Kinder spielen."]
    valid_en = ["A dog runs.", "An empty line above.", "  Two children play.  "]
    return {"train": (de, en), "valid": (valid_de, valid_en)}


@pytest.fixture(scope="session")
def toy_prepared(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The toy corpus prepared once per session with a tiny joint vocabulary."""
    from nmt.data.prepare import prepare

    de, en = [p[0] for p in TOY_TRAIN], [p[1] for p in TOY_TRAIN]
    raw = {"train": (de, en), "valid": (["Ein Hund.", "", "Eine Katze."], ["A dog.", "Nothing.", "A cat."])}
    out = tmp_path_factory.mktemp("toy") / "de-en"
    prepare("toy", raw, out, "de", "en", filters={}, spm={"vocab_size": 60, "num_threads": 1},
            source_info={"kind": "test"})
    return out


@pytest.fixture(scope="session")
def multi30k_prepared(multi30k_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Multi30k de-en prepared once per session with a small vocabulary (a few seconds).

    ``max_ratio`` is loose so that no training pair is dropped and the line counts are the
    published ones.
    """
    from nmt.data.prepare import prepare
    from nmt.data.sources import load_multi30k

    out = tmp_path_factory.mktemp("multi30k") / "de-en"
    raw = load_multi30k("de", "en", mirror=multi30k_dir, download_dir=out.parent / "download")
    prepare("multi30k", raw, out, "de", "en", filters={"max_ratio": 10.0},
            spm={"vocab_size": 2000, "input_sentence_size": 30_000}, source_info={"mirror": str(multi30k_dir)})
    return out
