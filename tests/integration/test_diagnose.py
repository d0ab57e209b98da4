"""nmt diagnose fit-gap / attention and nmt.fit_gap / nmt.attention_health: what they measure, and
their refusals (one line, status 2 from the command; a UserError naming the parameter from Python)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch

import nmt.api
from conftest import run_cli
from nmt.data.dataset import EncodedSplit
from nmt.data.pipeline import load_corpus
from nmt.decode.inference import load_checkpoint
from nmt.diagnosis.fit_gap import fit_gap, sample
from nmt.diagnosis.probes import PARTS
from nmt.training.validate import token_loss
from nmt.util.errors import UserError

REPO = Path(__file__).resolve().parents[2]


def test_a_sample_is_distinct_pairs_of_the_split_in_corpus_order_and_fixed_by_its_seed():
    split = EncodedSplit.from_sequences([[i, i + 1] for i in range(50)], [[100 + i] for i in range(50)])
    drawn = sample(split, 10, seed=3)
    firsts = [int(drawn.src(i)[0]) for i in range(len(drawn))]
    assert len(drawn) == 10 and len(set(firsts)) == 10 and firsts == sorted(firsts)
    assert all(int(drawn.tgt(i)[0]) == 100 + first for i, first in enumerate(firsts))  # pairs stay pairs
    again = sample(split, 10, seed=3)
    assert [int(again.src(i)[0]) for i in range(10)] == firsts
    assert [int(sample(split, 10, seed=4).src(i)[0]) for i in range(10)] != firsts
    assert sample(split, 50, seed=3) is split and sample(split, 80, seed=3) is split


def test_the_losses_are_the_validation_loss_of_the_trainer_on_each_split(trained_toy):
    checkpoint = trained_toy / "checkpoints" / "best.pt"
    device = torch.device("cpu")
    record = fit_gap(checkpoint, 10**6, seed=0, device=device)  # more pairs than the corpus: all of train

    loaded = load_checkpoint(checkpoint, device)
    corpus = load_corpus(loaded.config.data, splits=("train", "valid"))
    assert record.train_pairs == len(corpus.splits["train"])
    with torch.no_grad():
        for name in ("train", "valid"):
            total, tokens = token_loss(loaded.model, corpus.splits[name], loaded.config, device, None)
            assert getattr(record, f"{name}_loss") == pytest.approx(total / tokens, abs=1e-4)
            assert getattr(record, f"{name}_ppl") == pytest.approx(np.exp(total / tokens), abs=0.005)  # 2 decimals
    assert record.gap == pytest.approx(record.valid_loss - record.train_loss, abs=1e-4)
    assert record.step == loaded.step


def test_the_command_prints_one_line_per_checkpoint_as_the_library_returns_them(trained_toy, capsys):
    checkpoints = [str(trained_toy / "checkpoints" / "best.pt"), str(trained_toy / "checkpoints" / "last.pt")]
    code, out, err = run_cli(["diagnose", "fit-gap", *checkpoints, "--train-pairs", "200", "--threads", "1"], capsys)
    assert code == 0, err
    lines = [json.loads(line) for line in out.splitlines()]
    assert [line["checkpoint"] for line in lines] == checkpoints
    assert all(line["train_pairs"] == 200 and line["train_loss"] > 0 and line["valid_loss"] > 0 for line in lines)
    rows = nmt.api.fit_gap(checkpoints, train_pairs=200, threads=1)
    assert [row.to_dict() for row in rows] == lines


BAD_FIT_GAP = [
    (["--train-pairs", "0"], "Invalid value for '--train-pairs': "),
    (["--train-pairs", "10", "--seed", "-1"], "Invalid value for '--seed': "),
    (["--seed", str(2**32)], "Invalid value for '--seed': "),
    (["--threads", "-1"], "--threads=-1: give 0 (one per free core) or a count from 1 to "),
    (["--threads", "1000000"], "--threads=1000000: give 0 (one per free core) or a count from 1 to "),
    (["--threads", "two"], "Invalid value for '--threads': "),
]


@pytest.mark.parametrize("args, words", BAD_FIT_GAP, ids=lambda a: " ".join(a) if isinstance(a, list) else "")
def test_a_bad_fit_gap_argument_is_one_line_and_status_2_before_any_checkpoint_loads(trained_toy, args, words):
    """Run as a user runs it (a thread count reaches torch in the process that reads it)."""
    checkpoint = str(trained_toy / "checkpoints" / "best.pt")
    done = subprocess.run(
        [sys.executable, "-m", "nmt", "diagnose", "fit-gap", checkpoint, *args],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=300,
    )
    err = done.stderr.strip().splitlines()
    assert done.returncode == 2 and done.stdout == "", done.stdout + done.stderr
    assert len(err) == 1 and err[0].startswith("nmt: error: ") and words in err[0], err


def test_every_checkpoint_is_checked_before_the_first_is_measured(trained_toy, tmp_path, capsys):
    missing = tmp_path / "none.pt"
    argv = ["diagnose", "fit-gap", str(trained_toy / "checkpoints" / "best.pt"), str(missing), "--threads", "1"]
    code, out, err = run_cli(argv, capsys)
    assert code == 2 and out == "", out  # no line for the first checkpoint either
    assert err.strip().splitlines() == [f"nmt: error: {missing}: checkpoint not found"]
    with pytest.raises(UserError, match=r"checkpoints\[1\]=3: give a path"):
        nmt.api.fit_gap([trained_toy / "checkpoints" / "best.pt", 3])  # type: ignore[list-item]
    with pytest.raises(UserError, match=f"{missing}: checkpoint not found"):  # one string is one checkpoint
        nmt.api.fit_gap(str(missing))
    with pytest.raises(UserError, match="train_pairs=0: give a whole number of at least 1"):
        nmt.api.fit_gap(trained_toy / "checkpoints" / "best.pt", train_pairs=0)


def test_attention_health_rows_are_in_range_and_measuring_does_not_change_the_training(trained_toy, capsys):
    config = trained_toy / "config.yaml"  # the toy run's config: its corpus is prepared
    argv = ["diagnose", "attention", "--config", str(config), "--variants", "bahdanau,luong_general"]
    code, out, err = run_cli([*argv, "--steps", "0,3", "--batches", "2", "--threads", "1"], capsys)
    assert code == 0, err
    rows = [json.loads(line) for line in out.splitlines()]
    assert [(r["variant"], r["steps"]) for r in rows] == [(v, s) for v in ("bahdanau", "luong_general") for s in (0, 3)]
    for row in rows:
        assert 0 <= row["entropy"] <= 1.0001 and 0 < row["max_weight"] <= 1 and 0 <= row["readout_saturation"] <= 1
        assert row["energy_std"] >= 0 and row["context_rms"] > 0 and row["loss"] > 0
        assert set(row["grad_norm"]) == set(PARTS) and row["grad_norm"]["attention"] > 0
    # the step-3 row is the same whether step 0 was measured on the way or not
    (alone,) = nmt.api.attention_health(config, variants=["bahdanau"], steps=[3], batches=2, threads=1)
    assert alone.to_dict() == rows[1]


@pytest.mark.parametrize(
    "args, words",
    [
        (["--variants", "none"], "variant none: model.attention.type=none has no attention to measure"),
        (["--variants", "bahdanau,nosuch"], "unknown variant 'nosuch'; choose from "),
        (["--variants", "bahdanau,bahdanau"], "--variants: bahdanau is given twice"),
        (["--steps", "0,x"], "--steps '0,x': give comma-separated whole numbers"),
        (["--steps", "-1"], "--steps: give update counts of 0 or more"),
        (["--batches", "0"], "Invalid value for '--batches': "),
        (["--threads", "-1"], "--threads=-1: give 0 (one per free core)"),
    ],
)
def test_a_bad_attention_argument_is_one_line_before_any_model_trains(trained_toy, capsys, args, words):
    code, out, err = run_cli(["diagnose", "attention", "--config", str(trained_toy / "config.yaml"), *args], capsys)
    lines = err.strip().splitlines()
    assert code == 2 and out == "", err
    assert len(lines) == 1 and lines[0].startswith("nmt: error: ") and words in lines[0], lines


def test_a_transformer_is_refused_in_one_line(capsys):
    code, _, err = run_cli(
        ["diagnose", "attention", "--variants", "bahdanau", "--set", "model.arch=transformer"], capsys
    )
    assert code == 2 and err.strip().splitlines() == [
        "nmt: error: variant bahdanau: model.arch=transformer; the attention probes hook an RNN decoder's "
        "attention and readout (model.arch=rnn)"
    ]


def test_the_library_names_the_parameters_of_attention_health(trained_toy):
    config = trained_toy / "config.yaml"
    for kwargs, words in [
        ({"steps": "0,3"}, "steps='0,3': give a list of update counts"),
        ({"steps": [0, -2]}, "steps[1]=-2: give a whole number of at least 0"),
        ({"variants": "bahdanau"}, "variants='bahdanau': give a list of variant names"),
        ({"batches": 0}, "batches=0: give a whole number of at least 1"),
        ({"threads": -1}, "threads=-1: give 0 (one per free core)"),
    ]:
        with pytest.raises(UserError) as refused:
            nmt.api.attention_health(config, **kwargs)
        assert words in str(refused.value), (kwargs, str(refused.value))
