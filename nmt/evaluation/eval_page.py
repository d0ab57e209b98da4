"""The ``report.md`` of ``nmt eval``: a page a person reads without opening ``report.json``.

Built from the same payload that becomes ``report.json`` (see :func:`nmt.evaluation.eval_command.run_eval`), so
the two never disagree: what was scored, the scores of every system, the comparison with the
baseline (the first system), BLEU by source length, the plot and the sacreBLEU signatures
that make each number reproducible.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Optional

from nmt.score.metrics import SIGNIFICANCE_LEVEL

# Report names of the metrics, in table order; TER is an error rate (lower is better).
METRICS: dict[str, str] = {"bleu": "BLEU", "chrf": "chrF", "ter": "TER"}
TEST_NAMES: dict[str, str] = {"bootstrap": "paired bootstrap resampling", "ar": "approximate randomization"}
TEST_SHORT: dict[str, str] = {"bootstrap": "bootstrap", "ar": "AR"}


def _cell(value: Any) -> str:
    """Text safe inside a Markdown table cell."""
    return str(value).replace("|", "\\|").replace("\n", " ")


def _table(header: Sequence[str], rows: Sequence[Sequence[Any]], text_columns: int = 1) -> list[str]:
    """Markdown table lines: the first `text_columns` columns and a yes/no last column
    ("significant ...") left-aligned, the numbers between them right-aligned."""
    align = ["---" if i < text_columns or name.startswith("significant") else "---:" for i, name in enumerate(header)]
    lines = ["| " + " | ".join(header) + " |", "| " + " | ".join(align) + " |"]
    lines += ["| " + " | ".join(_cell(v) for v in row) + " |" for row in rows]
    return lines


def _p(value: Optional[float]) -> str:
    """A p-value to 4 decimals; "-" where there is none (the baseline)."""
    return "-" if value is None else f"{value:.4f}"


def _what(info: Mapping[str, Any]) -> tuple[str, list[str]]:
    """A title naming what was scored, and lines with the details."""
    if info.get("checkpoints"):
        checkpoints = info["checkpoints"]
        model = (
            f"`{Path(checkpoints[0]).name}`"
            if len(checkpoints) == 1
            else f"an ensemble of {len(checkpoints)} checkpoints"
        )
        title = f"{model} on the {info.get('split')} split"
        details = [f"- checkpoint: `{c}`" for c in checkpoints]
        details += [
            f"- split: `{info.get('split')}`, beam {info.get('beam')}, "
            f"length penalty {info.get('length_penalty')}, checkpoint step {info.get('step')}",
            f"- translations: `{info.get('hypotheses')}`",
        ]
        return title, details
    if info.get("model"):  # an export folder translated --src on an engine (nmt eval --model DIR)
        model = Path(info["model"]).name or str(info["model"])
        title = f"`{model}` on --engine {info.get('engine')} against `{Path(info['reference']).name}`"
        details = [
            f"- model: `{info['model']}` (an `nmt export` folder), engine {info.get('engine')}",
            f"- beam {info.get('beam')}, length penalty {info.get('length_penalty')}, checkpoint step {info.get('step')}",
            f"- source: `{info.get('source')}`",
            f"- reference: `{info['reference']}`",
            f"- translations: `{info.get('hypotheses')}`",
        ]
        return title, details
    hyps = info.get("hyp_files", [])
    title = f"{len(hyps)} hypothesis file{'s' if len(hyps) != 1 else ''} against `{Path(info['reference']).name}`"
    details = [f"- hypotheses: {', '.join(f'`{h}`' for h in hyps)}", f"- reference: `{info['reference']}`"]
    if info.get("source"):
        details.append(f"- source: `{info['source']}`")
    return title, details


def scores_section(payload: Mapping[str, Any]) -> list[str]:
    """One row per system: BLEU, chrF, TER, the length ratio BLEU's brevity penalty reads, segments."""
    rows = [
        [name] + [f"{result[m]:.2f}" for m in METRICS] + [_ratio(result), result["n"]]
        for name, result in payload["systems"].items()
    ]
    undefined = any("length_ratio" in r and r["length_ratio"] is None for r in payload["systems"].values())
    return (
        ["## Scores", ""]
        + _table(["system", "BLEU ↑", "chrF ↑", "TER ↓", "length ratio", "segments"], rows)
        + [
            "",
            "BLEU and chrF: higher is better. TER is an edit rate: lower is better. Length ratio: translation / "
            "reference length in BLEU's tokens; below 1, BLEU's brevity penalty lowers the score."
            + (" n/a: the references hold no words, so no ratio is defined." if undefined else ""),
        ]
    )


def _ratio(result: Mapping[str, Any]) -> str:
    """A system's length ratio to 3 decimals; "n/a" where it is undefined (None: no reference words),
    "-" for a report written before reports kept it."""
    if "length_ratio" not in result:
        return "-"
    value: Optional[float] = result["length_ratio"]
    return "n/a" if value is None else f"{value:.3f}"


def _verdict(ps: Mapping[str, Optional[float]]) -> str:
    """'yes'/'no' when the tests agree (or only one ran), else which test found a difference."""
    found = {test: p < SIGNIFICANCE_LEVEL for test, p in ps.items() if p is not None}
    if not found:
        return "-"
    if all(found.values()) or not any(found.values()):
        return "yes" if all(found.values()) else "no"
    return f"{' and '.join(TEST_SHORT[t] for t, yes in found.items() if yes)} only"


def comparison_section(payload: Mapping[str, Any]) -> list[str]:
    """Baseline against each system, per metric: delta, bootstrap CI, p-values, verdict."""
    rows_in = payload.get("comparison")
    if not rows_in:
        return []
    settings = payload.get("significance", {})
    tests = settings.get("tests", [])
    how = []
    if "bootstrap" in tests:
        how.append(
            f"paired bootstrap resampling ({settings['bootstrap_samples']} resamples, "
            f"95% confidence interval of the mean: mean ± half-width)"
        )
    if "ar" in tests:
        how.append(f"approximate randomization ({settings['ar_trials']} trials)")
    baseline = rows_in[0]["name"]
    header = ["system", "metric", "score", "Δ vs baseline"]
    header += ["bootstrap 95% CI", "p (bootstrap)"] if "bootstrap" in tests else []
    header += ["p (AR)"] if "ar" in tests else []
    header += [f"significant (p < {SIGNIFICANCE_LEVEL})"]
    rows = []
    for row in rows_in:
        for m, label in METRICS.items():
            delta = "baseline" if row["name"] == baseline else f"{row[m] - rows_in[0][m]:+.2f}"
            cells = [row["name"], label, f"{row[m]:.2f}", delta]
            if "bootstrap" in tests:
                cells += [f"{row[f'{m}_mean']:.2f} ± {row[f'{m}_ci']:.2f}", _p(row[f"{m}_p_value"])]
            if "ar" in tests:
                cells.append(_p(row[f"{m}_ar_p_value"]))
            cells.append(_verdict({"bootstrap": row.get(f"{m}_p_value"), "ar": row.get(f"{m}_ar_p_value")}))
            rows.append(cells)
    return [
        f"## Comparison with the baseline `{_cell(baseline)}`",
        "",
        f"Two-sided paired tests, seed {settings.get('seed')}: {'; '.join(how)}. "
        "A system identical to the baseline, or with exactly its score, gets p = 1.",
        "",
    ] + _table(header, rows, text_columns=2)


def length_section(payload: Mapping[str, Any]) -> list[str]:
    """BLEU per source-length bucket and system, and the plot beside report.md."""
    series = payload.get("bleu_by_length")
    if not series:
        return []
    names = list(series)
    buckets = [(row["bucket"], row["n"]) for row in series[names[0]]]
    by_name = {name: {row["bucket"]: row["bleu"] for row in rows} for name, rows in series.items()}
    rows = [[bucket, n] + [f"{by_name[name].get(bucket, float('nan')):.2f}" for name in names] for bucket, n in buckets]
    lines = ["## BLEU by source length", "", "Source length in whitespace-separated words.", ""]
    lines += _table(["source words", "sentences"] + names, rows)
    if payload.get("length_plot"):
        lines += ["", f"![BLEU by source length]({Path(payload['length_plot']).name})"]
    return lines


def signatures_section(payload: Mapping[str, Any]) -> list[str]:
    """Every distinct sacreBLEU signature, named by the metric and test it belongs to."""
    found: dict[str, str] = {}
    for result in payload["systems"].values():
        for m, label in METRICS.items():
            found.setdefault(result[f"{m}_signature"], label)
    for test, suffix in (("bootstrap", "_signature"), ("ar", "_ar_signature")):
        for row in payload.get("comparison") or []:
            for m, label in METRICS.items():
                if f"{m}{suffix}" in row:
                    found.setdefault(row[f"{m}{suffix}"], f"{label}, {TEST_NAMES[test]}")
    return ["## Signatures", ""] + [f"- {label}: `{signature}`" for signature, label in found.items()]


def summary(payload: Mapping[str, Any]) -> str:
    """What the command prints: what was scored, the scores and the comparison."""
    sections = [[f"# nmt eval: {_what(payload['info'])[0]}"], scores_section(payload), comparison_section(payload)]
    return "\n\n".join("\n".join(s) for s in sections if s) + "\n"


def eval_page(payload: Mapping[str, Any]) -> str:
    """The whole report.md."""
    title, details = _what(payload["info"])
    sections = [
        [f"# nmt eval: {title}", ""] + details,
        scores_section(payload),
        comparison_section(payload),
        length_section(payload),
        signatures_section(payload),
    ]
    return "\n\n".join("\n".join(s) for s in sections if s) + "\n"
