"""The files ``nmt eval``, ``nmt report`` and ``nmt compare`` write into ``--out``, and the test that
they replace only their own (:mod:`nmt.util.owned`): a user's ``report.md`` or ``*.hyp`` file there is
refused in one line, before any model loads, any run is read or anything trains."""

from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path

from nmt.run.paths import REPORT
from nmt.util.owned import check_ours

REPORT_FILES = (f"{REPORT}.json", f"{REPORT}.md")
"""What every report command writes."""

LENGTH_PLOT = "bleu_by_length.png"
"""The figure of ``nmt eval`` where it knows the sources."""

_REPORT_KEYS = ({"info", "systems"}, {"plan", "variants"})
"""The keys of nmt eval's and nmt compare's report.json, by which a folder written before manifests is known."""

_TRAINING_REPORT = ("# Training report\n", "\n## Parameters and throughput\n")
"""The first line and a heading of nmt report's report.md, by which a folder written before manifests is known."""


def written_before_manifests(folder: Path) -> bool:
    """Whether a folder without a manifest holds a report nmt wrote: a report.json with the keys of
    nmt eval's or nmt compare's, or a report.md with the first line and headings of nmt report's."""
    try:
        payload = json.loads((folder / REPORT_FILES[0]).read_bytes())
        if isinstance(payload, dict) and any(keys <= payload.keys() for keys in _REPORT_KEYS):
            return True
    except (OSError, ValueError):
        pass
    try:
        page = (folder / REPORT_FILES[1]).read_text(encoding="utf-8")
    except (OSError, ValueError):
        return False
    return page.startswith(_TRAINING_REPORT[0]) and _TRAINING_REPORT[1] in page


def check_report_outputs(out: Path, names: Iterable[str], option: str = "--out") -> None:
    """Refuse, in one line naming the file, to write ``names`` into ``out`` where one of them is a file
    nmt did not write there."""
    check_ours(out, names, option, legacy=written_before_manifests)


def hypotheses_in(out: Path, split: str) -> list[str]:
    """The hypothesis files of ``split`` already in ``out`` (``SPLIT.hyp.LANG``): before the model loads,
    the target language is unknown, so each of them must be nmt's."""
    return sorted(p.name for p in Path(out).glob(f"{split}.hyp.*")) if Path(out).is_dir() else []
