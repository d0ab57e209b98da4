"""What ``nmt compare`` reuses and what it refuses to replace (issue 33, item 20), without training."""

from __future__ import annotations

from pathlib import Path

import pytest

from nmt import config as C
from nmt.comparison.runs import RunAction, check_finished_work, differences
from nmt.config.saved import SPEED_ONLY, without_inert_options
from nmt.util.errors import UserError


def _same(a: list[str], b: list[str]) -> bool:
    return without_inert_options(C.load(None, a)) == without_inert_options(C.load(None, b))


def test_speed_options_do_not_tell_runs_apart_but_the_rest_do() -> None:
    assert set(SPEED_ONLY) == {"threads", "log_every", "tensorboard", "valid_attention_map"}
    assert _same(
        ["train.threads=1", "train.log_every=1", "train.tensorboard=true", "train.valid_attention_map=true"],
        ["train.threads=2", "train.log_every=50", "train.tensorboard=false", "train.valid_attention_map=false"],
    )
    for option in (
        "train.device=cpu",
        "train.amp=bf16",
        "train.compile=default",
        "train.valid_batch_size=7",
        "train.valid_every=3",
        "train.lr=0.01",
        "train.seed=9",
        "train.max_steps=10",
    ):
        assert not _same([option], []), option  # may change the weights or the best checkpoint


def test_differences_names_the_options() -> None:
    a, b = C.load(None, ["model.dropout=0.25", "train.lr=0.01"]), C.load(None, [])
    assert differences(a, b) == ["model.dropout", "train.lr"] and differences(a, a) == []


def test_finished_runs_of_another_config_are_listed_in_one_line_truncated() -> None:
    kept = [RunAction([], Path(f"runs/cmp/v{i}_s1"), "kept", "finished with another model.dropout") for i in range(5)]
    fine = [RunAction([], Path("runs/cmp/x_s1"), "reuse"), RunAction([], Path("runs/cmp/y_s1"), "replace")]
    check_finished_work(fine)  # reuse, train and replace (unfinished or --force) go ahead
    with pytest.raises(UserError) as caught:
        check_finished_work(fine + kept)
    message = str(caught.value)
    assert "\n" not in message and message.startswith("5 finished run(s)")
    assert all(f"v{i}_s1" in message for i in range(3)) and "v3_s1" not in message and "and 2 more" in message
    assert "model.dropout" in message and "--force" in message


def test_planning_compares_each_arm_once_not_every_pair(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """150 sweep values were 11,175 pairwise config comparisons (minutes for 1,000): each arm's config
    is now reduced once, so planning grows with the arms."""
    from nmt.comparison.plan import Plan, check_plan
    from nmt.config import saved
    from nmt.config.arms import parse_sweep

    reduced = []
    original = saved.without_inert_options
    monkeypatch.setattr(saved, "without_inert_options", lambda cfg: reduced.append(1) or original(cfg))
    values = ",".join(f"{(i + 1) * 1e-4:.4f}" for i in range(150))
    plan = Plan(config=None, variants=None, seeds=[1], steps=5, sweeps=[parse_sweep(f"train.lr={values}")])
    plan = Plan(**{**plan.__dict__, "runs_dir": tmp_path})
    assert check_plan(plan) == 5
    assert len(reduced) <= len(plan.arms) == 150


def test_compare_groups_finds_a_sweep_arms_runs_by_the_record(tmp_path) -> None:
    """An arm of a sweep trains in a folder that is not its label: the record's run_detail names it."""
    import json

    from nmt.comparison.groups import run_names

    report = tmp_path / "report"
    report.mkdir()
    detail = [
        {
            "run": "bahdanau_model.attention.normalize-sparsemax_s4",
            "arm": "bahdanau model.attention.normalize=sparsemax",
            "seed": 4,
        }
    ]
    (report / "record.json").write_text(json.dumps({"run_detail": detail}), encoding="utf-8")
    assert run_names(tmp_path) == {("bahdanau model.attention.normalize=sparsemax", 4): detail[0]["run"]}
    (report / "record.json").write_text(
        json.dumps({"run_detail": [{**detail[0], "run": "../../etc"}]}), encoding="utf-8"
    )
    with pytest.raises(UserError, match="is not a folder name"):
        run_names(tmp_path)
    assert run_names(tmp_path / "nothing") == {}
