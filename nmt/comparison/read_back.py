"""Reading back what ``nmt compare`` wrote, field by field: a comparison's ``report.json`` and each
run's ``scored.json``, as ``nmt compare-groups`` and ``--spread-from`` read them.

These files can be edited by hand or by another tool; a field that is missing or of the wrong kind
is refused in one line naming the file and the field (``variants[1].per_seed_bleu["2"]``), never
a KeyError, TypeError or OverflowError from deep in the tables.  A BLEU score is a finite number
from 0 to 100 (not a bool), a p-value one from 0 to 1.  Reads JSON; no torch.
"""

from __future__ import annotations

import json
import math
import numbers
from pathlib import Path
from typing import Any, Optional

from nmt.util.errors import UserError, short_repr

PLAN_KEYS = ("config", "arms", "baseline", "split", "overrides")
"""What a comparison's report.json must say of its plan."""

RESULT_COUNTS = ("beam", "updates", "best_step", "params")
"""The whole numbers of a run's scored.json (its ``result``)."""


def read_json(path: Path, hint: str) -> Any:
    """The JSON value in ``path``; a missing, unreadable or malformed file is one line ending in ``hint``."""
    try:
        return json.loads(Path(path).read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise UserError(f"{path}: missing; {hint}") from None
    except (UnicodeDecodeError, json.JSONDecodeError, RecursionError) as exc:
        raise UserError(f"{path}: not JSON ({str(exc)[:80]}); {hint}") from None
    except OSError as exc:
        raise UserError(f"{path}: cannot read it ({exc.strerror or exc}); {hint}") from None


def _refuse(file: Path, field: str, value: Any, want: str) -> UserError:
    return UserError(f"{file}: {field} is {short_repr(value)}, not {want}; rerun nmt compare")


def _is_number(value: Any) -> bool:
    """A finite real number (a NumPy scalar too), never a bool."""
    return isinstance(value, numbers.Real) and not isinstance(value, bool) and math.isfinite(value)


def bleu(value: Any, file: Path, field: str) -> float:
    """``value`` as a float if it is a BLEU score: a finite number from 0 to 100."""
    if not (_is_number(value) and 0.0 <= value <= 100.0):
        raise _refuse(file, field, value, "a BLEU score (a finite number from 0 to 100)")
    return float(value)


def _count(value: Any, file: Path, field: str) -> int:
    if not (isinstance(value, int) and not isinstance(value, bool) and value >= 0):
        raise _refuse(file, field, value, "a whole number of 0 or more")
    return value


def _probability(value: Any, file: Path, field: str) -> Optional[float]:
    if value is not None and not (_is_number(value) and 0.0 <= value <= 1.0):
        raise _refuse(file, field, value, "a p-value (from 0 to 1) or null")
    return value


def _name(value: Any, file: Path, field: str) -> str:
    """A name that is also one part of a path (an arm's runs, a split's folder): no separator, no dots alone."""
    if not isinstance(value, str) or not value or value in (".", "..") or any(c in value for c in "/\\\0"):
        raise _refuse(file, field, value, "a name")
    return value


def _texts(value: Any, file: Path, field: str) -> list[str]:
    if not (isinstance(value, list) and all(isinstance(item, str) for item in value)):
        raise _refuse(file, field, value, "a list of texts")
    return value


def per_seed_bleu(file: Path, rows: Any) -> dict[str, dict[str, float]]:
    """{arm: {seed: BLEU}} of a report's ``variants`` rows, each score checked (:func:`bleu`)."""
    if not isinstance(rows, list):
        raise _refuse(file, "variants", rows, "a list of arms")
    found: dict[str, dict[str, float]] = {}
    for index, row in enumerate(rows):
        where = f"variants[{index}]"
        if not isinstance(row, dict):
            raise _refuse(file, where, row, "an arm's row")
        if not isinstance(row.get("variant"), str):
            raise _refuse(file, f"{where}.variant", row.get("variant"), "a name")
        scores = row.get("per_seed_bleu")
        if not isinstance(scores, dict):
            raise _refuse(file, f"{where}.per_seed_bleu", scores, "a mapping of seeds to BLEU")
        found[row["variant"]] = {
            str(seed): bleu(value, file, f"{where}.per_seed_bleu[{short_repr(seed, 20)}]")
            for seed, value in scores.items()
        }
    return found


def _plan(file: Path, report: Any) -> dict[str, Any]:
    plan = report.get("plan") if isinstance(report, dict) else None
    if not isinstance(plan, dict) or "variants" not in report:
        raise UserError(f"{file}: not a report of nmt compare (no plan and variants)")
    missing = next((key for key in PLAN_KEYS if key not in plan), None)
    if missing is not None:
        raise UserError(f"{file}: its plan has no {missing}; rerun nmt compare")
    if plan["config"] is not None and not isinstance(plan["config"], str):
        raise _refuse(file, "plan.config", plan["config"], "a config path or null")
    arms = plan["arms"]
    if not isinstance(arms, dict) or not arms:
        raise _refuse(file, "plan.arms", arms, "a mapping of arms")
    for label, arm in arms.items():
        _name(label, file, "an arm of plan.arms")
        if not isinstance(arm, dict):
            raise _refuse(file, f"plan.arms[{short_repr(label, 30)}]", arm, "an arm's settings")
        _texts(arm.get("train"), file, f"plan.arms[{short_repr(label, 30)}].train")
    if not (isinstance(plan["baseline"], str) and plan["baseline"] in arms):
        raise _refuse(file, "plan.baseline", plan["baseline"], "one of plan.arms")
    _name(plan["split"], file, "plan.split")
    _texts(plan["overrides"], file, "plan.overrides")
    return plan


def _row(file: Path, index: int, row: Any, arms: dict[str, Any]) -> None:
    where = f"variants[{index}]"
    if not isinstance(row, dict):
        raise _refuse(file, where, row, "an arm's row")
    variant = row.get("variant")
    if not (isinstance(variant, str) and variant in arms):
        raise _refuse(file, f"{where}.variant", variant, "an arm of plan.arms")
    seeds = row.get("seeds")
    if not (isinstance(seeds, list) and seeds):
        raise _refuse(file, f"{where}.seeds", seeds, "a list of seeds")
    for k, seed in enumerate(seeds):
        _count(seed, file, f"{where}.seeds[{k}]")
    if len(set(seeds)) != len(seeds):
        raise _refuse(file, f"{where}.seeds", seeds, "a list of distinct seeds")
    p_values = row.get("p_values")
    if p_values is not None:
        if not (isinstance(p_values, list) and len(p_values) == len(seeds)):
            raise _refuse(file, f"{where}.p_values", p_values, "null or one p-value per seed")
        for k, p in enumerate(p_values):
            _probability(p, file, f"{where}.p_values[{k}]")
    _probability(row.get("p_ar_seeds"), file, f"{where}.p_ar_seeds")


def read_report(file: Path, hint: str) -> dict[str, Any]:
    """A comparison's report.json with every field :func:`nmt.comparison.groups.collect` reads checked:
    its plan (config, arms, baseline, split, overrides) and one row per arm (seeds, p-values), the
    baseline's among them."""
    report = read_json(file, hint)
    plan = _plan(file, report)
    rows = report["variants"]
    if not isinstance(rows, list):
        raise _refuse(file, "variants", rows, "a list of arms")
    for index, row in enumerate(rows):
        _row(file, index, row, plan["arms"])
    names = [row["variant"] for row in rows]
    twice = next((name for k, name in enumerate(names) if name in names[:k]), None)
    if twice is not None:
        raise _refuse(file, "variants", twice, "listed once (it is listed twice)")
    if plan["baseline"] not in names:
        raise _refuse(file, "plan.baseline", plan["baseline"], "an arm with a row in variants")
    return report


def read_scored(file: Path, hint: str) -> dict[str, Any]:
    """The ``result`` of a run's scored.json with every field a grouped comparison's record takes checked."""
    scored = read_json(file, hint)
    result = scored.get("result") if isinstance(scored, dict) else None
    if not isinstance(result, dict):
        raise _refuse(file, "result", result, "the run's scores")
    for key in ("bleu", "chrf"):
        bleu(result.get(key), file, f"result.{key}")  # chrF, a percentage too, shares BLEU's range
    for key in RESULT_COUNTS:
        _count(result.get(key), file, f"result.{key}")
    for key in ("train_s", "flops_per_token"):
        value: Any = result.get(key)
        if value is None and key == "flops_per_token":
            continue  # a score saved before it was counted: the arm's model is counted instead
        if not (_is_number(value) and value >= 0.0):
            raise _refuse(file, f"result.{key}", value, "a finite number of 0 or more")
    if not isinstance(result.get("bleu_signature"), str):
        raise _refuse(file, "result.bleu_signature", result.get("bleu_signature"), "sacreBLEU's signature")
    return result
