"""Notebook 03's training step written by hand gives, to the last bit on a CPU, the losses that
``nmt.train`` logs for the same config: the same seed before the model is built, the same batches
in the same order, the same dropout masks and teacher-forcing coins, label smoothing, the loss
divided by the update's target tokens, clipping, Adam and the learning-rate schedule.

The function is the notebook's own cell, run here on the toy task with everything the notebook's
runs leave at a default switched on: dropout on embeddings and between layers, word dropout, two
batches per update, and p below 1 (the coins) as well as p = 1 (the whole reference at once).
"""

from __future__ import annotations

import nbformat
import pytest

import nmt
from conftest import REPO, toy_overrides

NOTEBOOK = REPO / "notebooks" / "03_teacher_forcing.ipynb"
UPDATES = 4


def train_by_hand():
    """The notebook's ``train_by_hand``, defined by running its cell."""
    cell = next(
        c.source
        for c in nbformat.read(NOTEBOOK, as_version=4).cells
        if c.cell_type == "code" and "def train_by_hand(" in c.source
    )
    names = {"__name__": "notebook_03"}
    exec(compile(cell, NOTEBOOK.name, "exec"), names)
    return names["train_by_hand"]


@pytest.mark.parametrize("p", [1.0, 0.4])
def test_the_notebooks_training_step_by_hand_gives_the_losses_nmt_train_logs(tmp_path, toy_files, p):
    _, files = toy_files
    overrides = toy_overrides(
        tmp_path,
        files,
        train__max_steps=UPDATES,
        train__valid_every=UPDATES,
        train__teacher_forcing=p,
        train__accumulate=2,
        train__max_tokens=300,
        model__dropout=0.3,
        model__emb_dropout=0.1,
        model__tgt_word_dropout=0.1,
    )
    run = nmt.train(None, overrides, progress=False)
    logged = [row["loss"] for row in run.train_log]
    assert [row["step"] for row in run.train_log] == list(range(1, UPDATES + 1))
    assert train_by_hand()(run.config, UPDATES) == logged
