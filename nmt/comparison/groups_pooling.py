"""How a grouped comparison's arms pool over the groups, and which tests Holm corrects together,
beside :mod:`nmt.comparison.groups`' tables.

- **Pools**: each arm's per-seed differences to the baseline with the group as a block (a t-test
  with the spread pooled within groups), and its per-group mean difference with its squared
  standard error (s^2 / n) pooled by a fixed effect and by random effects, with Cochran's Q and I^2
  (:mod:`nmt.score.meta`), beside the t pool over the groups the summary gives.
- **Families**: Holm's adjustment depends on which tests it counts together.  The summary adjusts
  within each group (the arms' tests against the baseline in one group); :func:`widest_family`
  adjusts over every test of every group at once, the strictest reading, so a headline can be stated
  for the widest family too.  A table of one group names its one family (:func:`one_family`): its
  arms' tests against the baseline, adjusted together.
"""

from __future__ import annotations

import statistics
from typing import Any

from nmt.comparison.groups_noise import Grouped
from nmt.score.across import holm
from nmt.score.meta import blocked_t, meta_pool


def _baseline(rows: list[dict[str, Any]]) -> str:
    return next(r["variant"] for r in rows if r["baseline"])


def _tested(tables: dict[str, list[dict[str, Any]]]) -> list[tuple[str, str, float]]:
    """(group, arm, paired t-test p over seeds) of every arm tested against its group's baseline."""
    return [
        (p, r["variant"], r["test"].p)
        for p, rows in tables.items()
        for r in rows
        if not r["baseline"] and r["test"].p is not None
    ]


def pools_table(grouped: Grouped, tables: dict[str, list[dict[str, Any]]]) -> list[str]:
    """Per arm: the fixed-effect and random-effects pools of its per-group differences, Cochran's Q
    and I^2; nothing where no arm has two or more seeds with spread in every group."""
    pairs = list(tables)
    lines = [
        "| variant | blocked ΔBLEU (95% CI) | p (t, df) | fixed effect ΔBLEU (95% CI) | p (z) "
        f"| random effects ΔBLEU (95% CI) | p (z) | tau | Cochran's Q ({len(pairs) - 1} df) | p heterogeneity | I² |",
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    for v in [r["variant"] for r in next(iter(tables.values()))]:
        estimates, variances, seeds = [], [], []
        for p in pairs:
            base = _baseline(tables[p])
            if v == base or v not in grouped[p]:
                break
            diffs = [
                grouped[p][v][s]["bleu"] - grouped[p][base][s]["bleu"] for s in grouped[p][v] if s in grouped[p][base]
            ]
            if len(diffs) < 2 or statistics.variance(diffs) == 0:
                break
            estimates.append(statistics.fmean(diffs))
            variances.append(statistics.variance(diffs) / len(diffs))
            seeds.append(diffs)
        else:
            if len(estimates) >= 2:
                pool, block = meta_pool(estimates, variances), blocked_t(seeds)
                f, r = pool.fixed, pool.random
                lines.append(
                    f"| {v} | {block.mean:+.2f} ± {block.half:.2f} | {block.p:.3f} ({block.df}) "
                    f"| {f.mean:+.2f} ± {f.half:.2f} | {f.p:.3f} | {r.mean:+.2f} ± {r.half:.2f} | {r.p:.3f} "
                    f"| {pool.tau2**0.5:.2f} | {pool.q:.2f} | {pool.q_p:.3f} | {pool.i2:.0%} |"
                )
    if len(lines) == 2:
        return []
    return [
        *lines,
        "",
        "Blocked: every seed's difference, the pair as a block, one spread pooled within the pairs (a t-test "
        "with seeds minus pairs degrees of freedom). Fixed effect: the pairs' mean differences weighted by the "
        "inverse of their squared standard errors (one true effect for every pair); random effects: DerSimonian and Laird's, each pair's true effect "
        "drawn around the mean with spread tau. Cochran's Q tests whether the pairs' effects differ (a small "
        "p: they do); I² is the share of their spread beyond chance. Both pools are z-tests on standard errors "
        "estimated from the seeds, so approximate with few seeds.",
    ]


def widest_family(tables: dict[str, list[dict[str, Any]]]) -> list[str]:
    """Holm over every arm's test in every group at once: a table of the adjusted p-values per group,
    and the line naming the family and the tests it keeps below 0.05."""
    tested = _tested(tables)
    if len(tables) < 2 or not tested:
        return []
    adjusted = {(p, v): q for (p, v, _), q in zip(tested, holm([t for _, _, t in tested]))}
    pairs = list(tables)
    arms = list(dict.fromkeys(v for _, v, _ in tested))
    lines = [
        f"| variant | Holm p over all {len(tested)} tests ({', '.join(pairs)}) |",
        "| --- | ---: |",
    ]
    for v in arms:
        lines.append(
            f"| {v} | " + ", ".join(f"{adjusted[p, v]:.3f}" if (p, v) in adjusted else "-" for p in pairs) + " |"
        )
    kept = {v: [p for p in pairs if adjusted.get((p, v), 1.0) < 0.05] for v in arms}
    named = [f"{v} in {', '.join(where)}" for v, where in kept.items() if where]
    counts = sorted({sum(1 for p, _, _ in tested if p == pair) for pair in pairs})
    per_pair = str(counts[0]) if len(counts) == 1 else f"{counts[0]} to {counts[-1]}"
    return [
        f"Holm's families. Within each pair (the summary's last column): the {per_pair} tests of that pair's "
        f"arms against its baseline. The widest family, every paired t-test over seeds of every pair at once "
        f"({len(tested)} tests):",
        "",
        *lines,
        "",
        f"Below 0.05 in the widest family: {'; '.join(named) if named else 'no test'}.",
    ]


def one_family(tables: dict[str, list[dict[str, Any]]]) -> list[str]:
    """One group's Holm family, named: its arms' paired t-tests against the baseline, adjusted together,
    and which stay below 0.05; nothing over two or more groups (:func:`widest_family` names theirs) or
    where no arm was tested."""
    tested = _tested(tables)
    if len(tables) != 1 or not tested:
        return []
    base = next(r["variant"] for r in next(iter(tables.values())) if r["baseline"])
    adjusted = holm([t for _, _, t in tested])
    kept = [v for (_, v, _), q in zip(tested, adjusted) if q < 0.05]
    return [
        f"Holm's family: the {len(tested)} paired t-tests over seeds of this table's arms against {base}; "
        "adjusted p "
        + ", ".join(f"{v} {q:.3f}" for (_, v, _), q in zip(tested, adjusted))
        + f". Below 0.05 in this family: {', '.join(kept) if kept else 'no test'}.",
    ]
