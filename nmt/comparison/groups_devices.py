"""Whether a grouped comparison's arms differ by device: the device as a block.

A comparison whose seeds ran on two devices (or two code versions, which move with them) takes each
paired difference within one device, which removes a device offset only if it is the same for
every arm.  :func:`device_table` tests that: for each arm and group, the mean difference to the
baseline on the second device's seeds minus that on the first's; per arm, the mean of those over
the groups with a t-test (groups - 1 df), or with one group Welch's t-test of the two devices'
per-seed differences; over every arm and group at once, the same (an exploratory test: the cells
share their baselines).  Printed only where the records name two
devices (``device_name``); a device's seeds are the seeds its runs carry.
"""

from __future__ import annotations

import statistics
from typing import Any

from nmt.comparison.groups_noise import Grouped
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


def device_table(grouped: Grouped, tables: dict[str, list[dict[str, Any]]]) -> list[str]:
    """Per arm, its difference to the baseline on the second device minus on the first, per group and
    pooled; then over every arm and group.  Nothing unless the records span exactly two devices."""
    devices = _device(grouped)
    if len(devices) != 2:
        return []
    (first, first_seeds), (second, second_seeds) = devices.items()
    if set(first_seeds) & set(second_seeds):  # a seed on both devices: no block to compare
        return []
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
            runs, reference = grouped[p].get(v, {}), grouped[p][base]
            if v == base:
                break
            on = [
                [runs[s]["bleu"] - reference[s]["bleu"] for s in seeds if s in runs and s in reference]
                for seeds in (first_seeds, second_seeds)
            ]
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
        f"The device as a block: each arm's difference to the baseline on {second} (seeds "
        f"{', '.join(map(str, second_seeds))}) minus on {first} (seeds {', '.join(map(str, first_seeds))}), "
        "in BLEU: zero where the device moves every arm alike",
        "",
        *lines,
        "",
        f"Over every arm and pair ({len(every)} cells): {mean} BLEU, p = {p_value} (t-test over the cells, "
        "exploratory: the cells of one pair share its baseline's runs)",
    ]
