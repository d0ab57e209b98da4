"""nmt select, nmt.select and train.select: the model is chosen on validation, the test split is read
once (and every reading is counted), and the run folder then stands for the chosen checkpoint."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import nmt.api
from conftest import run_cli, toy_overrides
from nmt import config as config_mod
from nmt.run.paths import RunPaths, written_by_trainer
from nmt.training.entry import run_training
from nmt.util.errors import ConfigError, UserError


def _train(root: Path, files: dict[str, list[str]], **extra: object) -> Path:
    """Six updates, three validations, two step checkpoints kept: enough for --last 2."""
    overrides = toy_overrides(root, files, train__max_steps=6, train__valid_every=2, train__keep_last=2, **extra)
    run_training(None, overrides, progress=False)
    return root / "runs" / "toy"


def _files(run: Path) -> dict[Path, int]:
    """Every file of the run with its modification time in ns: what a refusal must leave as it was."""
    return {p.relative_to(run): p.stat().st_mtime_ns for p in sorted(run.rglob("*")) if p.is_file()}


def select(run: Path, capsys: pytest.CaptureFixture, *args: str) -> dict:
    code, out, err = run_cli(["select", str(run), "--last", "2", "--beam", "2", "--json", *args], capsys)
    assert code == 0, err
    return json.loads(out)


def test_the_test_split_is_read_once_with_the_model_valid_chose(tmp_path, toy_files, capsys):
    run = _train(tmp_path, toy_files[1])

    first = select(run, capsys)  # configurations compared on validation first: no test read
    assert first["test"] is None and [c["name"] for c in first["candidates"]] == ["best", "avg_last2"]
    assert all(c["length_ratio"] > 0 for c in first["candidates"])  # what the brevity penalty read
    valid = {c["name"]: c["bleu"] for c in first["candidates"]}
    assert valid[first["chosen"]] == max(valid.values())
    assert first["chosen"] == "best" or valid["avg_last2"] > valid["best"]  # best.pt on a tie
    assert not list(run.glob("eval*"))  # scored in memory: nothing but the run's own files
    assert written_by_trainer(run)[1] == []  # so nmt train --overwrite may still replace the run
    assert RunPaths(run).chosen == Path(first["checkpoint"])  # nmt.load and nmt.evaluate of the run follow it
    assert nmt.api.Run.open(run).chosen == Path(first["checkpoint"])

    # then test, read with the model validation chose again; a second reading is counted, never hidden
    again = select(run, capsys, "--test", "test")
    assert again["candidates"] == first["candidates"] and again["chosen"] == first["chosen"]
    assert again["test"]["split"] == "test" and again["test"]["read"] == 1
    assert select(run, capsys, "--test", "test")["test"]["read"] == 2
    record = json.loads(RunPaths(run).selection.read_text(encoding="utf-8"))
    assert [(t["split"], t["read"]) for t in record["tests"]] == [("test", 1), ("test", 2)]
    assert record["tests"][0]["bleu"] == record["tests"][1]["bleu"] and len(record["earlier"]) == 2

    # the library returns the same choice as plain data, and the command's lines say it
    result = nmt.api.select(run, last=2, beam=2)
    assert result.to_dict()["candidates"] == first["candidates"] and result.test is None
    code, out, _ = run_cli(["select", str(run), "--last", "2", "--beam", "2"], capsys)
    assert code == 0 and f"chose {first['chosen']}: " in out and "wrote " in out


@pytest.fixture(scope="module")
def validated_run(tmp_path_factory, toy_files) -> Path:
    """A trained run that no selection has written into."""
    return _train(tmp_path_factory.mktemp("select"), toy_files[1])


BAD_ARGUMENTS = [
    (["--last", "1"], "Invalid value for '--last': "),  # the average of one checkpoint is that checkpoint
    (["--last", "x"], "Invalid value for '--last': "),
    (["--last", "3"], "the run kept 2 step checkpoint(s) for --last, 3 wanted"),
    (["--last", "2", "--beam", "0"], "Invalid value for '--beam': "),
    (["--last", "2", "--beam", "100000"], "--beam 100000: the beam size must be between 1 and"),
    (["--last", "2", "--valid", "nosuch"], "--valid nosuch: the corpus prepared in "),
    (["--last", "2", "--test", "nosuch"], "has no split 'nosuch'; choose from test, train, valid"),
    (["--last", "2", "--valid", "test", "--test", "test"], "--test test is the split the choice is made on"),
]


@pytest.mark.parametrize("args, words", BAD_ARGUMENTS, ids=lambda a: " ".join(a) if isinstance(a, list) else "")
def test_a_bad_argument_is_one_line_and_status_2_before_any_file_is_written(validated_run, capsys, args, words):
    before = _files(validated_run)
    code, out, err = run_cli(["select", str(validated_run), *args], capsys)
    lines = err.strip().splitlines()
    assert code == 2 and out == "", err
    assert len(lines) == 1 and lines[0].startswith("nmt: error: ") and words in lines[0], lines
    assert _files(validated_run) == before  # no average, no record


@pytest.mark.parametrize(
    "kwargs, words",
    [
        ({"last": 1}, "last=1: give a whole number of at least 2"),
        ({"last": True}, "last=True: give a whole number"),
        ({"beam": 2.5}, "beam=2.5: give a whole number of at least 1"),
        ({"valid": 3}, "valid=3: give a string"),
        ({"test": "nosuch"}, "test nosuch: the corpus prepared in "),
    ],
)
def test_the_library_names_its_parameters_and_writes_nothing_on_a_refusal(validated_run, kwargs, words):
    before = _files(validated_run)
    with pytest.raises(UserError) as refused:
        nmt.api.select(validated_run, **{"last": 2, "beam": 2, **kwargs})
    assert words in str(refused.value) and "\n" not in str(refused.value)
    assert _files(validated_run) == before


def test_a_folder_that_is_not_a_trained_run_is_one_line_and_status_2(tmp_path, capsys):
    code, _, err = run_cli(["select", str(tmp_path / "none")], capsys)
    assert code == 2 and err.strip().splitlines() == [
        f"nmt: error: {tmp_path / 'none' / 'checkpoints' / 'best.pt'} not found; train the run first"
    ]
    assert not (tmp_path / "none").exists()


def test_a_users_file_named_selection_json_is_refused_and_kept(validated_run, capsys):
    record = RunPaths(validated_run).selection
    record.write_text("my notes\n", encoding="utf-8")
    try:
        before = _files(validated_run)
        code, _, err = run_cli(["select", str(validated_run), "--last", "2"], capsys)
        assert code == 2 and "not JSON, so it is not a record nmt select wrote" in err, err
        assert _files(validated_run) == before and record.read_text(encoding="utf-8") == "my notes\n"
    finally:
        record.unlink()


def test_train_select_ends_training_with_the_chosen_model_and_a_resume_retires_it(tmp_path, toy_files):
    _, files = toy_files
    run = _train(tmp_path, files, train__select="average_last_2")
    record = json.loads(RunPaths(run).selection.read_text(encoding="utf-8"))
    assert record["chosen"]["name"] == "avg_last2" and record["chosen"]["rule"] == "average"
    assert RunPaths(run).chosen == RunPaths(run).average(2)

    overrides = toy_overrides(tmp_path, files, train__max_steps=8, train__valid_every=2, train__keep_last=2)
    outcome = run_training(None, [*overrides, "train.select=best"], resume=run, progress=False)
    assert "stands for" not in outcome.summary
    assert RunPaths(run).chosen == RunPaths(run).best  # the average was of checkpoints training has moved past
    assert json.loads(RunPaths(run).selection.read_text(encoding="utf-8"))["earlier"][0]["name"] == "avg_last2"

    outcome = run_training(None, [*overrides, "train.max_steps=10", "train.select=on_valid_last_2"], resume=run)
    record = json.loads(RunPaths(run).selection.read_text(encoding="utf-8"))
    assert record["chosen"]["rule"] == "on_valid" and [c["name"] for c in record["chosen"]["candidates"]] == [
        "best",
        "avg_last2",
    ]
    assert f"the run stands for {record['chosen']['checkpoint']}" in outcome.summary
    assert record["tests"] == []  # training never reads a test split


def test_train_select_needs_as_many_kept_checkpoints_as_it_averages():
    with pytest.raises(ConfigError, match=r"train.select=on_valid_last_5 averages the last 5 .* train.keep_last"):
        config_mod.load(None, ["train.select=on_valid_last_5", "train.keep_last=2"])
    with pytest.raises(ConfigError, match=r"train\.select=last_5: give best, average_last_N or on_valid_last_N"):
        config_mod.load(None, ["train.select=last_5"])
    assert config_mod.load(None, ["train.select=average_last_2", "train.keep_last=2"]).train.select == "average_last_2"
