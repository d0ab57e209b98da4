"""nmt lab teacher_forcing --tiny: four constant teacher-forcing probabilities and the two schedules
of scheduled sampling, trained once and scored greedily and with beam 5; the schedules really move
p as the table says; a second call retrains nothing."""

from __future__ import annotations

import json
import math
from itertools import pairwise
from pathlib import Path

import pytest

from conftest import run_tiny_lab
from nmt.labs.teacher_forcing import FLOOR, inverse_sigmoid_k

SETTINGS = ["p = 1.0", "p = 0.75", "p = 0.5", "p = 0.25", "linear", "inverse sigmoid"]
RUNS = {
    "p = 1.0": "train.teacher_forcing-1.0_s1",
    "p = 0.75": "train.teacher_forcing-0.75_s1",
    "p = 0.5": "train.teacher_forcing-0.5_s1",
    "p = 0.25": "train.teacher_forcing-0.25_s1",
    "linear": "train.tf_schedule-linear_s1",
    "inverse sigmoid": "train.tf_schedule-inverse_sigmoid_s1",
}


def _events(run: Path, kind: str) -> list[dict]:
    lines = (run / "metrics.jsonl").read_text(encoding="utf-8").splitlines()
    return [e for e in map(json.loads, lines) if e["event"] == kind]


@pytest.mark.parametrize("steps", [12, 600, 1500])
def test_the_inverse_sigmoid_reaches_the_floor_at_the_last_update(steps):
    k = inverse_sigmoid_k(steps, FLOOR)
    assert abs(k / (k + math.exp(steps / k)) - FLOOR) < 0.01


def test_constant_p_and_scheduled_sampling_at_the_tiny_size(tmp_path, capsys):
    printed = run_tiny_lab("teacher_forcing", tmp_path, capsys)
    page = (tmp_path / "teacher_forcing.md").read_text(encoding="utf-8")
    assert page.startswith("# Teacher forcing") and page.rstrip().endswith(printed.strip()[-40:])
    header = next(line for line in page.splitlines() if line.startswith("| setting |"))
    for column in (
        "valid BLEU greedy",
        "test BLEU greedy",
        "test BLEU beam 5",
        "beam − greedy",
        "s / update",
        "source length 0-9 (20 sent.)",  # every synthetic test sentence is short
    ):
        assert column in header
    rows = [line for line in page.splitlines() if line.startswith("| ") and not line.startswith("| setting")]
    assert [row.split(" | ")[0][2:].strip("*") for row in rows] == SETTINGS
    chosen = [row.split(" | ")[0][2:] for row in rows if row.startswith("| **")]
    assert len(chosen) == 1 and chosen[0].strip("*") in SETTINGS
    assert all(" ± " not in row for row in rows) and rows[0].endswith("| reference |")  # one seed: no ±
    numbers = json.loads((tmp_path / "teacher_forcing.json").read_text(encoding="utf-8"))
    reference, *others = numbers["settings"]
    for row, setting in zip(rows[1:], others):  # a signed difference, then p
        seed = setting["beam5"]["per_seed"]["1"] - reference["beam5"]["per_seed"]["1"]
        assert row.endswith(f"| {seed:+.2f} ({setting['p_values_beam5_vs_p1'][0]:.3f}) |"), row

    figure = tmp_path / "teacher_forcing.png"
    assert figure.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and figure.stat().st_size > 20_000

    assert numbers["tiny"] is True and numbers["split"] == "test" and numbers["steps"] == 12
    assert numbers["seeds"] == [1] and numbers["bucket_sizes"] == {"0-9": 20}
    assert [s["setting"] for s in numbers["settings"]] == SETTINGS
    best = max(s["valid"]["bleu"] for s in numbers["settings"])
    chosen_row = next(s for s in numbers["settings"] if s["setting"] == numbers["chosen_on_validation"])
    assert chosen_row["valid"]["bleu"] == best and f"**{chosen_row['setting']}**" in page
    for s in numbers["settings"]:
        for decoding in ("greedy", "beam5"):
            assert 0.0 <= s[decoding]["bleu"] <= 100.0 and s[decoding]["sd"] == 0.0
        assert s["beam_minus_greedy"] == pytest.approx(s["beam5"]["bleu"] - s["greedy"]["bleu"], abs=0.011)
        assert 0.0 < s["s_per_update"] < 60.0
        assert [step for step, _ in s["valid_curve"]] == [6, 12]  # train.valid_every, the same for all
        assert s["valid"]["bleu"] == pytest.approx(max(bleu for _, bleu in s["valid_curve"]), abs=0.011)
        assert all(0.0 <= bleu <= 100.0 for _, bleu in s["valid_curve"])
        assert set(s["bleu_by_length_beam5"]) == {"0-9"}  # the synthetic sentences are short
        p_values = s["p_values_beam5_vs_p1"]
        assert p_values is None if s["setting"] == "p = 1.0" else (len(p_values) == 1 and 0 <= p_values[0] <= 1)

    runs = tmp_path / "runs"
    p_by_update = {name: [e["tf"] for e in _events(runs / folder, "train")] for name, folder in RUNS.items()}
    for name in SETTINGS[:4]:
        assert p_by_update[name] == [float(name.split(" = ")[1])] * 12
    for name in ("linear", "inverse sigmoid"):
        p = p_by_update[name]
        assert len(p) == 12 and all(a > b for a, b in pairwise(p)), p  # decays at every update
        assert abs(p[-1] - FLOOR) < 0.07  # near the floor at the last update
    assert p_by_update["linear"][0] == 1.0

    stamps = {folder: (runs / folder / "metrics.jsonl").stat().st_mtime_ns for folder in RUNS.values()}
    again = run_tiny_lab("teacher_forcing", tmp_path, capsys)
    assert again == printed
    assert {folder: (runs / folder / "metrics.jsonl").stat().st_mtime_ns for folder in RUNS.values()} == stamps
    assert all(len(_events(runs / folder, "stop")) == 1 for folder in RUNS.values())  # nothing retrained
