"""docs_build/equal_time_table.py: the learning curves at equal updates and at equal minutes."""

import importlib

equal_time_table = importlib.import_module("equal_time_table")  # docs_build/ is on sys.path (tests/conftest.py)


def run(config: str, seed: int, curve: list[list[float]], test_bleu: float = 30.0) -> dict:
    """One bench_equal_time line of a 20-minute budget."""
    return {
        "bench": "equal_time",
        "config": config,
        "arch": "rnn" if "rnn" in config else "transformer",
        "seed": seed,
        "updates": int(curve[-1][0]),
        "minutes": curve[-1][1],
        "minutes_budget": 20.0,
        "stop_reason": "time_budget",
        "chosen": "best",
        "valid_bleu": curve[-1][2],
        "test_bleu": test_bleu,
        "valid_curve": curve,
    }


def test_curves_set_the_same_updates_beside_the_same_minutes() -> None:
    """The fast arm validates update 200 at minute 4, the slow one at minute 8: at update 200 they are
    compared at their own BLEU, at minute 5 the slow arm has not validated yet, and the last row is
    each run's last validation, made a little after the budget ended."""
    fast = [[100, 2.0, 10.0], [200, 4.0, 20.0], [300, 6.0, 24.0], [700, 20.01, 30.0]]
    slow = [[100, 4.0, 12.0], [200, 8.0, 22.0], [500, 20.02, 28.0]]
    lines = [run("a_rnn.yaml", 1, fast), run("a_rnn.yaml", 2, [[u, m, b + 2] for u, m, b in fast])]
    lines += [run("b_tf.yaml", 1, slow), run("b_tf.yaml", 2, [[u, m, b + 2] for u, m, b in slow])]
    rows = equal_time_table.curves(equal_time_table.by_arm(lines), step_minutes=5.0)
    assert rows[2] == "| at | `a_rnn` | `b_tf` |"
    body = rows[4:]
    assert body[0] == "| update 100 | 11.00 ± 12.71 | 13.00 ± 12.71 |"  # mean of 10 and 12; 12 and 14
    assert body[1].startswith("| update 200 | 21.00 ") and "| 23.00 " in body[1]
    assert len([row for row in body if row.startswith("| update ")]) == 2  # 300, 500, 700: not every run's
    minute5 = next(row for row in body if row.startswith("| minute 5 |"))
    assert "(update 200)" in minute5 and "not yet validated" not in minute5.split("|")[2]
    assert minute5.split("|")[3].strip().startswith("13.00")  # the slow arm's update 100 (minute 4)
    minute10, minute15 = (next(row for row in body if row.startswith(f"| minute {m} |")) for m in (10, 15))
    assert "25.00" in minute10 and "(update 300)" in minute10 and minute15.count("(update 300)") == 1
    assert body[-1] == "| the end (minute 20) | 31.00 ± 12.71 (update 700) | 29.00 ± 12.71 (update 500) |"
    assert not any(row.startswith("| minute 20 |") for row in body)


def test_the_slow_arm_before_its_first_validation_is_said_to_be_so() -> None:
    lines = [run("a_rnn.yaml", 1, [[100, 2.0, 10.0], [400, 20.0, 20.0]])]
    lines += [run("b_tf.yaml", 1, [[100, 6.0, 12.0], [300, 20.0, 22.0]])]
    rows = equal_time_table.curves(equal_time_table.by_arm(lines), step_minutes=5.0)
    assert (
        next(row for row in rows if row.startswith("| minute 5 |"))
        == "| minute 5 | 10.00 (update 100) | not yet validated |"
    )


def test_lines_without_their_curves_leave_the_section_out() -> None:
    lines = [run("a_rnn.yaml", 1, [[100, 2.0, 10.0]]), run("b_tf.yaml", 1, [[100, 2.0, 10.0]])]
    del lines[1]["valid_curve"]
    assert equal_time_table.curves(equal_time_table.by_arm(lines)) == []
    assert "at the same update" not in equal_time_table.table(lines)


def test_arms_validated_at_other_updates_are_set_side_by_side_by_minute_only() -> None:
    lines = [run("a_rnn.yaml", 1, [[100, 2.0, 10.0], [400, 20.0, 20.0]])]
    lines += [run("b_tf.yaml", 1, [[150, 6.0, 12.0], [300, 20.0, 22.0]])]
    rows = equal_time_table.curves(equal_time_table.by_arm(lines), step_minutes=5.0)
    assert "at the same update" not in rows[0] and "at the same minute" in rows[0]
    assert not any(row.startswith("| update ") for row in rows)
    assert rows[-1] == "| the end (minute 20) | 20.00 (update 400) | 22.00 (update 300) |"
