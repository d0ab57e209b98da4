"""Over- or under-fitting? A checkpoint's cross-entropy on training pairs next to validation.

For each checkpoint: the cross-entropy per target token (teacher forcing, no label smoothing,
dropout off: the validation loss that ``nmt train`` logs) on a seeded sample of training pairs
and on the whole validation split, and the gap between them.  A gap near zero says the model has
not yet fitted the training data better than unseen data (more capacity or faster learning can
help); a wide gap says it fits training pairs it will not see at test time (regularization can
help).  The training loss that ``nmt train`` logs cannot say this: it is measured with dropout on
and with label smoothing.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Sequence
from pathlib import Path

import numpy as np
import torch

from nmt.data.dataset import EncodedSplit
from nmt.data.pipeline import load_corpus
from nmt.decode.ensemble import Ensemble
from nmt.decode.inference import load_checkpoint
from nmt.diagnosis.results import FitGap
from nmt.run.checkpoint import check_checkpoint_path
from nmt.training.validate import token_loss
from nmt.util import threads


def sample(split: EncodedSplit, pairs: int, seed: int) -> EncodedSplit:
    """``pairs`` pairs of ``split`` drawn without replacement by ``seed``, in corpus order (all if fewer)."""
    if pairs >= len(split):
        return split
    chosen = np.sort(np.random.default_rng(seed).choice(len(split), size=pairs, replace=False))
    return EncodedSplit.from_sequences([split.src(i).tolist() for i in chosen], [split.tgt(i).tolist() for i in chosen])


def fit_gap(checkpoint: Path, train_pairs: int, seed: int, device: torch.device) -> FitGap:
    """Validation and training-sample cross-entropy of one checkpoint, per target token."""
    loaded = load_checkpoint(checkpoint, device)
    model = loaded.model
    assert not isinstance(model, Ensemble)  # one checkpoint is one network
    cfg = loaded.config
    corpus = load_corpus(cfg.data, splits=("train", "valid"))
    losses: dict[str, float] = {}
    with torch.no_grad():
        for name, split in (
            ("train", sample(corpus.splits["train"], train_pairs, seed)),
            ("valid", corpus.splits["valid"]),
        ):
            total, tokens = token_loss(model, split, cfg, device, None)
            losses[name] = total / tokens
    return FitGap(
        checkpoint=Path(checkpoint),
        step=loaded.step,
        train_pairs=min(train_pairs, len(corpus.splits["train"])),
        train_loss=round(losses["train"], 4),
        train_ppl=round(math.exp(losses["train"]), 2),
        valid_loss=round(losses["valid"], 4),
        valid_ppl=round(math.exp(losses["valid"]), 2),
        gap=round(round(losses["valid"], 4) - round(losses["train"], 4), 4),
    )


def run_fit_gap(
    checkpoints: Sequence[Path], *, train_pairs: int, seed: int, thread_count: int, threads_name: str = "--threads"
) -> Iterator[FitGap]:
    """``nmt diagnose fit-gap`` and ``nmt.fit_gap``: the thread count and every checkpoint are checked
    now, before this returns; then one :class:`FitGap` per checkpoint, each as it is measured."""
    threads.configure(thread_count, threads_name)  # refuses a negative count, or more than 4 per CPU
    for checkpoint in checkpoints:
        check_checkpoint_path(checkpoint)
    device = torch.device("cpu")
    return (fit_gap(Path(checkpoint), train_pairs, seed, device) for checkpoint in checkpoints)
