"""scripts/choose_on_valid.py: the model is chosen on validation, and test is read once or not at all."""

import importlib
import json
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import toy_overrides
from nmt.training.entry import run_training

REPO = Path(__file__).resolve().parents[2]
choose_on_valid = importlib.import_module("choose_on_valid")  # scripts/ is on sys.path (tests/conftest.py)


def choose(run: Path, *args: str) -> list[dict]:
    done = subprocess.run(
        [sys.executable, str(REPO / "scripts" / "choose_on_valid.py"), str(run), "--last", "2", "--beam", "2", *args],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    return [json.loads(line) for line in done.stdout.splitlines()]


def test_the_test_split_is_read_once_with_the_model_valid_chose(tmp_path, toy_files):
    _, files = toy_files
    overrides = toy_overrides(tmp_path, files, train__max_steps=6, train__valid_every=2, train__keep_last=2)
    run_training(None, overrides, progress=False)
    run = tmp_path / "runs" / "toy"

    lines = choose(run, "--test", "none")  # configurations compared on validation first
    assert [e["event"] for e in lines] == ["valid", "valid", "chosen"]
    assert not list(run.glob("eval-*-test*"))  # nothing read on test

    assert all(e["length_ratio"] > 0 for e in lines if e["event"] == "valid")  # what the brevity penalty read
    valid = {e["model"]: e["bleu"] for e in lines if e["event"] == "valid"}
    chosen = lines[-1]["model"]
    assert valid[chosen] == max(valid.values())
    assert chosen == "best" or valid["avg_last2"] > valid["best"]  # best.pt on a tie

    # then the same command reads the test split, once, with the model validation chose again
    again = choose(run, "--test", "test")
    assert [e["event"] for e in again] == ["valid", "valid", "chosen", "test"]
    assert [e["bleu"] for e in again[:2]] == [e["bleu"] for e in lines[:2]]  # the same choice on the same models
    assert again[-1]["model"] == chosen and again[-1]["split"] == "test"
    assert len(list(run.glob("eval-*-test*"))) == 1


@pytest.fixture(scope="module")
def validated_run(tmp_path_factory, toy_files) -> Path:
    """A run with three validations, two step checkpoints kept: enough for --last 2."""
    _, files = toy_files
    root = tmp_path_factory.mktemp("choose")
    overrides = toy_overrides(root, files, train__max_steps=6, train__valid_every=2, train__keep_last=2)
    run_training(None, overrides, progress=False)
    return root / "runs" / "toy"


BAD_ARGUMENTS = [
    (["--last", "0"], "argument --last: "),
    (["--last", "1"], "argument --last: "),  # the average of one checkpoint is that checkpoint
    (["--last", "x"], "argument --last: "),
    (["--last", "3"], "the run kept 2 step checkpoint(s) for --last, 3 wanted"),
    (["--last", "2", "--beam", "0"], "argument --beam: "),
    (["--last", "2", "--beam", "100000"], "--beam 100000: the beam size must be between 1 and"),
    (["--last", "2", "--valid", "nosuch"], "--valid nosuch: the corpus prepared in "),
    (["--last", "2", "--test", "nosuch"], "has no split 'nosuch'; choose from test, train, valid"),
    (["--last", "2", "--valid", "test", "--test", "test"], "--test test is the split the choice is made on"),
]


@pytest.mark.parametrize("args, words", BAD_ARGUMENTS, ids=lambda a: " ".join(a) if isinstance(a, list) else "")
def test_a_bad_argument_is_one_line_and_status_2_before_any_file_is_written(validated_run, capsys, args, words):
    before = sorted(p.relative_to(validated_run) for p in validated_run.rglob("*"))
    with pytest.raises(SystemExit) as exit_info:
        choose_on_valid.main([str(validated_run), *args])
    err = capsys.readouterr().err.strip().splitlines()
    assert exit_info.value.code == 2, err
    assert len(err) == 1 and err[0].startswith("choose_on_valid.py: error: ") and words in err[0], err
    assert sorted(p.relative_to(validated_run) for p in validated_run.rglob("*")) == before  # no average, no eval


def test_a_folder_that_is_not_a_trained_run_is_one_line_and_status_2(tmp_path, capsys):
    with pytest.raises(SystemExit) as exit_info:
        choose_on_valid.main([str(tmp_path / "none")])
    err = capsys.readouterr().err.strip().splitlines()
    assert exit_info.value.code == 2 and len(err) == 1, err
    assert (
        err[0]
        == f"choose_on_valid.py: error: {tmp_path / 'none' / 'checkpoints' / 'best.pt'} not found; train the run first"
    )
