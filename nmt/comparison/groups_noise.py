"""The two noises of a grouped comparison, beside :mod:`nmt.comparison.groups`' tables.

- **Both at once**: each ``nmt compare`` folder scored its arms with approximate randomization over
  every replicate's translations, stratified by seed (Clark et al. 2011), which holds the test set's
  noise and the training runs' together.  The translations themselves are not in the records, so the
  p-values are carried from the comparisons' reports (each record's ``p_ar`` and the seeds it covers,
  ``ar_seeds``); :func:`combined_table` prints them per group, raw and Holm-adjusted within the group.
- **Between seeds**: the spread of the per-seed differences to the baseline, pooled over the groups and
  the attention arms (an arm named ``none`` left out: its gap is of another size), and what a paired
  t-test with that spread can detect at 80% power (:mod:`nmt.score.power`).
"""

from __future__ import annotations

import math
import statistics
from typing import Any, Optional

from nmt.score.across import holm
from nmt.score.power import detectable_difference

Grouped = dict[str, dict[str, dict[int, dict[str, Any]]]]  # {group: {arm: {seed: record}}}

POWER_SEEDS = (3, 5, 10)
"""Seed counts the power line reports."""


def _combined(runs: dict[int, dict[str, Any]]) -> Optional[tuple[float, tuple[int, ...]]]:
    """An arm's approximate-randomization p-value and the seeds it covers, where its records carry one."""
    found = {(r["p_ar"], tuple(r["ar_seeds"])) for r in runs.values() if r.get("p_ar") is not None}
    if len(found) > 1:  # two comparisons of one arm: the one over more seeds speaks for both
        return max(found, key=lambda pair: len(pair[1]))
    return next(iter(found), None)


def combined_table(grouped: Grouped) -> list[str]:
    """Per group and arm, approximate randomization over the replicates: p raw (Holm within the
    group), under the seeds it covers; no lines where no record carries the test."""
    cells: dict[str, dict[str, tuple[float, float]]] = {}  # {group: {arm: (p, Holm-adjusted p)}}
    seeds: dict[str, tuple[int, ...]] = {}
    for group, arms in grouped.items():
        found = {arm: c for arm, runs in arms.items() if (c := _combined(runs)) is not None}
        if found:
            adjusted = holm([p for p, _ in found.values()])
            cells[group] = {arm: (p, adj) for (arm, (p, _)), adj in zip(found.items(), adjusted)}
            seeds[group] = max((s for _, s in found.values()), key=len)
    if not cells:
        return []
    groups = list(cells)
    tested = [arm for arm in next(iter(grouped.values())) if any(arm in cells[g] for g in groups)]
    lines = [
        "Approximate randomization over every replicate's translations at once, stratified by seed (the "
        "comparisons' own test): p per pair, Holm-adjusted within the pair in parentheses",
        "",
        "| variant | " + " | ".join(f"{g} p AR, seeds {', '.join(map(str, seeds[g]))} (Holm)" for g in groups) + " |",
        "| --- |" + " ---: |" * len(groups),
    ]
    for arm in tested:
        parts = ["" if arm not in cells[g] else "{:.4f} ({:.4f})".format(*cells[g][arm]) for g in groups]
        lines.append(f"| {arm} | " + " | ".join(parts) + " |")
    return lines


def seed_spread(grouped: Grouped) -> Optional[float]:
    """The standard deviation of the per-seed differences to the baseline, pooled (root mean of the
    variances) over every group's arms but the baseline and ``none``; None with fewer than two seeds."""
    variances = []
    for arms in grouped.values():
        baseline = next(r["baseline"] for runs in arms.values() for r in runs.values())
        base = arms.get(baseline, {})
        for arm, runs in arms.items():
            if arm in (baseline, "none"):
                continue
            diffs = [runs[s]["bleu"] - base[s]["bleu"] for s in runs if s in base]
            if len(diffs) >= 2:
                variances.append(statistics.variance(diffs))
    spread = math.sqrt(statistics.fmean(variances)) if variances else 0.0
    return spread if spread > 0.0 else None


def power_line(grouped: Grouped) -> list[str]:
    """One line: the pooled spread between seeds and the smallest difference a paired t-test over
    3, 5 and 10 seeds detects with 80% power at alpha 0.05 (two-sided) on one group."""
    sigma = seed_spread(grouped)
    if sigma is None:
        return []
    found = ", ".join(f"{n} seeds {detectable_difference(sigma, n):.2f}" for n in POWER_SEEDS)
    return [
        f"Power: the per-seed differences to the baseline spread {sigma:.2f} BLEU (standard deviation pooled over "
        f"the pairs and the attention arms); the smallest true difference a paired t-test on one pair finds with "
        f"80% power (alpha 0.05): {found} BLEU"
    ]
