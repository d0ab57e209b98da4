"""``nmt.fit_gap`` and ``nmt.attention_health``: the ``nmt diagnose`` commands from Python.

Each calls what its command calls (:mod:`nmt.diagnosis`) and returns the rows the command prints
as JSON lines, as typed results (each with ``.to_dict()``) in a :class:`list`.  Neither writes a file.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Optional, Union

from nmt.api import arguments as check
from nmt.api.training import Overrides, override_list
from nmt.diagnosis.results import AttentionHealth, FitGap
from nmt.util.errors import UserError, short_repr
from nmt.util.logs import ensure_configured

PathLike = Union[str, "os.PathLike[str]"]


def fit_gap(
    checkpoints: Union[PathLike, Sequence[PathLike]],
    *,
    train_pairs: int = 3000,
    seed: int = 0,
    threads: int = 0,
) -> list[FitGap]:
    """Each checkpoint's cross-entropy per target token on ``train_pairs`` training pairs (drawn by
    ``seed``) and on the validation split, with dropout off and no label smoothing, and the gap
    between them: near 0, the model under-fits; wide, it over-fits (regularization can help).

    Args:
        checkpoints: one checkpoint file or a list of them (written by training or ``nmt average``).
        train_pairs: training pairs sampled, 1 or more (all of them where the split has fewer).
        seed: the sample's seed, 0 to 2**32 - 1.
        threads: CPU threads, 0 for one per core other processes leave free.

    Raises:
        nmt.util.errors.UserError: an argument of the wrong type or value (naming the parameter),
            or a checkpoint that is not there: all before the first checkpoint is measured.
    """
    from nmt.diagnosis.fit_gap import run_fit_gap

    ensure_configured()
    if isinstance(checkpoints, (str, os.PathLike)):
        paths = [check.path("checkpoints", checkpoints)]
    else:
        paths = check.paths("checkpoints", checkpoints)
    if not paths:
        raise UserError("checkpoints=[]: give at least one checkpoint file")
    return list(
        run_fit_gap(
            paths,
            train_pairs=check.integer("train_pairs", train_pairs, minimum=1),
            seed=check.integer("seed", seed, minimum=0, maximum=check.MAX_SEED),
            thread_count=check.integer("threads", threads),
            threads_name="threads",
        )
    )


def attention_health(
    config: Optional[PathLike] = None,
    *,
    variants: Optional[Sequence[str]] = None,
    steps: Sequence[int] = (0,),
    batches: int = 4,
    threads: int = 0,
    overrides: Overrides = None,
) -> list[AttentionHealth]:
    """Train each variant's model (the one ``nmt train`` would build, with its loss and batches) and,
    after each update count in ``steps``, measure its attention on ``batches`` held-out training
    batches: energy spread, entropy, largest weight, context size, readout saturation, the
    attention's weight norm and the gradient norm of each part.  Nothing is written.

    Args:
        config: the base config (a YAML file); None takes the defaults.
        variants: variant names (``nmt variants`` lists them); None for every one with attention.
        steps: update counts to measure after, each 0 or more (0: at initialization).
        batches: training batches measured, 1 or more.
        threads: CPU threads, 0 for ``train.threads`` (else one per free core).
        overrides: settings every variant takes, as ``--set`` takes them or as a mapping.

    Raises:
        nmt.util.errors.UserError: a wrong argument (naming the parameter), an unknown variant, one
            without attention, or a config that does not load: all before the first model trains.
    """
    from nmt.diagnosis.attention_health import DEFAULT_VARIANTS, run_attention_health

    ensure_configured()
    if variants is None:
        names: Sequence[str] = DEFAULT_VARIANTS
    elif isinstance(variants, str) or not isinstance(variants, Sequence):
        raise UserError(f"variants={short_repr(variants)}: give a list of variant names, e.g. ['bahdanau']")
    else:
        names = [check.text(f"variants[{i}]", v) for i, v in enumerate(variants)]
    if isinstance(steps, (str, bytes)) or not isinstance(steps, Sequence):
        raise UserError(f"steps={short_repr(steps)}: give a list of update counts, e.g. [0, 100]")
    counts = [check.integer(f"steps[{i}]", n, minimum=0) for i, n in enumerate(steps)]
    return list(
        run_attention_health(
            check.optional_path("config", config),
            variants=names,
            steps=counts,
            batches=check.integer("batches", batches, minimum=1),
            thread_count=check.integer("threads", threads),
            overrides=override_list(overrides),
            names={"steps": "steps", "batches": "batches", "threads": "threads", "variants": "variants"},
        )
    )
