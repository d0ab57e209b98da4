"""docs_build/pairs_table.py: per-pair intervals, the summary and Kendall's tau from JSON lines."""

import importlib
import json
import math
from pathlib import Path

import pytest

from nmt.comparison.groups import check_same_arms
from nmt.score.power import detectable_difference, pooled_spread
from nmt.score.seed_stats import welch_p
from nmt.util.errors import UserError

pairs_table = importlib.import_module("pairs_table")  # docs_build/ is on sys.path (tests/conftest.py)


def record(pair: str, variant: str, seed: int, bleu: float) -> dict:
    return {
        "pair": pair,
        "config": f"configs/{pair}.yaml",
        "variant": variant,
        "seed": seed,
        "baseline": "bahdanau",
        "split": "test2016",
        "beam": 5,
        "bleu": bleu,
        "updates": 600,
        "params": 1000,
        "flops_per_token": 2.5e6,
    }


def test_rankings_that_agree_give_tau_one_and_a_reversal_minus_one(tmp_path, capsys):
    scores = {"bahdanau": 30.0, "qkv": 31.0, "none": 20.0, "scaled_dot": 29.0}
    lines = [record("de-en", v, s, b + 0.1 * s) for v, b in scores.items() for s in (1, 2, 3)]
    lines += [record("fr-en", v, s, b + 10 + 0.1 * s) for v, b in scores.items() for s in (1, 2, 3)]
    lines += [record("cs-en", v, s, -b + 0.1 * s) for v, b in scores.items() for s in (1, 2, 3)]
    path = tmp_path / "pairs.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in lines))
    pairs_table.main([str(path)])
    page = capsys.readouterr().out
    assert "| de-en |  | +1.00 | -1.00 |" in page  # fr-en ranks alike, cs-en in reverse
    # the shift of 0.1 per seed is the same in both arms: the paired differences have no spread
    assert "| qkv | 1,000 | 2.50 | 31.20 ± 0.25 | +1.00 ± 0.00 | 0.000 | 1 |" in page
    assert "| none | -10.00 (4) | -10.00 (4) | +10.00 (1) | 3.00 |" in page
    assert "attention variants only (none left out)" in page


def test_the_pages_statistics_across_pairs_come_from_the_json_lines(tmp_path, capsys):
    """Pooled effects, the partial-conjunction count, Holm within each pair and Kendall's W, printed
    by the command the pairs page cites (issue 61, item 3)."""
    scores = {"bahdanau": 30.0, "qkv": 31.0, "none": 20.0, "scaled_dot": 29.0}
    noise = {1: 0.0, 2: 0.3, 3: -0.2}
    lines = [
        record(pair, v, s, b + shift + (noise[s] if v != "bahdanau" else 0.0))
        for pair, shift in (("de-en", 0.0), ("fr-en", 5.0), ("cs-en", -3.0))
        for v, b in scores.items()
        for s in (1, 2, 3)
    ]
    path = tmp_path / "pairs.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in lines))
    pairs_table.main([str(path)])
    page = capsys.readouterr().out
    # qkv is +1 + mean(noise) = +1.033 on every pair: no spread across pairs, positive on all three
    assert "| qkv | +1.03 ± 0.00 | 0.000 | 3 of 3 | 9 of 9 |" in page
    assert "Kendall's W, all variants: 1.000 (Friedman chi-square 9.00, 3 df, p = 0.0293)" in page


@pytest.mark.parametrize("change", [{"arms": {"bahdanau": {}, "qkv": {}}}, {"baseline": "none"}])
def test_groups_of_other_arms_or_another_baseline_are_refused_in_one_line(change):
    plan = {"arms": {"bahdanau": {}, "none": {}}, "baseline": "bahdanau"}
    check_same_arms({"de-en": plan, "fr-en": {**plan, "arms": {"none": {}, "bahdanau": {}}}})  # order aside: alike
    with pytest.raises(UserError, match="fr-en") as refusal:
        check_same_arms({"de-en": plan, "fr-en": {**plan, **change}})
    assert "\n" not in str(refusal.value)


def test_the_combined_test_is_tabulated_per_pair_with_holm_and_the_power_line_from_the_seed_spread(tmp_path, capsys):
    """Issue 61, items 4 and 5 on the pairs page: the comparisons' approximate randomization over
    replicates, carried by the records, raw and Holm-adjusted within a pair; and the detectable
    difference from the spread of per-seed differences (none left out of the spread)."""
    scores = {"bahdanau": 30.0, "qkv": 31.0, "none": 20.0}
    noise = {1: 0.0, 2: 1.0, 3: -1.0}  # qkv's differences: 1, 2, 0 -> standard deviation 1.0
    p_ar = {"qkv": 0.02, "none": 0.01}
    lines = [
        {**record(pair, v, s, b + (noise[s] if v == "qkv" else 0.0)), "p_ar": p_ar.get(v), "ar_seeds": [1, 2, 3]}
        for pair in ("de-en", "fr-en")
        for v, b in scores.items()
        for s in (1, 2, 3)
    ]
    lines += [{**record("cs-en", v, s, b), "p_ar": None} for v, b in scores.items() for s in (1, 2, 3)]
    path = tmp_path / "pairs.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in lines))
    pairs_table.main([str(path)])
    page = capsys.readouterr().out
    assert "| variant | de-en p AR (Holm) | fr-en p AR (Holm) |" in page  # cs-en has no combined test
    assert "| qkv | 0.0200 (0.0200) | 0.0200 (0.0200) |" in page  # Holm: max(2 x 0.01, 0.02) for the larger p
    assert "| none | 0.0100 (0.0200) | 0.0100 (0.0200) |" in page  # 2 x 0.01 for the smaller
    assert "Seeds the tests cover: de-en 1, 2, 3; fr-en 1, 2, 3" in page
    # qkv's variance is 1 on de-en and fr-en, 0 on cs-en, 2 degrees of freedom each: sigma = sqrt(2 / 3)
    sigma = math.sqrt(2 / 3)
    assert f"spread {sigma:.2f} BLEU" in page
    for n in (3, 5, 10):
        assert f"{n} seeds {detectable_difference(sigma, n):.2f}" in page


def test_an_arm_tested_only_in_a_later_pair_and_tests_over_other_seeds_are_shown(tmp_path, capsys):
    lines = [record("de-en", v, s, 30.0 + s) for v in ("bahdanau", "qkv") for s in (1, 2)]
    lines += [
        {**record("fr-en", v, s, 30.0), "p_ar": p, "ar_seeds": seeds}
        for v, p in (("bahdanau", None), ("qkv", 0.5))
        for s, seeds in ((1, [1, 2]), (2, [1, 2]))
    ]
    lines.append({**record("fr-en", "qkv", 3, 30.0), "p_ar": 0.04, "ar_seeds": [3]})  # a second comparison
    path = tmp_path / "pairs.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in lines))
    pairs_table.main([str(path)])
    page = capsys.readouterr().out
    assert "| qkv | 0.0400 (0.0800) seeds 3; 0.5000 (0.5000) seeds 1, 2 |" in page
    assert "Seeds the tests cover" not in page  # fr-en's tests cover two seed sets, said in each cell


@pytest.mark.parametrize("p", [float("nan"), 1.5])
def test_a_combined_p_value_that_is_no_probability_is_refused_in_one_line(tmp_path, p):
    lines = [{**record("de-en", v, s, 30.0), "p_ar": p, "ar_seeds": [1]} for v in ("bahdanau", "qkv") for s in (1,)]
    path = tmp_path / "pairs.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in lines))
    with pytest.raises(SystemExit, match=r"de-en bahdanau: p_ar .* is not a probability"):
        pairs_table.main([str(path)])


def test_one_seed_or_no_spread_gives_no_power_line_and_no_combined_test_no_table(tmp_path, capsys):
    for seeds in ((1,), (1, 2)):  # one seed; two seeds whose differences are equal (spread 0)
        lines = [
            record(pair, v, s, b)
            for pair in ("de-en", "fr-en")
            for v, b in (("bahdanau", 30.0), ("qkv", 31.0))
            for s in seeds
        ]
        path = tmp_path / "pairs.jsonl"
        path.write_text("".join(json.dumps(r) + "\n" for r in lines))
        pairs_table.main([str(path)])
        page = capsys.readouterr().out
        assert "Power:" not in page and "p AR" not in page, seeds


def test_the_pooled_spread_weights_each_sample_by_its_degrees_of_freedom():
    assert pooled_spread([[1.0, 3.0], [5.0, 7.0]]) == pytest.approx(math.sqrt(2.0))  # equal sizes: mean variance
    # variances 2 (1 df) and 3 (3 df): (1 x 2 + 3 x 3) / 4; a one-value sample adds nothing
    assert pooled_spread([[1.0, 3.0], [0.0, 0.0, 3.0, 3.0], [9.0]]) == pytest.approx(math.sqrt(11 / 4))
    assert pooled_spread([[2.0], [4.0, 4.0]]) is None  # no spread


def test_one_group_gets_its_table_and_no_ranking_across_groups(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """One comparison (the every-variant table of results.md): a table of one column of ranks and a
    Kendall's tau with nothing to pair with said nothing, so they are left out."""
    lines = [record("de-en", v, s, b + 0.1 * s) for v, b in (("bahdanau", 30.0), ("qkv", 31.0)) for s in (1, 2)]
    path = tmp_path / "one.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in lines))
    pairs_table.main([str(path)])
    page = capsys.readouterr().out
    assert "| qkv | 1,000 | 2.50 | 31.15 ± 0.64 | +1.00 ± 0.00 | 0.000 | 1 |" in page
    assert "mean rank" not in page and "Kendall" not in page and "pooled" not in page
    assert "\n\n\n" not in page


def test_pairs_keeps_the_named_pairs_of_several_files_and_refuses_one_they_lack(tmp_path, capsys):
    scores = {"bahdanau": 30.0, "qkv": 31.0, "none": 20.0}
    older = tmp_path / "seeds_4_5.jsonl"
    older.write_text(
        "".join(
            json.dumps(record(p, v, s, b + s)) + "\n"
            for p in ("de-en", "fr-en")
            for v, b in scores.items()
            for s in (4, 5)
        )
    )
    newer = tmp_path / "seeds_1_3.jsonl"
    newer.write_text(
        "".join(json.dumps(record("de-en", v, s, b + s)) + "\n" for v, b in scores.items() for s in (1, 2, 3))
    )
    pairs_table.main([str(older), str(newer), "--pairs", "de-en"])
    out = capsys.readouterr().out
    assert "**de-en**" in out and "seeds 1, 2, 3, 4, 5" in out and "fr-en" not in out
    with pytest.raises(SystemExit) as stop:
        pairs_table.main([str(older), "--pairs", "de-en,cs-en"])
    assert str(stop.value) == "pairs_table.py: error: --pairs names pairs with no runs in these files: cs-en"


def write(path: Path, lines: list[dict]) -> str:
    path.write_text("".join(json.dumps(r) + "\n" for r in lines))
    return str(path)


def on(device: str, commit: str, lines: list[dict]) -> list[dict]:
    return [{**r, "device_name": device, "commit": commit} for r in lines]


def test_a_seed_twice_is_refused_naming_both_runs(tmp_path):
    lines = on("GPU", "old", [record("de-en", v, s, 30.0 + s) for v in ("bahdanau", "qkv") for s in (1, 2)])
    again = on("CPU", "new", [record("de-en", "qkv", 1, 20.0)])
    with pytest.raises(SystemExit) as stop:
        pairs_table.main([write(tmp_path / "a.jsonl", lines), write(tmp_path / "b.jsonl", again)])
    assert str(stop.value) == (
        "pairs_table.py: error: de-en qkv seed 1 is in the records twice (GPU, commit old; CPU, commit new): "
        "a table holds one run per group, arm and seed"
    )


def test_against_sets_the_same_seeds_run_elsewhere_beside_as_a_block_and_changes_no_other_table(tmp_path, capsys):
    # qkv is +1 over bahdanau on the GPU; on the CPU +2, +3, +4 on seeds 1-3 (the same seeds again)
    gpu = on("GPU", "old", [record("de-en", "bahdanau", s, 30.0 + s) for s in (1, 2, 3)])
    gpu += on("GPU", "old", [record("de-en", "qkv", s, 31.0 + s) for s in (1, 2, 3)])
    cpu = on("CPU", "new", [record("de-en", "bahdanau", s, 30.0) for s in (1, 2, 3)])
    cpu += on("CPU", "new", [record("de-en", "qkv", s, 31.0 + s) for s in (1, 2, 3)])
    cpu_file, gpu_file = write(tmp_path / "cpu.jsonl", cpu), write(tmp_path / "gpu.jsonl", gpu)
    pairs_table.main([cpu_file])
    alone = capsys.readouterr().out
    pairs_table.main([cpu_file, "--against", gpu_file])
    beside = capsys.readouterr().out
    assert beside.startswith(alone.rstrip("\n").split("\n\nPower")[0])  # the CPU's own tables, unchanged
    assert (
        "each arm's difference to the baseline on CPU at new (seeds 1, 2, 3) minus on GPU at old (seeds 1, 2, 3)"
        in beside
    )
    row = next(line for line in beside.splitlines() if line.startswith("| qkv | +2.00 |"))
    # CPU differences 2, 3, 4 against GPU 1, 1, 1: +2.00; Welch's t over the seeds with no spread on one side
    assert row.split("|")[-2].strip() == f"{welch_p([1.0, 1.0, 1.0], [2.0, 3.0, 4.0]):.3f}"


def test_against_records_of_other_pairs_are_refused(tmp_path):
    cpu = [record("de-en", v, s, 30.0 + s) for v in ("bahdanau", "qkv") for s in (1, 2)]
    gpu = [record("fr-en", v, s, 30.0 + s) for v in ("bahdanau", "qkv") for s in (1, 2)]
    with pytest.raises(SystemExit) as stop:
        pairs_table.main([write(tmp_path / "c.jsonl", cpu), "--against", write(tmp_path / "g.jsonl", gpu)])
    assert "share no group and arm with them" in str(stop.value)


def test_device_keeps_the_runs_of_one_machine_where_two_files_repeat_seeds(tmp_path, capsys):
    """A comparison rerun on one machine beside its first, mixed sitting: the same seeds are in both
    files, and --device tabulates the one machine's runs alone instead of refusing the repeats."""
    scores = {"bahdanau": 30.0, "qkv": 31.0, "none": 20.0}
    first = on("Intel Xeon", "abc", [record("de-en", v, s, b) for v, b in scores.items() for s in (1, 2, 3)])
    first += on("AMD EPYC", "abc", [record("de-en", v, s, b + s) for v, b in scores.items() for s in (4, 5)])
    rerun = on("AMD EPYC", "abc", [record("de-en", v, s, b + s) for v, b in scores.items() for s in (1, 2, 3)])
    files = [write(tmp_path / "first.jsonl", first), write(tmp_path / "rerun.jsonl", rerun)]
    with pytest.raises(SystemExit, match="seed 1 is in the records twice"):
        pairs_table.main(files)
    pairs_table.main([*files, "--device", "AMD EPYC"])
    out = capsys.readouterr().out
    assert "seeds 1, 2, 3, 4, 5" in out
    assert "| bahdanau | 1,000 | 2.50 | 33.00 ± 1.96 | baseline |  | 2 |" in out  # 31..35, not the Xeon's 30s
    with pytest.raises(SystemExit) as stop:
        pairs_table.main([*files, "--device", "NVIDIA H100"])
    assert str(stop.value) == (
        "pairs_table.py: error: --device 'NVIDIA H100' trained no run of these files (they name: AMD EPYC, Intel Xeon)"
    )


def test_against_device_sets_one_machines_first_sitting_beside_the_rerun(tmp_path, capsys):
    """The block of a rerun whose first sitting mixed two machines: the rerun's machine (every seed)
    minus the other machine's seeds alone, each arm's difference shifted by a known amount."""
    scores = {"bahdanau": 30.0, "qkv": 31.0, "none": 20.0}
    first = on("Intel Xeon", "abc", [record("de-en", v, s, b) for v, b in scores.items() for s in (1, 2, 3)])
    first += on("AMD EPYC", "abc", [record("de-en", v, s, b + s) for v, b in scores.items() for s in (4, 5)])
    shifted = {"bahdanau": 30.0, "qkv": 31.5, "none": 19.0}  # qkv +0.5 and none -1.0 on the rerun's machine
    rerun = on("AMD EPYC", "abc", [record("de-en", v, s, b + s) for v, b in shifted.items() for s in (1, 2, 3)])
    files = [write(tmp_path / "first.jsonl", first), write(tmp_path / "rerun.jsonl", rerun)]
    pairs_table.main([*files, "--device", "AMD EPYC", "--against", files[0], "--against-device", "Intel Xeon"])
    out = capsys.readouterr().out
    assert "on AMD EPYC at abc (seeds 1, 2, 3, 4, 5) minus on Intel Xeon at abc (seeds 1, 2, 3)" in out
    assert "| qkv | +0.30 |" in out and "| none | -0.60 |" in out  # (3 x 0.5 + 2 x 0) / 5, (3 x -1 + 2 x 0) / 5
    with pytest.raises(SystemExit) as stop:
        pairs_table.main([files[1], "--against-device", "Intel Xeon"])
    assert str(stop.value) == "pairs_table.py: error: --against-device needs --against FILE"
