"""scripts/fit_gap.py: training-sample and validation cross-entropy of a checkpoint, and their gap."""

import importlib
import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch

from nmt.data.dataset import EncodedSplit
from nmt.data.pipeline import load_corpus
from nmt.decode.inference import load_checkpoint
from nmt.training.validate import token_loss

REPO = Path(__file__).resolve().parents[2]
fit_gap = importlib.import_module("fit_gap")  # scripts/ is on sys.path (tests/conftest.py)


def test_a_sample_is_distinct_pairs_of_the_split_in_corpus_order_and_fixed_by_its_seed():
    split = EncodedSplit.from_sequences([[i, i + 1] for i in range(50)], [[100 + i] for i in range(50)])
    drawn = fit_gap.sample(split, 10, seed=3)
    firsts = [int(drawn.src(i)[0]) for i in range(len(drawn))]
    assert len(drawn) == 10 and len(set(firsts)) == 10 and firsts == sorted(firsts)
    assert all(int(drawn.tgt(i)[0]) == 100 + first for i, first in enumerate(firsts))  # pairs stay pairs
    again = fit_gap.sample(split, 10, seed=3)
    assert [int(again.src(i)[0]) for i in range(10)] == firsts
    assert [int(fit_gap.sample(split, 10, seed=4).src(i)[0]) for i in range(10)] != firsts
    assert fit_gap.sample(split, 50, seed=3) is split and fit_gap.sample(split, 80, seed=3) is split


def test_the_losses_are_the_validation_loss_of_the_trainer_on_each_split(trained_toy):
    checkpoint = trained_toy / "checkpoints" / "best.pt"
    device = torch.device("cpu")
    record = fit_gap.fit_gap(checkpoint, 10**6, seed=0, device=device)  # more pairs than the corpus: all of train

    loaded = load_checkpoint(checkpoint, device)
    corpus = load_corpus(loaded.config.data, splits=("train", "valid"))
    assert record["train_pairs"] == len(corpus.splits["train"])
    with torch.no_grad():
        for name in ("train", "valid"):
            total, tokens = token_loss(loaded.model, corpus.splits[name], loaded.config, device, None)
            assert record[f"{name}_loss"] == pytest.approx(total / tokens, abs=1e-4)
            assert record[f"{name}_ppl"] == pytest.approx(np.exp(total / tokens), abs=0.005)  # 2 decimals
    assert record["gap"] == pytest.approx(record["valid_loss"] - record["train_loss"], abs=1e-4)
    assert record["step"] == loaded.step


def test_the_command_prints_one_line_per_checkpoint_and_refuses_an_empty_sample(trained_toy):
    checkpoints = [str(trained_toy / "checkpoints" / "best.pt"), str(trained_toy / "checkpoints" / "last.pt")]
    script = str(REPO / "scripts" / "fit_gap.py")
    done = subprocess.run(
        [sys.executable, script, *checkpoints, "--train-pairs", "200", "--threads", "1"],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    lines = [json.loads(line) for line in done.stdout.splitlines()]
    assert [line["checkpoint"] for line in lines] == checkpoints
    assert all(line["train_pairs"] == 200 and line["train_loss"] > 0 and line["valid_loss"] > 0 for line in lines)

    refused = subprocess.run(
        [sys.executable, script, checkpoints[0], "--train-pairs", "0"], cwd=REPO, capture_output=True, text=True
    )
    assert refused.returncode == 2 and refused.stderr.strip().splitlines() == [
        "fit_gap.py: error: argument --train-pairs: must be at least 1, got 0"
    ]


BAD_ARGUMENTS = [
    (["--train-pairs", "10", "--seed", "-1"], "argument --seed: must be in [0, 2^32), got -1"),
    (["--threads", "-1"], "--threads=-1: give 0 (one per free core) or a count from 1 to "),
    (["--threads", "1000000"], "--threads=1000000: give 0 (one per free core) or a count from 1 to "),
    (["--threads", "two"], "argument --threads: invalid int value: 'two'"),
]


@pytest.mark.parametrize("args, words", BAD_ARGUMENTS, ids=lambda a: " ".join(a) if isinstance(a, list) else "")
def test_a_bad_argument_is_one_line_and_status_2_before_any_checkpoint_loads(trained_toy, args, words):
    """Run as a user runs it (a thread count reaches torch in the process that reads it)."""
    checkpoint = str(trained_toy / "checkpoints" / "best.pt")
    done = subprocess.run(
        [sys.executable, str(REPO / "scripts" / "fit_gap.py"), checkpoint, *args],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=300,
    )
    err = done.stderr.strip().splitlines()
    assert done.returncode == 2 and done.stdout == "", done.stdout + done.stderr
    assert len(err) == 1 and err[0].startswith("fit_gap.py: error: ") and words in err[0], err


def test_every_checkpoint_is_checked_before_the_first_is_measured(trained_toy, tmp_path, capsys):
    missing = tmp_path / "none.pt"
    with pytest.raises(SystemExit) as exit_info:
        fit_gap.main([str(trained_toy / "checkpoints" / "best.pt"), str(missing), "--threads", "1"])
    out, err = capsys.readouterr()
    assert exit_info.value.code == 2 and out == "", out  # no line for the first checkpoint either
    assert err.strip().splitlines() == [f"fit_gap.py: error: {missing}: checkpoint not found"]
