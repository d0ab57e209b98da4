"""The files of a CTranslate2 export that must agree with its SentencePiece models, checked at load.

CTranslate2 maps tokens to ids by the vocabulary files the export writes (each SentencePiece
model's pieces in id order, so a piece's index is its id) and starts and ends the output with the
tokens its ``config.json`` names.  A vocabulary from another export, one edited by hand (without
``<s>``, say), or an SPM model swapped in would translate with the wrong ids, or fail inside the
search on every request.  So the engine compares them with the SentencePiece models before
CTranslate2 loads anything, and refuses a mismatch in one line.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from nmt.data.tokenizer import BOS, EOS, UNK
from nmt.engine.manifest import MANIFEST, SPM_FILES, SRC_SPM, TGT_SPM, ExportError, Manifest
from nmt.util.errors import short_repr

CONFIG_ROLE = "ct2_config"
SPECIAL_TOKENS = {"unk_token": UNK, "bos_token": BOS, "decoder_start_token": BOS, "eos_token": EOS}
"""CTranslate2's config.json keys and the target ids they name."""
MAX_VOCABULARY_BYTES = 64 << 20
"""Largest vocabulary file read (a 32,000-piece one is under 1 MiB)."""


def check_ct2_files(folder: Path, manifest: Manifest, src_pieces: list[str], tgt_pieces: list[str]) -> None:
    """Refuse vocabulary files that do not list the SentencePiece models' pieces in id order, and a
    config.json whose special tokens are not the target model's."""
    folder = Path(folder)
    wanted = {
        "shared_vocabulary": [(src_pieces, SRC_SPM), (tgt_pieces, TGT_SPM)],
        "source_vocabulary": [(src_pieces, SRC_SPM)],
        "target_vocabulary": [(tgt_pieces, TGT_SPM)],
    }
    roles = [role for role in wanted if role in manifest.files]
    if not roles:
        raise ExportError(f"{folder / MANIFEST} lists no CTranslate2 vocabulary (an altered file?); export again")
    for role in roles:
        path = folder / manifest.files[role]
        vocabulary = _json(path, list)
        for pieces, spm in wanted[role]:
            if vocabulary != pieces:
                raise ExportError(
                    f"{path} is not the vocabulary of {manifest.files.get(spm, SPM_FILES[spm])}: "
                    f"{_first_difference(vocabulary, pieces)} (files from two exports?); export the checkpoint again"
                )
    if CONFIG_ROLE in manifest.files:
        path = folder / manifest.files[CONFIG_ROLE]
        config = _json(path, dict)
        for key, token_id in SPECIAL_TOKENS.items():
            if token_id < len(tgt_pieces) and config.get(key) != tgt_pieces[token_id]:
                raise ExportError(
                    f"{path}: {key} is {short_repr(config.get(key), 40)}, the target SentencePiece model's is "
                    f"{tgt_pieces[token_id]!r} (an altered file?); export the checkpoint again"
                )


def _json(path: Path, kind: type) -> Any:
    """``path`` read as JSON of ``kind`` (a list or a dict), or an ExportError naming it."""
    try:
        with open(path, "rb") as handle:
            data = handle.read(MAX_VOCABULARY_BYTES + 1)
        value = json.loads(data) if len(data) <= MAX_VOCABULARY_BYTES else None
    except OSError as exc:
        raise ExportError(f"cannot read {path}: {exc.strerror or exc}") from None
    except (ValueError, RecursionError):
        value = None
    if not isinstance(value, kind):
        raise ExportError(f"{path} is not the {kind.__name__} nmt export writes (an altered file?); export again")
    return value


def _first_difference(found: list[Any], pieces: list[str]) -> str:
    """Where a vocabulary first departs from the pieces, in words."""
    for index, (token, piece) in enumerate(zip(found, pieces)):
        if token != piece:
            return f"its token {index} is {short_repr(token, 40)}, the SentencePiece model's {short_repr(piece, 40)}"
    return f"it has {len(found)} tokens, the SentencePiece model {len(pieces)}"
