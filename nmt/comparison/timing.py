"""``nmt compare --time-updates N``: each arm's seconds per training update, measured alone.

A run's training minutes are those of the machine as it was: shared with the runs beside it
(``--jobs``) or anything else running, and spent on validation and checkpoints too.  So after
every run has trained (or was found finished), the comparison times each arm once more, in its
own process and one arm after another, never while a run trains: N updates of the arm's model
after :data:`WARMUP` untimed ones, on the first batches of the arm's training data
(:func:`nmt.training.timing.time_updates`), with the arm's ``train.threads``, ``train.device``,
``train.amp`` and ``train.accumulate`` batches per update.  The seeds of an arm build one model
(their first seed's config is timed) and arms that differ only in ``decode.*`` share one, so each
model is timed once.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

from nmt import config as config_mod
from nmt.comparison.plan import Plan, run_overrides
from nmt.config.arms import Arm

if TYPE_CHECKING:  # torch and the data stack load only when an arm is timed
    from nmt.data.pipeline import Corpus

log = logging.getLogger(__name__)

WARMUP = 3
"""Untimed updates before the timed ones (the allocator, autotuning and caches settle)."""

COLUMN = "s/update (alone)"
"""The table's column; the records' key is ``s_per_update_alone``."""


def _significant(value: float, digits: int = 4) -> float:
    """``value`` rounded to ``digits`` significant digits (a fast update stays above 0)."""
    return float(f"{value:.{digits}g}")


def machine(h: dict[str, Any]) -> str:
    """One machine as the reproducibility record names hardware: device, cores, threads, amp, torch."""
    return (
        f"{h.get('device_name', '?')} ({h.get('device', '?')}, {h.get('cpus', '?')} cores, "
        f"{h.get('threads', '?')} threads, amp {h.get('amp')}, torch {h.get('torch', '?')})"
    )


def time_arm(plan: Plan, arm: Arm, steps: int, corpora: dict[str, Corpus]) -> dict[str, Any]:
    """Seconds per update of ``arm``'s model (its first seed's config), alone in this process;
    ``corpora`` keeps the training data loaded for earlier arms, so arms of one corpus load it once."""
    from nmt.data.pipeline import load_corpus
    from nmt.training.timing import time_updates
    from nmt.util import runtime, threads

    cfg = config_mod.load(plan.config, run_overrides(plan, arm, plan.seeds[0], steps))
    t = cfg.train
    threads.configure(t.threads, "train.threads")
    device = runtime.select_device(t.device)
    amp = runtime.amp_dtype(device, t.amp)
    data = cfg.data.model_dump_json()  # the data section as text: its values may be unhashable (local_files)
    if data not in corpora:
        corpora[data] = load_corpus(cfg.data, splits=("train",))
    corpus = corpora[data]
    with runtime.preserved_rng():  # the timing seeds its model: nothing after it draws differently
        timing = time_updates(
            cfg,
            corpus,
            updates=plan.time_updates,
            warmup=WARMUP,
            device=device,
            amp=amp,
            batches_per_update=t.accumulate,
        )
    hardware = {**runtime.hardware(device), "threads": timing.threads, "amp": runtime.amp_name(amp)}
    log.info(
        "%s: %.4g s per update alone (%d timed after %d)", arm.label, timing.seconds_per_update, timing.updates, WARMUP
    )
    return {
        "s_per_update": _significant(timing.seconds_per_update),
        "updates": timing.updates,
        "warmup": timing.warmup,
        "batches_per_update": timing.batches_per_update,
        "tokens": timing.tokens,
        "hardware": hardware,
    }


def time_arms(plan: Plan, steps: int) -> dict[str, dict[str, Any]]:
    """:func:`time_arm` for every arm of the plan, keyed by its label; arms of one model share one timing."""
    by_model: dict[str, dict[str, Any]] = {}
    corpora: dict[str, Corpus] = {}
    for arm in plan.arms:
        if arm.run_stem not in by_model:
            by_model[arm.run_stem] = time_arm(plan, arm, steps, corpora)
    return {arm.label: by_model[arm.run_stem] for arm in plan.arms}


def add_to_rows(rows: list[dict[str, Any]], timings: dict[str, dict[str, Any]]) -> None:
    """Put each arm's seconds per update in its row, as ``s_per_update_alone``."""
    for row in rows:
        row["s_per_update_alone"] = timings[row["variant"]]["s_per_update"]


def summary(timings: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """How the column was measured, for the report and the reproducibility record: the updates, the
    machines (distinct hardware lines) and the sentence that says it."""
    first = next(iter(timings.values()))
    machines: list[dict[str, Any]] = []
    for timing in timings.values():
        if timing["hardware"] not in machines:
            machines.append(timing["hardware"])
    accumulate = sorted({t["batches_per_update"] for t in timings.values()})
    method = (
        f"`{COLUMN}` is each arm's seconds per training update measured alone after the runs, in the compare "
        f"process, one arm at a time: {first['updates']} timed updates after {first['warmup']} warm-up ones on "
        f"the first batches of its training data ({'/'.join(map(str, accumulate))} batch(es) per update as "
        f"train.accumulate sets it; forward, loss, backward, clip and optimizer step, no validation), on "
        f"{'; '.join(machine(h) for h in machines)}."
    )
    return {
        "updates": first["updates"],
        "warmup": first["warmup"],
        "machines": machines,
        "method": method,
        "arms": {label: {k: v for k, v in t.items() if k != "hardware"} for label, t in timings.items()},
    }
