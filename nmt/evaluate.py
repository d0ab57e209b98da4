"""Score translations with sacreBLEU and write evaluation reports.

Everything here works on plain strings, so scoring never needs a model or torch.
BLEU is sacreBLEU's default (cased, detokenized, tok 13a, exp smoothing) and chrF is
chrF2 with character 6-grams; the signature of each metric is kept beside every
number so a reported score can be reproduced and compared with published ones.
"""

from __future__ import annotations

import json
import logging
import os
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from sacrebleu.metrics import BLEU, CHRF
from sacrebleu.significance import PairedTest

from nmt.errors import UserError
from nmt.fileio import atomic_write

logger = logging.getLogger(__name__)

# An upper edge at least this large means "and longer": the bucket is labelled "50+".
OPEN_END = 10**9
DEFAULT_LENGTH_EDGES: tuple[int, ...] = (0, 10, 20, 30, 40, 50, OPEN_END)
SIGNIFICANCE_LEVEL = 0.05


@dataclass(frozen=True)
class Score:
    """BLEU and chrF of one system on one reference set, with their signatures."""

    bleu: float
    chrf: float
    bleu_signature: str
    chrf_signature: str
    n: int  # number of scored segments

    def to_dict(self) -> dict[str, Any]:
        """Plain dict for JSON reports."""
        return asdict(self)


def _bleu() -> BLEU:
    """The one BLEU configuration used everywhere, so all numbers are comparable."""
    return BLEU(lowercase=False, tokenize="13a", smooth_method="exp")


def _chrf() -> CHRF:
    """The one chrF configuration (chrF2: character 6-grams, beta 2, no word n-grams)."""
    return CHRF()


def _check_parallel(hyps: Sequence[str], refs: Sequence[str], what: str = "hypotheses") -> None:
    """Reject empty or misaligned inputs before sacreBLEU fails less clearly."""
    if len(hyps) != len(refs):
        raise UserError(
            f"{what} and references differ in length: {len(hyps)} {what} vs {len(refs)} references"
        )
    if not refs:
        raise UserError("nothing to score: no references were given")


def score(hyps: list[str], refs: list[str]) -> Score:
    """Corpus BLEU and chrF of detokenized `hyps` against one reference each."""
    _check_parallel(hyps, refs)
    bleu, chrf = _bleu(), _chrf()
    bleu_score = bleu.corpus_score(hyps, [refs])
    chrf_score = chrf.corpus_score(hyps, [refs])
    return Score(
        bleu=float(bleu_score.score),
        chrf=float(chrf_score.score),
        bleu_signature=str(bleu.get_signature()),
        chrf_signature=str(chrf.get_signature()),
        n=len(refs),
    )


def _bucket_label(lo: int, hi: int) -> str:
    """'10-19' for the half-open range [10, 20); '50+' when `hi` is open-ended."""
    return f"{lo}+" if hi >= OPEN_END else f"{lo}-{hi - 1}"


def bleu_by_length(
    srcs_lengths: list[int],
    hyps: list[str],
    refs: list[str],
    edges: Sequence[int] = DEFAULT_LENGTH_EDGES,
) -> list[dict[str, Any]]:
    """Corpus BLEU per source-length bucket, to show where long sentences break down.

    Bucket i holds the segments whose source length lies in [edges[i], edges[i+1]).
    Lengths are whatever the caller counts (words or subword tokens). Empty buckets are
    left out; each entry is {"bucket": "10-19", "n": ..., "bleu": ...}.
    """
    _check_parallel(hyps, refs)
    if len(srcs_lengths) != len(refs):
        raise UserError(
            f"source lengths and references differ in length: "
            f"{len(srcs_lengths)} sources vs {len(refs)} references"
        )
    if len(edges) < 2 or any(a >= b for a, b in zip(edges, edges[1:])):
        raise ValueError(f"edges must be at least two strictly increasing numbers, got {list(edges)}")
    outside = [n for n in srcs_lengths if not edges[0] <= n < edges[-1]]
    if outside:
        raise ValueError(f"source length {outside[0]} lies outside the edges [{edges[0]}, {edges[-1]})")

    rows: list[dict[str, Any]] = []
    for lo, hi in zip(edges, edges[1:]):
        members = [i for i, n in enumerate(srcs_lengths) if lo <= n < hi]
        if not members:
            continue
        bucket_bleu = _bleu().corpus_score([hyps[i] for i in members], [[refs[i] for i in members]])
        rows.append({"bucket": _bucket_label(lo, hi), "n": len(members), "bleu": float(bucket_bleu.score)})
    return rows


@contextmanager
def _sacrebleu_seed(seed: int) -> Iterator[None]:
    """Fix sacreBLEU's resampling seed, which it only reads from the environment."""
    previous = os.environ.get("SACREBLEU_SEED")
    os.environ["SACREBLEU_SEED"] = str(seed)
    try:
        yield
    finally:
        if previous is None:
            os.environ.pop("SACREBLEU_SEED", None)
        else:
            os.environ["SACREBLEU_SEED"] = previous


def compare_systems(
    systems: dict[str, list[str]],
    refs: list[str],
    n_samples: int = 1000,
    seed: int = 12345,
) -> list[dict[str, Any]]:
    """Paired bootstrap resampling of several systems against the first one (the baseline).

    Uses sacreBLEU's own test (as `sacrebleu --paired-bs`), so p-values match the CLI's.
    One row per system: name, bleu, chrf, bootstrap mean and 95% CI half-width of each,
    p-values against the baseline (None for the baseline itself), `significant`
    (BLEU p < 0.05; None for the baseline) and the test's signatures.
    The test is two-sided: `significant` means "differs from the baseline"; compare
    the scores to see in which direction.
    """
    if not systems:
        raise ValueError("compare_systems needs at least one system")
    if n_samples < 1:
        raise ValueError(f"n_samples must be positive, got {n_samples}")
    if seed < 1:
        # sacreBLEU treats a seed of 0 as "unseeded", which would break reproducibility.
        raise ValueError(f"seed must be a positive integer, got {seed}")
    for name, hyps in systems.items():
        _check_parallel(hyps, refs, what=f"hypotheses of {name!r}")

    metrics = {"bleu": _bleu(), "chrf": _chrf()}
    with _sacrebleu_seed(seed):
        test = PairedTest(
            list(systems.items()), metrics, [refs], test_type="bs", n_samples=n_samples
        )
        signatures, results = test()
    # sacreBLEU keys results by the metric's display name ("BLEU", "chrF2") in the
    # order the metrics were given, after the "System" column.
    columns = [key for key in results if key != "System"]
    keyed = dict(zip(metrics, columns))

    rows: list[dict[str, Any]] = []
    for i, name in enumerate(results["System"]):
        row: dict[str, Any] = {"name": name}
        for short, column in keyed.items():
            result = results[column][i]
            row[short] = float(result.score)
            row[f"{short}_mean"] = float(result.mean)
            row[f"{short}_ci"] = float(result.ci)
            row[f"{short}_p_value"] = None if result.p_value is None else float(result.p_value)
        p = row["bleu_p_value"]
        row["significant"] = None if p is None else p < SIGNIFICANCE_LEVEL
        for short, column in keyed.items():
            row[f"{short}_signature"] = str(signatures[column])
        rows.append(row)
    logger.info("paired bootstrap over %d systems, %d resamples, seed %d", len(rows), n_samples, seed)
    return rows


def _collect_signatures(obj: Any, found: dict[str, str], where: str) -> None:
    """Map each distinct string stored under a key ending in 'signature' to where it was
    first seen (a dotted key path such as 'test.bleu_signature')."""
    if isinstance(obj, Mapping):
        for key, value in obj.items():
            path = f"{where}.{key}" if where else str(key)
            if isinstance(value, str) and str(key).endswith("signature"):
                found.setdefault(value, path)
            else:
                _collect_signatures(value, found, path)
    elif isinstance(obj, (list, tuple)):
        for item in obj:
            _collect_signatures(item, found, where)


def _format_cell(key: str, value: Any) -> str:
    """Render one table cell: scores to 2 decimals, p-values to 4, None as '-'."""
    if value is None:
        return "-"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float):
        return f"{value:.4f}" if key.endswith("p_value") else f"{value:.2f}"
    return str(value).replace("|", "\\|").replace("\n", " ")


def _markdown(title: str, rows: list[dict[str, Any]], signatures: dict[str, str]) -> str:
    """A Markdown table of `rows` (signature columns moved below the table)."""
    columns: list[str] = []
    for row in rows:
        columns += [k for k in row if k not in columns and not k.endswith("signature")]
    lines = [f"# {title}", ""]
    if columns:
        lines.append("| " + " | ".join(columns) + " |")
        lines.append("|" + "---|" * len(columns))
        for row in rows:
            lines.append("| " + " | ".join(_format_cell(c, row.get(c)) for c in columns) + " |")
    else:
        lines.append("(no rows)")
    if signatures:
        lines += ["", "## Signatures", ""]
        lines += [f"- {key}: `{sig}`" for sig, key in signatures.items()]
    return "\n".join(lines) + "\n"


def write_report(path_stem: Path, payload: dict[str, Any], table_rows: list[dict[str, Any]]) -> tuple[Path, Path]:
    """Write `<stem>.json` (the full payload) and `<stem>.md` (a readable table).

    Each file is written atomically. Signatures found anywhere in the payload or the
    rows (keys ending in 'signature') are listed under the table.
    """
    path_stem = Path(path_stem)
    # Append rather than with_suffix(): stems such as "newstest.2014" keep their dot.
    json_path = path_stem.with_name(path_stem.name + ".json")
    md_path = path_stem.with_name(path_stem.name + ".md")
    signatures: dict[str, str] = {}
    _collect_signatures(payload, signatures, "")
    _collect_signatures(table_rows, signatures, "table")

    with atomic_write(json_path) as handle:
        handle.write((json.dumps(payload, indent=2, ensure_ascii=False) + "\n").encode("utf-8"))
    with atomic_write(md_path) as handle:
        handle.write(_markdown(path_stem.name, table_rows, signatures).encode("utf-8"))
    logger.info("wrote %s and %s", json_path, md_path)
    return json_path, md_path
