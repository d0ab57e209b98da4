"""The RWTH German-English gold word alignments (Vilar et al. 2006), fetched once and checked.

508 hand-aligned Europarl sentence pairs, the set alignment error rate is measured on
(``nmt align``, notebook 08, the Europarl corpus's exclusion list).  :func:`fetch_gold_archive`
puts the archive at ``<data root>/alignments/DeEnGoldAlignment.tar.gz``, downloaded from RWTH's
page or copied from a local mirror folder, and refuses a file whose SHA-256 is not the archive's,
so every AER on nmt's pages is measured on the same 508 pairs.  The archive's licence is RWTH's
(research use); nmt never bundles it.
"""

from __future__ import annotations

import hashlib
import logging
import shutil
from pathlib import Path

from nmt.data.sources import _download
from nmt.util.errors import DataError
from nmt.util.fileio import atomic_write_bytes

logger = logging.getLogger(__name__)

GOLD_NAME = "DeEnGoldAlignment.tar.gz"
GOLD_URL = f"https://www-i6.informatik.rwth-aachen.de/goldAlignment/{GOLD_NAME}"
GOLD_SHA256 = "5aea49f44a9da4cf575d2dd303a8e12ebe7ba8b615ede7c28e7f8b0a0eb95793"
"""Of the archive as RWTH publishes it (82,544 bytes)."""


def gold_path(root: str | Path = "data") -> Path:
    """Where :func:`fetch_gold_archive` puts the archive under the data root ``root``."""
    return Path(root) / "alignments" / GOLD_NAME


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def fetch_gold_archive(root: str | Path = "data", mirror: str | Path | None = None) -> Path:
    """The archive at :func:`gold_path`: kept if already there and intact, else copied from ``mirror``
    (a folder holding it) or downloaded; a file whose checksum differs is refused in one line."""
    dest = gold_path(root)
    if dest.is_file() and _sha256(dest) == GOLD_SHA256:
        logger.info("reusing %s (checksum verified)", dest)
        return dest
    dest.parent.mkdir(parents=True, exist_ok=True)
    if mirror is not None:
        source = Path(mirror) / GOLD_NAME
        if not source.is_file():
            raise DataError(f"mirror {mirror} has no {GOLD_NAME}")
        digest = _sha256(source)
        if digest != GOLD_SHA256:
            raise DataError(
                f"{source} is not the RWTH archive (sha256 {digest[:16]}..., expected {GOLD_SHA256[:16]}...)"
            )
        shutil.copyfile(source, dest.with_suffix(".part"))
        dest.with_suffix(".part").replace(dest)
        return dest
    staging = dest.with_name(dest.name + ".download")
    if not _download(GOLD_URL, staging):
        raise DataError(f"{GOLD_URL} is not there (HTTP 404); use --mirror DIR with a local copy of {GOLD_NAME}")
    digest = _sha256(staging)
    if digest != GOLD_SHA256:
        staging.unlink()
        raise DataError(f"the download of {GOLD_URL} is not the RWTH archive (sha256 {digest[:16]}...); not kept")
    atomic_write_bytes(dest, staging.read_bytes())
    staging.unlink()
    return dest
