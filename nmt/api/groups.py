"""``nmt.compare_groups``: several comparisons of the same arms (one per language pair, say) pooled.

What ``nmt compare-groups`` runs: per group, each arm's mean BLEU over seeds with its interval, its
paired t-test against the baseline and Holm's adjustment within the group; across the groups,
each arm's pooled difference with a t interval over the groups, where it holds (the
partial-conjunction count) and Kendall's W of the rankings with Friedman's test
(:mod:`nmt.comparison.groups`).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Optional, Union

from nmt.api import arguments as check
from nmt.api.extending import allowing_modules
from nmt.comparison.groups import GroupsResult
from nmt.comparison.groups import compare_groups as _compare_groups

__all__ = ["GroupsResult", "compare_groups"]


def compare_groups(
    folder: Union[str, Path], out: Union[str, Path, None] = None, *, modules: Sequence[str] = ()
) -> GroupsResult:
    """Tabulate ``folder``'s groups (``folder/<group>/report/report.json``, each an ``nmt compare
    --runs-dir`` of the same arms, baseline and seeds), writing ``out/groups.jsonl`` and
    ``out/groups.md`` (default ``folder/groups``); returns the records, the tables and both paths.

    Args:
        modules: modules registering an attention the arms name (see :func:`nmt.register_attention`).

    Raises:
        nmt.util.errors.UserError: a folder without groups, groups whose arms or baselines differ, a
            report.json or scored.json field that is missing or of the wrong kind (naming the file and
            the field), an output folder holding files nmt did not write; one line, before anything is written.
    """
    where = check.path("folder", folder)
    target: Optional[Path] = check.path("out", out) if out is not None else None
    with allowing_modules(modules):
        return _compare_groups(where, target)
