"""The ``nmt`` command line: each command parses, loads the config, calls one function.

User errors (:class:`~nmt.util.errors.UserError`, bad options) print one line to
stderr and exit 2; internal errors exit 1.  ``--debug`` shows tracebacks.
Heavy imports (torch) happen inside commands so ``nmt --help`` stays fast.
The commands on trained models (eval, average, compare, variants, report) live in
:mod:`nmt.cli.evaluate`; options several commands share, in :mod:`nmt.cli.options`.
"""

from __future__ import annotations

import logging
import sys
from pathlib import Path
from typing import Optional

import typer

from nmt import __version__
from nmt.cli import evaluate as cli_evaluate
from nmt.cli import export as cli_export
from nmt.cli import labs as cli_labs
from nmt.cli.options import ComputeTypeOpt, ConfigOpt, EngineOpt, ModelDirOpt, SetOpt
from nmt.serve.limits import READ_TIMEOUT, Limits
from nmt.util.errors import UserError

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
    logging.basicConfig(
        level=logging.WARNING if quiet else logging.INFO,
        format="%(asctime)s %(levelname)s %(message)s",
        datefmt="%H:%M:%S",
    )


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
) -> None:
    """List every option with its default and description; with --config, print the resolved YAML;
    with --schema, print the JSON Schema an editor checks config files against.

    Example: nmt config --config configs/demo.yaml --set train.lr=0.0005
    """
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
    for name, expansion in attention:
        typer.echo(f"{name:<{width}}  {expansion}")
    typer.echo("\nmodel presets:")
    for name, expansion in models:
        typer.echo(f"{name:<{width}}  {expansion}")


@data_app.command("prepare")
def data_prepare(
    corpus: str = typer.Argument(..., help="synthetic, multi30k, hub or local."),
    pair: Optional[str] = typer.Option(None, help="Language pair SRC-TGT, e.g. de-en."),
    mirror: Optional[str] = typer.Option(None, help="Local folder with the Multi30k files (else $NMT_DATA_MIRROR)."),
    config: Optional[Path] = ConfigOpt,
    set_: Optional[list[str]] = SetOpt,
    force: bool = typer.Option(False, help="Rebuild even if the prepared files are up to date."),
    progress: bool = typer.Option(True, help="Show progress bars on a terminal (--no-progress for logs)."),
) -> None:
    """Fetch a corpus, clean the training split, write the splits and train SentencePiece.

    Example: nmt data prepare multi30k --pair de-en --mirror ../shared/data/multi30k
    """
    from nmt.data.pipeline import prepare_corpus

    overrides = [f"data.corpus={corpus}", *(set_ or [])]
    if pair:
        src, sep, tgt = pair.partition("-")
        if not sep or not src or not tgt:
            raise UserError(f"--pair {pair!r}: expected SRC-TGT, e.g. de-en")
        overrides += [f"data.src={src}", f"data.tgt={tgt}"]
    if mirror:
        overrides.append(f"data.mirror={mirror}")
    cfg = _load_config(config, overrides)
    manifest = prepare_corpus(cfg.data, force=force, progress=progress)
    sizes = ", ".join(f"{name} {info['pairs']}" for name, info in manifest["splits"].items())
    removed = manifest["cleaning"]["removed"]
    typer.echo(
        f"prepared {cfg.data.prepared_dir}: {sizes} pairs; training pairs removed by filter: "
        f"{', '.join(f'{k} {v}' for k, v in removed.items()) or 'none'}"
    )


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
    progress: bool = typer.Option(True, help="Show a progress bar (--no-progress for logs)."),
    nproc: Optional[int] = typer.Option(
        None,
        "--nproc",
        min=1,
        help="Train in N processes (DistributedDataParallel, one per GPU, or Gloo on CPU) by running "
        "torchrun --nproc_per_node N for you. An update then holds N x accumulate x max_tokens.",
    ),
) -> None:
    """Train a model; writes runs/<name>/ with config, checkpoints and metrics.jsonl.

    Ctrl-C or SIGTERM saves checkpoints/last.pt and exits 130 or 143; --resume continues.
    One process at a time may train into a run directory.

    Example: nmt train --config configs/demo.yaml --set train.teacher_forcing=0.5;
    on 4 GPUs: nmt train --config configs/demo.yaml --nproc 4
    """
    from nmt.train import distributed

    if nproc is not None and nproc > 1:
        from nmt.train.run_start import check_run

        check_run(config, set_ or [], resume, overwrite)  # user errors in one line, before torchrun
        root = ctx.parent.params if ctx.parent else {}
        args = [*(["--debug"] if root.get("debug") else []), *(["--quiet"] if root.get("quiet") else []), "train"]
        args += ["--config", str(config)] if config else []
        args += [arg for assignment in set_ or [] for arg in ("--set", assignment)]
        args += ["--resume", str(resume)] if resume else []
        args += (["--overwrite"] if overwrite else []) + ([] if progress else ["--no-progress"])
        distributed.relaunch(nproc, args)
    from nmt.train.loop import run_training

    try:
        outcome = run_training(
            config=config, overrides=set_ or [], resume=resume, overwrite=overwrite, progress=progress
        )
    except distributed.RankZeroFailed:
        raise typer.Exit(2) from None  # rank 0 reports the error; one message is enough
    if distributed.is_main_process():
        typer.echo(outcome.summary)
    if outcome.exit_code:  # stopped by a signal: `nmt train ... && next-step` must not go on
        raise typer.Exit(outcome.exit_code)


@app.command("translate")
def translate_cmd(
    checkpoint: Optional[list[Path]] = typer.Option(
        None,
        "--checkpoint",
        help="A checkpoint, e.g. runs/x/checkpoints/best.pt; give several to decode them as an "
        "ensemble (they must share the SentencePiece models). Or give --model.",
    ),
    model: Optional[Path] = ModelDirOpt,
    engine: str = EngineOpt,
    compute_type: str = ComputeTypeOpt,
    input: Optional[Path] = typer.Option(
        None, "--input", "-i", help="Source text, one sentence per line (default stdin)."
    ),
    output: Optional[Path] = typer.Option(
        None, "--output", "-o", help="Where to write translations (default stdout); never the input file."
    ),
    beam: Optional[int] = typer.Option(None, help="Beam size (1 = greedy); default from the run's config."),
    n_best: Optional[int] = typer.Option(
        None,
        "--n-best",
        help="Write this many scored hypotheses per line (TSV): at most the beam, or with "
        "--sample at most 4096 samples.",
    ),
    attention: Optional[Path] = typer.Option(None, help="Write a heat map PNG and JSON weights per sentence here."),
    set_: Optional[list[str]] = SetOpt,
    flush: bool = typer.Option(
        False,
        "--flush",
        help="Translate and write out each line as soon as it is read (always on a "
        "terminal); for programs that wait for each answer. Slower on big files.",
    ),
    no_repeat_ngram: Optional[int] = typer.Option(
        None, "--no-repeat-ngram", help="Never repeat an n-gram of this many tokens (decode.no_repeat_ngram)."
    ),
    coverage_penalty: Optional[float] = typer.Option(
        None,
        "--coverage-penalty",
        help="GNMT coverage penalty beta for beam search (--beam 2 or more), e.g. 0.2 (decode.coverage_penalty).",
    ),
    sample: bool = typer.Option(
        False, "--sample", help="Draw tokens instead of searching: --n-best samples per line (decode.sample)."
    ),
    top_k: Optional[int] = typer.Option(
        None, "--top-k", help="Sampling (needs --sample): only the k most probable tokens (0 = all)."
    ),
    top_p: Optional[float] = typer.Option(
        None,
        "--top-p",
        help="Sampling (needs --sample): only the most probable tokens holding this probability, in (0, 1].",
    ),
    temperature: Optional[float] = typer.Option(None, help="Sampling (needs --sample): logits divided by this (> 0)."),
    seed: Optional[int] = typer.Option(None, help="Sampling: random seed (decode.seed, default 1)."),
    max_len_a: Optional[float] = typer.Option(
        None,
        "--max-len-a",
        help="Output length limit a * source tokens + b: a, at most 10 (decode.max_len_a). "
        "No output exceeds 1024 tokens.",
    ),
    max_len_b: Optional[int] = typer.Option(
        None,
        "--max-len-b",
        help="Output length limit a * source tokens + b: b, at most 1024 (decode.max_len_b). "
        "No output exceeds 1024 tokens.",
    ),
) -> None:
    """Translate text with greedy or beam search, or by sampling, one output line per input line.

    The beam is at most the model's target vocabulary size; a wide beam searches fewer
    sentences at once rather than using more memory. Outputs are at most 1024 tokens, and
    -o may not name the input file.

    Several --checkpoint options decode as one ensemble (each step averages their log-probabilities).

    Examples: nmt translate --checkpoint runs/demo/checkpoints/best.pt -i in.txt -o out.txt --beam 5;
    nmt translate --checkpoint best.pt --sample --top-p 0.9 --n-best 5 --seed 7;
    nmt translate --engine onnxruntime --model exports/demo-onnx -i in.txt
    """
    from nmt.decode.engines import open_engine
    from nmt.decode.translate import translate_file

    options = {
        "no_repeat_ngram": no_repeat_ngram,
        "coverage_penalty": coverage_penalty,
        "top_k": top_k,
        "top_p": top_p,
        "temperature": temperature,
        "seed": seed,
        "max_len_a": max_len_a,
        "max_len_b": max_len_b,
        "sample": sample or None,
    }
    if sample:  # the beam a config names gives way; a --beam given beside --sample is refused later
        options["beam"] = 1
    overrides = (set_ or []) + [f"decode.{key}={value}" for key, value in options.items() if value is not None]
    translate_file(
        lambda: open_engine(engine, checkpoint or [], model, compute_type=compute_type),
        input,
        output,
        beam=beam,
        n_best=n_best,
        attention_dir=attention,
        overrides=overrides,
        flush=flush,
    )


SERVE_LIMITS = Limits()
"""nmt serve's defaults (:class:`nmt.serve.limits.Limits`)."""


@app.command("serve")
def serve_cmd(
    checkpoint: Optional[list[str]] = typer.Option(
        None,
        "--checkpoint",
        help="A model to serve (--engine torch): PATH or NAME=PATH; repeat for several, side by side "
        "(default name: the run folder of runs/<run>/checkpoints/x.pt, else the file stem).",
    ),
    model: Optional[list[str]] = typer.Option(
        None,
        "--model",
        help="A folder written by nmt export, in the format --engine runs: DIR or NAME=DIR (default "
        "name: the folder's); repeat for several. May be given beside --checkpoint with --engine torch.",
    ),
    engine: str = EngineOpt,
    compute_type: str = ComputeTypeOpt,
    host: str = typer.Option(
        "127.0.0.1", help="Address to listen on (default loopback only; the API has no authentication)."
    ),
    port: int = typer.Option(8000, help="Port to listen on (0 = any free port; the log names it)."),
    device: str = typer.Option(
        "auto", help="auto (CUDA when present), cpu or cuda; --engine onnxruntime and ctranslate2 run on the CPU."
    ),
    threads: int = typer.Option(
        0,
        help="CPU threads: torch's (0 = one per core other processes leave free), or onnxruntime's "
        "and CTranslate2's (0 = their default).",
    ),
    max_request_bytes: int = typer.Option(
        SERVE_LIMITS.max_request_bytes, help="Largest request body; larger gets 413."
    ),
    max_sentences: int = typer.Option(SERVE_LIMITS.max_sentences, help="Most sentences per request."),
    max_chars: int = typer.Option(SERVE_LIMITS.max_chars, help="Most characters per sentence."),
    max_src_tokens: int = typer.Option(SERVE_LIMITS.max_src_tokens, help="Most subword tokens per source sentence."),
    max_beam: int = typer.Option(SERVE_LIMITS.max_beam, help="Largest beam (and n-best) a request may ask for."),
    max_output_tokens: int = typer.Option(
        SERVE_LIMITS.max_output_tokens, help="Largest max_len a request may ask for."
    ),
    max_attention_sentences: int = typer.Option(
        SERVE_LIMITS.max_attention_sentences, help="Most sentences in a request that asks for attention weights."
    ),
    batch_sentences: int = typer.Option(
        SERVE_LIMITS.batch_sentences, help="Most sentences merged from concurrent requests into one search."
    ),
    batch_wait_ms: float = typer.Option(
        SERVE_LIMITS.batch_wait_ms, help="How long a search waits for more requests to merge (ms)."
    ),
    max_pending: int = typer.Option(SERVE_LIMITS.max_pending, help="Requests queued before the server answers 503."),
    read_timeout: float = typer.Option(
        READ_TIMEOUT,
        help="Seconds a client has to send a whole request (from connecting or the previous "
        "response); slower gets 408 or a closed connection.",
    ),
) -> None:
    """Serve models over HTTP: POST /translate, GET /models, GET /health, and a page at / to explore attention.

    Models are loaded once; requests that arrive together are translated in one search call.
    Every request is bounded (sentences, characters, tokens, beam, output length, body size, the
    time to send it) and a bad one gets a 4xx with a JSON error.  The port is bound before the
    models load: a port in use fails at once.

    --engine runs every model: torch (--checkpoint, or --model with a safetensors export),
    onnxruntime or ctranslate2 (--model with an ONNX or CTranslate2 export; neither imports
    torch).  Attention differs by engine: torch returns the searches' weights and, for a
    Transformer, every layer and head; onnxruntime the searches' weights only (a Transformer's
    last layer, mean over heads); ctranslate2 none: a request with "attention": true gets 422,
    and the page shows its translations and hypotheses without a heat map.

    Examples: nmt serve --checkpoint bahdanau=runs/a/checkpoints/best.pt --checkpoint qkv=runs/b/checkpoints/best.pt;
    nmt serve --engine onnxruntime --model demo=exports/demo-onnx
    """
    from nmt.serve.server import serve

    limits = Limits(
        max_request_bytes=max_request_bytes,
        max_sentences=max_sentences,
        max_chars=max_chars,
        max_src_tokens=max_src_tokens,
        max_beam=max_beam,
        max_output_tokens=max_output_tokens,
        max_attention_sentences=max_attention_sentences,
        batch_sentences=batch_sentences,
        batch_wait_ms=batch_wait_ms,
        max_pending=max_pending,
    )
    serve(
        checkpoint or [],
        model_dirs=model or [],
        engine=engine,
        host=host,
        port=port,
        limits=limits,
        device=device,
        threads=threads,
        compute_type=compute_type,
        read_timeout=read_timeout,
    )


cli_evaluate.register(app)  # eval, average, compare, variants, report: listed after serve
cli_export.register(app)  # export: after the commands that make and score models
cli_labs.register(app)  # lab: last


def main(argv: Optional[list[str]] = None) -> None:
    """Console entry point: map errors to one line and an exit status."""
    from nmt.util.allocator import keep_freed_memory

    keep_freed_memory()  # before the first large tensor
    try:
        code = app(args=argv, standalone_mode=False)  # click returns a typer.Exit's code here
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
    except Exception as exc:
        if _STATE["debug"]:
            raise
        print(f"nmt: internal error: {type(exc).__name__}: {exc} (rerun with --debug for a traceback)", file=sys.stderr)
        sys.exit(1)


if __name__ == "__main__":
    main()
