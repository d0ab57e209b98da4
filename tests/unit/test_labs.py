"""The lab registry, where labs write and their sizes: every listed lab loads, runs of each size live
apart, and the class size fits a class hour in what it plans."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest

from conftest import REPO, run_cli
from nmt.config.arms import parse_sweep
from nmt.labs import LAB_MODULES
from nmt.labs.base import SIZES, LabContext, check_outputs_are_ours, load_lab, planned_lab_runs
from nmt.labs.length import arm_name, ratio_table, table
from nmt.labs.variant_runs import MIN_BUCKET, drawn_buckets
from nmt.score.intervals import SeedMeanInterval
from nmt.util.errors import UserError
from nmt.util.owned import MANIFEST, claim


def test_every_listed_lab_loads_under_its_name():
    for name in LAB_MODULES:
        lab = load_lab(name)
        assert lab.name == name and lab.title and lab.cpu_minutes > 0
        assert 0 < lab.class_minutes <= 10  # measured (scripts/time_labs.py): a class hour holds it


def test_runs_and_tables_of_each_size_never_share_a_folder():
    for name in LAB_MODULES:
        lab = load_lab(name)
        assert len({lab.default_runs_dir(size) for size in SIZES}) == len(SIZES)
        assert len({lab.default_out(size) for size in SIZES}) == len(SIZES)
    for size in SIZES:  # shared runs
        assert load_lab("kernel").default_runs_dir(size) == load_lab("matrices").default_runs_dir(size)
        assert load_lab("length").default_runs_dir(size) != load_lab("matrices").default_runs_dir(size)


def _planned_updates(name: str, ctx: LabContext) -> int:
    """Updates the lab's plans would train, each run folder once."""
    steps = {}
    for plan in load_lab(name).plans(ctx):
        for arm in plan.arms:
            for seed in plan.seeds:
                steps[plan.runs_dir / f"{arm.run_stem}_s{seed}"] = plan.steps or 0
    return sum(steps.values())


@pytest.mark.parametrize("name", list(LAB_MODULES))
def test_the_class_size_trains_the_class_config_on_real_data_and_less_than_full_size(name, tmp_path, monkeypatch):
    monkeypatch.chdir(REPO)
    sized = {size: LabContext(out=tmp_path, runs_dir=tmp_path / "runs", size=size) for size in SIZES}
    config, overrides = sized["class"].base()
    assert config == Path("configs/multi30k_de_en_class.yaml") and not any("synthetic" in o for o in overrides)
    for plan in load_lab(name).plans(sized["class"]):
        assert plan.split == "test2016" and plan.seeds == [1]
    updates = {size: _planned_updates(name, ctx) for size, ctx in sized.items()}
    assert updates["tiny"] < updates["class"] < updates["full"], updates
    assert updates["class"] <= 1000, updates  # about 0.5 s an update on 2 cores: within the class hour


@pytest.mark.parametrize("size", SIZES)
def test_every_lab_scores_on_the_one_test_split_of_its_size(size, tmp_path, monkeypatch):
    """One rule names the test split (LabContext.score_split), and every lab's every plan follows it, but
    the full-size length lab, which trains on the Europarl sample and reads its test split."""
    monkeypatch.chdir(REPO)
    ctx = LabContext(out=tmp_path, runs_dir=tmp_path / "runs", size=size)
    assert ctx.score_split == ("test" if size == "tiny" else "test2016")
    for name in LAB_MODULES:
        expected = "test" if (name, size) == ("length", "full") else ctx.score_split
        assert {plan.split for plan in load_lab(name).plans(ctx)} == {expected}, name


def test_an_unknown_size_is_one_line(tmp_path, capsys):
    with pytest.raises(UserError, match="unknown lab size 'huge'; choose from tiny, class, full"):
        LabContext(out=tmp_path, runs_dir=tmp_path, size="huge")  # type: ignore[arg-type]
    code, _out, err = run_cli(["lab", "beam", "--tiny", "--size", "class", "--dry-run"], capsys)
    assert code == 2 and "--tiny is --size tiny" in err and len(err.strip().splitlines()) == 1, err


def test_tiny_with_size_full_given_is_refused_as_any_other_size(tmp_path, capsys):
    """--size full is the default, so --tiny --size full ran tiny without a word; given, it contradicts --tiny."""
    where = ["--out", str(tmp_path / "out"), "--runs-dir", str(tmp_path / "runs"), "--dry-run"]
    code, out, err = run_cli(["lab", "beam", "--tiny", "--size", "full", *where], capsys)
    assert code == 2 and out == "" and len(err.strip().splitlines()) == 1, err
    assert "nmt: error: --tiny is --size tiny: give one of --tiny and --size full" in err, err
    for agreeing in (["--tiny"], ["--tiny", "--size", "tiny"], ["--size", "tiny"]):
        code, _out, err = run_cli(["lab", "beam", *agreeing, *where], capsys)
        assert code == 0, err


def test_a_dry_run_lists_every_run_of_every_lab_and_trains_nothing(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(REPO)  # the labs' base configs are paths in configs/
    for name in LAB_MODULES:
        runs = tmp_path / name
        code, out, err = run_cli(["lab", name, "--tiny", "--runs-dir", str(runs), "--dry-run"], capsys)
        assert code == 0, err
        *lines, total = out.splitlines()
        assert lines and all(line.startswith("train    ") and f" seed 1: {runs}/" in line for line in lines), out
        assert total == f"{len(lines)} run{'s' if len(lines) > 1 else ''}: {len(lines)} train", out
    assert not tmp_path.exists() or list(tmp_path.iterdir()) == []


def test_a_lab_runs_from_any_folder_on_the_configs_the_package_ships(tmp_path, capsys, monkeypatch):
    from nmt.labs.base import PACKAGED_CONFIGS, lab_config

    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)  # no configs/ here
    assert lab_config("demo.yaml") == PACKAGED_CONFIGS / "demo.yaml"
    for name in ("demo.yaml", "multi30k_de_en_bahdanau.yaml"):  # the shipped copies are the repository's files
        assert (PACKAGED_CONFIGS / name).read_bytes() == (REPO / "configs" / name).read_bytes()
    for lab in ("heads", "length"):
        code, out, err = run_cli(["lab", lab, "--tiny", "--runs-dir", str(tmp_path / lab), "--dry-run"], capsys)
        assert code == 0 and out.splitlines()[-1].endswith("train"), err
    monkeypatch.chdir(REPO)
    assert lab_config("demo.yaml") == Path("configs/demo.yaml")  # in a checkout: the path the pages name


def test_a_dry_run_lists_a_shared_run_once_and_says_what_would_stop_the_lab(tmp_path, monkeypatch):
    monkeypatch.chdir(REPO)
    beam = load_lab("beam")

    def two_comparisons(ctx: LabContext) -> list:  # one run, scored at two beams by the second: other labels
        (plan,) = beam.plans(ctx)
        return [plan, dataclasses.replace(plan, sweeps=[parse_sweep("decode.beam=1,5")])]

    twice = dataclasses.replace(beam, plans=two_comparisons)
    monkeypatch.setattr("nmt.labs.base.load_lab", lambda name: twice)
    ctx = LabContext(out=tmp_path / "out", runs_dir=tmp_path / "runs", size="tiny")
    first, total = planned_lab_runs("beam", ctx)
    assert first.startswith("train    bahdanau seed 1: ") and total == "1 run: 1 train"

    run_dir = Path(first.rsplit(": ", 1)[1])
    run_dir.mkdir(parents=True)
    (run_dir / "notes.txt").write_text("not nmt's", encoding="utf-8")  # the lab must not delete it
    first, total, stop = planned_lab_runs("beam", ctx)
    assert first.startswith("refused  ") and total == "1 run: 1 refused"
    assert stop.startswith("the lab would stop before training: ") and str(run_dir) in stop


def test_a_lab_never_replaces_a_page_it_did_not_write(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(REPO)
    page = tmp_path / "beam.md"
    page.write_text("# Beam size and length penalty: my notes\n", encoding="utf-8")  # not the lab's first line
    argv = ["lab", "beam", "--tiny", "--out", str(tmp_path), "--runs-dir", str(tmp_path / "runs")]
    code, _out, err = run_cli(argv, capsys)
    assert code == 2 and "beam.md was not written by nmt" in err and len(err.strip().splitlines()) == 1, err
    assert page.read_text(encoding="utf-8").endswith("my notes\n") and not (tmp_path / "runs").exists()  # refused first

    page.unlink()
    (tmp_path / "beam.json").write_text('{"lab": "heads"}', encoding="utf-8")
    code, _out, err = run_cli(argv, capsys)
    assert code == 2 and "beam.json was not written by nmt" in err, err


@pytest.mark.parametrize("name", ["kernel", "beam"])
def test_a_lab_refuses_the_hand_written_page_that_shares_its_title(tmp_path, name):
    # docs/labs/kernel.md and beam.md begin with the lab's own "# <title>" line: only the manifest (or the lab's
    # numbers beside it) says that a lab wrote a page
    lab = load_lab(name)
    (tmp_path / f"{name}.md").write_bytes((REPO / "docs" / "labs" / f"{name}.md").read_bytes())
    assert (tmp_path / f"{name}.md").read_text(encoding="utf-8").startswith(f"# {lab.title}\n")
    with pytest.raises(UserError, match=f"{name}.md was not written by nmt and would be replaced"):
        check_outputs_are_ours(lab, tmp_path)
    (tmp_path / f"{name}.md").unlink()
    (tmp_path / f"{name}.png").write_bytes(b"my figure")  # a figure alone is the user's too
    with pytest.raises(UserError, match=f"{name}.png was not written by nmt"):
        check_outputs_are_ours(lab, tmp_path)


@pytest.mark.parametrize("size", ["full", "class"])
@pytest.mark.parametrize("name", LAB_MODULES)
def test_the_committed_lab_folders_can_be_made_again_by_their_lab(tmp_path, name, size):
    committed = REPO / "docs" / "labs" / name / ("" if size == "full" else size)
    assert json.loads((committed / f"{name}.json").read_text(encoding="utf-8")).get("size", "full") == size
    for path in committed.iterdir():
        if path.is_file():  # the class size's folder (class/) is a lab folder of its own
            (tmp_path / path.name).write_bytes(path.read_bytes())
    check_outputs_are_ours(load_lab(name), tmp_path)  # listed in the folder's manifest
    (tmp_path / MANIFEST).unlink()
    check_outputs_are_ours(load_lab(name), tmp_path)  # or the lab's numbers beside them (before manifests)
    claim(tmp_path, ["other.md"])  # a manifest that does not list the lab's files: refused
    with pytest.raises(UserError, match="was not written by nmt"):
        check_outputs_are_ours(load_lab(name), tmp_path)


def test_bad_lab_commands_are_one_line(capsys):
    with pytest.raises(UserError, match="unknown lab 'nope'"):
        load_lab("nope")
    for argv, message in ((["lab"], "name a lab"), (["lab", "beam", "--list"], "without a name")):
        code, out, err = run_cli(argv, capsys)
        assert code == 2 and out == "" and message in err and len(err.strip().splitlines()) == 1, err


def test_figures_draw_only_length_buckets_with_enough_sentences_to_score():
    # test2016's buckets: one sentence of 30-39 words would be a point of pure noise
    assert drawn_buckets({"10-19": 559, "30-39": 1, "0-9": 406, "20-29": 34}) == ["0-9", "10-19", "20-29"]
    assert drawn_buckets({"0-9": MIN_BUCKET, "10-19": MIN_BUCKET - 1}) == ["0-9"]
    # a split too small for the threshold (the tiny labs) still shows its largest bucket
    assert drawn_buckets({"0-9": 3, "10-19": 5}) == ["10-19"]


def test_length_table_names_each_run_by_variant_and_cap_and_tests_it_against_none_at_the_larger_cap():
    def row(label, p_values):
        return {
            "variant": label,
            "bleu": 28.0,
            "bleu_sd": 1.25,
            "per_seed_bleu": {1: 27.0, 2: 29.0},
            "p_values": p_values,
            "beam": 5,
        }

    def bucket(mean):
        return SeedMeanInterval(mean=mean, low=mean - 2.0, high=mean + 3.0, per_seed=(mean, mean), ratio=0.9)

    assert arm_name("bahdanau train.max_words=50") == "bahdanau, ≤50 words"
    assert arm_name("bahdanau data.max_len=50") == "bahdanau, ≤50 words" and arm_name("none") == "none"
    sizes = {"40+": 41, "0-9": 23}
    rows = [row("none train.max_words=50", None), row("bahdanau train.max_words=30", [0.001, 0.002])]
    scores = {
        "none train.max_words=50": {"0-9": bucket(30.0), "40+": bucket(5.0)},
        "bahdanau train.max_words=30": {"0-9": bucket(31.0)},
    }
    lines = table(rows, sizes, scores).splitlines()
    assert lines[0] == (
        "| model | BLEU (mean of 2 seeds) | p vs none, ≤50 words (per seed) | length 0-9 (23 pairs) | "
        "length 40+ (41 pairs) |"
    )
    assert lines[2:4] == [
        "| none, ≤50 words | 28.00 ± 1.25 | baseline | 30.00 [28.0, 33.0] | 5.00 [3.0, 8.0] |",
        "| bahdanau, ≤30 words | 28.00 ± 1.25 | 0.001, 0.002 | 31.00 [29.0, 34.0] | n/a |",
    ]
    assert "2 seeds per model" in lines[-1] and f"fewer than {MIN_BUCKET} pairs" in lines[-1]
    ratios = ratio_table(scores, sizes).splitlines()
    assert ratios[2:4] == ["| none, ≤50 words | 0.90 | 0.90 |", "| bahdanau, ≤30 words | 0.90 | n/a |"]
