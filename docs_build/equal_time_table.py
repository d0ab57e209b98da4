"""Equal training time, as a table: the JSON lines of scripts/bench_equal_time.py, per seed and per arm.

Per seed, each arm's updates, minutes, stop reason, chosen model, validation BLEU and test BLEU;
then per arm the mean test BLEU and chrF over seeds with 95% t intervals, and each arm's paired
difference to the first arm (the baseline: the first config of the first line) over the seeds
both hold, with the paired t-test; where the lines hold their learning curves, greedy validation
BLEU per arm at the same updates and at the same minutes (equal updates against equal time).  The
devices and commits the runs report are named under the table; lines of more than one of either,
or of more than one time budget, are tabulated but said to be so, since a comparison is meant to
hold one device and one code version, as is a run that stopped for another reason than its time
budget.  A seed that appears twice for an arm is refused.

    python docs_build/equal_time_table.py docs/measurements/equal_time_tatoeba_DATE_cpu.jsonl
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any, Optional

from nmt.score.seed_stats import mean_interval, paired_t_test
from nmt.util.errors import UserError
from nmt.util.fileio import read_json_lines

SCRIPT = "equal_time_table.py"
NEEDED = ("config", "arch", "seed", "updates", "minutes", "stop_reason", "chosen", "valid_bleu", "test_bleu")


def read_lines(paths: list[Path]) -> list[dict[str, Any]]:
    """Every line of ``paths`` that is a measurement of bench_equal_time (others, such as notes, are skipped)."""
    rows = []
    for where, row in read_json_lines(paths):
        if not isinstance(row, dict) or row.get("bench") != "equal_time":
            continue
        missing = [key for key in NEEDED if row.get(key) is None]
        if missing:
            raise UserError(f"{where}: no {', '.join(missing)}")
        if not isinstance(row["test_bleu"], (int, float)) or isinstance(row["test_bleu"], bool):
            raise UserError(f"{where}: test_bleu is {row['test_bleu']!r}, not a number")
        rows.append(row)
    if not rows:
        raise UserError("no bench_equal_time lines in " + ", ".join(map(str, paths)))
    return rows


def by_arm(rows: list[dict[str, Any]]) -> dict[str, dict[int, dict[str, Any]]]:
    """Config -> seed -> line, configs in the order they first appear; a seed twice for a config is refused."""
    arms: dict[str, dict[int, dict[str, Any]]] = {}
    for row in rows:
        seeds = arms.setdefault(row["config"], {})
        if row["seed"] in seeds:
            raise UserError(f"{row['config']} seed {row['seed']} appears twice")
        seeds[row["seed"]] = row
    return arms


def fmt(value: Any, digits: int = 2) -> str:
    """A cell: a float to ``digits`` places, anything else as it is, nothing for None."""
    return "" if value is None else f"{value:.{digits}f}" if isinstance(value, float) else str(value)


def per_seed(arms: dict[str, dict[int, dict[str, Any]]]) -> list[str]:
    """The table of every run: what it made of its time, the model chosen, its scores."""
    out = [
        "| config | arch | seed | updates | minutes | stopped by | chosen | valid BLEU (beam) | test BLEU | chrF |",
        "| --- | --- | ---: | ---: | ---: | --- | --- | ---: | ---: | ---: |",
    ]
    for config, seeds in arms.items():
        for seed in sorted(seeds):
            r = seeds[seed]
            out.append(
                f"| `{config}` | {r['arch']} | {seed} | {r['updates']:,} | {fmt(r['minutes'], 1)} | {r['stop_reason']} "
                f"| {r['chosen']} | {fmt(r['valid_bleu'])} | {fmt(r['test_bleu'])} | {fmt(r.get('test_chrf'))} |"
            )
    return out


def summary(arms: dict[str, dict[int, dict[str, Any]]]) -> list[str]:
    """Per arm, the mean over seeds with its interval, and the paired difference to the first arm."""
    baseline_name = next(iter(arms))
    baseline = arms[baseline_name]
    out = [
        "| config | arch | seeds | updates (mean) | test BLEU (mean ± 95% CI) | chrF | ΔBLEU to the first (paired) | p (paired t) |",
        "| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    for config, seeds in arms.items():
        rows = [seeds[s] for s in sorted(seeds)]
        bleu = mean_interval([r["test_bleu"] for r in rows])
        chrf = [r["test_chrf"] for r in rows if r.get("test_chrf") is not None]
        updates = sum(r["updates"] for r in rows) / len(rows)
        if config == baseline_name:
            delta, p = "baseline", ""
        else:
            shared = sorted(set(seeds) & set(baseline))
            if shared:
                test = paired_t_test(
                    [seeds[s]["test_bleu"] for s in shared], [baseline[s]["test_bleu"] for s in shared]
                )
                delta = f"{test.difference.cell(sign=True)} ({len(shared)} seed{'s' if len(shared) > 1 else ''})"
                p = "" if test.p is None else f"{test.p:.3f}"
            else:
                delta, p = "no shared seed", ""
        out.append(
            f"| `{config}` | {rows[0]['arch']} | {len(rows)} | {updates:,.0f} | {bleu.cell()} "
            f"| {mean_interval(chrf).cell() if chrf else ''} | {delta} | {p} |"
        )
    return out


def curve_at_minute(curve: list[list[float]], minute: float) -> Optional[list[float]]:
    """The last validation of ``curve`` ([update, minutes, BLEU, lr] rows) made by ``minute``; None before the first."""
    made = [point for point in curve if point[1] <= minute + 1e-9]
    return made[-1] if made else None


def curves(arms: dict[str, dict[int, dict[str, Any]]], step_minutes: float = 5.0) -> list[str]:
    """Greedy validation BLEU per arm (mean over seeds) at the updates every run validated at, then at
    every ``step_minutes`` of the budget and at the end: equal updates against equal time.

    A minute's cell holds each run's last validation by then, with the mean of their updates; it says
    "not yet validated" until every seed of the arm has validated.  The end is each run's last
    validation, whenever it stopped (an early stop is flagged under the table, by :func:`provenance`),
    labelled with the largest budget.  Nothing where a line has no ``valid_curve``; no update rows
    where the arms share no validated update (other ``valid_every``)."""
    runs = [run for seeds in arms.values() for run in seeds.values()]
    if not runs or not all(run.get("valid_curve") for run in runs):
        return []
    names = [f"`{Path(config).stem}`" for config in arms]
    shared = set.intersection(*({int(point[0]) for point in run["valid_curve"]} for run in runs))
    at_updates = "at the same update and " if shared else ""
    out = [
        f"Greedy validation BLEU, mean over seeds (± 95% CI), {at_updates}at the same minute of training "
        "(with the mean update each arm's seeds had reached):",
        "",
        "| at | " + " | ".join(names) + " |",
        "| --- |" + " ---: |" * len(names),
    ]
    for update in sorted(shared):
        cells = []
        for seeds in arms.values():
            points = [next(p for p in run["valid_curve"] if int(p[0]) == update) for run in seeds.values()]
            cells.append(mean_interval([p[2] for p in points]).cell())
        out.append(f"| update {update:,} | " + " | ".join(cells) + " |")
    budget = max(run.get("minutes_budget") or run["minutes"] for run in runs)
    minutes = [step_minutes * k for k in range(1, int(budget / step_minutes + 1e-9) + 1)]
    for minute in [m for m in minutes if m < budget - 1e-9] + [None]:  # None: the end, each run's last validation
        cells = []
        for seeds in arms.values():
            found = [
                run["valid_curve"][-1] if minute is None else curve_at_minute(run["valid_curve"], minute)
                for run in seeds.values()
            ]
            points = [p for p in found if p is not None]
            if len(points) < len(found):
                cells.append("not yet validated")
                continue
            bleu = mean_interval([p[2] for p in points]).cell()
            cells.append(f"{bleu} (update {sum(p[0] for p in points) / len(points):,.0f})")
        at = f"minute {minute:g}" if minute is not None else f"the end (minute {budget:g})"
        out.append(f"| {at} | " + " | ".join(cells) + " |")
    return out


def provenance(rows: list[dict[str, Any]]) -> list[str]:
    """The budgets, devices and commits of the lines, and a warning where they are not one each."""
    devices = sorted({f"{r.get('device_name')} ({r.get('device')}, {r.get('threads')} thread(s) a run)" for r in rows})
    commits = sorted({str(r.get("commit")) for r in rows})
    budgets = sorted({f"{r.get('minutes_budget'):g}" for r in rows if r.get("minutes_budget") is not None})
    lines = [
        f"Budget: {', '.join(budgets) or '?'} minutes a run, validation included; "
        f"devices: {'; '.join(devices)}; commits: {', '.join(commits)}"
    ]
    if len(devices) > 1 or len(commits) > 1 or len(budgets) > 1:
        lines.append(
            "These lines mix devices, commits or budgets: the comparison is not at one time on one device and one "
            "code version."
        )
    early = [f"{r['config']} seed {r['seed']} ({r['stop_reason']})" for r in rows if r["stop_reason"] != "time_budget"]
    if early:
        lines.append("Stopped before the time budget ended: " + ", ".join(early) + ".")
    return lines


def table(rows: list[dict[str, Any]]) -> str:
    """The page's Markdown: the runs, the arms, where they come from."""
    arms = by_arm(rows)
    if len(arms) < 2:
        raise UserError(f"one config only ({next(iter(arms))}): nothing to compare")
    learning = curves(arms)
    parts = [*per_seed(arms), "", *summary(arms), "", *([*learning, ""] if learning else []), *provenance(rows)]
    return "\n".join(parts) + "\n"


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog=SCRIPT, description=__doc__.split("\n\n")[0])
    parser.add_argument("jsonl", nargs="+", type=Path, help="JSON lines written by scripts/bench_equal_time.py.")
    args = parser.parse_args(argv)
    try:
        sys.stdout.write(table(read_lines(args.jsonl)))
    except UserError as exc:
        sys.exit(f"{SCRIPT}: error: {exc}")


if __name__ == "__main__":
    main()
