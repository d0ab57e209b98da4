"""Raw parallel text from the four corpus sources: Multi30k, the Hugging Face hub (read in
:mod:`nmt.data.hub`), local files and the embedded synthetic generator.

Each loader returns ``{split: (source_lines, target_lines)}`` with the two lists
line-aligned and nothing cleaned yet; :mod:`nmt.data.prepare` normalizes and filters. Empty
lines are kept, since dropping one on one side would shift every later pair. :mod:`nmt.data.pipeline`
picks the loader for ``data.corpus`` and passes it the config's values.

Text files are read with :func:`nmt.util.fileio.read_lines`: strict UTF-8, lines split on
``"\\n"`` only (a trailing ``"\\r"`` is removed), never with ``str.splitlines``, which
also breaks at U+0085 and U+2028 and would misalign corpora whose sentences contain them.
"""

from __future__ import annotations

import json
import logging
import os
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Mapping, Sequence
from pathlib import Path

from tqdm import tqdm

from nmt.data.hub import quiet_datasets, table_columns
from nmt.data.lines import line_chunks, read_text_lines
from nmt.util.errors import DataError
from nmt.util.fileio import atomic_write_bytes, read_lines

logger = logging.getLogger(__name__)

Raw = dict[str, tuple[list[str], list[str]]]
"""split name -> (source lines, target lines), line-aligned."""

MULTI30K_URL = "https://raw.githubusercontent.com/multi30k/dataset/master/data/task1/raw/{name}.{lang}.gz"
MULTI30K_LANGS = ("en", "de", "fr", "cs")
MULTI30K_SPLITS = {  # our split name -> upstream file stem
    "train": "train",
    "valid": "val",
    "test2016": "test_2016_flickr",
    "test2017": "test_2017_flickr",
    "test2018": "test_2018_flickr",
    "test2017_mscoco": "test_2017_mscoco",
}
MULTI30K_REQUIRED = ("train", "valid", "test2016")
MIRROR_ENV = "NMT_DATA_MIRROR"


# --- files -------------------------------------------------------------------------------


def _nonempty(path: Path, lines: list[str]) -> list[str]:
    """``lines``, unless the file held none: an empty split otherwise fails much later, far
    from its cause (an empty train split as "the filters removed all 0 pairs")."""
    if not lines:
        raise DataError(f"{path}: the file is empty")
    return lines


def _aligned(src_path: Path, tgt_path: Path) -> tuple[list[str], list[str]]:
    src = _nonempty(src_path, read_text_lines(src_path))
    tgt = _nonempty(tgt_path, read_text_lines(tgt_path))
    if len(src) != len(tgt):
        raise DataError(
            f"{src_path} has {len(src)} lines but {tgt_path} has {len(tgt)}; parallel files must be line-aligned"
        )
    return src, tgt


# --- Multi30k ----------------------------------------------------------------------------


def _download(url: str, dest: Path) -> bool:
    """Fetch ``url`` into ``dest`` atomically; False when the server says 404 (no such file)."""
    logger.info("downloading %s", url)
    try:
        with urllib.request.urlopen(url, timeout=60) as response:
            data = response.read()
    except urllib.error.HTTPError as e:
        if e.code == 404:
            return False
        raise DataError(
            f"cannot download {url} (HTTP {e.code}); use --mirror DIR or set {MIRROR_ENV} to a folder with the files"
        ) from None
    except (urllib.error.URLError, OSError) as e:
        reason = getattr(e, "reason", e)
        raise DataError(
            f"cannot download {url} ({reason}); use --mirror DIR or set {MIRROR_ENV} to a folder with the files"
        ) from None
    atomic_write_bytes(dest, data)
    return True


def _multi30k_file(stem: str, lang: str, mirror: Path | None, download_dir: Path) -> Path | None:
    """Local path of one Multi30k file, from the mirror or a (cached) download; None if absent."""
    if mirror is not None:
        for name in (f"{stem}.{lang}.gz", f"{stem}.{lang}"):
            if (mirror / name).is_file():
                return mirror / name
        return None
    dest = Path(download_dir) / f"{stem}.{lang}.gz"
    absent = dest.with_name(f"{stem}.{lang}.absent")  # remembers a 404, so reruns need no network
    if dest.is_file():
        logger.info("reusing %s", dest)
        return dest
    if absent.is_file():
        return None
    if _download(MULTI30K_URL.format(name=stem, lang=lang), dest):
        return dest
    atomic_write_bytes(absent, b"")
    return None


def load_multi30k(src: str, tgt: str, mirror: str | Path | None, download_dir: Path) -> Raw:
    """Multi30k task 1 for a pair of en/de/fr/cs: train, valid, test2016 and the later tests.

    Files come from ``mirror`` (or ``$NMT_DATA_MIRROR`` when ``mirror`` is None), a folder with
    the upstream file names, without touching the network; otherwise they are downloaded
    once into ``download_dir``. The 2017/2018 test sets are added when both languages have
    them (Czech, for one, has no 2017 set) and skipped otherwise.
    """
    for lang in (src, tgt):
        if lang not in MULTI30K_LANGS:
            raise DataError(f"Multi30k has no language '{lang}'; choose from {', '.join(MULTI30K_LANGS)}")
    if src == tgt:
        raise DataError(f"source and target language are both '{src}'")
    if mirror is None:
        mirror = os.environ.get(MIRROR_ENV) or None
    if mirror is not None:
        mirror = Path(mirror)
        if not mirror.is_dir():
            raise DataError(f"Multi30k mirror folder {mirror} does not exist")
    where = f"mirror {mirror}" if mirror is not None else MULTI30K_URL.split("{")[0]

    raw: Raw = {}
    for split, stem in MULTI30K_SPLITS.items():
        src_path, tgt_path = (_multi30k_file(stem, lang, mirror, download_dir) for lang in (src, tgt))
        if src_path is None or tgt_path is None:
            missing = [f"{stem}.{lang}.gz" for lang, p in ((src, src_path), (tgt, tgt_path)) if p is None]
            if split in MULTI30K_REQUIRED:
                raise DataError(f"Multi30k {split} split not found: {where} has no {', '.join(missing)}")
            logger.info("Multi30k %s: no %s in %s; skipping this test set", split, ", ".join(missing), where)
            continue
        raw[split] = _aligned(src_path, tgt_path)
    return raw


# --- local files -------------------------------------------------------------------------


def _load_tsv(path: Path, progress: bool = False) -> tuple[list[str], list[str]]:
    """One TSV file: ``source<TAB>target`` on every line, no header, no quoting.

    Parsed here rather than by ``datasets``/pandas, which split lines at a lone ``"\\r"`` too
    and turn a line without a tab into a pair with an empty target, silently. Exactly one tab
    per line is required, so an empty pair is written as a lone tab. Read a chunk of lines at
    a time, so a file of millions of pairs is held once (as its pairs), not three times over;
    ``progress`` shows a bar over the file's bytes.
    """
    src: list[str] = []
    tgt: list[str] = []
    number = 0
    size = path.stat().st_size if path.is_file() else None  # a missing file: line_chunks says so
    with tqdm(
        total=size,
        desc=f"reading {path.name}",
        unit="B",
        unit_scale=True,
        disable=not progress,
        leave=False,
    ) as bar:
        for lines, n_bytes in line_chunks(path):
            bar.update(n_bytes)
            for line in lines:
                number += 1
                tabs = line.count("\t")
                if tabs != 1:
                    found = "no tab" if tabs == 0 else f"{tabs} tabs"
                    raise DataError(f"{path}: line {number} has {found}; expected source<TAB>target, exactly one tab")
                source, target = line.split("\t")
                src.append(source)
                tgt.append(target)
    return _nonempty(path, src), tgt


def _load_jsonl(path: Path, src: str, tgt: str, cache_dir: Path | None, progress: bool) -> tuple[list[str], list[str]]:
    """One JSON Lines file (layouts as in :func:`nmt.data.hub.table_columns`), read through ``datasets``.

    The text is decoded here first: Arrow's reader accepts bad UTF-8 and fails only when a
    value is read back, with neither file nor line.
    """
    import datasets

    lines = read_lines(path)  # also: file not found, bad UTF-8
    if not any(line.strip() for line in lines):
        raise DataError(f"{path}: the file is empty")
    cache = None if cache_dir is None else str(cache_dir)
    try:
        with quiet_datasets(progress):
            table = datasets.load_dataset("json", data_files=str(path), split="train", cache_dir=cache)
    except Exception as e:  # parser errors arrive wrapped in DatasetGenerationError
        _check_json_lines(path, lines)  # prefer a message with the line number
        cause = e.__cause__ or e
        detail = str(cause).strip().splitlines()[0] if str(cause).strip() else type(cause).__name__
        raise DataError(f"cannot read {path}: {detail}") from None
    return table_columns(table, src, tgt, str(path))


def _check_json_lines(path: Path, lines: list[str]) -> None:
    """Raise a DataError naming the first line that is not a JSON object (Arrow counts rows
    from 0 and skips blank lines, so its own "in row N" misleads)."""
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            value = json.loads(line)
        except json.JSONDecodeError as e:
            raise DataError(f"{path}: line {number} is not valid JSON ({e.msg} at column {e.colno})") from None
        if not isinstance(value, dict):
            raise DataError(f"{path}: line {number} holds a JSON {type(value).__name__}, not an object")


def load_local(
    files: Mapping[str, Path | str | Sequence[Path | str]],
    src: str,
    tgt: str,
    hf_cache_dir: Path | None = None,
    progress: bool = False,
) -> Raw:
    """Parallel text from local files, per split either two aligned text files or one table.

    ``files[split]`` is ``(source_file, target_file)`` (plain UTF-8, ``.gz`` allowed) or one
    ``.tsv`` / ``.jsonl`` file holding both sides. Every file must be UTF-8 and hold at least
    one line; a bad line is named by file and number. ``hf_cache_dir`` overrides where
    ``datasets`` caches parsed JSONL tables; ``progress`` shows its bars.
    """
    raw: Raw = {}
    for split, spec in files.items():
        for name in [spec] if isinstance(spec, (str, Path)) else spec:
            path = Path(name)
            if not path.is_absolute() and not path.exists():
                raise DataError(
                    f"data.local_files {split}: {path} not found; relative paths are read from the current "
                    f"folder ({Path.cwd()}), not from the config file's"
                )
        if isinstance(spec, (str, Path)):
            path = Path(spec)
            if path.suffix not in (".tsv", ".jsonl", ".json"):
                raise DataError(
                    f"{path}: a single file per split must be .tsv or .jsonl (or give a source and a target text file)"
                )
            raw[split] = (
                _load_tsv(path, progress)
                if path.suffix == ".tsv"
                else _load_jsonl(path, src, tgt, hf_cache_dir, progress)
            )
        elif len(spec) == 2:
            raw[split] = _aligned(Path(spec[0]), Path(spec[1]))
        else:
            raise DataError(
                f"split '{split}': give [source_file, target_file] or one .tsv/.jsonl file, not {len(spec)} files"
            )
        logger.info("local %s: %d pairs", split, len(raw[split][0]))
    return raw


# --- synthetic ---------------------------------------------------------------------------


def load_synthetic(
    src: str, tgt: str, sizes: Mapping[str, int], seed: int, min_words: int = 3, max_words: int = 40
) -> Raw:
    """The embedded English-German generator, in either direction.

    Each split draws from its own seed derived from ``seed`` and the split's name, exactly as
    :func:`nmt.data.synthetic.write_corpus` does, so both give the same corpus and adding a
    split changes no other. A split of size 0 is left out (``test: 0`` means no test set)
    rather than prepared empty, which :func:`nmt.data.prepare.prepare` refuses.
    """
    if {src, tgt} != {"en", "de"}:
        raise DataError(f"the synthetic corpus is English-German; got {src}-{tgt} (use en-de or de-en)")
    from nmt.data import synthetic  # imported on use, like ``datasets`` for the hub and tables

    raw: Raw = {}
    for split, n in sizes.items():
        if n == 0:
            continue
        pairs = synthetic.generate_pairs(n, synthetic.split_seed(seed, split), min_words, max_words)
        en, de = [p[0] for p in pairs], [p[1] for p in pairs]
        raw[split] = (en, de) if src == "en" else (de, en)
    return raw
