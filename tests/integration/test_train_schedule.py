"""When the trainer validates and stops: epoch ends near a scheduled validation, the final model, a caller's stop rule."""

from itertools import pairwise
from pathlib import Path

import pytest

from conftest import toy_overrides
from nmt import config as C
from nmt.run import checkpoint as ckpt
from nmt.run import events
from nmt.run.folder import RunLock
from nmt.run.paths import RunPaths
from nmt.training.entry import run_training
from nmt.training.loop import Trainer
from nmt.training.run_start import open_run_dir


def _valid_steps(run_dir: Path) -> list[int]:
    return [e.step for e in events.of_kind(events.read(run_dir), events.Valid)]


def _epoch_ends(run_dir: Path) -> list[int]:
    """The last update of each epoch, from the train events (train.log_every=1)."""
    last: dict[int, int] = {}
    for e in events.of_kind(events.read(run_dir), events.Train):
        last[e.epoch] = max(last.get(e.epoch, 0), e.step)
    return [last[epoch] for epoch in sorted(last)]


def test_a_stop_rule_of_the_caller_ends_the_run_at_its_validation(tmp_path, toy_files):
    """Trainer(should_stop=...): the public hook scripts/bench_time_to_quality.py stops through."""
    _, files = toy_files
    cfg = C.load(
        None, toy_overrides(tmp_path, files, train__max_epochs=3, train__valid_every=0, train__tensorboard=False)
    )
    run_dir = Path(cfg.runs_dir) / cfg.name
    seen = []

    def enough(result):
        seen.append(result.bleu)
        return "enough" if len(seen) == 1 else None

    with RunLock(run_dir):
        open_run_dir(cfg, run_dir, overwrite=False)
        outcome = Trainer(cfg, run_dir, progress=False, should_stop=enough).fit()
    stop = events.of_kind(events.read(run_dir), events.Stop)[-1]
    assert (stop.reason, stop.epoch) == ("enough", 1) and "stopped (enough)" in outcome.summary
    assert _valid_steps(run_dir) == [stop.step] == _epoch_ends(run_dir)[-1:] and seen  # one validation, its end


def test_an_epoch_end_right_after_a_scheduled_validation_does_not_validate_again(tmp_path, toy_files):
    _, files = toy_files
    first = tmp_path / "a"
    run_training(
        None,
        toy_overrides(first, files, train__max_epochs=1, train__valid_every=0, train__tensorboard=False),
        progress=False,
    )
    (updates,) = _epoch_ends(first / "runs" / "toy")
    assert _valid_steps(first / "runs" / "toy") == [updates]  # no valid_every: the epoch end validates
    assert updates >= 6, "the toy epoch is too short for this test"

    every = updates - 1  # each epoch ends one or two updates after a scheduled validation
    second = tmp_path / "b"
    run_training(
        None,
        toy_overrides(second, files, train__max_epochs=2, train__valid_every=every, train__tensorboard=False),
        progress=False,
    )
    run_dir = second / "runs" / "toy"
    ends = _epoch_ends(run_dir)
    assert ends == [updates, 2 * updates]
    # the first epoch end does not validate again (before the fix: every, updates, ...); the
    # run's end does, as every run validates its final model
    assert _valid_steps(run_dir) == [every, 2 * every, 2 * updates]


@pytest.mark.parametrize("max_steps", [7, 10])
def test_the_final_model_is_validated_once_off_or_on_the_grid(tmp_path, toy_files, max_steps):
    """An update budget off the valid_every grid still scores its last updates (and may make
    them best.pt and the newest step checkpoint); one on the grid is not validated twice."""
    _, files = toy_files
    sets = toy_overrides(tmp_path, files, train__max_steps=max_steps, train__valid_every=5, train__max_tokens=100)
    run_training(None, sets, progress=False)
    run_dir = tmp_path / "runs" / "toy"
    steps = _valid_steps(run_dir)
    assert steps[-1] == max_steps and steps.count(max_steps) == 1 and 5 in steps
    assert ckpt.load(RunPaths(run_dir).last).state.last_valid == max_steps


def test_a_cosine_on_the_time_clock_is_at_its_floor_when_the_budget_ends_the_run(tmp_path, toy_files):
    """schedule_clock: time: the learning rate follows the run's own clock (its train events' elapsed_s)
    down to min_lr as the time budget runs out, whatever the number of updates that took."""
    _, files = toy_files
    lr, min_lr, budget_s = 0.002, 1e-5, 6.0
    overrides = toy_overrides(
        tmp_path,
        files,
        train__schedule="cosine",
        train__schedule_clock="time",
        train__time_budget_min=budget_s / 60,
        train__warmup_steps=2,
        train__lr=lr,
        train__min_lr=min_lr,
        train__max_epochs=1000,
        train__valid_every=0,
        train__tensorboard=False,
    )
    run_training(None, overrides, progress=False)
    run_dir = tmp_path / "runs" / "toy"
    stop = events.of_kind(events.read(run_dir), events.Stop)[-1]
    trains = events.of_kind(events.read(run_dir), events.Train)
    assert stop.reason == "time_budget" and stop.step > 4
    # the last update began just before the budget ran out (each update reads the clock as the ranks last
    # agreed on it, before any validation since): its rate is near the floor, the last sliver of the cosine
    assert min_lr <= trains[-1].lr < min_lr + 0.1 * (lr - min_lr)
    assert all(a.lr >= b.lr for a, b in pairwise(trains[2:]))  # down all the way after the warm-up
    middle = [e for e in trains[2:] if e.elapsed_s < budget_s / 2]
    assert middle and all(e.lr > (lr + min_lr) / 2 * 0.99 for e in middle[:-1])  # first half of the time: upper half
