"""Score translations with sacreBLEU and write evaluation reports.

Everything here works on plain strings, so scoring never needs a model or torch.
BLEU is sacreBLEU's default (cased, detokenized, tok 13a, exp smoothing), chrF is
chrF2 with character 6-grams and TER is sacreBLEU's default TER (tercom tokenization,
case-insensitive, as `sacrebleu -m ter` reports it); the signature of each metric is kept
beside every number so a reported score can be reproduced and compared with published ones.
Systems are compared by paired bootstrap resampling (sacreBLEU's) and by approximate
randomization (:mod:`nmt.score.significance`).
"""

from __future__ import annotations

import json
import logging
import os
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from itertools import pairwise
from pathlib import Path
from typing import Any

from sacrebleu.metrics import BLEU, CHRF, TER
from sacrebleu.metrics.base import Metric
from sacrebleu.significance import PairedTest, Result

from nmt.score.significance import paired_ar_p_value, score_from_statistics, segment_statistics
from nmt.util.errors import UserError
from nmt.util.fileio import atomic_write

logger = logging.getLogger(__name__)

# An upper edge at least this large means "and longer": the bucket is labelled "60+".
OPEN_END = 10**9
DEFAULT_LENGTH_EDGES: tuple[int, ...] = (0, 10, 20, 30, 40, 50, 60, OPEN_END)
"""Ten-word buckets up to 60 words and longer, as Bahdanau et al. (2015, figure 2) read BLEU by length."""
SIGNIFICANCE_LEVEL = 0.05
# The paired tests compare_systems can run; "bootstrap" is sacreBLEU's --paired-bs.
TESTS: tuple[str, ...] = ("bootstrap", "ar")


@dataclass(frozen=True)
class Score:
    """BLEU, chrF and TER of one system on one reference set, with their signatures.

    TER is an edit rate in percent: lower is better, 0 for a copy of the reference.
    ``length_ratio`` is hypothesis / reference length in BLEU's tokens: below 1 BLEU's brevity
    penalty exp(1 - 1/ratio) scales the score down (Papineni et al. 2002).  Against references
    without a word (``ref_len`` 0) there is no ratio: sacreBLEU's 0.0 is kept here, for the
    trainer's log, but :meth:`to_dict`, which the reports write, gives None, since 0.000 would read
    as "the system wrote nothing".
    """

    bleu: float
    chrf: float
    ter: float
    bleu_signature: str
    chrf_signature: str
    ter_signature: str
    n: int  # number of scored segments
    length_ratio: float  # hypothesis / reference tokens as BLEU counts them (0.0 where ref_len is 0)
    ref_len: int  # reference tokens as BLEU counts them

    def to_dict(self) -> dict[str, Any]:
        """Plain dict for JSON reports; the length ratio None (undefined) without reference words."""
        found = asdict(self)
        if not self.ref_len:
            found["length_ratio"] = None
        return found


def bleu_metric() -> BLEU:
    """The one BLEU configuration used everywhere, so all numbers are comparable."""
    return BLEU(lowercase=False, tokenize="13a", smooth_method="exp")


def _chrf() -> CHRF:
    """The one chrF configuration (chrF2: character 6-grams, beta 2, no word n-grams)."""
    return CHRF()


def _ter() -> TER:
    """The one TER configuration: sacreBLEU's default, so numbers match `sacrebleu -m ter`."""
    return TER()


def _metrics() -> dict[str, Metric]:
    """Fresh instances of every metric, keyed by the short names used in reports."""
    return {"bleu": bleu_metric(), "chrf": _chrf(), "ter": _ter()}


def _check_parallel(hyps: Sequence[str], refs: Sequence[str], what: str = "hypotheses") -> None:
    """Reject empty or misaligned inputs before sacreBLEU fails less clearly."""
    if len(hyps) != len(refs):
        raise UserError(f"{what} and references differ in length: {len(hyps)} {what} vs {len(refs)} references")
    if not refs:
        raise UserError("nothing to score: no references were given")


def score(hyps: list[str], refs: list[str]) -> Score:
    """Corpus BLEU, chrF and TER of detokenized `hyps` against one reference each."""
    _check_parallel(hyps, refs)
    bleu, chrf, ter = bleu_metric(), _chrf(), _ter()
    bleu_result = bleu.corpus_score(hyps, [refs])
    scores = [float(metric.corpus_score(hyps, [refs]).score) for metric in (chrf, ter)]
    # a signature is read after scoring: sacreBLEU fills some of its fields (the number of references) then
    return Score(
        bleu=float(bleu_result.score),
        chrf=scores[0],
        ter=scores[1],
        bleu_signature=str(bleu.get_signature()),
        chrf_signature=str(chrf.get_signature()),
        ter_signature=str(ter.get_signature()),
        n=len(refs),
        length_ratio=float(bleu_result.ratio),
        ref_len=int(bleu_result.ref_len),
    )


def bleu_with_length(hyps: list[str], refs: list[str]) -> dict[str, Any]:
    """Corpus BLEU with its brevity inputs: the length ratio (hypothesis / reference tokens, as
    BLEU's brevity penalty sees them), both lengths and the signature."""
    _check_parallel(hyps, refs)
    metric = bleu_metric()
    result = metric.corpus_score(hyps, [refs])
    return {
        "bleu": float(result.score),
        "length_ratio": float(result.ratio),
        "hyp_len": int(result.sys_len),
        "ref_len": int(result.ref_len),
        "bleu_signature": str(metric.get_signature()),
    }


def bucket_label(lo: int, hi: int) -> str:
    """'10-19' for the half-open range [10, 20); '60+' when `hi` is open-ended."""
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
    left out; each entry is {"bucket": "10-19", "n": ..., "bleu": ..., "ratio": ...}, ``ratio`` the
    bucket's output length over its reference length in BLEU's tokens (below 1: translations too
    short, which BLEU's brevity penalty charges).
    """
    _check_parallel(hyps, refs)
    if len(srcs_lengths) != len(refs):
        raise UserError(
            f"source lengths and references differ in length: {len(srcs_lengths)} sources vs {len(refs)} references"
        )
    if len(edges) < 2 or any(a >= b for a, b in pairwise(edges)):
        raise ValueError(f"edges must be at least two strictly increasing numbers, got {list(edges)}")
    outside = [n for n in srcs_lengths if not edges[0] <= n < edges[-1]]
    if outside:
        raise ValueError(f"source length {outside[0]} lies outside the edges [{edges[0]}, {edges[-1]})")

    rows: list[dict[str, Any]] = []
    for lo, hi in pairwise(edges):
        members = [i for i, n in enumerate(srcs_lengths) if lo <= n < hi]
        if not members:
            continue
        bucket_bleu = bleu_metric().corpus_score([hyps[i] for i in members], [[refs[i] for i in members]])
        ratio = bucket_bleu.sys_len / bucket_bleu.ref_len if bucket_bleu.ref_len else 0.0
        rows.append(
            {"bucket": bucket_label(lo, hi), "n": len(members), "bleu": float(bucket_bleu.score), "ratio": ratio}
        )
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
    tests: Sequence[str] = ("bootstrap",),
    ar_trials: int = 10000,
) -> list[dict[str, Any]]:
    """Compare several systems with the first one (the baseline) by paired significance tests.

    `tests` picks from TESTS: "bootstrap" is sacreBLEU's paired bootstrap resampling
    (`n_samples` resamples; as `sacrebleu --paired-bs`, so p-values match the CLI's except
    for a system that ties the baseline's score exactly, which gets p = 1 here), "ar"
    is paired approximate randomization (:mod:`nmt.score.significance`, `ar_trials` trials,
    which unlike `sacrebleu --paired-ar` counts ties with the observed difference). Both
    are two-sided: "significant" means "differs from the baseline"; compare the scores for
    the direction.

    One row per system, in order, with `name` and, for each metric m of bleu, chrf and ter,
    the score `m`; the bootstrap adds `m_mean` and `m_ci` (bootstrap mean and 95% CI
    half-width), `m_p_value`, `m_signature` and `significant` (BLEU p < 0.05); AR adds
    `m_ar_p_value`, `m_ar_signature` and `ar_significant`. p-values and flags are None for
    the baseline. A system identical to the baseline gets p = 1 from both tests, and one that
    scores exactly the baseline's score gets p = 1 from the bootstrap for that metric.
    """
    if not systems:
        raise ValueError("compare_systems needs at least one system")
    if not tests or any(test not in TESTS for test in tests):
        raise ValueError(f"tests must be a non-empty selection of {', '.join(TESTS)}, got {list(tests)}")
    if n_samples < 1 or ar_trials < 1:
        raise ValueError(f"n_samples and ar_trials must be positive, got {n_samples} and {ar_trials}")
    if seed < 1:
        # sacreBLEU treats a seed of 0 as "unseeded", which would break reproducibility.
        raise ValueError(f"seed must be a positive integer, got {seed}")
    for name, hyps in systems.items():
        _check_parallel(hyps, refs, what=f"hypotheses of {name!r}")

    rows: list[dict[str, Any]] = [{"name": name} for name in systems]
    if "bootstrap" in tests:
        for row, found in zip(rows, _paired_bootstrap(systems, refs, n_samples, seed)):
            row.update(found)
    if "ar" in tests:
        for row, found in zip(rows, _paired_ar(systems, refs, ar_trials, seed)):
            row.update(found)
    logger.info("compared %d systems (%s), seed %d", len(rows), ", ".join(tests), seed)
    return rows


def _bootstrap_fields(short: str, cell: str | Result, baseline: str | Result) -> dict[str, float | None]:
    """One metric's score, bootstrap mean, 95% interval and p-value (None for the baseline).

    sacreBLEU types every cell of its table as a name or a Result with optional fields; a
    bootstrap fills the mean and interval of each, so their absence is its error, not ours.

    The convention here: any system whose score ties the baseline's exactly gets p = 1 (a copy
    of the baseline among them); a test of "differs from the baseline" has no difference to
    test.  sacreBLEU counts only (centred) resampled differences strictly above the observed
    one, so when every resample ties too (a copy of the baseline; two systems that both score
    BLEU 0) it counts nothing and gives the smallest p-value there is, "significantly
    different" with no difference at all; where the resamples differ it gives about 0.5.
    """
    if not isinstance(cell, Result) or cell.mean is None or cell.ci is None:
        raise TypeError(f"sacreBLEU's paired bootstrap gave no mean and interval for {short}: {cell!r}")
    if not isinstance(baseline, Result):
        raise TypeError(f"sacreBLEU's paired bootstrap gave no baseline score for {short}: {baseline!r}")
    p = None if cell.p_value is None else (1.0 if cell.score == baseline.score else float(cell.p_value))
    return {
        short: float(cell.score),
        f"{short}_mean": float(cell.mean),
        f"{short}_ci": float(cell.ci),
        f"{short}_p_value": p,
    }


def _paired_bootstrap(
    systems: dict[str, list[str]], refs: list[str], n_samples: int, seed: int
) -> list[dict[str, Any]]:
    """sacreBLEU's paired bootstrap, one result dict per system (see compare_systems)."""
    metrics = _metrics()
    with _sacrebleu_seed(seed):
        test = PairedTest(list(systems.items()), metrics, [refs], test_type="bs", n_samples=n_samples)
        signatures, results = test()
    # sacreBLEU keys results by the metric's display name ("BLEU", "chrF2", "TER") in the
    # order the metrics were given, after the "System" column.
    columns = [key for key in results if key != "System"]
    keyed = dict(zip(metrics, columns))
    rows: list[dict[str, Any]] = []
    for i in range(len(results["System"])):
        row: dict[str, Any] = {}
        for short, column in keyed.items():
            row.update(_bootstrap_fields(short, results[column][i], results[column][0]))
        p = row["bleu_p_value"]
        row["significant"] = None if p is None else p < SIGNIFICANCE_LEVEL
        for short, column in keyed.items():
            row[f"{short}_signature"] = str(signatures[column])
        rows.append(row)
    return rows


def _paired_ar(systems: dict[str, list[str]], refs: list[str], trials: int, seed: int) -> list[dict[str, Any]]:
    """Paired approximate randomization of each system against the first, one dict per system."""
    metrics = _metrics()
    hyps = list(systems.values())
    base = {short: segment_statistics(metric, hyps[0], refs) for short, metric in metrics.items()}
    signatures: dict[str, str] = {}
    for short, metric in metrics.items():  # read after the statistics: a signature needs nrefs
        signature = metric.get_signature()
        signature.update("ar", trials)
        signature.update("seed", seed)
        signatures[short] = str(signature)

    rows: list[dict[str, Any]] = []
    for i, lines in enumerate(hyps):
        row: dict[str, Any] = {}
        for short, metric in metrics.items():
            stats = base[short] if i == 0 else segment_statistics(metric, lines, refs)
            row[short] = score_from_statistics(metric, stats)
            row[f"{short}_ar_p_value"] = None if i == 0 else paired_ar_p_value(metric, base[short], stats, trials, seed)
        p = row["bleu_ar_p_value"]
        row["ar_significant"] = None if p is None else p < SIGNIFICANCE_LEVEL
        row.update({f"{short}_ar_signature": signatures[short] for short in metrics})
        rows.append(row)
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


def _markdown(title: str, rows: list[dict[str, Any]], signatures: dict[str, str], intro: str | None = None) -> str:
    """A Markdown table of `rows` under `title` and an optional paragraph (signature columns moved below the table)."""
    columns: list[str] = []
    for row in rows:
        columns += [k for k in row if k not in columns and not k.endswith("signature")]
    lines = [f"# {title}", ""] + ([intro, ""] if intro else [])
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


def write_report(
    path_stem: Path,
    payload: dict[str, Any],
    table_rows: list[dict[str, Any]],
    markdown: str | None = None,
    title: str | None = None,
    intro: str | None = None,
) -> tuple[Path, Path]:
    """Write `<stem>.json` (the full payload) and `<stem>.md` (a readable table).

    Each file is written atomically. Signatures found anywhere in the payload or the
    rows (keys ending in 'signature') are listed under the table. A caller with a richer
    page to show (`nmt eval`, see nmt.evaluation.eval_page) passes it as `markdown`, which then
    replaces the generic table; else `title` (default: the stem's name) heads the table, with
    `intro` as a paragraph under it.
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
        page = markdown if markdown is not None else _markdown(title or path_stem.name, table_rows, signatures, intro)
        handle.write(page.encode("utf-8"))
    logger.debug("wrote %s and %s", json_path, md_path)  # the commands print it once themselves
    return json_path, md_path
