"""Split names: ours, Multi30k's upstream names as aliases, and the one-line refusal of a split that
a prepared corpus lacks.

nmt names Multi30k's splits train, valid, test2016, test2017, ... (:data:`nmt.data.sources.MULTI30K_SPLITS`);
the dataset's own files are named val, test_2016_flickr, test_2017_flickr, ...  A user who reads
the dataset's page types either, so both name the same split.  The later test sets are prepared
only where upstream has them for both languages (Czech, for one, has no 2017 set): asking for one
that is not there is told so, with the splits there are, since "run nmt data prepare first" could
not add it.
"""

from __future__ import annotations

from nmt.config.sections import DataConfig
from nmt.data.sources import MULTI30K_SPLITS
from nmt.util.errors import SHOWN_VALUE_CHARS, UserError, short_repr, shorten

UPSTREAM_NAMES = {stem: ours for ours, stem in MULTI30K_SPLITS.items() if stem != ours}
"""Multi30k's file stem -> our split name (``test_2017_flickr`` -> ``test2017``, ``val`` -> ``valid``)."""


def split_name(name: str) -> str:
    """Our name of a split: a Multi30k upstream name becomes ours; any other name is kept."""
    return UPSTREAM_NAMES.get(name, name)


def prepared_splits(data: DataConfig) -> list[str]:
    """The splits prepared for ``data`` (those with a source-side text file), sorted; none if unprepared."""
    folder = data.prepared_dir
    return sorted({p.stem for p in folder.glob(f"*.{data.src}")}) if folder.is_dir() else []


def check_split(data: DataConfig, split: str, option: str = "--split") -> str:
    """Our name of ``split`` (an upstream name accepted) if ``data``'s prepared corpus has it; else a
    UserError naming ``option``, why the split is missing and the splits there are."""
    ours = split_name(split)
    have = prepared_splits(data)
    if ours in have:
        return ours
    folder, given = data.prepared_dir, f"{option} {shorten(split, SHOWN_VALUE_CHARS)}"
    if not have:
        raise UserError(f"{given}: no prepared corpus in {folder}; run nmt data prepare first")
    why = ""
    if data.corpus == "multi30k" and ours in MULTI30K_SPLITS:
        why = f": its source, Multi30k, had no {MULTI30K_SPLITS[ours]} files for {data.pair} when it was prepared"
    raise UserError(
        f"{given}: the corpus prepared in {folder} has no split {short_repr(ours)}{why}; choose from {', '.join(have)}"
    )
