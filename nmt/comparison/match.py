"""``nmt compare --match-params ARM``: every other arm resized to the parameter count of ARM.

Variants of one config differ in size (the scaled dot-product variant runs a half-size encoder,
QKV adds projections), so "A beats B" may be "A is larger".  With a budget, each arm other than
ARM gets the RNN size H (``model.hidden_size``, and ``model.emb_size`` with it where
``model.tie_embeddings`` needs the two equal) whose model has the parameter count closest to
ARM's, found by bisection (the count grows with H); an arm that cannot come within
:data:`TOLERANCE` of the budget is refused in one line before anything trains.  Parameters are
counted on the model built from the arm's config, with the SentencePiece vocabulary of
``data.vocab_size`` pieces on both sides that ``nmt data prepare`` trains.

Resized arms train into folders of their own (``<stem>_match-<ARM>_s<seed>``), so they never
reuse or replace a run of the same variant at its own size; an arm whose own size is already the
closest keeps its runs.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Optional

from nmt import config as config_mod
from nmt.config.arms import Arm
from nmt.util.errors import ConfigError, UserError

TOLERANCE = 0.02
"""Largest relative difference between a matched arm's parameters and the budget."""

MAX_HIDDEN = 8192  # the search's upper end: far above any model these configs build


def size_overrides(cfg: config_mod.Config, hidden: int) -> tuple[str, ...]:
    """The overrides that give ``cfg``'s RNN the size ``hidden``."""
    if cfg.model.tie_embeddings:
        return (f"model.hidden_size={hidden}", f"model.emb_size={hidden}")
    return (f"model.hidden_size={hidden}",)


def parameters(cfg: config_mod.Config) -> int:
    """Trainable parameters of the model ``cfg`` builds, at its data.vocab_size on both sides (built
    on torch's meta device: shapes only, no memory and no initialization)."""
    import torch

    from nmt.model.build import build_model, count_parameters

    vocab = cfg.data.vocab_size
    with torch.device("meta"):
        return count_parameters(build_model(cfg.model, vocab, vocab))


def matched_hidden(arm_config: Callable[[tuple[str, ...]], config_mod.Config], budget: int) -> tuple[int, int]:
    """The hidden size whose model is closest to ``budget`` parameters, and that model's count;
    ``arm_config(extra)`` is the arm's config with the ``extra`` overrides.

    Sizes are searched in steps of the smallest of 1, 2, 4, 8, 16 that every size the arm's config
    accepts is a multiple of (a half-size encoder needs an even size, heads a multiple of their count).
    """
    own = arm_config(())
    for step in (1, 2, 4, 8, 16):

        def count_at(k: int, step: int = step) -> int:
            return parameters(arm_config(size_overrides(own, step * k)))

        try:
            return _bisect(count_at, own, step, budget)
        except ConfigError:
            continue
    raise UserError("--match-params: no hidden size the config accepts fits (tried multiples of 1 to 16)")


def _bisect(count_at: Callable[[int], int], own: config_mod.Config, step: int, budget: int) -> tuple[int, int]:
    """Bisection over k (hidden size step * k) for the count closest to ``budget``."""
    low, high = 1, max(4 * own.model.hidden_size // step, 8)
    while count_at(high) < budget and high * step < MAX_HIDDEN:
        high *= 2
    while low < high:  # the smallest k with at least the budget
        mid = (low + high) // 2
        if count_at(mid) < budget:
            low = mid + 1
        else:
            high = mid
    best = min((k for k in (low - 1, low) if k >= 1), key=lambda k: abs(count_at(k) - budget))
    return step * best, count_at(best)


def match_arms(plan_config: Optional[Path], overrides: list[str], arms: list[Arm], reference: str) -> list[Arm]:
    """``arms`` with every arm but ``reference`` resized to its parameter count (see the module)."""
    by_label = {a.label: a for a in arms}
    if reference not in by_label:
        shown = ", ".join(repr(a.label) for a in arms[:6])
        raise UserError(f"--match-params {reference!r} is not among the compared arms ({shown})")

    def arm_config(arm: Arm, extra: tuple[str, ...] = ()) -> config_mod.Config:
        return config_mod.load(plan_config, [*overrides, *arm.train, *extra])

    budget = parameters(arm_config(by_label[reference]))
    matched = []
    for arm in arms:
        if arm.label == reference:
            matched.append(arm)
            continue
        cfg = arm_config(arm)
        if cfg.model.arch != "rnn":
            raise UserError(f"--match-params: arm {arm.label!r} is a {cfg.model.arch}; only RNN arms can be resized")
        hidden, count = matched_hidden(functools.partial(arm_config, arm), budget)
        if abs(count - budget) > TOLERANCE * budget:
            raise UserError(
                f"--match-params {reference}: arm {arm.label!r} comes no closer than {count:,} parameters "
                f"to the budget of {budget:,} (hidden size {hidden}); more than {TOLERANCE:.0%} apart"
            )
        if hidden == cfg.model.hidden_size:  # already at the budget: the arm as it is, its runs shared
            matched.append(arm)
            continue
        matched.append(
            replace(
                arm,
                run_stem=f"{arm.run_stem}_match-{by_label[reference].run_stem}",
                train=(*arm.train, *size_overrides(cfg, hidden)),
            )
        )
    return matched
