"""``nmt.select``: a run's model chosen on validation (best.pt or the average of the last N), then,
if asked, a test split read once with it; ``nmt select`` from Python.

Calls what the command calls (:func:`nmt.training.select_model.run_select`), which writes
``checkpoints/avg_lastN.pt`` and the run's ``selection.json`` (after which :func:`nmt.load` of the
run folder loads the chosen checkpoint), and returns the :class:`Selection` as plain data.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Optional, Union

from nmt.api import arguments as check
from nmt.api.extending import allowing_modules
from nmt.training.selection import Selection
from nmt.util.logs import ensure_configured

NAMES = {"valid": "valid", "test": "test"}
"""How the messages name the splits: by this function's parameters."""


def select(
    run: Union[str, Path],
    *,
    last: int = 5,
    beam: int = 5,
    valid: str = "valid",
    test: Optional[str] = None,
    modules: Sequence[str] = (),
) -> Selection:
    """Choose a run's model on validation BLEU: best.pt or the average of its last ``last`` validated
    checkpoints (best.pt on a tie), each translated with beam ``beam``; then read ``test`` once with
    the chosen one (None: read no test split, to compare configurations on validation first).

    Writes ``RUN/checkpoints/avg_lastN.pt`` and ``RUN/selection.json`` (the candidates' scores, the
    choice and every test read, counted per split and never overwritten); no ``eval-*`` folder.

    Args:
        run: a run folder written by :func:`nmt.train` (or ``nmt train``) with ``train.keep_last``
            of ``last`` or more.
        last: step checkpoints to average, 2 or more.
        beam: beam size of every translation, 1 or more.
        valid: the split the choice is made on; Multi30k's upstream names (``val``) are taken too.
            A test split (``test``, ``test2016``...) is refused: a choice made on it is a test read.
        test: the split read once with the chosen model, or None.
        modules: modules the run's checkpoints may load their attention from (see :func:`nmt.load`).

    Raises:
        nmt.util.errors.UserError: an argument of the wrong type or value (naming the parameter), a
            run without best.pt or with too few step checkpoints, a split its corpus lacks, or a
            ``selection.json`` that nmt did not write: all before any file is written.
    """
    from nmt.training.select_model import run_select

    ensure_configured()
    with allowing_modules(modules):
        return run_select(
            check.path("run", run),
            last=check.integer("last", last, minimum=2),
            beam=check.integer("beam", beam, minimum=1),
            valid=check.text("valid", valid),
            test=None if test is None else check.text("test", test),
            names=NAMES,
        )
