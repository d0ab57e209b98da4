"""Subword ids of a prepared split, encoded once and cached as memory-mapped numpy arrays.

Each side of a split is two arrays: every sentence's ids back to back in one flat int32
array, and int64 offsets with one more entry than there are sentences, so sentence ``i`` is
``ids[offsets[i]:offsets[i + 1]]``. This is compact (no per-sentence Python objects), loads
instantly with ``np.load(mmap_mode="r")`` and lets the batch sampler read every length at once
from ``np.diff(offsets)``.

The cache file names carry a key derived from the text file's and the tokenizer model's
SHA-256, so editing either one (or re-preparing the corpus) can never serve stale ids.
"""

from __future__ import annotations

import hashlib
import itertools
import logging
from collections.abc import Sequence
from pathlib import Path

import numpy as np
from tqdm import tqdm

from nmt.data.lines import line_chunks
from nmt.data.tokenizer import Tokenizer
from nmt.util.errors import DataError
from nmt.util.fileio import atomic_write, sha256_file

logger = logging.getLogger(__name__)

CACHE_FORMAT = 1  # part of the cache key: bump when the array layout changes
ENCODE_CHUNK = 10_000  # lines read and encoded at a time: bounds the Python objects alive while encoding


def _flatten(seqs: Sequence[Sequence[int]]) -> tuple[np.ndarray, np.ndarray]:
    """Ragged id lists -> (flat int32 ids, int64 offsets of length len(seqs) + 1)."""
    lengths = np.fromiter((len(s) for s in seqs), dtype=np.int64, count=len(seqs))
    offsets = np.zeros(len(seqs) + 1, dtype=np.int64)
    np.cumsum(lengths, out=offsets[1:])
    ids = np.fromiter(itertools.chain.from_iterable(seqs), dtype=np.int32, count=int(offsets[-1]))
    return ids, offsets


def _gather(ids: np.ndarray, offsets: np.ndarray, kept: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The flat ids and offsets of the sentences ``kept`` (indices, in their order) of one side."""
    starts, lengths = offsets[kept], offsets[kept + 1] - offsets[kept]
    new_offsets = np.zeros(len(kept) + 1, dtype=np.int64)
    np.cumsum(lengths, out=new_offsets[1:])
    # position j of kept sentence k is ids[starts[k] + j - new_offsets[k]]
    positions = np.repeat(starts - new_offsets[:-1], lengths) + np.arange(new_offsets[-1])
    return np.asarray(ids[positions], dtype=np.int32), new_offsets


class EncodedSplit:
    """Source and target ids of one split; sentence ``i`` of both sides form pair ``i``."""

    def __init__(
        self, src_ids: np.ndarray, src_offsets: np.ndarray, tgt_ids: np.ndarray, tgt_offsets: np.ndarray
    ) -> None:
        if len(src_offsets) != len(tgt_offsets):
            raise ValueError(f"{len(src_offsets) - 1} source but {len(tgt_offsets) - 1} target sentences")
        self.src_ids, self.src_offsets = src_ids, src_offsets  # (N_src_tokens,) int32, (N + 1,) int64
        self.tgt_ids, self.tgt_offsets = tgt_ids, tgt_offsets
        self.src_lengths = np.diff(src_offsets)  # (N,) int64, subword tokens without BOS/EOS
        self.tgt_lengths = np.diff(tgt_offsets)

    @classmethod
    def from_sequences(cls, src: Sequence[Sequence[int]], tgt: Sequence[Sequence[int]]) -> EncodedSplit:
        """Build from in-memory id lists (tests, or sentences typed at translation time)."""
        return cls(*_flatten(src), *_flatten(tgt))

    def __len__(self) -> int:
        return len(self.src_offsets) - 1

    def subset(self, indices: Sequence[int]) -> EncodedSplit:
        """The pairs ``indices``, in that order, as a split of their own (in memory)."""
        kept = np.asarray(indices, dtype=np.int64)
        return EncodedSplit(
            *_gather(self.src_ids, self.src_offsets, kept), *_gather(self.tgt_ids, self.tgt_offsets, kept)
        )

    def src(self, i: int) -> np.ndarray:
        """Source ids of sentence ``i``, shape (S_i,), a view into the flat array."""
        return self.src_ids[self.src_offsets[i] : self.src_offsets[i + 1]]

    def tgt(self, i: int) -> np.ndarray:
        """Target ids of sentence ``i``, shape (T_i,), without BOS/EOS."""
        return self.tgt_ids[self.tgt_offsets[i] : self.tgt_offsets[i + 1]]


def _save_npy(path: Path, array: np.ndarray) -> None:
    """np.save, atomically, so a crash never leaves a truncated cache."""
    with atomic_write(path) as handle:
        np.save(handle, array)


def _load_npy(path: Path) -> np.ndarray:
    try:
        return np.load(path, mmap_mode="r")
    except ValueError:  # an empty array cannot be memory-mapped
        return np.load(path)


def _read_cached(ids_path: Path, offsets_path: Path) -> tuple[np.ndarray, np.ndarray] | None:
    """The cached arrays if both files exist and agree with each other, else None."""
    if not (ids_path.is_file() and offsets_path.is_file()):
        return None
    try:
        ids, offsets = _load_npy(ids_path), _load_npy(offsets_path)
    except (OSError, ValueError) as e:
        logger.warning("ignoring unreadable cache %s (%s)", ids_path, e)
        return None
    if offsets.ndim != 1 or len(offsets) == 0 or offsets[0] != 0 or offsets[-1] != len(ids):
        logger.warning("ignoring inconsistent cache %s", ids_path)
        return None
    return ids, offsets


def _encode_stream(text_path: Path, tok: Tokenizer, progress: bool) -> tuple[np.ndarray, np.ndarray]:
    """(flat int32 ids, int64 offsets) of every line of ``text_path``, encoded chunk by chunk.

    Each chunk's id lists become an int32 array at once, so memory holds the file's ids as
    4-byte integers plus one chunk of Python lists, not a Python list and int object per
    token of the whole file (about 40 bytes a token: gigabytes for a few million lines).
    """
    id_parts: list[np.ndarray] = []
    length_parts: list[np.ndarray] = []
    with tqdm(
        total=text_path.stat().st_size,
        desc=f"encoding {text_path.name}",
        unit="B",
        unit_scale=True,
        disable=not progress,
        leave=False,
    ) as bar:
        for lines, n_bytes in line_chunks(text_path, ENCODE_CHUNK):
            chunk_ids, chunk_offsets = _flatten(tok.encode(lines))
            id_parts.append(chunk_ids)
            length_parts.append(np.diff(chunk_offsets))
            bar.update(n_bytes)
    lengths = np.concatenate(length_parts) if length_parts else np.zeros(0, dtype=np.int64)
    offsets = np.zeros(len(lengths) + 1, dtype=np.int64)
    np.cumsum(lengths, out=offsets[1:])
    ids = np.concatenate(id_parts) if id_parts else np.zeros(0, dtype=np.int32)
    return ids, offsets


def _encode_file(
    text_path: Path, tok: Tokenizer, cache_dir: Path, progress: bool = False
) -> tuple[np.ndarray, np.ndarray]:
    """Ids and offsets of one text file, from the cache or freshly encoded (then cached)."""
    if not text_path.is_file():
        raise DataError(f"prepared file {text_path} is missing; prepare the corpus again with --force")
    key = hashlib.sha256(f"{CACHE_FORMAT}:{tok.sha256}:{sha256_file(text_path)}".encode()).hexdigest()[:16]
    ids_path = cache_dir / f"{text_path.name}.{key}.ids.npy"
    offsets_path = cache_dir / f"{text_path.name}.{key}.offsets.npy"

    cached = _read_cached(ids_path, offsets_path)
    if cached is not None:
        logger.info("loaded cached ids of %s", text_path)
        return cached

    ids, offsets = _encode_stream(text_path, tok, progress)
    cache_dir.mkdir(parents=True, exist_ok=True)
    _save_npy(offsets_path, offsets)
    _save_npy(ids_path, ids)
    for stale in cache_dir.glob(f"{text_path.name}.*.npy"):  # earlier text or tokenizer versions
        if key not in stale.name:
            stale.unlink(missing_ok=True)
    logger.info("encoded %d lines of %s into %s", len(offsets) - 1, text_path, cache_dir)
    return _read_cached(ids_path, offsets_path) or (ids, offsets)


def load_split(
    data_dir: Path,
    split: str,
    src_lang: str,
    tgt_lang: str,
    src_tok: Tokenizer,
    tgt_tok: Tokenizer,
    cache_dir: Path | None = None,
    progress: bool = False,
) -> EncodedSplit:
    """Encoded ids of ``data_dir/{split}.{src_lang}`` and ``.{tgt_lang}``, cached on disk.

    The first call encodes both files and writes the arrays to ``cache_dir`` (default
    ``data_dir/cache``); later calls with unchanged text and tokenizers only map the files. ``progress``
    shows a bar while encoding (the caller decides; see :mod:`nmt.data`).
    """
    data_dir = Path(data_dir)
    cache_dir = data_dir / "cache" if cache_dir is None else Path(cache_dir)
    src_path, tgt_path = data_dir / f"{split}.{src_lang}", data_dir / f"{split}.{tgt_lang}"
    src_ids, src_offsets = _encode_file(src_path, src_tok, cache_dir, progress)
    tgt_ids, tgt_offsets = _encode_file(tgt_path, tgt_tok, cache_dir, progress)
    if len(src_offsets) != len(tgt_offsets):
        raise DataError(
            f"{src_path} has {len(src_offsets) - 1} lines but {tgt_path} has {len(tgt_offsets) - 1}; "
            "prepare the corpus again with --force"
        )
    return EncodedSplit(src_ids, src_offsets, tgt_ids, tgt_offsets)
