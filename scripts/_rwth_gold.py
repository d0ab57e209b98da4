"""The RWTH German-English gold alignments as scripts/align_rwth.py reads them from their archive.

The set (Vilar et al. 2006: 508 Europarl sentence pairs with sure and possible links) is extracted into
a temporary folder and never copied anywhere else.  Its sentences are Latin-1 and already tokenized;
the last line of each file is blank and is dropped.
"""

from __future__ import annotations

import hashlib
import tarfile
from dataclasses import dataclass
from pathlib import Path

from nmt.score.alignment import GoldAlignment, parse_gold, read_lines
from nmt.util.errors import UserError

MEMBERS = {"de": "DeEn/de", "en": "DeEn/en", "gold": "DeEn/alignmentDeEn.talp"}
"""Where the archive keeps the German and English sentences and the 1-based gold links."""
ENCODING = "latin-1"


@dataclass(frozen=True)
class GoldSet:
    """The RWTH pairs: tokenized sentences (whitespace tokens are the gold's words) and their gold links."""

    sources: list[str]
    targets: list[str]
    gold: list[GoldAlignment]
    archive_sha256: str


def read_archive(archive: Path, folder: Path) -> GoldSet:
    """Extract ``archive`` into ``folder`` and read its three files (Latin-1); the blank lines that end
    all three together are dropped, and every gold link must fall inside its pair."""
    try:
        with tarfile.open(archive) as tar:
            names = set(tar.getnames())
            missing = [m for m in MEMBERS.values() if m not in names]
            if missing:
                raise UserError(f"{archive}: holds no {', '.join(missing)}; give the RWTH DeEnGoldAlignment archive")
            tar.extractall(folder, members=[tar.getmember(m) for m in MEMBERS.values()], filter="data")
    except FileNotFoundError:
        raise UserError(f"{archive}: no such file") from None
    except (tarfile.TarError, OSError) as exc:
        raise UserError(f"{archive}: cannot read it as a tar archive ({exc})") from None
    lines = {key: read_lines(folder / member, f"{archive}:{member}", ENCODING) for key, member in MEMBERS.items()}
    if len({len(v) for v in lines.values()}) != 1:
        counts = ", ".join(f"{MEMBERS[k]} {len(v)}" for k, v in lines.items())
        raise UserError(f"{archive}: its files differ in line count ({counts})")
    while lines["de"] and not any(lines[k][-1].strip() for k in lines):
        for key in lines:
            lines[key].pop()
    sizes = [(len(s.split()), len(t.split())) for s, t in zip(lines["de"], lines["en"])]
    gold = parse_gold(lines["gold"], "rwth", name=f"{archive}:{MEMBERS['gold']}", sizes=sizes)
    return GoldSet(lines["de"], lines["en"], gold, hashlib.sha256(archive.read_bytes()).hexdigest())
