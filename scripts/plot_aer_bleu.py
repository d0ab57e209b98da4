"""Does an attention variant that aligns better translate better?  AER against test BLEU, one point per variant.

Reads the JSON lines scripts/align_rwth.py writes and draws one PNG: x the alignment error rate on
the RWTH gold set (%, lower aligns better), y the test BLEU (higher translates better), one point
per variant at its mean over seeds with 95% Student's t intervals both ways
(``nmt.score.seed_stats.mean_interval``).  A model's point is its default line (``"default":
true``, or a line written before that field, which read the only attention): an RNN's heads
averaged, a Transformer's penultimate layer with its heads averaged (Garg et al. 2019); the per-layer
and per-head lines are not drawn.  A variant with several heads is named with their count, so runs
of one variant with different heads stay apart.  Dashed vertical lines mark the diagonal baseline's
AER and eflomal's grow-diag-final-and (mean over runs, per tokenization) where the files hold them.

One JSON line on stdout: each variant's means and intervals, and the rank correlation of the
variants' mean AER and mean BLEU (Kendall 1938, tau-b; Spearman 1904, rho) with two-sided
p-values and the number of variants.  A negative correlation means the variants that align better
(lower AER) translate better.  Kendall's p is exact where neither mean has a tie (the distribution
of inversions over all orders), else the normal approximation with ties corrected; Spearman's is
the t approximation with n - 2 degrees of freedom (what scipy gives by default; no scipy needed).
A model line without BLEU is skipped with a note on stderr; a mistake ends in one line (exit 2)::

    python scripts/plot_aer_bleu.py aer.jsonl [more.jsonl ...] --out aer_bleu.png [--title TEXT] [--arch rnn]
"""

from __future__ import annotations

import argparse
import math
import statistics
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Optional

import _bench_common as common
from nmt.score.across import ranks
from nmt.score.seed_stats import Interval, kendall_tau, mean_interval, t_two_sided_p
from nmt.util.errors import UserError
from nmt.util.fileio import atomic_write, read_json_lines

SCRIPT = "plot_aer_bleu"
GDFA = "eflomal grow-diag-final-and"
TITLE = "Alignment error against translation quality, per attention variant"


def read_records(paths: Sequence[Path]) -> list[dict[str, Any]]:
    """Every JSON object of the files, blank lines skipped; anything else is one line of error."""
    records = []
    for where, record in read_json_lines(paths):
        if not isinstance(record, dict) or "aligner" not in record:
            raise UserError(f'{where}: not a line of scripts/align_rwth.py (no "aligner")')
        records.append({**record, "_where": where})
    return records


def number(record: dict[str, Any], key: str) -> Optional[float]:
    """``record[key]`` as a float; None where it is missing or null; a non-number is an error."""
    value = record.get(key)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise UserError(f"{record['_where']}: {key} is {value!r}, not a finite number")
    return float(value)


def label(record: dict[str, Any]) -> str:
    """The variant a model line belongs to: its name, with its head count where it has several."""
    heads = record.get("heads")
    name = str(record.get("variant"))
    return f"{name} ({heads} heads)" if isinstance(heads, int) and heads > 1 else name


def model_points(
    records: list[dict[str, Any]], bleu_key: str, arch: Optional[str] = None
) -> dict[str, list[tuple[float, float]]]:
    """(AER %, BLEU) of each model's default line (of ``arch`` alone, where given), by variant; a line
    without BLEU or AER is skipped with a note on stderr."""
    points: dict[str, list[tuple[float, float]]] = {}
    for record in records:
        if record["aligner"] != "nmt" or not record.get("default", True):
            continue
        guessed = "transformer" if record.get("variant") == "transformer" else "rnn"  # a line without "arch"
        if arch is not None and (record.get("arch") or guessed) != arch:
            continue
        aer, bleu = number(record, "aer"), number(record, bleu_key)
        if aer is None or bleu is None:
            missing = bleu_key if bleu is None else "aer"
            print(f"{SCRIPT}: note: {record.get('run')} skipped: no {missing} ({record['_where']})", file=sys.stderr)
            continue
        points.setdefault(label(record), []).append((100 * aer, bleu))
    return points


def references(records: list[dict[str, Any]]) -> dict[str, float]:
    """Mean AER (%) of the diagonal baseline and of eflomal's grow-diag-final-and (per tokenization)."""
    found: dict[tuple[str, str], list[float]] = {}
    for record in records:
        if record.get("variant") not in ("diagonal", GDFA) or (aer := number(record, "aer")) is None:
            continue
        tokens = str(record.get("train_tokens") or "").split(",")[0]
        found.setdefault((record["variant"], tokens), []).append(100 * aer)
    settings = {variant: sum(1 for v, _ in found if v == variant) for variant, _ in found}
    return {
        (f"{variant}, {tokens} tokens" if settings[variant] > 1 else variant): statistics.fmean(values)
        for (variant, tokens), values in sorted(found.items())
    }


# --- rank correlation ------------------------------------------------------------------------------------


def _tie_sums(values: Sequence[float]) -> tuple[int, int, int]:
    """Over the groups of t tied values: sum t(t-1)/2, sum t(t-1)(t-2), sum t(t-1)(2t+5)."""
    counts = [values.count(v) for v in set(values)]
    return (
        sum(t * (t - 1) // 2 for t in counts),
        sum(t * (t - 1) * (t - 2) for t in counts),
        sum(t * (t - 1) * (2 * t + 5) for t in counts),
    )


def kendall_p(x: Sequence[float], y: Sequence[float]) -> tuple[Optional[float], str]:
    """Two-sided p of Kendall's tau-b and how it was found: exact where neither side has a tie (from
    the number of orders of n items with each count of inversions), else the normal approximation of
    S = concordant - discordant pairs with its variance corrected for ties (Kendall 1945)."""
    n = len(x)
    if n < 2:
        return None, "none"
    signs = [(x[i] - x[j]) * (y[i] - y[j]) for i in range(n) for j in range(i + 1, n)]
    s = sum(1 for v in signs if v > 0) - sum(1 for v in signs if v < 0)  # concordant - discordant
    (tx, x0, x1), (ty, y0, y1) = _tie_sums(x), _tie_sums(y)
    total = n * (n - 1) // 2
    if tx == ty == 0:
        orders = [1]  # orders[k]: the orders of the items so far with k inversions
        for size in range(2, n + 1):  # item ``size`` goes in at any of its places, adding 0 to size - 1 inversions
            grown = [0] * (len(orders) + size - 1)
            for k, count in enumerate(orders):
                for added in range(size):
                    grown[k + added] += count
            orders = grown
        discordant = (total - s) // 2
        tail = sum(orders[: min(discordant, total - discordant) + 1]) / math.factorial(n)
        return min(1.0, 2 * tail), "exact"
    if n < 3 or tx == total or ty == total:  # one side all tied: tau-b is undefined
        return None, "normal approximation"
    m = n * (n - 1)
    variance = (m * (2 * n + 5) - x1 - y1) / 18 + 2 * tx * ty / m + x0 * y0 / (9 * m * (n - 2))
    return math.erfc(abs(s) / math.sqrt(2 * variance)), "normal approximation"


def spearman(x: Sequence[float], y: Sequence[float]) -> tuple[Optional[float], Optional[float]]:
    """Spearman's rho (Pearson's correlation of the ranks, ties at their mean rank) and its two-sided
    p by the t approximation, t = rho sqrt((n - 2) / (1 - rho^2)) with n - 2 degrees of freedom."""
    n = len(x)
    if n < 2:
        return None, None
    rx, ry = ranks(x, descending=False), ranks(y, descending=False)
    mx, my = statistics.fmean(rx), statistics.fmean(ry)
    sxy = sum((a - mx) * (b - my) for a, b in zip(rx, ry))
    sxx, syy = sum((a - mx) ** 2 for a in rx), sum((b - my) ** 2 for b in ry)
    if sxx == 0 or syy == 0:
        return None, None
    rho = max(-1.0, min(1.0, sxy / math.sqrt(sxx * syy)))
    if n < 3:
        return rho, None
    if 1.0 - rho * rho < 1e-12:
        return rho, 0.0
    return rho, t_two_sided_p(rho * math.sqrt((n - 2) / (1.0 - rho * rho)), n - 2)


def correlations(aer: Sequence[float], bleu: Sequence[float]) -> dict[str, Any]:
    """Kendall's tau-b and Spearman's rho of the variants' mean AER and mean BLEU, with p-values."""
    tau = kendall_tau(aer, bleu) if len(aer) >= 2 else math.nan
    p_tau, method = kendall_p(aer, bleu)
    rho, p_rho = spearman(aer, bleu)
    return {
        "variants": len(aer),
        "kendall_tau_b": None if math.isnan(tau) else tau,
        "kendall_p": p_tau,
        "kendall_p_method": method,
        "spearman_rho": rho,
        "spearman_p": p_rho,
    }


# --- the figure and the command ------------------------------------------------------------------------------


def draw(
    means: dict[str, tuple[Interval, Interval]],
    lines: dict[str, float],
    stats: dict[str, Any],
    bleu_key: str,
    title: str,
    out: Path,
) -> None:
    """The PNG: a labelled point per variant with its intervals, a dashed vertical line per reference."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(figsize=(7.5, 5.0), layout="constrained")
    FigureCanvasAgg(fig)
    ax = fig.add_subplot()
    for k, (name, (aer, bleu)) in enumerate(means.items()):  # a colour each, so crossing bars stay apart
        colour = f"C{k % 10}"
        ax.errorbar(aer.mean, bleu.mean, xerr=aer.half or 0.0, yerr=bleu.half or 0.0, fmt="o", capsize=3, color=colour)
        ax.annotate(
            f"{name} (n={aer.n})",
            (aer.mean, bleu.mean),
            textcoords="offset points",
            xytext=(5, 5),
            fontsize=8,
            color=colour,
        )
    for k, (name, aer_mean) in enumerate(lines.items()):
        grey = ("black", "dimgrey", "darkgrey")[k % 3]
        ax.axvline(aer_mean, linestyle="--", linewidth=1, color=grey, label=f"{name}: {aer_mean:.1f}%")
    if lines:
        ax.legend(fontsize=8, loc="best")

    def shown(value: Optional[float]) -> str:
        return "n/a" if value is None else f"{value:.2f}"

    ax.set(
        xlabel="AER on the RWTH de-en gold alignments (%, lower aligns better)",
        ylabel=f"{bleu_key.removesuffix('_bleu')} BLEU",
        title=f"{title}\nKendall tau-b {shown(stats['kendall_tau_b'])} (p {shown(stats['kendall_p'])}), "
        f"Spearman rho {shown(stats['spearman_rho'])} (p {shown(stats['spearman_p'])}), {stats['variants']} variants; "
        "means, 95% t intervals over seeds",
    )
    ax.title.set_fontsize(9)
    ax.grid(True, alpha=0.3)
    try:
        with atomic_write(out) as handle:
            fig.savefig(handle, format="png", dpi=150)
    except OSError as exc:
        raise UserError(f"{out}: cannot write it ({exc.strerror or exc})") from None


def build_parser() -> argparse.ArgumentParser:
    parser = common.one_line_parser(SCRIPT, __doc__.split("\n\n")[0])
    parser.add_argument("files", nargs="+", type=Path, metavar="JSONL", help="JSON lines written by align_rwth.py.")
    parser.add_argument("--out", type=Path, required=True, metavar="PNG", help="The figure to write.")
    parser.add_argument("--title", default=TITLE, help=f"The figure's title (default: {TITLE!r}).")
    parser.add_argument(
        "--bleu-split",
        default="test2016",
        metavar="SPLIT",
        help="Whose BLEU is plotted: the lines' SPLIT_bleu, as align_rwth.py --bleu-split wrote it (default: test2016).",
    )
    parser.add_argument(
        "--arch",
        choices=("rnn", "transformer"),
        default=None,
        help="Only the models of this architecture (rnn: the attention variants of one design, trained to the "
        "same updates); default: every model in the files.",
    )
    return parser


def main(argv: Optional[Sequence[str]] = None) -> int:
    args = build_parser().parse_args(argv)
    bleu_key = f"{args.bleu_split}_bleu"
    try:
        records = read_records(args.files)
        points = model_points(records, bleu_key, args.arch)
        if not points:
            only = f" of arch {args.arch}" if args.arch else ""
            raise UserError(f"no model line{only} with AER and {bleu_key} in {', '.join(map(str, args.files))}")
        means = {
            name: (mean_interval([a for a, _ in pairs]), mean_interval([b for _, b in pairs]))
            for name, pairs in sorted(points.items())
        }
        stats = correlations([a.mean for a, _ in means.values()], [b.mean for _, b in means.values()])
        lines = references(records)
        draw(means, lines, stats, bleu_key, args.title, args.out)
    except UserError as exc:
        common.fail(SCRIPT, str(exc))
    common.emit(
        {
            "script": SCRIPT,
            "png": str(args.out),
            "bleu": bleu_key,
            "arch": args.arch,
            "means": [
                {
                    "variant": name,
                    "seeds": aer.n,
                    "aer_percent": aer.mean,
                    "aer_percent_half": aer.half,
                    "bleu": bleu.mean,
                    "bleu_half": bleu.half,
                }
                for name, (aer, bleu) in means.items()
            ],
            "references_aer_percent": lines,
            **stats,
        }
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
