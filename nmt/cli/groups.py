"""``nmt compare-groups``: several ``nmt compare`` folders of the same arms and seeds (one per
language pair, say) tabulated per group and across the groups (:mod:`nmt.comparison.groups`).

:func:`register` adds it to the ``nmt`` app (:mod:`nmt.cli`), which owns the error handling.
"""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer

from nmt.cli.options import ModuleOpt, use_modules


def compare_groups_cmd(
    groups: Path = typer.Argument(
        ...,
        help="Folder holding one nmt compare --runs-dir folder per group (DIR/<group>/report/report.json), "
        "every group with the same arms, baseline and seeds.",
        show_default=False,
        metavar="DIR",
    ),
    out: Optional[Path] = typer.Option(
        None,
        "--out",
        help="Folder for groups.jsonl (one JSON line per run) and groups.md (the tables); default: DIR/groups. "
        "Files of those names that nmt did not write there are refused, not replaced.",
        show_default=False,
    ),
    module: Optional[list[str]] = ModuleOpt,
) -> None:
    """Compare the same arms across groups: the groups are nmt compare folders of the same arms and
    seeds under DIR, e.g. one per language pair (nmt compare --runs-dir DIR/de-en, DIR/fr-en, ...).

    Reports, per group, each arm's mean BLEU over seeds with its 95% t interval, its difference to
    the baseline with the paired t-test over seeds and its rank; then, over two or more groups, each
    arm's ΔBLEU and rank per group with Kendall's tau-b between the groups' rankings, Holm's
    adjusted p-values within each group, each arm's pooled ΔBLEU with a t interval over
    the groups, the groups (pairs) and seed pairs with Δ > 0, the partial-conjunction count of the
    groups where the effect replicates (α 0.05), and Kendall's W of the rankings with Friedman's
    test; then each group's approximate randomization over all seeds' translations (the comparisons'
    combined test, raw and Holm-adjusted) and the smallest difference 3, 5 and 10 seeds detect with
    80% power, from the spread between seeds. Writes the records and the tables to --out and prints the tables. Groups whose arms or
    baselines differ are refused.

    Example: nmt compare-groups runs/pairs --out docs/measurements/pairs
    """
    use_modules(module)  # an arm's attention, for counting the FLOPs of runs scored before they were counted
    from nmt.api.groups import compare_groups  # what nmt.compare_groups runs from Python

    result = compare_groups(groups, out)
    typer.echo(result.text, nl=False)
    typer.echo(f"wrote {len(result.records)} runs to {result.jsonl} and the tables to {result.markdown}", err=True)


def register(app: typer.Typer) -> None:
    """Add ``nmt compare-groups`` to ``app``."""
    app.command("compare-groups")(compare_groups_cmd)
