"""Turn raw parallel text into a prepared corpus folder with a manifest, and load it back.

A prepared folder ``data/<corpus>/<src>-<tgt>/`` holds

- ``{split}.{lang}``: one sentence per line, UTF-8, normalized; ``train`` also filtered,
  evaluation splits never filtered or reordered;
- ``spm.model`` (joint vocabulary) or ``spm.<src>.model`` and ``spm.<tgt>.model``, plus the
  readable ``.vocab`` files;
- ``manifest.json``: where the text came from, what was done to it, and a SHA-256 of every
  file, so a run can record exactly which data it saw.

The manifest is written last and removed first, so a folder with a manifest is complete.
Preparing again with the same inputs and settings reuses the folder.
"""

from __future__ import annotations

import datetime
import hashlib
import json
import logging
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Optional

import nmt
from nmt.config import DataConfig
from nmt.data.clean import clean_pairs, normalize_lines
from nmt.data.sources import Raw
from nmt.data.tokenizer import SPM_SEED, SPM_THREADS, Tokenizer, train_sentencepiece
from nmt.util.errors import ConfigError, DataError
from nmt.util.fileio import atomic_write_bytes, sha256_file, write_lines

logger = logging.getLogger(__name__)

MANIFEST = "manifest.json"
FORMAT = 1  # bump when the folder layout or the meaning of a field changes
TRAIN_SPLIT = "train"  # the only split that is filtered and that SentencePiece learns from


def filter_settings(cfg: DataConfig) -> dict[str, Any]:
    """The cleaning settings of ``cfg``, named as :func:`prepare` takes and the manifest records them."""
    return {
        "min_len": cfg.min_len,
        "max_len": cfg.max_len,
        "max_ratio": cfg.max_ratio,
        "normalization": cfg.normalization,
    }


def spm_settings(cfg: DataConfig) -> dict[str, Any]:
    """The SentencePiece settings of ``cfg`` (plus the fixed seed and thread count), named as
    :func:`prepare` takes and the manifest records them."""
    return {
        "vocab_size": cfg.vocab_size,
        "model_type": cfg.spm_type,
        "joint": cfg.joint_vocab,
        "character_coverage": cfg.character_coverage,
        "input_sentence_size": cfg.input_sentence_size,
        "seed": SPM_SEED,
        "num_threads": SPM_THREADS,
    }


# A setting left out of ``prepare(filters=..., spm=...)`` takes the config's default, the value
# ``nmt data prepare`` uses, so a caller that omits one gets what the command line would.
FILTER_DEFAULTS: dict[str, Any] = filter_settings(DataConfig())
SPM_DEFAULTS: dict[str, Any] = spm_settings(DataConfig())


def _with_defaults(given: Mapping[str, Any], defaults: dict[str, Any], what: str) -> dict[str, Any]:
    unknown = sorted(set(given) - set(defaults))
    if unknown:
        raise ConfigError(f"unknown {what} setting(s) {', '.join(unknown)}; valid: {', '.join(defaults)}")
    return {**defaults, **given}


def _check_not_empty(corpus: str, raw: Raw) -> None:
    """Refuse a split without a single pair now, not later: an empty validation split would
    fail only at the first validation, after the training time is spent, and an empty test
    set cannot be scored. (Only train is filtered; the filters emptying it is caught there.)"""
    for split, (src_lines, tgt_lines) in raw.items():
        if not src_lines and not tgt_lines:
            raise DataError(
                f"split '{split}' of corpus '{corpus}' has no sentence pairs; every split needs at least one"
            )


def _fingerprint(settings: dict[str, Any], raw: Raw) -> str:
    """SHA-256 over the settings and every raw line: equal fingerprints mean equal outputs."""
    digest = hashlib.sha256(json.dumps(settings, sort_keys=True, default=str).encode("utf-8"))
    for split in sorted(raw):
        for side in raw[split]:
            digest.update(f"\0{split}\0{len(side)}\0".encode())
            digest.update("\n".join(side).encode("utf-8", "surrogatepass"))
    return digest.hexdigest()


def _file_entry(out_dir: Path, name: str) -> dict[str, Any]:
    path = out_dir / name
    return {"path": name, "sha256": sha256_file(path), "bytes": path.stat().st_size}


def _intact(out_dir: Path, manifest: dict[str, Any]) -> bool:
    """Whether every file the manifest lists is still there with the recorded hash."""
    entries = [f for s in manifest["splits"].values() for f in s["files"].values()]
    entries += list(manifest["tokenizers"].values())
    return all((out_dir / e["path"]).is_file() and sha256_file(out_dir / e["path"]) == e["sha256"] for e in entries)


def read_manifest(out_dir: Path) -> dict[str, Any]:
    """The manifest of a prepared folder; DataError if there is none or it is unreadable."""
    out_dir = Path(out_dir)
    path = out_dir / MANIFEST
    if not path.is_file():
        hint = f"nmt data prepare {out_dir.parent.name} --pair {out_dir.name}"
        raise DataError(f"no prepared corpus in {out_dir} ({MANIFEST} is missing); run `{hint}` first")
    try:
        manifest = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as e:
        raise DataError(f"cannot read {path} ({e}); prepare the corpus again with --force") from None
    if manifest.get("format") != FORMAT:
        raise DataError(
            f"{path} has format {manifest.get('format')}, this version reads {FORMAT}; "
            "prepare the corpus again with --force"
        )
    return manifest


def prepare(
    corpus: str,
    raw: Raw,
    out_dir: Path,
    src: str,
    tgt: str,
    *,
    filters: Mapping[str, Any],
    spm: Mapping[str, Any],
    source_info: Mapping[str, Any],
    excluded: Optional[Mapping[str, Any]] = None,
    force: bool = False,
    progress: bool = False,
) -> dict[str, Any]:
    """Clean, write and tokenize-train one corpus; return its manifest (also in manifest.json).

    Args:
        corpus: short name, e.g. ``multi30k``; recorded only.
        raw: ``{split: (source lines, target lines)}`` from a loader in :mod:`nmt.data.sources`;
            must contain ``train``, and every split at least one pair.
        out_dir: the prepared folder, conventionally ``data/<corpus>/<src>-<tgt>``.
        filters: ``min_len``, ``max_len``, ``max_ratio`` (training split only) and
            ``normalization`` (all splits), e.g. :func:`filter_settings`; missing keys take
            the config's defaults (:data:`FILTER_DEFAULTS`).
        spm: ``vocab_size``, ``model_type``, ``joint``, ``character_coverage``,
            ``input_sentence_size``, ``seed``, ``num_threads``, e.g. :func:`spm_settings`;
            missing keys take the config's defaults (:data:`SPM_DEFAULTS`).
        source_info: where the text came from (URL, mirror, hub name...); recorded, and part
            of the reuse check.
        excluded: what the loader removed before splitting (Europarl: pairs sharing a line with the
            RWTH gold set), recorded in the manifest; None for nothing.
        force: rebuild even when the folder already matches.
        progress: show a progress bar while cleaning (the caller decides; see :mod:`nmt.data`).
    """
    out_dir = Path(out_dir)
    filters = _with_defaults(filters, FILTER_DEFAULTS, "filter")
    spm = _with_defaults(spm, SPM_DEFAULTS, "SentencePiece")
    if TRAIN_SPLIT not in raw:
        raise DataError(f"corpus '{corpus}' has no '{TRAIN_SPLIT}' split (it has {', '.join(raw) or 'none'})")
    _check_not_empty(corpus, raw)
    settings = {
        "format": FORMAT,
        "corpus": corpus,
        "src": src,
        "tgt": tgt,
        "filters": filters,
        "spm": spm,
        "source": dict(source_info),
    }
    fingerprint = _fingerprint(settings, raw)

    if (out_dir / MANIFEST).is_file() and not force:
        try:
            old = read_manifest(out_dir)
            if old.get("inputs_sha256") == fingerprint and _intact(out_dir, old):
                logger.info("reusing prepared corpus in %s (same inputs and settings)", out_dir)
                return old
        except (DataError, KeyError, TypeError):
            pass
        logger.info("inputs or settings changed since %s was prepared; rebuilding", out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    (out_dir / MANIFEST).unlink(missing_ok=True)

    splits: dict[str, Any] = {}
    removed: dict[str, int] = {}
    for split, (src_lines, tgt_lines) in raw.items():
        if len(src_lines) != len(tgt_lines):
            raise DataError(f"split '{split}' has {len(src_lines)} {src} lines but {len(tgt_lines)} {tgt} lines")
        if split == TRAIN_SPLIT:
            kept_src, kept_tgt, removed = clean_pairs(src_lines, tgt_lines, **filters, progress=progress)
        else:
            kept_src = normalize_lines(src_lines, filters["normalization"])
            kept_tgt = normalize_lines(tgt_lines, filters["normalization"])
        write_lines(out_dir / f"{split}.{src}", kept_src)
        write_lines(out_dir / f"{split}.{tgt}", kept_tgt)
        splits[split] = {
            "pairs": len(kept_src),
            "raw_pairs": len(src_lines),
            "files": {lang: _file_entry(out_dir, f"{split}.{lang}") for lang in (src, tgt)},
        }
        logger.info("%s: %d pairs written", split, len(kept_src))

    spm_args = {k: v for k, v in spm.items() if k != "joint"}
    train_files = {lang: out_dir / f"{TRAIN_SPLIT}.{lang}" for lang in (src, tgt)}
    if spm["joint"]:
        model = train_sentencepiece(list(train_files.values()), out_dir / "spm", **spm_args)
        models = {"src": model, "tgt": model}
    else:
        models = {
            role: train_sentencepiece([train_files[lang]], out_dir / f"spm.{lang}", **spm_args)
            for role, lang in (("src", src), ("tgt", tgt))
        }
    tokenizers = {
        role: {**_file_entry(out_dir, path.name), "vocab_size": Tokenizer.load(path).vocab_size}
        for role, path in models.items()
    }

    manifest = {
        "format": FORMAT,
        "corpus": corpus,
        "source": json.loads(json.dumps(dict(source_info), default=str)),
        "pair": {"src": src, "tgt": tgt},
        "splits": splits,
        "cleaning": {
            "normalization": filters["normalization"],
            "applied_to": [TRAIN_SPLIT],
            "filters": {k: filters[k] for k in ("min_len", "max_len", "max_ratio")},
            "removed": removed,
        },
        **({"excluded_before_split": dict(excluded)} if excluded else {}),
        "spm": spm,
        "tokenizers": tokenizers,
        "inputs_sha256": fingerprint,
        "created": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "nmt_version": nmt.__version__,
    }
    atomic_write_bytes(
        out_dir / MANIFEST, (json.dumps(manifest, indent=2, ensure_ascii=False, default=str) + "\n").encode("utf-8")
    )
    logger.info("prepared %s %s-%s in %s", corpus, src, tgt, out_dir)
    return manifest


def load_prepared(out_dir: Path) -> tuple[dict[str, Any], Tokenizer, Tokenizer]:
    """Manifest plus source and target tokenizers (the same object for a joint vocabulary).

    Raises DataError when the folder was never prepared or a tokenizer file changed since.
    """
    out_dir = Path(out_dir)
    manifest = read_manifest(out_dir)
    loaded: dict[str, Tokenizer] = {}
    for entry in manifest["tokenizers"].values():
        if entry["path"] not in loaded:
            tok = Tokenizer.load(out_dir / entry["path"])
            if tok.sha256 != entry["sha256"]:
                raise DataError(
                    f"{out_dir / entry['path']} changed since the corpus was prepared; prepare it again with --force"
                )
            loaded[entry["path"]] = tok
    return (manifest, loaded[manifest["tokenizers"]["src"]["path"]], loaded[manifest["tokenizers"]["tgt"]["path"]])
