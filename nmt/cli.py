"""The ``nmt`` command line: each command parses, loads the config, calls one function.

User errors (:class:`~nmt.errors.UserError`, bad options) print one line to
stderr and exit 2; internal errors exit 1.  ``--debug`` shows tracebacks.
Heavy imports (torch) happen inside commands so ``nmt --help`` stays fast.
"""

from __future__ import annotations

import logging
import sys
from pathlib import Path
from typing import Optional

import typer

from nmt import __version__
from nmt.errors import UserError
from nmt.serve.limits import Limits

app = typer.Typer(
    help="Train, compare and understand attention-based translation models (RNNs and the Transformer).",
    no_args_is_help=True, add_completion=False, pretty_exceptions_enable=False,
)
data_app = typer.Typer(help="Download, clean, split and tokenize parallel corpora.", no_args_is_help=True)
app.add_typer(data_app, name="data")

_STATE = {"debug": False}

ConfigOpt = typer.Option(None, "--config", "-c", help="Experiment YAML file (defaults apply when omitted).")
SetOpt = typer.Option(None, "--set", "-s", help="Override one option, e.g. --set model.attention.type=luong_dot.")


def _version(value: bool) -> None:
    if value:
        typer.echo(f"nmt {__version__}")
        raise typer.Exit()


@app.callback()
def root(
    debug: bool = typer.Option(False, "--debug", help="Show full tracebacks on errors."),
    quiet: bool = typer.Option(False, "--quiet", "-q", help="Only warnings and errors in the log."),
    version: bool = typer.Option(False, "--version", callback=_version, is_eager=True, help="Print the version and exit."),
) -> None:
    """nmt: RNN encoder-decoder translation with the whole attention family."""
    _STATE["debug"] = debug
    logging.basicConfig(level=logging.WARNING if quiet else logging.INFO,
                        format="%(asctime)s %(levelname)s %(message)s", datefmt="%H:%M:%S")


def _load_config(config: Optional[Path], overrides: Optional[list[str]]):
    from nmt import config as cfg

    return cfg.load(config, overrides or [])


@app.command("config")
def config_cmd(config: Optional[Path] = ConfigOpt, set_: Optional[list[str]] = SetOpt) -> None:
    """List every option with its default and description; with --config, print the resolved YAML.

    Example: nmt config --config configs/demo.yaml --set train.lr=0.0005
    """
    from nmt import config as cfg

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
    typer.echo(f"prepared {cfg.data.prepared_dir}: {sizes} pairs; training pairs removed by filter: "
               f"{', '.join(f'{k} {v}' for k, v in removed.items()) or 'none'}")


@app.command("train")
def train_cmd(
    ctx: typer.Context,
    config: Optional[Path] = ConfigOpt,
    set_: Optional[list[str]] = SetOpt,
    resume: Optional[Path] = typer.Option(
        None, help="Continue the run in this run directory exactly where it stopped, with its own config "
                   "(no --config; --set may change train.* and decode.*)."),
    overwrite: bool = typer.Option(
        False, help="Replace an existing run of the same name (only a folder that nmt train wrote)."),
    progress: bool = typer.Option(True, help="Show a progress bar (--no-progress for logs)."),
    nproc: Optional[int] = typer.Option(
        None, "--nproc", min=1,
        help="Train in N processes (DistributedDataParallel, one per GPU, or Gloo on CPU) by running "
             "torchrun --nproc_per_node N for you. An update then holds N x accumulate x max_tokens."),
) -> None:
    """Train a model; writes runs/<name>/ with config, checkpoints and metrics.jsonl.

    Ctrl-C or SIGTERM saves checkpoints/last.pt and exits 130 or 143; --resume continues.
    One process at a time may train into a run directory.

    Example: nmt train --config configs/demo.yaml --set train.teacher_forcing=0.5;
    on 4 GPUs: nmt train --config configs/demo.yaml --nproc 4
    """
    from nmt import distributed

    if nproc is not None and nproc > 1:
        from nmt.train import check_run

        check_run(config, set_ or [], resume, overwrite)  # user errors in one line, before torchrun
        root = ctx.parent.params if ctx.parent else {}
        args = [*(["--debug"] if root.get("debug") else []), *(["--quiet"] if root.get("quiet") else []), "train"]
        args += ["--config", str(config)] if config else []
        args += [arg for assignment in set_ or [] for arg in ("--set", assignment)]
        args += ["--resume", str(resume)] if resume else []
        args += (["--overwrite"] if overwrite else []) + ([] if progress else ["--no-progress"])
        distributed.relaunch(nproc, args)
    from nmt.train import run_training

    try:
        outcome = run_training(config=config, overrides=set_ or [], resume=resume,
                               overwrite=overwrite, progress=progress)
    except distributed.RankZeroFailed:
        raise typer.Exit(2) from None  # rank 0 reports the error; one message is enough
    if distributed.is_main_process():
        typer.echo(outcome.summary)
    if outcome.exit_code:  # stopped by a signal: `nmt train ... && next-step` must not go on
        raise typer.Exit(outcome.exit_code)


@app.command("translate")
def translate_cmd(
    checkpoint: list[Path] = typer.Option(
        ..., "--checkpoint", help="A checkpoint, e.g. runs/x/checkpoints/best.pt; give several to decode them as an "
                                  "ensemble (they must share the SentencePiece models)."),
    input: Optional[Path] = typer.Option(None, "--input", "-i", help="Source text, one sentence per line (default stdin)."),
    output: Optional[Path] = typer.Option(None, "--output", "-o", help="Where to write translations (default stdout)."),
    beam: Optional[int] = typer.Option(None, help="Beam size (1 = greedy); default from the run's config."),
    n_best: Optional[int] = typer.Option(None, "--n-best", help="Write this many scored hypotheses per line (TSV)."),
    attention: Optional[Path] = typer.Option(None, help="Write a heat map PNG and JSON weights per sentence here."),
    set_: Optional[list[str]] = SetOpt,
    flush: bool = typer.Option(
        False, "--flush", help="Translate and write out each line as soon as it is read (always on a "
                               "terminal); for programs that wait for each answer. Slower on big files."),
    no_repeat_ngram: Optional[int] = typer.Option(
        None, "--no-repeat-ngram", help="Never repeat an n-gram of this many tokens (decode.no_repeat_ngram)."),
    coverage_penalty: Optional[float] = typer.Option(
        None, "--coverage-penalty", help="GNMT coverage penalty beta for beam search, e.g. 0.2 "
                                         "(decode.coverage_penalty)."),
    sample: bool = typer.Option(
        False, "--sample", help="Draw tokens instead of searching: --n-best samples per line (decode.sample)."),
    top_k: Optional[int] = typer.Option(None, "--top-k", help="Sampling: only the k most probable tokens (0 = all)."),
    top_p: Optional[float] = typer.Option(
        None, "--top-p", help="Sampling: only the most probable tokens holding this probability, in (0, 1]."),
    temperature: Optional[float] = typer.Option(None, help="Sampling: logits divided by this (> 0)."),
    seed: Optional[int] = typer.Option(None, help="Sampling: random seed (decode.seed, default 1)."),
    max_len_a: Optional[float] = typer.Option(
        None, "--max-len-a", help="Output length limit a * source tokens + b: a (decode.max_len_a)."),
    max_len_b: Optional[int] = typer.Option(
        None, "--max-len-b", help="Output length limit a * source tokens + b: b (decode.max_len_b)."),
) -> None:
    """Translate text with greedy or beam search, or by sampling, one output line per input line.

    The beam is at most the model's target vocabulary size; a wide beam searches fewer
    sentences at once rather than using more memory.

    Several --checkpoint options decode as one ensemble (each step averages their log-probabilities).

    Examples: nmt translate --checkpoint runs/demo/checkpoints/best.pt -i in.txt -o out.txt --beam 5;
    nmt translate --checkpoint best.pt --sample --top-p 0.9 --n-best 5 --seed 7
    """
    from nmt.translate import translate_file

    options = {"no_repeat_ngram": no_repeat_ngram, "coverage_penalty": coverage_penalty, "top_k": top_k,
               "top_p": top_p, "temperature": temperature, "seed": seed, "max_len_a": max_len_a,
               "max_len_b": max_len_b, "sample": sample or None}
    if sample:  # the beam a config names gives way; a --beam given beside --sample is refused later
        options["beam"] = 1
    overrides = (set_ or []) + [f"decode.{key}={value}" for key, value in options.items() if value is not None]
    translate_file(checkpoint, input, output, beam=beam, n_best=n_best,
                   attention_dir=attention, overrides=overrides, flush=flush)


SERVE_LIMITS = Limits()
"""nmt serve's defaults (:class:`nmt.serve.limits.Limits`)."""


@app.command("serve")
def serve_cmd(
    checkpoint: list[str] = typer.Option(
        ..., "--checkpoint", help="A model to serve: PATH or NAME=PATH; repeat for several, side by side "
                                  "(default name: the run folder of runs/<run>/checkpoints/x.pt, else the file stem)."),
    host: str = typer.Option("127.0.0.1", help="Address to listen on (default loopback only; the API has no "
                                               "authentication)."),
    port: int = typer.Option(8000, help="Port to listen on (0 = any free port; the log names it)."),
    device: str = typer.Option("auto", help="auto (CUDA when present), cpu or cuda."),
    threads: int = typer.Option(0, help="CPU threads for torch (0 = one per core other processes leave free)."),
    max_request_bytes: int = typer.Option(SERVE_LIMITS.max_request_bytes, help="Largest request body; larger gets 413."),
    max_sentences: int = typer.Option(SERVE_LIMITS.max_sentences, help="Most sentences per request."),
    max_chars: int = typer.Option(SERVE_LIMITS.max_chars, help="Most characters per sentence."),
    max_src_tokens: int = typer.Option(SERVE_LIMITS.max_src_tokens, help="Most subword tokens per source sentence."),
    max_beam: int = typer.Option(SERVE_LIMITS.max_beam, help="Largest beam (and n-best) a request may ask for."),
    max_output_tokens: int = typer.Option(SERVE_LIMITS.max_output_tokens, help="Largest max_len a request may ask for."),
    max_attention_sentences: int = typer.Option(
        SERVE_LIMITS.max_attention_sentences, help="Most sentences in a request that asks for attention weights."),
    batch_sentences: int = typer.Option(SERVE_LIMITS.batch_sentences, help="Most sentences merged from concurrent requests into one search."),
    batch_wait_ms: float = typer.Option(SERVE_LIMITS.batch_wait_ms, help="How long a search waits for more requests to merge (ms)."),
    max_pending: int = typer.Option(SERVE_LIMITS.max_pending, help="Requests queued before the server answers 503."),
) -> None:
    """Serve models over HTTP: POST /translate, GET /models, GET /health, and a page at / to explore attention.

    Models are loaded once; requests that arrive together are translated in one search call.
    Every request is bounded (sentences, characters, tokens, beam, output length, body size) and
    a bad one gets a 4xx with a JSON error.

    Example: nmt serve --checkpoint bahdanau=runs/a/checkpoints/best.pt --checkpoint qkv=runs/b/checkpoints/best.pt
    """
    from nmt.serve.server import serve

    limits = Limits(max_request_bytes=max_request_bytes, max_sentences=max_sentences, max_chars=max_chars,
                    max_src_tokens=max_src_tokens, max_beam=max_beam, max_output_tokens=max_output_tokens,
                    max_attention_sentences=max_attention_sentences, batch_sentences=batch_sentences, batch_wait_ms=batch_wait_ms, max_pending=max_pending)
    serve(checkpoint, host=host, port=port, limits=limits, device=device, threads=threads)


@app.command("eval")
def eval_cmd(
    checkpoint: Optional[list[Path]] = typer.Option(
        None, help="Translate a corpus split with this checkpoint, then score; several decode as an ensemble."),
    split: str = typer.Option("test", help="Split of the run's corpus to translate (with --checkpoint)."),
    hyp: Optional[list[Path]] = typer.Option(
        None, help="Hypothesis file(s) to score, one line per reference line; with several, each is compared "
                   "with the first (the baseline)."),
    ref: Optional[Path] = typer.Option(None, help="Reference file (with --hyp)."),
    src: Optional[Path] = typer.Option(None, help="Source file (with --hyp) for BLEU by source length."),
    out: Optional[Path] = typer.Option(None, help="Folder for report.json, report.md and plots."),
    beam: Optional[int] = typer.Option(None, help="Beam size when translating (default from the run's config)."),
    test: str = typer.Option(
        "both", help="Significance test for several --hyp files: bootstrap (paired bootstrap resampling), "
                     "ar (approximate randomization) or both."),
    bootstrap_samples: int = typer.Option(1000, help="Resamples of the paired bootstrap."),
    ar_trials: int = typer.Option(10000, help="Trials of approximate randomization."),
    seed: int = typer.Option(12345, help="Seed of both tests (a positive integer), so p-values repeat."),
    set_: Optional[list[str]] = SetOpt,
) -> None:
    """Score with sacreBLEU (BLEU, chrF, TER), by source length, and compare systems by paired
    bootstrap resampling and approximate randomization; writes report.json and report.md.

    Examples: nmt eval --checkpoint runs/demo/checkpoints/best.pt --split test;
    nmt eval --hyp a.txt --hyp b.txt --ref ref.txt --src src.txt --test both --seed 7
    """
    from nmt.report import run_eval

    typer.echo(run_eval(checkpoints=checkpoint or [], split=split, hyps=hyp or [], ref=ref, src=src,
                        out=out, beam=beam, overrides=set_ or [], test=test,
                        bootstrap_samples=bootstrap_samples, ar_trials=ar_trials, seed=seed))


@app.command("average")
def average_cmd(
    inputs: list[Path] = typer.Argument(
        ..., help="Checkpoint files and/or run folders (a run folder gives its step checkpoints).", show_default=False),
    output: Path = typer.Option(..., "--output", "-o", help="Where to write the averaged checkpoint, e.g. avg.pt."),
    last: Optional[int] = typer.Option(
        None, help="From each run folder, the N latest step checkpoints (default 5; kept by train.keep_last)."),
    best: Optional[int] = typer.Option(
        None, help="From each run folder, the N best step checkpoints by the run's validation metric "
                   "(kept by train.keep_best)."),
) -> None:
    """Average the parameters of several checkpoints into one, for translate and eval.

    Examples: nmt average runs/m30k --last 5 -o runs/m30k/checkpoints/avg.pt;
    nmt average a.pt b.pt c.pt -o avg.pt
    """
    from nmt.average import run_average

    typer.echo(run_average(inputs, output, last=last, best=best))


@app.command("compare")
def compare_cmd(
    config: Optional[Path] = ConfigOpt,
    variants: str = typer.Option(
        "bahdanau,luong_general", help="Comma-separated variants (nmt variants lists them); the first is the "
                                       "baseline unless --baseline says otherwise."),
    seeds: str = typer.Option("1,2", help="Comma-separated training seeds; every variant trains once per seed."),
    steps: Optional[int] = typer.Option(None, help="Updates per run (default: the config's train.max_steps)."),
    baseline: Optional[str] = typer.Option(None, help="Variant the others are tested against (default: the first)."),
    split: str = typer.Option("test", help="Split to translate and score with each run's best checkpoint."),
    beam: Optional[int] = typer.Option(None, help="Beam size for scoring (default: the config's decode.beam)."),
    runs_dir: Optional[Path] = typer.Option(
        None, help="Folder for the runs, <variant>_s<seed> (default: runs/compare_<config name>)."),
    out: Optional[Path] = typer.Option(None, help="Folder for report.json and report.md (default: RUNS_DIR/report)."),
    set_: Optional[list[str]] = SetOpt,
    progress: bool = typer.Option(True, help="Show progress bars (--no-progress for logs)."),
    dry_run: bool = typer.Option(False, help="Only list each run as reuse, train, replace (a run of another "
                                             "config, or an unfinished one, which training overwrites) or refused "
                                             "(files nmt did not write); train nothing."),
) -> None:
    """Train variants for the same number of updates over several seeds and compare their scores.

    Reports mean and standard deviation of BLEU and chrF, paired bootstrap p-values against
    the baseline per seed, BLEU by source length, updates, wall time and parameters. Finished
    runs are reused, so an interrupted comparison continues where it stopped.

    Example: nmt compare --config configs/demo.yaml --variants bahdanau,luong_general,qkv --seeds 1,2 --steps 600
    """
    from nmt.compare import Plan, parse_list, planned_runs, run_compare

    plan = Plan(config=config, variants=parse_list(variants, "variants"), seeds=parse_list(seeds, "seeds", int),
                steps=steps, baseline=baseline, split=split, beam=beam, overrides=set_ or [],
                runs_dir=runs_dir or Path("runs") / f"compare_{config.stem if config else 'defaults'}")
    typer.echo("\n".join(planned_runs(plan)) if dry_run else run_compare(plan, out=out, progress=progress))


@app.command("variants")
def variants_cmd() -> None:
    """List the named variants that nmt compare trains, with the overrides each applies.

    Example: nmt variants
    """
    from nmt.variants import VARIANTS

    width = max(len(name) for name in VARIANTS)
    for name, overrides in VARIANTS.items():
        typer.echo(f"{name:<{width}}  {' '.join(overrides)}")


@app.command("report")
def report_cmd(
    runs: list[Path] = typer.Argument(
        ..., help="Run folders holding metrics.jsonl (runs/<name>); their eval-greedy and eval-beam5 "
                  "folders (nmt eval --out RUN/eval-greedy, --beam 5 --out RUN/eval-beam5) give the test "
                  "scores.", show_default=False, metavar="RUN"),
    out: Optional[Path] = typer.Option(
        None, help="Folder for report.md and the two learning-curve PNGs (default: report/ beside the first "
                   "run, e.g. runs/report)."),
) -> None:
    """Report on finished or running runs: learning curves, final scores, parameters, throughput.

    Writes report.md and valid_bleu_by_updates.png / valid_bleu_by_minutes.png (validation BLEU
    against updates and against wall-clock minutes, one line per run) into --out, and prints
    the results table (Markdown, one row per run) on stdout, so the README's table is
    `nmt report ... > table.md`.

    Example: nmt report runs/multi30k_de_en_best runs/multi30k_de_en_none --out docs/multi30k
    """
    from nmt.run_report import write_report

    path, table = write_report(runs, out)
    typer.echo(table)
    typer.echo(f"nmt report: wrote {path}", err=True)


def main(argv: Optional[list[str]] = None) -> None:
    """Console entry point: map errors to one line and an exit status."""
    from nmt.runtime import keep_freed_memory

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
    except Exception as exc:  # noqa: BLE001 - the last line of defence
        if _STATE["debug"]:
            raise
        print(f"nmt: internal error: {type(exc).__name__}: {exc} (rerun with --debug for a traceback)",
              file=sys.stderr)
        sys.exit(1)


if __name__ == "__main__":
    main()
