"""The tools a recipe runs on a trained run: ``nmt select`` (the model rule) and ``nmt diagnose``
(``fit-gap``, ``attention``).

:func:`register` adds them to the ``nmt`` app (:mod:`nmt.cli`), which owns the error handling.
Each calls the function its library twin calls (:func:`nmt.select`, :func:`nmt.fit_gap`,
:func:`nmt.attention_health` wrap the same ones), with messages that name this command's options;
typer's bounds refuse a number out of range before anything is read.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Optional

import typer

from nmt.cli.options import ConfigOpt, ModuleOpt, SetOpt, use_modules

diagnose_app = typer.Typer(
    help="Why a model learns as it does: a checkpoint's fit gap, the attention's health during training.",
    no_args_is_help=True,
)


def select_cmd(
    run: Path = typer.Argument(
        ...,
        help="Run folder written by nmt train, with train.keep_last of --last or more.",
        show_default=False,
        metavar="RUN",
    ),
    last: int = typer.Option(
        5, "--last", min=2, help="Validated step checkpoints to average (2 or more: an average of one is that one)."
    ),
    beam: int = typer.Option(5, "--beam", min=1, help="Beam size of every translation, validation and test."),
    valid: str = typer.Option(
        "valid",
        "--valid",
        help="Split the choice is made on (Multi30k's upstream names, such as val, work too); never a test split.",
    ),
    test: Optional[str] = typer.Option(
        None,
        "--test",
        help="Split read once with the chosen model, e.g. test2016; left out, no test split is read (to compare "
        "configurations on validation first). selection.json counts every reading of each split.",
        show_default=False,
    ),
    as_json: bool = typer.Option(
        False, "--json", help="Print the result as one JSON object (what nmt.select returns) instead of lines."
    ),
    module: Optional[list[str]] = ModuleOpt,
) -> None:
    """Choose a run's model on validation: best.pt or the average of its last N validated checkpoints
    (higher validation BLEU; best.pt on a tie); then, with --test, read that split once with it.

    Writes RUN/checkpoints/avg_lastN.pt and RUN/selection.json (the candidates' scores, the choice,
    the settings and every test reading, appended, never overwritten); nmt.load and nmt.evaluate
    of the run folder then load the chosen checkpoint. Both files belong to the
    run (nmt train --overwrite deletes them with it). Every argument is checked before the first file
    is written. The last step of training, as train.select: on_valid_last_N does within nmt train.

    Examples: nmt select runs/multi30k_de_en_gpu_reg --last 5 --beam 5;
    nmt select runs/multi30k_de_en_gpu_reg --last 5 --beam 5 --test test2016
    """
    use_modules(module)
    from nmt.training.select_model import run_select

    result = run_select(run, last=last, beam=beam, valid=valid, test=test)
    typer.echo(json.dumps(result.to_dict()) if as_json else result.summary)


def fit_gap_cmd(
    checkpoints: list[Path] = typer.Argument(
        ..., help="Checkpoint files written by nmt train or nmt average.", show_default=False, metavar="CHECKPOINT..."
    ),
    train_pairs: int = typer.Option(3000, "--train-pairs", min=1, help="Training pairs sampled."),
    seed: int = typer.Option(
        0, "--seed", min=0, max=2**32 - 1, help="Seed of the training sample, as train.seed takes it: [0, 2^32)."
    ),
    threads: int = typer.Option(
        0, "--threads", help="CPU threads (0: one per core other processes leave free, as nmt commands use)."
    ),
    module: Optional[list[str]] = ModuleOpt,
) -> None:
    """Over- or under-fitting? Each checkpoint's cross-entropy on sampled training pairs next to validation.

    The cross-entropy per target token with dropout off and no label smoothing (the validation loss
    nmt train logs), on a seeded sample of training pairs and on the whole validation split, and
    the gap between them: near zero, the model has not fitted its training data better than
    unseen data (more capacity or faster learning can help); wide, it fits pairs it will not see
    at test time (regularization can help). One JSON line per checkpoint; every checkpoint is
    checked before the first is measured.

    Example: nmt diagnose fit-gap runs/tf30_s1/checkpoints/best.pt --train-pairs 3000
    """
    use_modules(module)
    from nmt.diagnosis.fit_gap import run_fit_gap

    for row in run_fit_gap(checkpoints, train_pairs=train_pairs, seed=seed, thread_count=threads):
        typer.echo(json.dumps(row.to_dict(), allow_nan=False))


def _numbers(text: str, option: str) -> list[int]:
    from nmt.util.errors import UserError

    try:
        return [int(part) for part in text.split(",")]
    except ValueError:
        raise UserError(f"{option} {text[:40]!r}: give comma-separated whole numbers, e.g. 0,100") from None


def attention_cmd(
    config: Optional[Path] = ConfigOpt,
    variants: Optional[str] = typer.Option(
        None,
        "--variants",
        help="Comma-separated variants (nmt variants lists them); default: every one with attention.",
        show_default=False,
    ),
    steps: str = typer.Option(
        "0", "--steps", help="Comma-separated update counts to measure after, e.g. 0,10,100 (0: at initialization)."
    ),
    batches: int = typer.Option(
        4, "--batches", min=1, help="Training batches measured at each count (the ones after the last update)."
    ),
    threads: int = typer.Option(0, "--threads", help="CPU threads (0: train.threads, else one per free core)."),
    set_: Optional[list[str]] = SetOpt,
    module: Optional[list[str]] = ModuleOpt,
) -> None:
    """How healthy each variant's attention is: energy scale, entropy, saturation and gradients, at
    init and during training.

    Builds and trains each variant's model as nmt train would (its loss and batches, on the CPU in
    fp32) and, after each update count of --steps, measures the same held-out training batches
    without updating: energy_std, entropy (1 = uniform), max_weight, context_rms,
    readout_saturation (tanh inputs beyond 2.65), attention_weight_norm and grad_norm per part. One
    JSON line per variant and count; writes no file. Every variant's config is checked first.

    Example: nmt diagnose attention --config configs/multi30k_de_en_luong_general.yaml
    --variants bahdanau,luong_general --steps 0,100
    """
    use_modules(module)
    from nmt.diagnosis.attention_health import DEFAULT_VARIANTS, run_attention_health

    names = DEFAULT_VARIANTS if variants is None else [v.strip() for v in variants.split(",")]
    rows = run_attention_health(
        config,
        variants=names,
        steps=_numbers(steps, "--steps"),
        batches=batches,
        thread_count=threads,
        overrides=set_ or [],
    )
    for row in rows:
        typer.echo(json.dumps(row.to_dict(), allow_nan=False))


def register(app: typer.Typer) -> None:
    """Add ``nmt select`` and the ``nmt diagnose`` group to ``app``, in the order ``nmt --help`` lists them."""
    app.command("select")(select_cmd)
    diagnose_app.command("fit-gap")(fit_gap_cmd)
    diagnose_app.command("attention")(attention_cmd)
    app.add_typer(diagnose_app, name="diagnose")
