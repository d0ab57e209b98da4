"""Raw corpus loaders: local files, Multi30k (mirror and mocked download), hub, synthetic."""

from __future__ import annotations

import gzip
import io
import json
import urllib.error
from pathlib import Path

import pytest

from nmt.data import hub, sources
from nmt.data.hub import load_hub
from nmt.data.sources import load_local, load_multi30k, load_synthetic
from nmt.data.synthetic import write_corpus
from nmt.util.errors import DataError
from nmt.util.fileio import read_lines


def write(path: Path, text: str | bytes) -> Path:
    path.write_bytes(text.encode("utf-8") if isinstance(text, str) else text)
    return path


# --- plain text ------------------------------------------------------------------------------


def test_plain_text_keeps_empty_lines_and_separators(tmp_path: Path) -> None:
    src = write(tmp_path / "a.de", "eins\n\nzwei\u2028halb\r\ndrei\n")
    tgt = write(tmp_path / "a.en", "one\ntwo-empty-src\ntwo\nthree")  # no final newline
    raw = load_local({"valid": (src, tgt)}, "de", "en")
    assert raw["valid"] == (["eins", "", "zwei\u2028halb", "drei"], ["one", "two-empty-src", "two", "three"])


def test_gzip_text_is_read_transparently(tmp_path: Path) -> None:
    path = write(tmp_path / "x.en.gz", gzip.compress(b"a\nb\n"))
    assert read_lines(path) == ["a", "b"]


def test_mismatched_line_counts_name_both_files(tmp_path: Path) -> None:
    src = write(tmp_path / "train.de", "a\nb\nc\n")
    tgt = write(tmp_path / "train.en", "a\nb\n")
    with pytest.raises(DataError) as err:
        load_local({"train": (src, tgt)}, "de", "en")
    message = str(err.value)
    assert str(src) in message and str(tgt) in message and "3" in message and "2" in message
    assert "\n" not in message


def test_non_utf8_names_file_and_line(tmp_path: Path) -> None:
    src = write(tmp_path / "train.de", b"gut\nauch gut\nschlecht \xe4\n")
    tgt = write(tmp_path / "train.en", "a\nb\nc\n")
    with pytest.raises(DataError, match=r"train\.de: line 3 is not valid UTF-8"):
        load_local({"train": (src, tgt)}, "de", "en")


def test_missing_file_is_named(tmp_path: Path) -> None:
    with pytest.raises(DataError, match=r"nope\.de"):
        load_local({"train": (tmp_path / "nope.de", tmp_path / "nope.en")}, "de", "en")


# --- TSV / JSONL through datasets --------------------------------------------------------------


def test_tsv_keeps_quotes_empty_rows_and_strings(tmp_path: Path) -> None:
    path = write(tmp_path / "train.tsv", 'er sagt "hallo\the says "hi\nNA\t1\n\t\nnull\tnull\n')
    raw = load_local({"train": path}, "de", "en", hf_cache_dir=tmp_path / "hf")
    assert raw["train"] == (['er sagt "hallo', "NA", "", "null"], ['he says "hi', "1", "", "null"])


def test_tsv_with_extra_column_is_a_data_error(tmp_path: Path) -> None:
    path = write(tmp_path / "bad.tsv", "a\tb\nc\td\te\n")
    with pytest.raises(DataError, match=r"bad\.tsv"):
        load_local({"train": path}, "de", "en", hf_cache_dir=tmp_path / "hf")


@pytest.mark.parametrize(
    "rows",
    [
        [{"de": "Hund", "en": "dog"}, {"de": "", "en": "cat"}],
        [{"src": "Hund", "tgt": "dog"}, {"src": "", "tgt": "cat"}],
        [{"translation": {"de": "Hund", "en": "dog"}}, {"translation": {"de": "", "en": "cat"}}],
    ],
)
def test_jsonl_layouts(tmp_path: Path, rows: list[dict]) -> None:
    path = write(tmp_path / "train.jsonl", "".join(json.dumps(r) + "\n" for r in rows))
    raw = load_local({"train": path}, "de", "en", hf_cache_dir=tmp_path / "hf")
    assert raw["train"] == (["Hund", ""], ["dog", "cat"])


def test_jsonl_without_known_columns(tmp_path: Path) -> None:
    path = write(tmp_path / "train.jsonl", '{"a": "x", "b": "y"}\n')
    with pytest.raises(DataError, match="columns"):
        load_local({"train": path}, "de", "en", hf_cache_dir=tmp_path / "hf")


def test_single_file_needs_a_table_suffix(tmp_path: Path) -> None:
    with pytest.raises(DataError, match=r"\.tsv or \.jsonl"):
        load_local({"train": write(tmp_path / "train.txt", "a\n")}, "de", "en")


# --- Multi30k --------------------------------------------------------------------------------


def test_multi30k_from_shared_mirror(multi30k_dir: Path, tmp_path: Path) -> None:
    raw = load_multi30k("de", "en", mirror=multi30k_dir, download_dir=tmp_path)
    assert {k: len(v[0]) for k, v in raw.items()} == {"train": 29000, "valid": 1014, "test2016": 1000}
    assert all(len(s) == len(t) for s, t in raw.values())
    assert not any(tmp_path.iterdir()), "a mirror must not download anything"


def fake_mirror(folder: Path, stems: dict[str, int], langs=("de", "en")) -> Path:
    """Tiny gzip files with Multi30k names: ``stems`` maps file stem -> number of lines."""
    folder.mkdir(parents=True, exist_ok=True)
    for stem, n in stems.items():
        for lang in langs:
            write(folder / f"{stem}.{lang}.gz", gzip.compress("".join(f"{lang} {i}\n" for i in range(n)).encode()))
    return folder


def test_multi30k_env_mirror_and_optional_tests(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    mirror = fake_mirror(tmp_path / "m", {"train": 5, "val": 2, "test_2016_flickr": 2, "test_2017_flickr": 3})
    monkeypatch.setenv("NMT_DATA_MIRROR", str(mirror))
    raw = load_multi30k("en", "de", mirror=None, download_dir=tmp_path / "dl")
    assert list(raw) == ["train", "valid", "test2016", "test2017"]
    assert raw["test2017"] == (["en 0", "en 1", "en 2"], ["de 0", "de 1", "de 2"])


def test_multi30k_mirror_missing_required_split(tmp_path: Path) -> None:
    mirror = fake_mirror(tmp_path / "m", {"train": 5, "val": 2})
    with pytest.raises(DataError, match=r"test2016.*test_2016_flickr"):
        load_multi30k("de", "en", mirror=mirror, download_dir=tmp_path / "dl")


def test_multi30k_rejects_unknown_language(tmp_path: Path) -> None:
    with pytest.raises(DataError, match="no language 'es'"):
        load_multi30k("es", "en", mirror=tmp_path, download_dir=tmp_path)


def test_multi30k_download_skips_404_and_reuses_files(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("NMT_DATA_MIRROR", raising=False)
    calls: list[str] = []

    def fake_urlopen(url: str, timeout: float):
        calls.append(url)
        if "test_201" in url and "test_2016" not in url:
            raise urllib.error.HTTPError(url, 404, "Not Found", {}, None)
        return io.BytesIO(gzip.compress(b"line\n"))

    monkeypatch.setattr(sources.urllib.request, "urlopen", fake_urlopen)
    raw = load_multi30k("de", "en", mirror=None, download_dir=tmp_path)
    assert list(raw) == ["train", "valid", "test2016"]
    assert sorted(p.name for p in tmp_path.glob("*.gz")) == sorted(
        f"{s}.{lang}.gz" for s in ("train", "val", "test_2016_flickr") for lang in ("de", "en")
    )
    n_calls = len(calls)
    assert load_multi30k("de", "en", mirror=None, download_dir=tmp_path) == raw
    assert len(calls) == n_calls, "files and 404s are remembered: a rerun needs no network"


def test_multi30k_without_network_suggests_mirror(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("NMT_DATA_MIRROR", raising=False)

    def no_network(url: str, timeout: float):
        raise urllib.error.URLError("Name or service not known")

    monkeypatch.setattr(sources.urllib.request, "urlopen", no_network)
    with pytest.raises(DataError, match="--mirror DIR") as err:
        load_multi30k("de", "en", mirror=None, download_dir=tmp_path)
    assert "\n" not in str(err.value) and not any(tmp_path.iterdir())


# --- hub, synthetic ----------------------------------------------------------------------------


def test_hub_offline_is_a_one_line_data_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    with pytest.raises(DataError, match="cannot reach the Hugging Face hub for 'wmt14/de-en'") as err:
        load_hub("wmt14", "de-en", "de", "en", {"train": "train", "valid": "validation"})
    message = str(err.value)
    assert "\n" not in message and "--mirror" not in message, "--mirror only serves Multi30k"
    assert "data.corpus=local" in message


def test_unreachable_hub_suggests_offline_mode_or_local_files(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    monkeypatch.delenv("HF_DATASETS_OFFLINE", raising=False)
    monkeypatch.setattr(hub, "_hub_unreachable", lambda: "huggingface.co: Name or service not known")
    with pytest.raises(DataError) as err:
        load_hub("wmt14", "de-en", "de", "en", {"train": "train"})
    message = str(err.value)
    assert "HF_HUB_OFFLINE=1" in message and "data.local_files" in message and "--mirror" not in message


def test_synthetic_both_directions() -> None:
    sizes = {"train": 20, "valid": 5, "test": 5}
    en_de = load_synthetic("en", "de", sizes, seed=3)
    de_en = load_synthetic("de", "en", sizes, seed=3)
    assert {k: len(v[0]) for k, v in en_de.items()} == sizes
    assert all(en_de[k] == (de_en[k][1], de_en[k][0]) for k in sizes)
    assert en_de["train"][0][:5] != en_de["test"][0][:5]


def test_synthetic_matches_write_corpus(tmp_path: Path) -> None:
    sizes = {"train": 30, "test": 10}
    write_corpus(tmp_path, sizes, seed=4)
    raw = load_synthetic("en", "de", sizes, seed=4)
    assert all(raw[k] == (read_lines(tmp_path / f"{k}.en"), read_lines(tmp_path / f"{k}.de")) for k in sizes)


def test_synthetic_is_english_german_only() -> None:
    with pytest.raises(DataError, match="English-German"):
        load_synthetic("en", "fr", {"train": 3}, seed=1)
