"""The ``nmt`` command line: each command parses, loads the config, calls one function.

User errors (:class:`~nmt.util.errors.UserError`, bad options) print one line to
stderr and exit 2; internal errors exit 1.  ``--debug`` shows tracebacks.
Heavy imports (torch) happen inside commands so ``nmt --help`` stays fast.
The commands on trained models (eval, average, compare, variants, report) live in
:mod:`nmt.cli.evaluate`; options several commands share, in :mod:`nmt.cli.options`.
"""

from __future__ import annotations

import sys
import traceback
from pathlib import Path
from typing import Optional

import typer

from nmt import __version__
from nmt.cli import align as cli_align
from nmt.cli import classroom as cli_classroom
from nmt.cli import decoding as cli_decoding
from nmt.cli import evaluate as cli_evaluate
from nmt.cli import export as cli_export
from nmt.cli import groups as cli_groups
from nmt.cli import labs as cli_labs
from nmt.cli import tools as cli_tools
from nmt.cli.help_format import hide_flag_types, reflow_commands
from nmt.cli.options import ConfigOpt, ModuleOpt, ProgressOpt, SetOpt, progress_shown, use_modules
from nmt.util import logs, torchrun
from nmt.util.errors import UserError
from nmt.util.out_paths import os_error_line

app = typer.Typer(
    help="Train, compare and understand attention-based translation models (RNNs and the Transformer).",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)
data_app = typer.Typer(help="Download, clean, split and tokenize parallel corpora.", no_args_is_help=True)
app.add_typer(data_app, name="data")

_STATE = {"debug": False}


def _version(value: bool) -> None:
    if value:
        typer.echo(f"nmt {__version__}")
        raise typer.Exit()


@app.callback()
def root(
    debug: bool = typer.Option(False, "--debug", help="Show full tracebacks on errors."),
    quiet: bool = typer.Option(False, "--quiet", "-q", help="Only warnings and errors in the log."),
    version: bool = typer.Option(
        False, "--version", callback=_version, is_eager=True, help="Print the version and exit."
    ),
) -> None:
    """nmt: RNN encoder-decoder translation with the whole attention family."""
    _STATE["debug"] = debug
    logs.configure(quiet)  # the library (nmt.api) logs alike


def _load_config(config: Optional[Path], overrides: Optional[list[str]]):
    from nmt import config as cfg

    return cfg.load(config, overrides or [])


@app.command("config")
def config_cmd(
    config: Optional[Path] = ConfigOpt,
    set_: Optional[list[str]] = SetOpt,
    schema: bool = typer.Option(
        False, "--schema", help="Print the config's JSON Schema (what configs/schema.json holds) and exit."
    ),
    module: Optional[list[str]] = ModuleOpt,
) -> None:
    """List every option with its default and description; with --config, print the resolved YAML;
    with --schema, print the JSON Schema an editor checks config files against.

    Example: nmt config --config configs/demo.yaml --set train.lr=0.0005

    A config that names code of its own by import path (model.attention.type: my_module:MyEnergy) is
    printed only with that module allowed by --module: reading a config runs none of its code.
    """
    use_modules(module)
    from nmt import config as cfg

    if schema:
        if config is not None or set_:
            raise UserError("config --schema describes every config: it takes no --config or --set")
        from nmt.config.schema import schema_text

        typer.echo(schema_text(), nl=False)
        return
    if config is None and not set_:
        rows = cfg.describe_options()
        width = max(len(k) for k, _, _ in rows)
        for key, default, text in rows:
            typer.echo(f"{key:<{width}}  {default:<12}  {text}")
        return
    typer.echo(cfg.dump(_load_config(config, set_)), nl=False)


@app.command("presets")
def presets_cmd() -> None:
    """List the attention presets (model.attention.type) with the design-space point each expands
    to, then the model presets (the Transformer) with the options that select them.

    Example: nmt presets
    """
    from nmt.model.presets import describe_model_presets, describe_presets

    attention, models = describe_presets(), describe_model_presets()
    width = max(len(name) for name, _ in attention + models)
    typer.echo("attention presets (model.attention.type):")
    for name, expansion in attention:
        typer.echo(f"{name:<{width}}  {expansion}")
    typer.echo("(location attention is the variant luong_location: type=custom with energy=location; nmt variants)")
    typer.echo("\nmodel presets:")
    for name, expansion in models:
        typer.echo(f"{name:<{width}}  {expansion}")


@data_app.command("prepare")
def data_prepare(
    corpus: str = typer.Argument(..., help="synthetic, multi30k, europarl, tatoeba, hub or local."),
    pair: Optional[str] = typer.Option(None, help="Language pair SRC-TGT, e.g. de-en."),
    mirror: Optional[str] = typer.Option(
        None, help="Local folder with the corpus's upstream files, read instead of downloading (else $NMT_DATA_MIRROR)."
    ),
    gold: Optional[str] = typer.Option(
        None, help="europarl: the RWTH gold alignments (DeEnGoldAlignment.tar.gz); pairs sharing a line are removed."
    ),
    config: Optional[Path] = ConfigOpt,
    set_: Optional[list[str]] = SetOpt,
    force: bool = typer.Option(False, help="Rebuild even if the prepared files are up to date."),
    progress: Optional[bool] = ProgressOpt,
    module: Optional[list[str]] = ModuleOpt,
) -> None:
    """Fetch a corpus, clean the training split, write the splits and train SentencePiece.

    Example: nmt data prepare multi30k --pair de-en (add --mirror DIR to read local copies of the files);
    nmt data prepare europarl --pair de-en --gold DeEnGoldAlignment.tar.gz; nmt data prepare tatoeba --pair de-en
    """
    use_modules(module)
    from nmt.data.pipeline import prepare_corpus

    overrides = [f"data.corpus={corpus}", *(set_ or [])]
    if pair:
        src, sep, tgt = pair.partition("-")
        if not sep or not src or not tgt:
            raise UserError(f"--pair {pair!r}: expected SRC-TGT, e.g. de-en")
        overrides += [f"data.src={src}", f"data.tgt={tgt}"]
    if mirror:
        overrides.append(f"data.mirror={mirror}")
    if gold:
        overrides.append(f"data.gold_alignments={gold}")
    cfg = _load_config(config, overrides)
    manifest = prepare_corpus(cfg.data, force=force, progress=progress_shown(progress))
    sizes = ", ".join(f"{name} {info['pairs']}" for name, info in manifest["splits"].items())
    removed = manifest["cleaning"]["removed"]
    excluded = manifest.get("excluded_before_split")
    before = f"; {excluded['pairs']} pairs removed before the split ({excluded['reason']})" if excluded else ""
    typer.echo(
        f"prepared {cfg.data.prepared_dir}: {sizes} pairs{before}; training pairs removed by filter: "
        f"{', '.join(f'{k} {v}' for k, v in removed.items()) or 'none'}"
    )


@data_app.command("fetch-alignments")
def data_fetch_alignments(
    root: str = typer.Option("data", help="Data root: the archive goes to ROOT/alignments/DeEnGoldAlignment.tar.gz."),
    mirror: Optional[str] = typer.Option(None, help="Local folder holding DeEnGoldAlignment.tar.gz, copied instead."),
) -> None:
    """Fetch the RWTH German-English gold word alignments (508 Europarl pairs) and check their checksum.

    What nmt align, notebook 08 and nmt data prepare europarl read; the archive's licence is RWTH's.
    Example: nmt data fetch-alignments (--mirror DIR to copy a local copy instead of downloading)
    """
    from nmt.data.gold_archive import fetch_gold_archive

    typer.echo(f"RWTH gold alignments: {fetch_gold_archive(root, mirror)} (sha256 verified)")


@app.command("train")
def train_cmd(
    ctx: typer.Context,
    config: Optional[Path] = ConfigOpt,
    set_: Optional[list[str]] = SetOpt,
    resume: Optional[Path] = typer.Option(
        None,
        help="Continue the run in this run directory exactly where it stopped, with its own config "
        "(no --config; --set may change train.* and decode.*).",
    ),
    overwrite: bool = typer.Option(
        False, help="Replace an existing run of the same name (only a folder that nmt train wrote)."
    ),
    progress: Optional[bool] = ProgressOpt,
    nproc: Optional[int] = typer.Option(
        None,
        "--nproc",
        min=1,
        help="Train in N processes (DistributedDataParallel, one per GPU, or Gloo on CPU) by running "
        "torchrun --nproc_per_node N for you. An update then holds N x accumulate x max_tokens.",
    ),
    module: Optional[list[str]] = ModuleOpt,
) -> None:
    """Train a model; writes runs/<name>/ with config, checkpoints and metrics.jsonl.

    Ctrl-C or SIGTERM saves checkpoints/last.pt and exits 130 or 143; --resume continues.
    One process at a time may train into a run directory.

    Example: nmt train --config configs/demo.yaml --set train.teacher_forcing=0.5;
    on 4 GPUs: nmt train --config configs/demo.yaml --nproc 4
    """
    use_modules(module)
    from nmt.training import distributed

    shown = progress_shown(progress)
    if nproc is not None and nproc > 1:
        from nmt.training.run_start import check_run

        check_run(config, set_ or [], resume, overwrite)  # user errors in one line, before torchrun
        root = ctx.parent.params if ctx.parent else {}
        args = [*(["--debug"] if root.get("debug") else []), *(["--quiet"] if root.get("quiet") else []), "train"]
        args += ["--config", str(config)] if config else []
        args += [arg for assignment in set_ or [] for arg in ("--set", assignment)]
        args += ["--resume", str(resume)] if resume else []
        args += [arg for name in module or [] for arg in ("--module", name)]
        args += (["--overwrite"] if overwrite else []) + (["--progress"] if shown else ["--no-progress"])
        distributed.relaunch(nproc, args)
    from nmt.training.entry import run_training

    try:
        outcome = run_training(config=config, overrides=set_ or [], resume=resume, overwrite=overwrite, progress=shown)
    except distributed.RankZeroFailed:
        raise typer.Exit(2) from None  # rank 0 reports the error; one message is enough
    if distributed.is_main_process():
        typer.echo(outcome.summary)
    if outcome.exit_code:  # stopped by a signal: `nmt train ... && next-step` must not go on
        raise typer.Exit(outcome.exit_code)


cli_decoding.register(app)  # translate, serve: after train
cli_evaluate.register(app)  # eval, average, compare, variants, report: listed after serve
cli_groups.register(app)  # compare-groups: several nmt compare folders, one per group
cli_align.register(app)  # align: word alignments out of attention, and their error against gold links
cli_tools.register(app)  # select, diagnose: the last steps on a trained run
cli_export.register(app)  # export: after the commands that make and score models
cli_labs.register(app)  # lab: after the commands it builds on
cli_classroom.register(app)  # class: a lecturer's set-up of the notebooks, last
reflow_commands(app)  # each docstring paragraph wrapped once to the terminal (nmt.cli.help_format)
hide_flag_types()


def main(argv: Optional[list[str]] = None) -> None:
    """Console entry point: map errors to one line and an exit status.

    A worker of a multi-process run (torchrun) ends through
    :func:`nmt.training.distributed.end_rank`, with the same status, whatever ends the command.
    """
    try:
        several = torchrun.check_environment() > 1  # before any work
    except UserError as exc:
        print(f"nmt: error: {exc}", file=sys.stderr)
        sys.exit(2)
    if not several:  # torch stays unimported until a command needs it
        return _main(argv)
    from nmt.training import distributed

    try:
        _main(argv)
        code = 0
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
    except BaseException:  # --debug lets errors through: show them, then end as any worker ends
        traceback.print_exc()
        code = 1
    distributed.end_rank(code)


def _main(argv: Optional[list[str]]) -> None:
    """Run the app; every way it can end becomes one line on stderr and ``sys.exit``."""
    from nmt.util.allocator import keep_freed_memory

    keep_freed_memory()  # before the first large tensor
    try:
        code = app(args=argv, standalone_mode=False, obj={"argv": argv})  # click returns a typer.Exit's code here
        if isinstance(code, int) and code:
            sys.exit(code)
    except typer.Exit as exc:
        sys.exit(exc.exit_code)
    except typer.Abort:
        print("nmt: aborted", file=sys.stderr)
        sys.exit(130)
    except typer.TyperException as exc:  # bad option or argument (typer's click exceptions)
        message = exc.format_message() if hasattr(exc, "format_message") else str(exc)
        print(f"nmt: error: {message}", file=sys.stderr)
        sys.exit(2)
    except UserError as exc:
        if _STATE["debug"]:
            raise
        print(f"nmt: error: {exc}", file=sys.stderr)
        sys.exit(2)
    except KeyboardInterrupt:
        print("nmt: interrupted", file=sys.stderr)
        sys.exit(130)
    except OSError as exc:  # a path the user can fix, met while writing: one line, not an internal error
        line = os_error_line(exc)
        if line is None or _STATE["debug"]:
            raise
        print(f"nmt: error: {line}", file=sys.stderr)
        sys.exit(2)
    except Exception as exc:
        if _STATE["debug"]:
            raise
        print(f"nmt: internal error: {type(exc).__name__}: {exc} (rerun with --debug for a traceback)", file=sys.stderr)
        sys.exit(1)


if __name__ == "__main__":
    main()
