"""Over- or under-fitting? A checkpoint's cross-entropy on training pairs next to validation.

For each checkpoint: the cross-entropy per target token (teacher forcing, no label smoothing,
dropout off: the validation loss that ``nmt train`` logs) on a seeded sample of ``--train-pairs``
training pairs and on the whole validation split, and the gap between them.  A gap near zero
says the model has not yet fitted the training data better than unseen data (more capacity or
faster learning can help); a wide gap says it fits training pairs it will not see at test time
(regularization can help).  The training loss that ``nmt train`` logs cannot say this: it is
measured with dropout on and with label smoothing.

Command (from the repository root, on a run written by ``nmt train``)::

    python scripts/fit_gap.py runs/tf30_s1/checkpoints/best.pt --train-pairs 3000

One JSON line per checkpoint on stdout.  Every argument is checked before the first checkpoint
is read: a bad one, or a checkpoint that is not there, is one line ``fit_gap.py: error: ...`` and
exit status 2, as the nmt CLI gives.  ``--threads`` takes what nmt commands take
(:func:`nmt.util.threads.configure`): 0 for one per core other processes leave free, or a count up
to 4 per CPU (more only makes the threads wait on each other; 10**6 crashed torch).
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import torch

from _script_args import Parser, fail, whole_number
from nmt.data.dataset import EncodedSplit
from nmt.data.pipeline import load_corpus
from nmt.decode.ensemble import Ensemble
from nmt.decode.inference import load_checkpoint
from nmt.run.checkpoint import check_checkpoint_path
from nmt.training.validate import token_loss
from nmt.util import threads
from nmt.util.errors import UserError

PROG = "fit_gap.py"


def sample(split: EncodedSplit, pairs: int, seed: int) -> EncodedSplit:
    """``pairs`` pairs of ``split`` drawn without replacement by ``seed``, in corpus order (all if fewer)."""
    if pairs >= len(split):
        return split
    chosen = np.sort(np.random.default_rng(seed).choice(len(split), size=pairs, replace=False))
    return EncodedSplit.from_sequences([split.src(i).tolist() for i in chosen], [split.tgt(i).tolist() for i in chosen])


def fit_gap(checkpoint: Path, train_pairs: int, seed: int, device: torch.device) -> dict:
    """Validation and training-sample cross-entropy of one checkpoint, per target token."""
    loaded = load_checkpoint(checkpoint, device)
    model = loaded.model
    assert not isinstance(model, Ensemble)  # one checkpoint is one network
    cfg = loaded.config
    corpus = load_corpus(cfg.data, splits=("train", "valid"))
    record: dict = {
        "checkpoint": str(checkpoint),
        "step": loaded.step,
        "train_pairs": min(train_pairs, len(corpus.splits["train"])),
    }
    with torch.no_grad():
        for name, split in (
            ("train", sample(corpus.splits["train"], train_pairs, seed)),
            ("valid", corpus.splits["valid"]),
        ):
            total, tokens = token_loss(model, split, cfg, device, None)
            record[f"{name}_loss"] = round(total / tokens, 4)
            record[f"{name}_ppl"] = round(math.exp(total / tokens), 2)
    record["gap"] = round(record["valid_loss"] - record["train_loss"], 4)
    return record


def main(argv: list[str] | None = None) -> None:
    parser = Parser(prog=PROG, description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "checkpoints", type=Path, nargs="+", help="Checkpoint files written by nmt train or nmt average."
    )
    parser.add_argument(
        "--train-pairs", type=whole_number(1), default=3000, help="Training pairs sampled (default: 3000)."
    )
    parser.add_argument(
        "--seed",
        type=whole_number(0, 2**32, shown="[0, 2^32)"),
        default=0,
        help="Seed of the training sample, as train.seed takes it (default: 0).",
    )
    parser.add_argument(
        "--threads",
        type=int,
        default=0,
        help="CPU threads (default 0: one per core other processes leave free, as nmt commands use).",
    )
    args = parser.parse_args(argv)
    try:
        threads.configure(args.threads, "--threads")  # refuses a negative count, or more than 4 per CPU
        for checkpoint in args.checkpoints:  # all of them before the first is measured
            check_checkpoint_path(checkpoint)
        device = torch.device("cpu")
        for checkpoint in args.checkpoints:
            print(json.dumps(fit_gap(checkpoint, args.train_pairs, args.seed, device)), flush=True)
    except UserError as exc:
        fail(PROG, str(exc))


if __name__ == "__main__":
    main()
