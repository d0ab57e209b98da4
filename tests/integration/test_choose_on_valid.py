"""scripts/choose_on_valid.py: the model is chosen on validation, and test is read once or not at all."""

import json
import subprocess
import sys
from pathlib import Path

from conftest import toy_overrides
from nmt.train.entry import run_training

REPO = Path(__file__).resolve().parents[2]


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
