"""The two noises of a grouped comparison, beside :mod:`nmt.comparison.groups`' tables.

- **Both at once**: each ``nmt compare`` folder scored its arms with approximate randomization over
  every replicate's translations, stratified by seed (Clark et al. 2011), which holds the test set's
  noise and the training runs' together.  The translations themselves are not in the records, so the
  p-values are carried from the comparisons' reports (each record's ``p_ar`` and the seeds it covers,
  ``ar_seeds``); :func:`combined_table` prints them per group, raw and Holm-adjusted within the group.
- **Between seeds**: the spread of the per-seed differences to the baseline, pooled over the groups and
  arms (:func:`nmt.comparison.scores.spread_samples` chooses the arms, as ``nmt compare`` does), and
  what a paired t-test with that spread can detect (:mod:`nmt.score.power`).
"""

from __future__ import annotations

import math
from typing import Any

from nmt.comparison.scores import spread_samples
from nmt.score.across import holm
from nmt.score.power import ALPHA, POWER, detectable_difference, pooled_spread
from nmt.util.errors import UserError

Record = dict[str, Any]
Grouped = dict[str, dict[str, dict[int, Record]]]  # {group: {arm: {seed: record}}}

POWER_SEEDS = (3, 5, 10)
"""Seed counts the power line reports."""


def _tests(group: str, arm: str, runs: dict[int, Record]) -> list[tuple[float, tuple[int, ...]]]:
    """An arm's approximate-randomization tests in one group: (p, seeds covered), one per comparison
    its records came from; a p-value that is not a probability is refused in one line."""
    found = sorted({(r["p_ar"], tuple(r.get("ar_seeds") or ())) for r in runs.values() if r.get("p_ar") is not None})
    for p, _ in found:
        if not (isinstance(p, (int, float)) and math.isfinite(p) and 0.0 <= p <= 1.0):
            raise UserError(f"{group} {arm}: p_ar {p!r} is not a probability; collect the records again")
    return [(p, seeds) for p, seeds in found]


def combined_table(grouped: Grouped) -> list[str]:
    """Per group and arm, approximate randomization over the replicates: p raw (Holm-adjusted over
    the group's tests); then the seeds each group's tests cover.  No lines where no record has one."""
    tests = {g: {a: t for a, runs in arms.items() if (t := _tests(g, a, runs))} for g, arms in grouped.items()}
    tests = {g: found for g, found in tests.items() if found}
    if not tests:
        return []
    groups = list(tests)
    cells: dict[tuple[str, str], list[str]] = {}  # {(group, arm): each test's cell text}
    covered: dict[str, set[tuple[int, ...]]] = {}  # {group: the seed sets its tests cover}
    for g in groups:
        flat = [(arm, p, seeds) for arm, found in tests[g].items() for p, seeds in found]
        adjusted = holm([p for _, p, _ in flat])
        seed_sets = {seeds for _, _, seeds in flat}
        covered[g] = seed_sets
        for (arm, p, seeds), adj in zip(flat, adjusted):
            shown = f"{p:.4f} ({adj:.4f})" + (f" seeds {', '.join(map(str, seeds))}" if len(seed_sets) > 1 else "")
            cells.setdefault((g, arm), []).append(shown)
    arms = list(dict.fromkeys(a for g in groups for a in tests[g]))  # every tested arm, in first-seen order
    lines = [
        "Approximate randomization over every replicate's translations at once, stratified by seed (the "
        "comparisons' own combined test): p per pair, Holm-adjusted over the pair's tests in parentheses",
        "",
        "| variant | " + " | ".join(f"{g} p AR (Holm)" for g in groups) + " |",
        "| --- |" + " ---: |" * len(groups),
    ]
    lines += [f"| {a} | " + " | ".join("; ".join(cells.get((g, a), [])) for g in groups) + " |" for a in arms]
    uniform = {g: next(iter(s)) for g, s in covered.items() if len(s) == 1}
    if uniform:
        lines += [
            "",
            "Seeds the tests cover: " + "; ".join(f"{g} {', '.join(map(str, s))}" for g, s in uniform.items()),
        ]
    return lines


def seed_spread(grouped: Grouped) -> float | None:
    """The standard deviation of the per-seed differences to the baseline, pooled over every group's
    arms (:func:`~nmt.comparison.scores.spread_samples`); None without two seeds or without spread."""
    samples = []
    for arms in grouped.values():
        baseline = next(r["baseline"] for runs in arms.values() for r in runs.values())
        per_seed = {arm: {s: r["bleu"] for s, r in runs.items()} for arm, runs in arms.items()}
        samples += spread_samples(per_seed, baseline)
    return pooled_spread(samples)


def _tested_arms(arms: dict[str, dict[int, Record]]) -> int:
    """How many of a group's arms a paired t-test compares with its baseline: two or more shared seeds."""
    baseline = next(r["baseline"] for runs in arms.values() for r in runs.values())
    return sum(1 for arm, runs in arms.items() if arm != baseline and len(set(runs) & set(arms[baseline])) >= 2)


def seed_power_lines(grouped: Grouped) -> list[str]:
    """One line: the pooled spread between seeds and the smallest difference a paired t-test over
    each of :data:`POWER_SEEDS` seeds detects on one group (power :data:`~nmt.score.power.POWER`, two-sided
    :data:`~nmt.score.power.ALPHA`), then at Holm's first threshold within a group's family and, over two
    or more groups, within the widest family (every group's tests at once); no line where
    :func:`seed_spread` is None."""
    sigma = seed_spread(grouped)
    if sigma is None:
        return []

    def found(tests: int) -> str:  # the smallest detectable difference per seed count, at Holm's first threshold
        return ", ".join(f"{n} seeds {detectable_difference(sigma, n, alpha=ALPHA / tests):.2f}" for n in POWER_SEEDS)

    per_group = [_tested_arms(arms) for arms in grouped.values()]  # a group's family: its arms against the baseline
    tests, widest = max(per_group), sum(per_group)  # the widest family: every group's tests at once
    line = (
        f"Power: the per-seed differences to the baseline spread {sigma:.2f} BLEU (standard deviation pooled over "
        f"the pairs and arms, none left out beside other arms); the smallest true difference a paired t-test on one "
        f"pair finds with {POWER:.0%} power (alpha {ALPHA}): {found(1)} BLEU"
    )
    if tests > 1:
        line += (
            f"; at Holm's first threshold within a pair's family of {tests} tests (alpha {ALPHA}/{tests} = "
            f"{ALPHA / tests:.4f}): {found(tests)} BLEU"
        )
    if widest > tests:
        line += (
            f"; in the widest family of {widest} tests (alpha {ALPHA}/{widest} = {ALPHA / widest:.4f}): "
            f"{found(widest)} BLEU"
        )
    return [line]
