"""The commands that score, combine and compare trained models: eval, average, compare,
variants and report.

:func:`register` adds them to the ``nmt`` app (:mod:`nmt.cli`), which owns the error handling;
like every command, each parses its options and calls one function, importing it inside so
``nmt --help`` stays fast.
"""

from __future__ import annotations

from pathlib import Path
from typing import Optional, Union

import typer

from nmt.cli.options import (
    ComputeTypeOpt,
    ConfigOpt,
    EngineOpt,
    ModelDirOpt,
    ModuleOpt,
    ProgressOpt,
    SetOpt,
    progress_shown,
    use_modules,
)
from nmt.cli.stopping import saved_on_stop


def eval_cmd(
    checkpoint: Optional[list[Path]] = typer.Option(
        None, help="Translate a corpus split with this checkpoint, then score; several decode as an ensemble."
    ),
    split: str = typer.Option(
        "test",
        help="Split of the run's corpus to translate (with --checkpoint): test, valid, or for Multi30k "
        "test2016, test2017, test2018 and test2017_mscoco where they were prepared.",
    ),
    hyp: Optional[list[Path]] = typer.Option(
        None,
        help="Hypothesis file(s) to score, one line per reference line; with several, each is compared "
        "with the first (the baseline).",
    ),
    model: Optional[Path] = ModelDirOpt,
    engine: Optional[str] = EngineOpt,
    compute_type: str = ComputeTypeOpt,
    ref: Optional[Path] = typer.Option(None, help="Reference file (with --hyp or --model)."),
    src: Optional[Path] = typer.Option(
        None, help="Source file: with --hyp for BLEU by source length; with --model the text to translate."
    ),
    out: Optional[Path] = typer.Option(None, help="Folder for report.json, report.md and plots."),
    beam: Optional[int] = typer.Option(None, help="Beam size when translating (default from the run's config)."),
    test: str = typer.Option(
        "both",
        help="Significance test for several --hyp files: bootstrap (paired bootstrap resampling), "
        "ar (approximate randomization) or both.",
    ),
    bootstrap_samples: int = typer.Option(1000, help="Resamples of the paired bootstrap."),
    ar_trials: int = typer.Option(10000, help="Trials of approximate randomization."),
    seed: int = typer.Option(12345, help="Seed of both tests (a positive integer), so p-values repeat."),
    set_: Optional[list[str]] = SetOpt,
    module: Optional[list[str]] = ModuleOpt,
) -> None:
    """Score with sacreBLEU (BLEU, chrF, TER), by source length, and compare systems by paired
    bootstrap resampling and approximate randomization; writes report.json and report.md.

    Examples: nmt eval --checkpoint runs/demo/checkpoints/best.pt --split test;
    nmt eval --hyp a.txt --hyp b.txt --ref ref.txt --src src.txt --test both --seed 7;
    nmt eval --engine onnxruntime --model exports/demo-onnx --src test.de --ref test.en
    """
    use_modules(module)
    from nmt.api.evaluation import evaluate  # what nmt.evaluate runs from Python

    typer.echo(
        evaluate(
            checkpoint or None,
            split=split,
            hyps=hyp or [],
            ref=ref,
            src=src,
            out=out,
            beam=beam,
            overrides=set_ or [],
            test=test,
            bootstrap_samples=bootstrap_samples,
            ar_trials=ar_trials,
            seed=seed,
            model=model,
            engine=engine,
            compute_type=compute_type,
        ).summary
    )


def average_cmd(
    inputs: list[Path] = typer.Argument(
        ..., help="Checkpoint files and/or run folders (a run folder gives its step checkpoints).", show_default=False
    ),
    output: Path = typer.Option(..., "--output", "-o", help="Where to write the averaged checkpoint, e.g. avg.pt."),
    last: Optional[int] = typer.Option(
        None, help="From each run folder, the N latest step checkpoints (default 5; kept by train.keep_last)."
    ),
    best: Optional[int] = typer.Option(
        None,
        help="From each run folder, the N best step checkpoints by the run's validation metric "
        "(kept by train.keep_best).",
    ),
    force: bool = typer.Option(
        False,
        "--force",
        help="Replace an existing -o file, or write a name the trainer owns (best.pt, last.pt, "
        "a step file in a run's checkpoints folder); never one of the checkpoints averaged.",
    ),
    module: Optional[list[str]] = ModuleOpt,
) -> None:
    """Average the parameters of several checkpoints into one, for translate and eval.

    Examples: nmt average runs/m30k --last 5 -o runs/m30k/checkpoints/avg.pt;
    nmt average a.pt b.pt c.pt -o avg.pt
    """
    use_modules(module)
    from nmt.training.average import run_average

    typer.echo(run_average(inputs, output, last=last, best=best, force=force))


def compare_cmd(
    ctx: typer.Context,
    config: Optional[Path] = ConfigOpt,
    variants: Optional[str] = typer.Option(
        None,
        help="Comma-separated variants (nmt variants lists them); the first is the "
        "baseline unless --baseline says otherwise. Default: bahdanau,luong_general, or with "
        "--sweep, or for a Transformer config, the config's own model.",
        show_default=False,
    ),
    sweep: Optional[list[str]] = typer.Option(
        None,
        "--sweep",
        help="KEY=V1,V2,...: train every value of one config option (e.g. "
        "train.teacher_forcing=1.0,0.5). Two sweeps form a grid; with --variants, every "
        "variant takes every point. decode.* sweeps share the trained runs and differ only "
        "in scoring. Values may not contain commas.",
        show_default=False,
    ),
    seeds: str = typer.Option(
        "1,2", help="Comma-separated training seeds; every arm (variant, sweep point or both) trains once per seed."
    ),
    steps: Optional[int] = typer.Option(None, help="Updates per run (default: the config's train.max_steps)."),
    baseline: Optional[str] = typer.Option(
        None,
        help="Arm the others are tested against, as the table labels it (a variant, "
        "'KEY=V', or 'VARIANT KEY=V ...'; default: the first).",
    ),
    split: str = typer.Option(
        "test",
        help="Split to translate and score with each run's best checkpoint (Multi30k: test2016, test2017, "
        "test2018, test2017_mscoco where prepared).",
    ),
    beam: Optional[int] = typer.Option(None, help="Beam size for scoring (default: the config's decode.beam)."),
    runs_dir: Optional[Path] = typer.Option(
        None,
        help="Folder for the runs, one per arm and seed: <variant>_s<seed>, <variant>_<KEY-V>_s<seed>, "
        "<KEY-V>_s<seed> without --variants, base_s<seed> for a decode.* sweep alone, or transformer_s<seed> for "
        "a Transformer config without --variants "
        "(default: compare_<config name> in the config's runs_dir, runs unless it says otherwise).",
    ),
    out: Optional[Path] = typer.Option(None, help="Folder for report.json and report.md (default: RUNS_DIR/report)."),
    set_: Optional[list[str]] = SetOpt,
    progress: Optional[bool] = ProgressOpt,
    jobs: int = typer.Option(
        1,
        min=1,
        help="Train up to N runs at once, each in an nmt train process of its own (logs in RUNS_DIR/logs): "
        "for a GPU or CPU that one run leaves partly idle. Their wall times then show a shared machine. "
        "At most one per CPU core and per 512 MiB of memory.",
    ),
    dry_run: bool = typer.Option(
        False,
        help="Only list each run as reuse, train, replace (an unfinished run, "
        "which training overwrites), kept (a finished run of another config, "
        "which only --force replaces) or refused (files nmt did not write); "
        "train nothing. With --spread, also say what the design can detect.",
    ),
    spread: Optional[float] = typer.Option(
        None,
        "--spread",
        help="The standard deviation of per-seed BLEU differences between two arms, from earlier runs or a "
        "stated guess (0.72 on the four-pair comparison): the plan then says, before any run, the smallest "
        "difference its seeds detect with 80% power and, with --target, the seeds a difference needs.",
        metavar="SIGMA",
        show_default=False,
    ),
    spread_from: Optional[Path] = typer.Option(
        None,
        "--spread-from",
        help="Take --spread from an earlier comparison: its report.json, or the folder holding it "
        "(the spread of its arms' per-seed differences from its baseline).",
        metavar="REPORT",
        show_default=False,
    ),
    target: Optional[float] = typer.Option(
        None,
        "--target",
        help="A BLEU difference the comparison should be able to detect (with --spread): the seeds it needs.",
        metavar="DELTA",
        show_default=False,
    ),
    match_params: Optional[str] = typer.Option(
        None,
        "--match-params",
        help="An arm (as --baseline names it) whose parameter count every other RNN arm is resized to: "
        "each gets the hidden size (and embedding size, where tied) that brings it within 2% of it, "
        "and trains into <stem>_match-<ARM>_s<seed>.",
        show_default=False,
    ),
    time_updates: int = typer.Option(
        0,
        "--time-updates",
        help="After the runs (trained now or before), time N training updates of each arm alone, one arm "
        "after another in this process, after 3 warm-up updates, with the arm's train.threads, and add the "
        "column 's/update (alone)' (0 = no timing; nothing is timed with --dry-run).",
        metavar="N",
    ),
    force: bool = typer.Option(
        False,
        "--force",
        help="Train again, replacing them, finished runs whose config differs from the plan's "
        "in a way that changes the model (without it the comparison stops and lists them). "
        "Runs that differ only in speed options (train.threads, log_every, tensorboard) "
        "are reused either way.",
    ),
    search: Optional[str] = typer.Option(
        None,
        "--search",
        help="What was searched to reach the base configuration, on which split and with what budget "
        "(Dodge et al. 2019): a sentence the record keeps, since nmt compare cannot know it.",
        metavar="TEXT",
        show_default=False,
    ),
    module: Optional[list[str]] = ModuleOpt,
) -> None:
    """Train variants or option sweeps for the same number of updates over several seeds and compare their scores.

    Reports the mean of BLEU and chrF over seeds with 95% intervals, a paired t-test against the
    baseline over seeds (raw and Holm-adjusted), a paired bootstrap per seed, approximate
    randomization over all seeds' translations (stratified by seed), BLEU by source length, updates, wall
    time, parameters and FLOPs per token (with --time-updates, seconds per update measured alone),
    and writes a reproducibility record. Finished
    runs are reused, so an interrupted comparison continues where it stopped; a finished run of
    another config is replaced only with --force.

    Examples: nmt compare --config configs/demo.yaml --variants bahdanau,luong_general,qkv --seeds 1,2 --steps 600;
    nmt compare --config configs/demo.yaml --sweep train.teacher_forcing=1.0,0.5 --steps 600;
    nmt compare --config configs/multi30k_de_en_gpu.yaml --sweep model.dropout=0.4,0.5 --steps 2000 --jobs 4
    """
    use_modules(module)
    from nmt.api.evaluation import compare  # what nmt.compare runs from Python

    with saved_on_stop(ctx):  # one line and 128 + the signal, the runs saved
        result = compare(
            config,
            variants=variants,
            sweep=sweep or [],
            seeds=seeds,
            steps=steps,
            baseline=baseline,
            split=split,
            beam=beam,
            runs_dir=runs_dir,
            out=out,
            overrides=set_ or [],
            progress=progress_shown(progress),
            jobs=jobs,
            force=force,
            match_params=match_params,
            time_updates=time_updates,
            dry_run=dry_run,
            spread=_one_spread(spread, spread_from),
            target=target,
            search=search,
        )
    typer.echo(result.text)


def _one_spread(spread: Optional[float], spread_from: Optional[Path]) -> Union[float, Path, None]:
    """--spread or --spread-from, never both."""
    if spread is not None and spread_from is not None:
        from nmt.util.errors import UserError

        raise UserError("give --spread or --spread-from, not both")
    return spread_from if spread_from is not None else spread


def variants_cmd(module: Optional[list[str]] = ModuleOpt) -> None:
    """List the named variants that nmt compare trains, with the overrides each applies; with
    --module, the attentions that module registers too.

    Example: nmt variants --module examples/attention/cosine.py
    """
    use_modules(module)
    from nmt.config.variants import VARIANTS, registered_variants, variant_overrides

    names = [*VARIANTS, *registered_variants()]
    width = max(len(name) for name in names)
    for name in names:
        typer.echo(f"{name:<{width}}  {' '.join(variant_overrides(name))}")


def report_cmd(
    runs: list[Path] = typer.Argument(
        ...,
        help="Run folders holding metrics.jsonl (runs/<name>), or folders above them (a comparison's "
        "--runs-dir, runs/): every run below is read. Their eval-greedy and eval-beam5 folders (nmt eval "
        "--out RUN/eval-greedy, --beam 5 --out RUN/eval-beam5) give the test scores, else the scores "
        "nmt compare saved (compare-<split>/scored.json).",
        show_default=False,
        metavar="RUN",
    ),
    out: Optional[Path] = typer.Option(
        None,
        help="Folder for report.md and the two learning-curve PNGs (default: report/ beside the first "
        "run, e.g. runs/report).",
    ),
) -> None:
    """Report on finished or running runs: learning curves, final scores, parameters, throughput.

    Writes report.md and valid_bleu_by_updates.png / valid_bleu_by_minutes.png (validation BLEU
    against updates and against wall-clock minutes, one line per run) into --out, and prints
    the results table (Markdown, one row per run) on stdout, so the README's table is
    `nmt report ... > table.md`.

    Example: nmt report runs/multi30k_de_en_best runs/multi30k_de_en_none --out docs/multi30k
    """
    from nmt.evaluation.run_report import write_report

    path, table = write_report(runs, out)
    typer.echo(table)
    typer.echo(f"nmt report: wrote {path}", err=True)


def register(app: typer.Typer) -> None:
    """Add this module's commands to ``app``, in the order ``nmt --help`` lists them."""
    for name, command in (
        ("eval", eval_cmd),
        ("average", average_cmd),
        ("compare", compare_cmd),
        ("variants", variants_cmd),
        ("report", report_cmd),
    ):
        app.command(name)(command)
