"""The arms of a comparison: named variants, option sweeps, and their grid.

``nmt compare`` trains every arm once per seed.  An arm is a named variant
(:mod:`nmt.config.variants`), one point of one or more sweeps (``--sweep KEY=V1,V2``; two
sweeps form a grid), or a variant combined with a point of the sweeps.  A sweep over decoding
options (``decode.*``) does not change what is trained: arms that differ only there share their
runs, and only the scoring differs.
"""

from __future__ import annotations

import itertools
import math
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Optional, Union

from nmt.config.variants import run_name, variant_overrides
from nmt.util.errors import UserError, short_repr

FIXED_BY_COMPARE = {
    "name": "the run folders are named after the arms",
    "runs_dir": "use --runs-dir",
    "train.seed": "use --seeds",
    "train.max_steps": "use --steps",
    "train.time_budget_min": "a comparison runs a fixed number of updates",
    "train.schedule_clock": "a comparison runs a fixed number of updates",
    "train.max_epochs": "a comparison runs a fixed number of updates",
}
"""Options a sweep may not vary, with what to do instead: ``nmt compare`` sets them itself."""

MAX_ARMS = 1000
"""The most arms one comparison may have (variants x the points of the sweeps' grid): each trains once
per seed, so a larger plan is a typing slip (two sweeps of 40 values are 1,600 arms), not an experiment."""

_UNSAFE = re.compile(r"[^A-Za-z0-9._-]")


@dataclass(frozen=True)
class Sweep:
    """One ``--sweep KEY=V1,V2,...``: an option and the values it takes, in order."""

    key: str
    values: tuple[str, ...]

    @property
    def decode_only(self) -> bool:
        return self.key.startswith("decode.")


@dataclass(frozen=True)
class Arm:
    """One arm: its label (table rows, ``--baseline``), the stem of its run folders
    (``<stem>_s<seed>``), the overrides that change training, and the decoding overrides
    applied when its runs are scored."""

    label: str
    run_stem: str
    train: tuple[str, ...]
    decode: tuple[str, ...]

    @property
    def score_tag(self) -> str:
        """Folder suffix of this arm's translations: empty without decoding overrides."""
        return "_".join(_folder_part(o) for o in self.decode)


def _folder_part(override: str) -> str:
    """``KEY=VALUE`` as part of a folder name: '=' becomes '-', any other character but letters,
    digits, '.', '_' and '-' becomes '_'."""
    return _UNSAFE.sub("_", override.replace("=", "-"))


def parse_sweep(text: str) -> Sweep:
    """``'train.teacher_forcing=1.0,0.5'`` -> Sweep; a UserError for a malformed one."""
    key, sep, values_text = text.partition("=")
    key = key.strip()
    values = tuple(v.strip() for v in values_text.split(","))
    if not sep or not key or not any(values):
        raise UserError(f"--sweep {text!r}: expected KEY=V1,V2,... e.g. --sweep train.teacher_forcing=1.0,0.5")
    return _checked(key, values, repr(text))


def sweep_of(key: str, values: Union[str, Sequence[object]]) -> Sweep:
    """The sweep of ``key`` over ``values`` (each written as ``str`` writes it), as Python gives them:
    ``nmt.compare(sweep={"train.lr": [0.1, 0.2]})``.  Text (``"0.1,0.2"``) is read as ``--sweep`` reads it.

    A value holding a comma is refused, not split: ``--sweep KEY=V1,V2``, the form the plan is
    shown and rerun in, could not carry it (``["0.1,0.2"]`` became two arms where one was given).
    """
    if isinstance(values, str):
        return parse_sweep(f"{key}={values}")
    key = str(key).strip()
    if not key:
        raise UserError(f"--sweep {short_repr(key)}: expected KEY=V1,V2,... e.g. --sweep train.teacher_forcing=1.0,0.5")
    texts = tuple(str(v).strip() for v in values)
    if not texts:
        raise UserError(f"--sweep {key}: give at least one value")
    for text in texts:
        if "," in text:
            raise UserError(
                f"--sweep {key}: the value {short_repr(text)} holds a comma, which separates the values of "
                "--sweep KEY=V1,V2; give one value per list item"
            )
    return _checked(key, texts, key)


def _checked(key: str, values: tuple[str, ...], shown: str) -> Sweep:
    """The checks both forms of a sweep share; ``shown`` names the sweep in a message."""
    if "" in values:  # "0.1,,0.2" or a trailing comma: a value lost to a slip, not meant
        raise UserError(f"--sweep {shown}: value {values.index('') + 1} is empty; give each value between commas")
    if key in FIXED_BY_COMPARE:
        raise UserError(f"--sweep {key}: nmt compare sets this option itself ({FIXED_BY_COMPARE[key]})")
    if len(set(values)) < len(values):
        raise UserError(f"--sweep {shown}: each value may appear once")
    return Sweep(key, values)


def expand_arms(variants: Optional[list[str]], sweeps: list[Sweep]) -> list[Arm]:
    """Every arm of the plan, variants outermost, then the sweeps' grid in the order given.

    Without sweeps an arm is a variant, labelled and stored as before (``<variant>_s<seed>``);
    without variants the sweeps vary the base config alone.
    """
    keys = [s.key for s in sweeps]
    if len(set(keys)) < len(keys):
        raise UserError(f"--sweep: each option may be swept once (got {', '.join(keys)})")
    if not variants and not sweeps:
        raise UserError("--variants: give at least one variant, or a --sweep")
    choices: list[Optional[str]] = list(variants) if variants else [None]
    count = math.prod(len(s.values) for s in sweeps) * len(choices)
    if count > MAX_ARMS:  # counted before any is built
        sizes = " x ".join([*([str(len(choices))] if variants else []), *(str(len(s.values)) for s in sweeps)])
        raise UserError(
            f"the comparison would have {count:,} arms ({sizes}), more than {MAX_ARMS:,}; "
            "give fewer variants or sweep values"
        )
    arms = []
    for variant in choices:
        base = variant_overrides(variant) if variant else []
        for point in itertools.product(*(s.values for s in sweeps)):
            pairs = [f"{s.key}={v}" for s, v in zip(sweeps, point)]
            trained = [p for s, p in zip(sweeps, pairs) if not s.decode_only]
            decoded = [p for s, p in zip(sweeps, pairs) if s.decode_only]
            stem_parts = ([run_name(variant)] if variant else []) + [_folder_part(p) for p in trained]
            arms.append(
                Arm(
                    label=" ".join(([variant] if variant else []) + pairs),
                    run_stem="_".join(stem_parts) or "base",
                    train=(*base, *trained),
                    decode=tuple(decoded),
                )
            )
    stems: dict[str, tuple[str, ...]] = {}
    for arm in arms:
        if stems.setdefault(arm.run_stem, arm.train) != arm.train:
            raise UserError(
                f"--sweep: two arms would share the run folder {arm.run_stem}_s<seed>; "
                "give values that differ in letters, digits, '.', '_' or '-'"
            )
    return arms
