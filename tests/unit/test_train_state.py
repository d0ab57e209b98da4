"""The run's counters and the rules that read them: better scores, stop rules, kept checkpoints."""

from __future__ import annotations

import pytest

from nmt.config import TrainConfig
from nmt.run.state import TrainState, is_better, keep_checkpoints, metric_mode, stop_reason, validates_at_epoch_end


@pytest.mark.parametrize(
    "metric, value, best, expected",
    [
        ("bleu", 30.0, None, True),
        ("bleu", 30.1, 30.0, True),
        ("bleu", 29.9, 30.0, False),
        ("chrf", 50.0, 49.0, True),
        ("loss", 1.9, 2.0, True),
        ("loss", 2.1, 2.0, False),
        ("loss", 2.0, None, True),
    ],
)
def test_is_better_follows_the_metric_direction(metric, value, best, expected):
    assert is_better(metric, value, best) is expected
    assert metric_mode(metric) == ("min" if metric == "loss" else "max")


@pytest.mark.parametrize("metric", ["bleu", "loss"])
def test_a_tie_is_not_better_so_the_first_best_stays(metric):
    assert not is_better(metric, 3.0, 3.0)


def test_validated_counts_bad_validations_and_resets_on_a_new_best():
    state = TrainState()
    seen = [state.validated("bleu", v) for v in (10.0, 12.0, 11.0, 12.0, 13.0)]
    assert seen == [True, True, False, False, True]
    assert (state.best, state.bad_validations) == (13.0, 0)
    state.validated("bleu", 1.0)
    assert state.bad_validations == 1


def test_state_dict_round_trip_is_exact():
    state = TrainState(
        step=7,
        epoch=2,
        pos=3,
        best=31.5,
        history=[(31.5, 7), (30.0, 5)],
        recent=[5, 7],
        bad_validations=1,
        nonfinite=2,
        elapsed=12.25,
    )
    again = TrainState.from_state_dict(state.state_dict())
    assert again == state and again.history[0] == (31.5, 7)
    assert TrainState.from_state_dict(TrainState().state_dict()) == TrainState()


def _cfg(**kw) -> TrainConfig:
    return TrainConfig(**{"max_epochs": 5, **kw})


@pytest.mark.parametrize(
    "state, cfg, signal, reason",
    [
        (TrainState(), _cfg(), 0, None),
        (TrainState(step=9), _cfg(max_steps=10), 0, None),
        (TrainState(step=10), _cfg(max_steps=10), 0, "max_steps"),
        (TrainState(elapsed=59.9), _cfg(time_budget_min=1), 0, None),
        (TrainState(elapsed=60.0), _cfg(time_budget_min=1), 0, "time_budget"),
        (TrainState(bad_validations=2), _cfg(patience=3), 0, None),
        (TrainState(bad_validations=3), _cfg(patience=3), 0, "early_stopping"),
        (TrainState(bad_validations=99), _cfg(patience=None), 0, None),
        (TrainState(epoch=5), _cfg(), 0, "max_epochs"),
        (TrainState(epoch=4), _cfg(), 0, None),
        (TrainState(step=10, epoch=5), _cfg(max_steps=10), 2, "interrupted"),  # a signal comes first
        (TrainState(step=10, epoch=5), _cfg(max_steps=10), 0, "max_steps"),  # then the update limit
    ],
)
def test_stop_reason(state, cfg, signal, reason):
    assert stop_reason(state, cfg, signal) == reason


def keep_best(history, metric, value, step, keep):
    return keep_checkpoints(history, [], metric, value, step, keep_best=keep, keep_last=0)


def test_keep_best_keeps_the_k_best_by_score_then_step():
    history: list[tuple[float, int]] = []
    saved, dropped = [], []
    for step, bleu in [(100, 10.0), (200, 20.0), (300, 15.0), (400, 20.0), (500, 5.0), (600, 30.0)]:
        decision = keep_best(history, "bleu", bleu, step, keep=3)
        history = decision.history
        saved += [step] if decision.save else []
        dropped += decision.drop
    assert history == [(30.0, 600), (20.0, 200), (20.0, 400)]
    assert saved == [100, 200, 300, 400, 600]  # 500 was never among the best 3
    assert sorted(dropped) == [100, 300]  # every saved step not kept is dropped once...
    assert not set(dropped) & {s for _, s in history}  # ...and no kept one


def test_keep_best_for_loss_keeps_the_lowest():
    history: list[tuple[float, int]] = []
    for step, loss in [(1, 3.0), (2, 2.0), (3, 2.5)]:
        history = keep_best(history, "loss", loss, step, keep=2).history
    assert history == [(2.0, 2), (2.5, 3)]


@pytest.mark.parametrize("keep", [0, 1])
def test_keep_best_of_one_or_none_saves_no_step_checkpoint(keep):
    decision = keep_best([], "bleu", 10.0, 100, keep=keep)
    assert (decision.history, decision.recent, decision.save, decision.drop) == ([], [], False, [])


def test_keep_last_keeps_the_latest_steps_whatever_their_score():
    recent: list[int] = []
    saved, dropped = [], []
    for step, bleu in [(100, 30.0), (200, 10.0), (300, 20.0), (400, 5.0)]:
        decision = keep_checkpoints([], recent, "bleu", bleu, step, keep_best=1, keep_last=2)
        recent = decision.recent
        saved += [step] if decision.save else []
        dropped += decision.drop
    assert recent == [300, 400] and saved == [100, 200, 300, 400] and dropped == [100, 200]


def test_a_file_in_both_lists_is_dropped_only_when_it_leaves_both():
    """Simulate the files on disk: every step saved and not yet dropped is exactly the union kept."""
    history: list[tuple[float, int]] = []
    recent: list[int] = []
    on_disk: set[int] = set()
    scores = [12.0, 30.0, 11.0, 25.0, 10.0, 9.0, 29.0, 8.0]
    for i, bleu in enumerate(scores):
        step = 100 * (i + 1)
        d = keep_checkpoints(history, recent, "bleu", bleu, step, keep_best=2, keep_last=2)
        history, recent = d.history, d.recent
        on_disk |= {step} if d.save else set()
        assert set(d.drop) <= on_disk  # only files that exist are deleted
        on_disk -= set(d.drop)
        assert on_disk == {s for _, s in history} | set(recent)
    assert history == [(30.0, 200), (29.0, 700)] and recent == [700, 800] and on_disk == {200, 700, 800}


@pytest.mark.parametrize(
    "state, words",
    [
        (TrainState(), "step 0 (start)"),
        (TrainState(step=57, epoch=1, pos=17), "step 57 (epoch 2, after batch 17)"),
        (TrainState(step=120, epoch=2, pos=0), "step 120 (end of epoch 2)"),
    ],
)
def test_position_counts_epochs_from_1_as_the_progress_bar_does(state, words):
    assert state.position() == words


@pytest.mark.parametrize("valid_every", [1, 2, 5, 100])
def test_an_epoch_end_never_validates_again_near_a_scheduled_validation(valid_every):
    """With valid_every, an epoch end validates only before the first scheduled validation or
    at least half an interval after the latest one; so never at it nor a few updates after it."""
    for step in range(1, 1000):
        since = step % valid_every  # updates since the latest scheduled validation
        expected = step < valid_every or 2 * since >= valid_every
        assert validates_at_epoch_end(step, valid_every) == expected, step
    for step in range(valid_every, 1000, valid_every):
        assert not validates_at_epoch_end(step, valid_every)  # validated at this very update
        if valid_every > 2:
            assert not validates_at_epoch_end(step + 1, valid_every)  # a few updates after it


def test_without_valid_every_every_epoch_end_validates():
    assert all(validates_at_epoch_end(step, 0) for step in range(0, 50))
