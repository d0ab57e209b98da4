"""SentencePiece subword models: training, loading, encoding and decoding.

Every model trained here reserves the same four ids, so the model code can use the
constants below without asking the tokenizer: padding is 0 (an all-zero tensor is all
padding), and unknown, begin- and end-of-sentence follow.

Training is deterministic: when the training text holds more sentences than
``input_sentence_size``, *we* draw the sample with a seeded numpy generator instead of
letting SentencePiece shuffle (its sampling differs from one process to the next even with
a fixed seed), and the number of training threads is fixed rather than taken from the
machine, because the unigram trainer's result depends on it.

The settings a user chooses (vocabulary size, model type, character coverage, sample size)
have no defaults here: their one home is :class:`nmt.config.DataConfig`.  The sampling seed
and thread count are not options; their one home is :data:`SPM_SEED` and :data:`SPM_THREADS`.
"""

from __future__ import annotations

import hashlib
import io
import logging
import re
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path

import numpy as np
import sentencepiece as spm

from nmt.config import SPM_MODEL_TYPES
from nmt.util.errors import ConfigError, DataError
from nmt.util.fileio import atomic_write_bytes

logger = logging.getLogger(__name__)

PAD, UNK, BOS, EOS = 0, 1, 2, 3
SPM_SEED = 1
"""Seed of the sample drawn when the text holds more than ``input_sentence_size`` lines."""
SPM_THREADS = 4
"""SentencePiece training threads: fixed, because the unigram model depends on the count."""


def _count_lines(path: Path) -> int:
    with open(path, "rb") as f:
        return sum(1 for _ in f)


def _sampled_lines(files: Sequence[Path], keep: list[int]) -> Iterator[str]:
    """Yield the lines of ``files`` (numbered across all files) whose numbers are in ``keep``.

    ``keep`` is sorted, so one pass over the files suffices and memory stays small.
    """
    position, k = 0, 0
    for path in files:
        with open(path, encoding="utf-8", newline="\n") as f:  # split at "\n" only, as _count_lines does
            for line in f:
                if k < len(keep) and keep[k] == position:
                    yield line.rstrip("\n")
                    k += 1
                position += 1


def train_sentencepiece(
    texts_files: Sequence[Path],
    model_prefix: Path,
    *,
    vocab_size: int,
    model_type: str,
    character_coverage: float,
    input_sentence_size: int,
    seed: int = SPM_SEED,
    num_threads: int = SPM_THREADS,
) -> Path:
    """Train a SentencePiece model on one-sentence-per-line UTF-8 files.

    Writes ``<model_prefix>.model`` (binary) and ``<model_prefix>.vocab`` (piece and score per
    line, for people to read), each atomically, and returns the ``.model`` path.
    ``vocab_size`` is an upper bound (``hard_vocab_limit`` off), so a tiny corpus gives a
    smaller vocabulary instead of an error. At most ``input_sentence_size`` lines, drawn
    with ``seed``, are used. The same inputs and arguments give byte-identical models.
    """
    if model_type not in SPM_MODEL_TYPES:
        raise ConfigError(
            f"unknown SentencePiece model type '{model_type}'; choose one of {', '.join(SPM_MODEL_TYPES)}"
        )
    files = [Path(f) for f in texts_files]
    total = sum(_count_lines(f) for f in files)
    if total == 0:
        raise DataError(f"cannot train SentencePiece: {', '.join(map(str, files))} hold no lines")
    size = min(input_sentence_size, total)
    keep = (
        np.arange(total) if size == total else np.sort(np.random.default_rng(seed).choice(total, size, replace=False))
    )
    logger.info("training a %s SentencePiece model (vocab %d) on %d of %d lines", model_type, vocab_size, size, total)

    proto = io.BytesIO()
    try:
        spm.SentencePieceTrainer.train(
            sentence_iterator=_sampled_lines(files, keep.tolist()),
            model_writer=proto,
            vocab_size=vocab_size,
            model_type=model_type,
            character_coverage=character_coverage,
            input_sentence_size=0,
            shuffle_input_sentence=False,
            hard_vocab_limit=False,
            pad_id=PAD,
            unk_id=UNK,
            bos_id=BOS,
            eos_id=EOS,
            num_threads=num_threads,
            minloglevel=2,
        )
    except RuntimeError as e:  # SentencePiece reports bad settings/corpora this way
        reason = re.sub(r"^.*\.cc\(\d+\) \[.*?\] ", "", str(e).strip().splitlines()[-1])  # drop C++ location
        raise DataError(f"SentencePiece training failed: {reason}") from None

    model_path = Path(f"{model_prefix}.model")
    atomic_write_bytes(model_path, proto.getvalue())
    tok = Tokenizer(proto.getvalue(), source=str(model_path))
    vocab = "".join(f"{tok.sp.id_to_piece(i)}\t{tok.sp.get_score(i):g}\n" for i in range(tok.vocab_size))
    atomic_write_bytes(Path(f"{model_prefix}.vocab"), vocab.encode("utf-8"))
    logger.info("wrote %s (%d pieces)", model_path, tok.vocab_size)
    return model_path


class Tokenizer:
    """A loaded SentencePiece model plus the hash that identifies it in caches and manifests."""

    def __init__(self, model_bytes: bytes, source: str = "<bytes>") -> None:
        self.sp = spm.SentencePieceProcessor()
        try:
            self.sp.load_from_serialized_proto(model_bytes)
        except (RuntimeError, OSError) as e:
            raise DataError(f"{source} is not a SentencePiece model ({e})") from e
        ids = (self.sp.pad_id(), self.sp.unk_id(), self.sp.bos_id(), self.sp.eos_id())
        if ids != (PAD, UNK, BOS, EOS):
            raise DataError(
                f"{source} reserves ids pad/unk/bos/eos={ids}, expected {(PAD, UNK, BOS, EOS)}; "
                "retrain it with `nmt data prepare --force`"
            )
        self._bytes = model_bytes
        self._sha256 = hashlib.sha256(model_bytes).hexdigest()

    @classmethod
    def load(cls, path: Path | str) -> Tokenizer:
        """Read a ``.model`` file; a missing or foreign file is a :class:`DataError`."""
        path = Path(path)
        try:
            data = path.read_bytes()
        except OSError as e:
            raise DataError(f"cannot read tokenizer model {path}: {e.strerror or e}") from e
        return cls(data, source=str(path))

    @property
    def vocab_size(self) -> int:
        return self.sp.get_piece_size()

    @property
    def sha256(self) -> str:
        """Hex SHA-256 of the model file: the key under which encoded ids are cached."""
        return self._sha256

    @property
    def model_bytes(self) -> bytes:
        """The serialized model, so a run directory can keep its own copy."""
        return self._bytes

    def encode(self, lines: Sequence[str]) -> list[list[int]]:
        """Subword ids of each line, without BOS or EOS (the batching code adds them)."""
        return self.sp.encode(list(lines), out_type=int)

    def sample(self, lines: Sequence[str], alpha: float, seed: int) -> list[list[int]]:
        """Subword ids of each line with a segmentation drawn at random (subword regularization,
        Kudo 2018): from the whole lattice with smoothing ``alpha`` for a unigram model, or with
        merge dropout ``alpha`` for BPE (Provilkov et al. 2020).

        The draw is a pure function of ``seed``: SentencePiece's generator is seeded here and
        one thread encodes (its multi-threaded sampling differs between calls).
        """
        spm.set_random_generator_seed(seed % 2**32)
        return self.sp.encode(
            list(lines), out_type=int, enable_sampling=True, alpha=alpha, nbest_size=-1, num_threads=1
        )

    def decode(self, ids: Iterable[int]) -> str:
        """Text of an id sequence: stops at the first EOS and skips PAD and BOS.

        Accepts lists, numpy arrays and 1-D tensors alike.
        """
        kept: list[int] = []
        for i in ids:
            i = int(i)
            if i == EOS:
                break
            if i not in (PAD, BOS):
                kept.append(i)
        return self.sp.decode(kept)

    def pieces(self, line: str) -> list[str]:
        """Subword pieces of a line, e.g. for the source labels of an attention plot."""
        return self.sp.encode(line, out_type=str)

    def decode_pieces(self, ids: Iterable[int]) -> list[str]:
        """Piece strings of ids one by one (no joining), e.g. for the target labels of a plot."""
        return [self.sp.id_to_piece(int(i)) for i in ids]
