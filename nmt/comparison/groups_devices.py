"""Whether a grouped comparison's arms differ by device: the device as a block.

A comparison whose seeds ran on two devices (or two code versions, which move with them) takes each
paired difference within one device, which removes a device offset only if it is the same for
every arm.  :func:`device_table` tests that: for each arm and group, the mean difference to the
baseline on the second device's seeds minus that on the first's; per arm, the mean of those over
the groups with a t-test (groups - 1 df), or with one group Welch's t-test of the two devices'
per-seed differences; over every arm and group at once, the same (an exploratory test: the cells
share their baselines).  Printed only where the records name two
devices (``device_name``); a device's seeds are the seeds its runs carry.

:func:`rerun_table` makes the same test for a comparison run twice, each run on its own device and
code version with the same seeds (the caption pairs' seeds 1-3 on a GPU, then again on the CPU):
the two sets of records stay apart, since one table holds one run per group, arm and seed.
"""

from __future__ import annotations

import statistics
from collections.abc import Callable
from typing import Any

from nmt.comparison.groups_noise import Grouped, Record
from nmt.score.seed_stats import mean_interval, t_two_sided_p, welch_p


def _device(grouped: Grouped) -> dict[str, list[int]]:
    """Each device's seeds, devices in order of their first seed; empty where a run names no device
    (records written before ``device_name``), which cannot be placed."""
    seeds: dict[str, set[int]] = {}
    for arms in grouped.values():
        for runs in arms.values():
            for seed, r in runs.items():
                if not r.get("device_name"):
                    return {}
                seeds.setdefault(str(r["device_name"]), set()).add(seed)
    return {d: sorted(s) for d, s in sorted(seeds.items(), key=lambda kv: min(kv[1]))}


def _t(values: list[float]) -> tuple[str, str]:
    """``mean ± half`` and the t-test p of ``values`` against 0 (``-`` below two values or without spread)."""
    interval = mean_interval(values)
    if len(values) < 2 or statistics.stdev(values) == 0.0:
        return interval.cell(sign=True), "-"
    t = interval.mean / (statistics.stdev(values) / len(values) ** 0.5)
    return interval.cell(sign=True), f"{t_two_sided_p(t, len(values) - 1):.3f}"


Deltas = Callable[[str, str, str], list[list[float]]]
"""(group, arm, baseline) -> the arm's per-seed differences to the baseline on the first and on the
second device."""


def _seed_deltas(arms: dict[str, dict[int, Record]], variant: str, base: str, seeds: list[int]) -> list[float]:
    """``variant``'s BLEU minus the baseline's, seed by seed, over the ``seeds`` both ran."""
    runs, reference = arms.get(variant, {}), arms[base]
    return [runs[s]["bleu"] - reference[s]["bleu"] for s in seeds if s in runs and s in reference]


def _block(tables: dict[str, list[dict[str, Any]]], deltas: Deltas, header: str) -> list[str]:
    """Per arm, the second device's mean difference minus the first's, per group and pooled (t over
    the groups; with one group, Welch's t over the two devices' seeds); then over every cell."""
    pairs = list(tables)
    pooled, test = (
        ("over the one pair", "Welch t over the seeds")
        if len(pairs) == 1
        else ("mean over pairs (95% CI)", f"t, {len(pairs) - 1} df")
    )
    lines = [
        f"| variant | {' | '.join(pairs)} | {pooled} | p ({test}) |",
        "| --- |" + " ---: |" * (len(pairs) + 2),
    ]
    every: list[float] = []
    for v in [r["variant"] for r in next(iter(tables.values()))]:
        cells: list[float] = []
        for p in pairs:
            base = next(r["variant"] for r in tables[p] if r["baseline"])
            if v == base:
                break
            on = deltas(p, v, base)
            if not all(on):
                break
            cells.append(statistics.fmean(on[1]) - statistics.fmean(on[0]))
        else:
            every += cells
            mean, p_value = _t(cells)
            if len(pairs) == 1:  # one group: the two devices' seeds as two samples
                welch = welch_p(*on)
                p_value = "-" if welch is None else f"{welch:.3f}"
            lines.append(f"| {v} | " + " | ".join(f"{c:+.2f}" for c in cells) + f" | {mean} | {p_value} |")
    if len(lines) == 2:
        return []
    mean, p_value = _t(every)
    return [
        header,
        "",
        *lines,
        "",
        f"Over every arm and pair ({len(every)} cells): {mean} BLEU, p = {p_value} (t-test over the cells, "
        "exploratory: the cells of one pair share its baseline's runs)",
    ]


def device_table(grouped: Grouped, tables: dict[str, list[dict[str, Any]]]) -> list[str]:
    """Per arm, its difference to the baseline on the second device minus on the first, per group and
    pooled; then over every arm and group.  Nothing unless the records span exactly two devices."""
    devices = _device(grouped)
    if len(devices) != 2:
        return []
    (first, first_seeds), (second, second_seeds) = devices.items()
    if set(first_seeds) & set(second_seeds):  # a seed on both devices: no block to compare
        return []
    return _block(
        tables,
        lambda p, v, base: [_seed_deltas(grouped[p], v, base, seeds) for seeds in (first_seeds, second_seeds)],
        f"The device as a block: each arm's difference to the baseline on {second} (seeds "
        f"{', '.join(map(str, second_seeds))}) minus on {first} (seeds {', '.join(map(str, first_seeds))}), "
        "in BLEU: zero where the device moves every arm alike",
    )


def _setting(grouped: Grouped) -> str:
    """Where ``grouped``'s runs ran: their devices and code versions (``commit``), and their seeds."""
    runs = [r for arms in grouped.values() for seeds in arms.values() for r in seeds.values()]
    devices = sorted({str(r.get("device_name") or "an unnamed device") for r in runs})
    commits = sorted({str(r["commit"]) for r in runs if r.get("commit")})
    seeds = sorted({r["seed"] for r in runs})
    at = f" at {'; '.join(commits)}" if commits else ""
    return f"{', '.join(devices)}{at} (seeds {', '.join(map(str, seeds))})"


def rerun_table(grouped: Grouped, against: Grouped, tables: dict[str, list[dict[str, Any]]]) -> list[str]:
    """The same groups run twice, on two devices or code versions, whose seeds may repeat (seed 1 on
    a GPU and seed 1 again on the CPU): per arm, its difference to the baseline in ``grouped`` minus
    in ``against``, per group and pooled as :func:`device_table` does; groups ``against`` lacks are
    left out.  Nothing when no group of ``tables`` is in ``against``."""
    shared = {p: rows for p, rows in tables.items() if p in against}
    if not shared:
        return []
    here, there = {p: grouped[p] for p in shared}, {p: against[p] for p in shared}

    def deltas(p: str, v: str, base: str) -> list[list[float]]:
        if base not in there[p]:
            return [[], []]
        return [_seed_deltas(arms[p], v, base, sorted(arms[p][base])) for arms in (there, here)]

    return _block(
        shared,
        deltas,
        f"The rerun as a block: each arm's difference to the baseline on {_setting(here)} minus on "
        f"{_setting(there)}, in BLEU: zero where the device and code version move every arm alike",
    )
