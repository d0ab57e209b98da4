"""The learning test of the attention space: a tiny model must learn long reversal with the attention.

Sources of 10 to 24 words (:mod:`nmt.data.toy`) do not fit through the encoder's final state alone,
so a model learns the task only by attending: without attention it stays near 25 greedy BLEU,
nmt's attention variants reach 83.5 to 100 after 600 updates (tests/system/test_variants_learn.py,
which runs this same function for each of them).  ``nmt.check_attention(cls, learn=True)`` offers
it to a user's energy; it takes about a minute on 2 CPU cores.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

import torch

from nmt.data.toy import write_reversal
from nmt.decode.inference import load_checkpoint, translate_ids
from nmt.run.paths import RunPaths
from nmt.score.metrics import score
from nmt.training.entry import run_training

STEPS = 600
FLOOR = 70.0
"""Greedy test BLEU an attention must reach after STEPS updates."""
MIN_WORDS, MAX_WORDS = 10, 24
SIZES = {"train": 3000, "valid": 60, "test": 100}

TINY = {
    "data.corpus": "local",
    "data.src": "xx",
    "data.tgt": "yy",
    "data.vocab_size": 100,
    "model.emb_size": 32,
    "model.hidden_size": 64,
    "model.dropout": 0.0,
    "model.emb_dropout": 0.0,
    "train.max_tokens": 600,
    "train.lr": 0.005,
    "train.valid_max_sentences": 60,
    "train.threads": 1,
    "decode.batch_size": 32,
}
"""The tiny model and batches of the reversal task (also the test suite's toy model, tests/conftest.py)."""


def reversal_files(folder: Path) -> dict[str, list[str]]:
    """The long reversal task's split files in ``folder`` (fixed seeds: the same task everywhere)."""
    return write_reversal(folder, SIZES, seed=200, min_len=MIN_WORDS, max_len=MAX_WORDS)


def reversal_bleu(
    root: Path, model: Sequence[str], steps: int = STEPS, name: str = "reversal", progress: bool = False
) -> float:
    """Train the tiny model with the ``model`` overrides (an attention) for ``steps`` updates on long
    reversal under ``root``, then return its greedy test BLEU."""
    files = reversal_files(root / "text")
    settings = {
        **TINY,
        "name": name,
        "runs_dir": str(root / "runs"),
        "data.root": str(root / "data"),
        "data.local_files": json.dumps(files),
        "train.max_steps": steps,
        "train.max_epochs": 1000,
        "train.valid_every": steps,
        "train.log_every": steps,
        "train.tensorboard": False,
        "train.valid_attention_map": False,
    }
    run_training(None, [*(f"{k}={v}" for k, v in settings.items()), *model], progress=progress)
    loaded = load_checkpoint(RunPaths(root / "runs" / name).last, torch.device("cpu"))
    srcs = Path(files["test"][0]).read_text(encoding="utf-8").splitlines()
    refs = Path(files["test"][1]).read_text(encoding="utf-8").splitlines()
    out = translate_ids(loaded.model, loaded.src_tok.encode(srcs), loaded.config.decode, torch.device("cpu"), beam=1)
    return score([loaded.tgt_tok.decode(t.ids[0]) for t in out], refs).bleu
