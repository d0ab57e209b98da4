"""From the typed ``data`` config to prepared files and cached id arrays.

The only module of :mod:`nmt.data` that reads the config: it picks the
source loader, hands its text to :func:`nmt.data.prepare.prepare` and loads
the encoded splits the trainer needs.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Optional

from nmt.config import DataConfig
from nmt.data import corpora, hub, sources
from nmt.data.dataset import EncodedSplit, load_split
from nmt.data.gold_archive import gold_path
from nmt.data.join import join_pairs
from nmt.data.prepare import MANIFEST, filter_settings, load_prepared, prepare, read_manifest, spm_settings
from nmt.data.tokenizer import Tokenizer
from nmt.util.errors import DataError
from nmt.util.fileio import read_lines

log = logging.getLogger(__name__)

FIXED_SPM = ("seed", "num_threads")
"""SentencePiece settings no config changes (older manifests may lack them): not compared."""


def source_info(cfg: DataConfig) -> dict[str, Any]:
    """Where the text comes from, as recorded in manifest.json (cheap: reads nothing); joined
    captions (``data.join_captions``) add how they were joined (the training groups cut to fit ``max_len``)."""
    joined = {"join_captions": cfg.join_captions, "train_groups_fit": cfg.max_len} if cfg.join_captions > 1 else {}
    return {**_origin(cfg), **joined}


def _origin(cfg: DataConfig) -> dict[str, Any]:
    if cfg.corpus == "synthetic":
        return {
            "generator": "nmt.data.synthetic",
            "seed": cfg.synthetic_seed,
            "sizes": cfg.synthetic_sizes,
            "words": [cfg.synthetic_min_words, cfg.synthetic_max_words],
        }
    if cfg.corpus == "multi30k":  # a mirror holds the same files, so it is not part of the identity
        return {"multi30k": "task1 raw"}
    if cfg.corpus in ("europarl", "tatoeba"):
        shares = corpora.SPLIT_SHARES[cfg.corpus]
        split = {"split": "sha256 of the key sentence", "split_seed": cfg.split_seed, "per_mille": shares}
        if cfg.corpus == "europarl":
            return {"europarl": "NLTK ComTrans sample", **split, "without": "RWTH gold sentences"}
        return {"tatoeba": "manythings.org deu-eng.zip", **split}
    if cfg.corpus == "hub":
        return {"hub": cfg.hub_name, "config": cfg.hub_config, "splits": cfg.hub_splits}
    return {"local": cfg.local_files}


def load_raw(cfg: DataConfig, progress: bool = False) -> sources.Raw:
    """Raw parallel text of every split; ``progress`` lets ``datasets`` show its bars."""
    return _load_raw(cfg, progress)[0]


def _load_raw(cfg: DataConfig, progress: bool) -> tuple[sources.Raw, Optional[dict[str, Any]]]:
    """Raw parallel text of every split, and what was excluded before the split (Europarl), or None."""
    downloads = Path(cfg.root) / "downloads" / cfg.corpus
    if cfg.corpus == "europarl":
        fetched = gold_path(cfg.root)  # where nmt data fetch-alignments puts the RWTH archive
        gold = cfg.gold_alignments or (fetched if fetched.is_file() else None)
        raw, excluded = corpora.load_europarl(cfg.src, cfg.tgt, cfg.mirror, downloads, gold, cfg.split_seed)
        return raw, excluded.to_dict()
    if cfg.corpus == "tatoeba":
        return corpora.load_tatoeba(cfg.src, cfg.tgt, cfg.mirror, downloads, cfg.split_seed), None
    if cfg.corpus == "synthetic":
        synthetic = sources.load_synthetic(
            cfg.src, cfg.tgt, cfg.synthetic_sizes, cfg.synthetic_seed, cfg.synthetic_min_words, cfg.synthetic_max_words
        )
        return synthetic, None
    if cfg.corpus == "multi30k":
        return sources.load_multi30k(cfg.src, cfg.tgt, cfg.mirror, downloads), None
    if cfg.corpus == "hub":
        if not cfg.hub_name:
            raise DataError("data.corpus=hub needs data.hub_name (e.g. wmt14)")
        return hub.load_hub(cfg.hub_name, cfg.hub_config, cfg.src, cfg.tgt, cfg.hub_splits, progress=progress), None
    if not cfg.local_files:
        raise DataError("data.corpus=local needs data.local_files, e.g. {train: [train.de, train.en]}")
    files = {split: (paths[0] if len(paths) == 1 else tuple(paths)) for split, paths in cfg.local_files.items()}
    return sources.load_local(files, cfg.src, cfg.tgt, progress=progress), None


def prepare_corpus(cfg: DataConfig, force: bool = False, progress: bool = False) -> dict[str, Any]:
    """Write ``data/<corpus>/<src>-<tgt>/`` (reused when inputs and settings are unchanged).

    Returns the manifest (split sizes, filter counts, file hashes); ``progress`` shows bars
    (as decided by the caller; see :mod:`nmt.data`).
    """
    raw, excluded = _load_raw(cfg, progress)
    return prepare(
        cfg.corpus,
        join_pairs(raw, cfg.join_captions, cap=cfg.max_len),
        cfg.prepared_dir,
        cfg.src,
        cfg.tgt,
        filters=filter_settings(cfg),
        spm=spm_settings(cfg),
        source_info=source_info(cfg),
        excluded=excluded,
        force=force,
        progress=progress,
    )


def _same_text(manifest: dict[str, Any], cfg: DataConfig) -> bool:
    """Whether a prepared folder's splits come from the text ``cfg`` names, normalized alike: what
    its valid and test splits hold (they are never filtered, and SentencePiece does not touch them)."""
    same_source = manifest.get("source") == json.loads(json.dumps(source_info(cfg), default=str))
    return same_source and manifest.get("cleaning", {}).get("normalization") == cfg.normalization


def _settings_match(manifest: dict[str, Any], cfg: DataConfig) -> bool:
    spm = manifest.get("spm", {})
    filters = manifest.get("cleaning", {}).get("filters", {})
    wanted_filters = {k: v for k, v in filter_settings(cfg).items() if k != "normalization"}
    return (
        _same_text(manifest, cfg)
        and all(spm.get(k) == v for k, v in spm_settings(cfg).items() if k not in FIXED_SPM)
        and filters == wanted_filters
    )


def check_same_text(cfg: DataConfig, config_path: str) -> None:
    """Refuse to score a run on a prepared folder whose splits come from other text than the run's
    data config (another synthetic seed, other local files, another hub dataset, another
    normalization), which a later ``nmt data prepare`` of another config can leave there: its BLEU
    would be of another test set.  ``config_path`` names the run's config for the hint."""
    folder = cfg.prepared_dir
    manifest = read_manifest(folder)
    if not _same_text(manifest, cfg):
        recorded = json.dumps(manifest.get("source"), default=str)
        raise DataError(
            f"{folder} now holds text prepared from {recorded[:200]}, not the text this run trained on; "
            f"prepare it again for the run: nmt data prepare {cfg.corpus} --config {config_path}"
        )


@dataclass
class Corpus:
    """A prepared corpus: its folder, manifest, tokenizers and encoded splits."""

    dir: Path
    manifest: dict[str, Any]
    src_tok: Tokenizer
    tgt_tok: Tokenizer
    splits: dict[str, EncodedSplit] = field(default_factory=dict)

    def text(self, split: str, lang: str) -> list[str]:
        """The prepared (normalized) text of one side of a split."""
        return read_lines(self.dir / f"{split}.{lang}")


def _check_not_empty(folder: Path, manifest: dict[str, Any], splits: Sequence[str]) -> None:
    """Refuse a split prepared without pairs (by a version that allowed it) before training
    starts, rather than at the first validation, after the training time is spent."""
    for split in splits:
        if manifest["splits"][split].get("pairs") == 0:
            raise DataError(
                f"split '{split}' in {folder} has no sentence pairs; give it at least one "
                "and prepare the corpus again with --force"
            )


def load_corpus(cfg: DataConfig, splits: Sequence[str] = ("train", "valid"), progress: bool = False) -> Corpus:
    """Prepare the corpus if needed (or if its settings changed), then load encoded splits."""
    folder = cfg.prepared_dir
    if not (folder / MANIFEST).is_file():
        log.info("no prepared corpus in %s; preparing it now", folder)
        prepare_corpus(cfg, progress=progress)
    manifest, src_tok, tgt_tok = load_prepared(folder)
    if not _settings_match(manifest, cfg):
        log.info("data settings differ from %s/manifest.json; preparing again", folder)
        prepare_corpus(cfg, progress=progress)
        manifest, src_tok, tgt_tok = load_prepared(folder)
    missing = [s for s in splits if s not in manifest["splits"]]
    if missing:
        raise DataError(f"{folder} has no split(s) {', '.join(missing)} (have: {', '.join(manifest['splits'])})")
    _check_not_empty(folder, manifest, splits)
    corpus = Corpus(folder, manifest, src_tok, tgt_tok)
    for split in splits:
        corpus.splits[split] = load_split(folder, split, cfg.src, cfg.tgt, src_tok, tgt_tok, progress=progress)
    return corpus
