"""What ``nmt compare`` compares: the plan (arms, seeds, updates, split), each run's overrides, and
the checks that fail a bad plan in one line before anything trains."""

from __future__ import annotations

import functools
from collections.abc import Hashable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Optional

from nmt import config as config_mod
from nmt.config.arms import Arm, Sweep, expand_arms
from nmt.config.saved import Fit, fingerprint
from nmt.util.errors import UserError


@dataclass(frozen=True)
class Plan:
    """What to compare; :func:`check_plan` validates it before anything trains."""

    config: Optional[Path]
    # None: the config's own model (with sweeps, or a Transformer), else bahdanau and luong_general
    variants: Optional[list[str]]
    seeds: list[int]
    steps: Optional[int]
    baseline: Optional[str] = None  # None: the first arm
    sweeps: list[Sweep] = field(default_factory=list)
    split: str = "test"
    beam: Optional[int] = None  # None: the config's decode.beam
    runs_dir: Path = Path("runs/compare")
    overrides: list[str] = field(default_factory=list)
    force: bool = False  # replace finished runs of another config (else the comparison is refused)
    match_params: Optional[str] = None  # an arm whose parameter count every other arm is resized to
    time_updates: int = 0  # updates timed per arm alone after its runs (:mod:`nmt.comparison.timing`); 0: none
    search: Optional[str] = None  # what was searched for the base config, on which split, with what budget (the record)

    @functools.cached_property
    def arms(self) -> list[Arm]:  # expanded once per plan: every loop over arms and the reference read it
        if self.match_params is None:
            return self.arms_as_given
        from nmt.comparison.match import match_arms

        return match_arms(self.config, self.overrides, self.arms_as_given, self.match_params)

    @functools.cached_property
    def arms_as_given(self) -> list[Arm]:
        """The arms before ``--match-params`` resized them (the same as :attr:`arms` without it).
        Without variants or sweeps: bahdanau and luong_general, or a Transformer config's own model
        (the attention variants are an RNN's), one arm across the seeds."""
        if self.variants is None and not self.sweeps and self._base_arch() == "transformer":
            return [Arm(label="transformer", run_stem="transformer", train=(), decode=())]
        default = None if self.sweeps else ["bahdanau", "luong_general"]
        return expand_arms(self.variants if self.variants is not None else default, self.sweeps)

    def _base_arch(self) -> str:
        """model.arch of the base config with the shared overrides."""
        return config_mod.load(self.config, self.overrides).model.arch

    @property
    def reference(self) -> str:
        return self.baseline or self.arms[0].label


def parse_list(text: str, what: str, cast: type = str) -> list[Any]:
    """'a,b' -> ['a', 'b'] (cast each); an empty list or a bad item is a UserError."""
    items = [item.strip() for item in text.split(",") if item.strip()]
    if not items:
        raise UserError(f"--{what}: give at least one, comma-separated")
    try:
        values = [cast(item) for item in items]
    except ValueError:
        raise UserError(f"--{what} {text!r}: expected comma-separated {cast.__name__} values") from None
    if len(set(values)) < len(values):
        raise UserError(f"--{what} {text!r}: each may appear once")
    return values


def run_overrides(plan: Plan, arm: Arm, seed: int, steps: int) -> list[str]:
    """The ``--set`` list of one run: base overrides, the arm's training ones, then the plan's fixed ones."""
    return [
        *plan.overrides,
        *arm.train,
        f"name={arm.run_stem}_s{seed}",
        f"runs_dir={plan.runs_dir}",
        f"train.seed={seed}",
        f"train.max_steps={steps}",
        "train.time_budget_min=null",
        "train.max_epochs=100000",
    ]


SAME_ARM = Fit(free=("name",), up_to_inert=True)
"""Two arms whose configs differ only in their run's name (or in options that change nothing) are one arm."""


def check_plan(plan: Plan) -> int:
    """Every problem a user can fix, raised before any training; returns the updates per run."""
    if plan.beam is not None and any(sweep.key == "decode.beam" for sweep in plan.sweeps):
        raise UserError("--beam and --sweep decode.beam=...: give the beam sizes in the sweep alone")
    labels = [arm.label for arm in plan.arms]
    if plan.reference not in labels:
        shown = ", ".join(repr(x) for x in labels[:6]) + (f" and {len(labels) - 6} more" if len(labels) > 6 else "")
        raise UserError(f"--baseline {plan.reference!r} is not among the compared arms ({shown})")
    if not plan.seeds:
        raise UserError("--seeds: give at least one seed")
    if plan.time_updates < 0:
        raise UserError(f"--time-updates {plan.time_updates}: give 0 (no timing) or the updates to time per arm")
    base = config_mod.load(plan.config, plan.overrides)
    folder, src = base.data.prepared_dir, base.data.src
    if folder.is_dir() and not (folder / f"{plan.split}.{src}").is_file():  # unprepared: training prepares it
        found = sorted(p.stem for p in folder.glob(f"*.{src}"))
        raise UserError(f"--split {plan.split}: the corpus in {folder} has no such split (have: {', '.join(found)})")
    if base.train.schedule_clock == "time":  # its cosine runs to a time budget, which a comparison removes
        raise UserError(
            "train.schedule_clock=time decays over a time budget, and a comparison trains a fixed number of "
            "updates: add --set train.schedule_clock=steps, or compare at equal time with scripts/bench_equal_time.py"
        )
    steps = plan.steps if plan.steps is not None else base.train.max_steps
    if steps is None or steps < 1:
        raise UserError(
            "a comparison trains a fixed number of updates: give --steps N (N >= 1) "
            "or set train.max_steps in the config"
        )
    seen: dict[Hashable, Arm] = {}  # one look-up per arm, so planning grows with the arms, not their pairs
    for arm in plan.arms:  # an arm or seed that does not fit the base config fails now, not after hours
        for seed in plan.seeds:
            cfg = config_mod.load(plan.config, [*run_overrides(plan, arm, seed, steps), *arm.decode])
        # cfg: this arm at the last seed, as every arm in seen was (seeds change every arm alike)
        twin = seen.setdefault(fingerprint(cfg, SAME_ARM), arm)
        if twin is not arm:  # e.g. --sweep train.teacher_forcing=1,1.0: one model trained (or scored) twice
            raise UserError(_one_config(plan, twin, arm))
    return steps


def _one_config(plan: Plan, first: Arm, second: Arm) -> str:
    """Why two arms are one config: given so, or made so by ``--match-params`` (a sweep of the
    model's size resized back to one size), which "give each value once" would not explain."""
    same = f"the arms {first.label!r} and {second.label!r} are one config (the same model, trained and decoded the same way)"
    given = {arm.label: arm for arm in plan.arms_as_given}
    resized = [arm for arm in (first, second) if arm != given.get(arm.label, arm)]
    if plan.match_params is None or not resized:
        return f"{same}; give each value or variant once"
    sizes = [o.partition("=")[2] for arm in resized for o in arm.train if o.startswith("model.hidden_size=")][-1:]
    shown = " and ".join(repr(arm.label) for arm in resized) + (f" to hidden size {sizes[0]}" if sizes else "")
    return (
        f"--match-params {plan.match_params!r} resized {shown}, so {same}; matching the parameter count "
        "undoes a sweep of the model's size: leave out --match-params, or sweep another option"
    )
