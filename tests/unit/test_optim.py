"""Learning-rate and teacher-forcing schedules against their formulas; optimizer choice.

Each expected value is computed here from the formula as documented (config descriptions and
:mod:`nmt.training.optim`), not by calling the code under test.
"""

from __future__ import annotations

import io
import math
from itertools import pairwise

import pytest
import torch

from nmt.config import TrainConfig
from nmt.training.optim import Schedule, build_optimizer
from nmt.training.schedules import teacher_forcing_p

LR, MIN_LR = 0.01, 1e-4


def make_schedule(total_steps: int = 100, **options: object) -> Schedule:
    """A schedule driving a fresh SGD optimizer over one parameter."""
    cfg = TrainConfig(lr=LR, min_lr=MIN_LR, **options)
    optimizer = torch.optim.SGD([torch.nn.Parameter(torch.zeros(2))], lr=cfg.lr)
    return Schedule(cfg, optimizer, total_steps)


def lrs(sched: Schedule, updates: int) -> list[float]:
    """The learning rate before update 0, then after each of ``updates`` updates."""
    seen = [sched.lr]
    for _ in range(updates):
        sched.step()
        seen.append(sched.lr)
    return seen


def warmup(step: int, warm: int) -> float:
    """Linear warm-up: update ``step`` (0-based) runs at (step + 1) / warm of the peak."""
    return LR * (step + 1) / warm


# ------------------------------------------------------------ step-driven schedules


@pytest.mark.parametrize("warm", [0, 4])
def test_constant_holds_the_peak_after_warmup(warm: int) -> None:
    got = lrs(make_schedule(schedule="constant", warmup_steps=warm), 30)
    want = [warmup(s, warm) if s < warm else LR for s in range(31)]
    assert got == pytest.approx(want, rel=1e-12)


def test_inverse_sqrt_warms_up_linearly_then_decays_as_one_over_root_step() -> None:
    warm = 8
    got = lrs(make_schedule(schedule="inverse_sqrt", warmup_steps=warm), 60)
    want = [warmup(s, warm) if s < warm else max(MIN_LR, LR * math.sqrt(warm / s)) for s in range(61)]
    assert got == pytest.approx(want, rel=1e-12)
    assert got[warm - 1] == pytest.approx(LR) and got[warm] == pytest.approx(LR)  # peak, no jump
    assert got[4 * warm] == pytest.approx(LR / 2)  # four times the warm-up: half the peak


def test_inverse_sqrt_without_warmup_and_its_floor() -> None:
    got = lrs(make_schedule(schedule="inverse_sqrt", warmup_steps=0), 40)
    assert got[0] == pytest.approx(LR) and got[1] == pytest.approx(LR)
    assert got[1:] == pytest.approx([max(MIN_LR, LR / math.sqrt(s)) for s in range(1, 41)], rel=1e-12)
    long = lrs(make_schedule(schedule="inverse_sqrt", warmup_steps=1), 20_000)  # LR / sqrt(1e4) = MIN_LR
    assert long[1:] == pytest.approx([max(MIN_LR, LR / math.sqrt(s)) for s in range(1, 20_001)], rel=1e-12)
    assert long[-1] == pytest.approx(MIN_LR) and min(long) == pytest.approx(MIN_LR)


def test_cosine_reaches_min_lr_at_the_last_step_and_stays() -> None:
    warm, total = 5, 45
    got = lrs(make_schedule(total, schedule="cosine", warmup_steps=warm), total + 10)

    def cosine(step: int) -> float:
        if step < warm:
            return warmup(step, warm)
        progress = min((step - warm) / (total - warm), 1.0)
        return MIN_LR + (LR - MIN_LR) * (1 + math.cos(math.pi * progress)) / 2

    assert got == pytest.approx([cosine(s) for s in range(total + 11)], rel=1e-12)
    assert got[warm] == pytest.approx(LR)
    assert got[(warm + total) // 2] == pytest.approx((LR + MIN_LR) / 2)  # half way down the half cosine
    assert got[total:] == pytest.approx([MIN_LR] * 11)
    assert all(a >= b for a, b in zip(got[warm:], got[warm + 1 :]))


def test_cosine_on_the_time_clock_decays_over_the_budget_from_the_end_of_the_warm_up() -> None:
    """schedule_clock: time: the same half cosine, its progress the seconds since the warm-up ended
    over the seconds the budget has left then; the update count plays no part after the warm-up."""
    warm, budget_s = 4, 120.0
    sched = make_schedule(10**6, schedule="cosine", warmup_steps=warm, schedule_clock="time", time_budget_min=2)
    clock = [3.0 * k for k in range(1, 60)]  # seconds when each update began: 3 s an update
    seen = [sched.lr]
    for elapsed in clock:
        sched.step(elapsed)
        seen.append(sched.lr)
    warm_end = clock[warm - 1]  # the warm-up's last update began at 12 s

    def cosine(elapsed: float) -> float:
        progress = min(max(elapsed - warm_end, 0.0) / (budget_s - warm_end), 1.0)
        return MIN_LR + (LR - MIN_LR) * (1 + math.cos(math.pi * progress)) / 2

    assert seen[:warm] == pytest.approx([warmup(s, warm) for s in range(warm)], rel=1e-12)
    assert seen[warm:] == pytest.approx([cosine(e) for e in clock[warm - 1 :]], rel=1e-12)
    assert seen[warm] == pytest.approx(LR)  # no jump at the end of the warm-up
    assert seen[clock.index(66.0) + 1] == pytest.approx((LR + MIN_LR) / 2)  # half the time left: half way down
    assert seen[clock.index(120.0) + 1 :] == pytest.approx([MIN_LR] * (len(clock) - clock.index(120.0)))
    resumed = make_schedule(10**6, schedule="cosine", warmup_steps=warm, schedule_clock="time", time_budget_min=2)
    resumed.load_state_dict(through_checkpoint(sched.state_dict()))
    assert resumed.lr == sched.lr and resumed.warm_end == warm_end
    with pytest.raises(ValueError, match="needs the run's elapsed seconds"):  # the time clock cannot guess it
        resumed.step()


@pytest.mark.parametrize(
    "options, needs",
    [
        (dict(schedule="cosine"), "time_budget_min None"),
        (dict(schedule="inverse_sqrt", time_budget_min=5), "schedule is inverse_sqrt"),
    ],
)
def test_the_time_clock_needs_cosine_and_a_time_budget(options: dict, needs: str) -> None:
    with pytest.raises(ValueError, match=f"schedule_clock=time decays cosine over train.time_budget_min.*{needs}"):
        TrainConfig(schedule_clock="time", **options)


# ------------------------------------------------------------ plateau


def validate(sched: Schedule, scores: list[float]) -> list[float]:
    """The learning rate after each validation score."""
    seen = []
    for score in scores:
        sched.validated(score)
        seen.append(sched.lr)
    return seen


@pytest.mark.parametrize("metric,good,bad", [("bleu", 20.0, 10.0), ("loss", 2.0, 3.0)])
@pytest.mark.parametrize("patience", [0, 1, 3])
def test_plateau_decays_once_patience_is_exceeded(metric: str, good: float, bad: float, patience: int) -> None:
    """``patience`` validations without improvement are tolerated; the next one halves the rate."""
    sched = make_schedule(schedule="plateau", metric=metric, plateau_patience=patience, plateau_factor=0.5)
    assert lrs(sched, 20) == [LR] * 21  # updates alone never move it, and there is no warm-up
    got = validate(sched, [good] + [bad] * (patience + 1))
    assert got == pytest.approx([LR] * (patience + 1) + [LR / 2])
    got = validate(sched, [bad] * (patience + 1))  # the count starts again after a decay
    assert got == pytest.approx([LR / 2] * patience + [LR / 4])


def test_plateau_counts_only_validations_in_a_row_and_a_tie_is_no_improvement() -> None:
    sched = make_schedule(schedule="plateau", metric="bleu", plateau_patience=2, plateau_factor=0.5)
    assert validate(sched, [10.0, 9.0, 9.0, 11.0, 9.0, 9.0]) == pytest.approx([LR] * 6)  # 11.0 resets the count
    assert validate(sched, [11.0]) == pytest.approx([LR / 2])  # equal to the best: a third bad one


def test_plateau_stops_at_min_lr() -> None:
    sched = make_schedule(schedule="plateau", metric="loss", plateau_patience=0, plateau_factor=0.5)
    got = validate(sched, [1.0] + [2.0] * 20)  # 20 halvings would take LR to 1e-8
    want = [max(MIN_LR, LR * 0.5**k) for k in range(21)]
    assert got == pytest.approx(want)
    assert min(got) == pytest.approx(MIN_LR)


# ------------------------------------------------------------ save and restore


def through_checkpoint(state: dict) -> dict:
    """``state`` after a trip through torch.save and the safe torch.load, as checkpoints take it."""
    buffer = io.BytesIO()
    torch.save(state, buffer)
    buffer.seek(0)
    return torch.load(buffer, weights_only=True)


@pytest.mark.parametrize(
    "options", [dict(schedule="cosine", warmup_steps=5), dict(schedule="inverse_sqrt", warmup_steps=5)]
)
def test_step_schedule_resumes_where_it_stopped(options: dict) -> None:
    first = make_schedule(40, **options)
    lrs(first, 12)
    second = make_schedule(40, **options)
    assert second.lr != first.lr  # so the restore below has something to do
    second.load_state_dict(through_checkpoint(first.state_dict()))
    assert second.lr == first.lr
    assert lrs(second, 40) == lrs(first, 40)


def test_plateau_resumes_with_its_best_and_bad_count() -> None:
    """Restored mid-count, the resumed schedule decays on the same validation as the original."""
    options = dict(schedule="plateau", metric="bleu", plateau_patience=2, plateau_factor=0.5)
    first = make_schedule(**options)
    validate(first, [10.0, 5.0, 5.0, 5.0, 5.0, 5.0])  # one decay, then two bad validations
    fresh = make_schedule(**options)
    second = make_schedule(**options)
    second.optimizer.load_state_dict(through_checkpoint(first.optimizer.state_dict()))  # the lr lives there
    second.load_state_dict(through_checkpoint(first.state_dict()))
    fresh.optimizer.load_state_dict(through_checkpoint(first.optimizer.state_dict()))
    scores = [5.0, 9.0, 9.0, 9.0, 12.0, 11.0, 11.0, 11.0]  # 9 is below the restored best of 10
    want = validate(first, list(scores))
    assert want[0] == pytest.approx(LR / 4)
    assert validate(second, list(scores)) == want
    assert validate(fresh, list(scores)) != want  # without the schedule state the decays fall elsewhere


# ------------------------------------------------------------ teacher forcing


def test_constant_teacher_forcing() -> None:
    cfg = TrainConfig(teacher_forcing=0.7, tf_schedule="constant", tf_min=0.1)
    assert {teacher_forcing_p(cfg, step) for step in (0, 1, 500, 10**6)} == {0.7}


def test_linear_teacher_forcing_goes_to_tf_min_over_decay_steps() -> None:
    cfg = TrainConfig(teacher_forcing=0.9, tf_schedule="linear", tf_min=0.3, tf_decay_steps=200)
    for step in (0, 1, 50, 100, 199, 200, 201, 10**6):
        want = 0.9 + (0.3 - 0.9) * min(step / 200, 1.0)
        assert teacher_forcing_p(cfg, step) == pytest.approx(want, abs=1e-12), step
    assert teacher_forcing_p(cfg, 0) == pytest.approx(0.9)
    assert teacher_forcing_p(cfg, 100) == pytest.approx(0.6)
    assert teacher_forcing_p(cfg, 200) == pytest.approx(0.3) and teacher_forcing_p(cfg, 10**6) == pytest.approx(0.3)


def test_linear_teacher_forcing_never_rises() -> None:
    """tf_min above teacher_forcing: p stays at teacher_forcing rather than climbing."""
    cfg = TrainConfig(teacher_forcing=0.4, tf_schedule="linear", tf_min=0.8, tf_decay_steps=10)
    assert [teacher_forcing_p(cfg, s) for s in (0, 5, 10, 100)] == pytest.approx([0.4] * 4)


def test_inverse_sigmoid_teacher_forcing() -> None:
    k, p = 50.0, 0.8
    cfg = TrainConfig(teacher_forcing=p, tf_schedule="inverse_sigmoid", tf_k=k)
    steps = [0, 1, 10, 100, int(k * math.log(k)), 500, 1000]
    got = [teacher_forcing_p(cfg, s) for s in steps]
    assert got == pytest.approx([p * k / (k + math.exp(s / k)) for s in steps], rel=1e-12)
    assert got[0] == pytest.approx(p * k / (k + 1))
    assert got[4] == pytest.approx(p / 2, rel=0.05)  # exp(step / k) = k at step = k ln k: half of p
    assert all(a > b for a, b in pairwise(got))
    far = teacher_forcing_p(cfg, 10**9)  # exp would overflow; p is simply (almost) zero
    assert 0.0 <= far < 1e-12


# ------------------------------------------------------------ optimizers


@pytest.mark.parametrize(
    "name,cls", [("adam", torch.optim.Adam), ("adamw", torch.optim.AdamW), ("sgd", torch.optim.SGD)]
)
def test_build_optimizer_picks_the_class_and_its_settings(name: str, cls: type) -> None:
    model = torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.Linear(4, 2))
    model[0].weight.requires_grad_(False)  # a frozen parameter is not optimized
    cfg = TrainConfig(optimizer=name, lr=0.02, weight_decay=0.125, momentum=0.75)
    optimizer = build_optimizer(cfg, model)
    assert type(optimizer) is cls
    (group,) = optimizer.param_groups
    assert group["lr"] == 0.02 and group["weight_decay"] == 0.125
    assert [id(p) for p in group["params"]] == [id(p) for p in model.parameters() if p.requires_grad]
    if name == "sgd":
        assert group["momentum"] == 0.75
