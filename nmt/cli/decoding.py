"""``nmt translate`` and ``nmt serve``: a trained or exported model put to work on text."""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer

from nmt.cli.options import ComputeTypeOpt, EngineOpt, ModelDirOpt, ModuleOpt, SetOpt, use_modules
from nmt.config.sections import MAX_BEAM_ROWS
from nmt.serve.limits import READ_TIMEOUT, Limits


def translate_cmd(
    checkpoint: Optional[list[Path]] = typer.Option(
        None,
        "--checkpoint",
        help="A checkpoint, e.g. runs/x/checkpoints/best.pt; give several to decode them as an "
        "ensemble (they must share the SentencePiece models). Or give --model.",
    ),
    model: Optional[Path] = ModelDirOpt,
    engine: Optional[str] = EngineOpt,
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
        f"--sample at most {MAX_BEAM_ROWS} samples.",
    ),
    attention: Optional[Path] = typer.Option(None, help="Write a heat map PNG and JSON weights per sentence here."),
    alignments: Optional[Path] = typer.Option(
        None,
        "--alignments",
        help="Also write each output line's word alignment to this file (Pharaoh i-j, 0-based; one line per "
        "output line), as nmt align gives it for the pair (input line, output line): needs an engine with "
        "attention (torch or onnxruntime).",
    ),
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
    module: Optional[list[str]] = ModuleOpt,
) -> None:
    """Translate text with greedy or beam search, or by sampling, one output line per input line.

    The beam is at most the model's target vocabulary size; a wide beam searches fewer
    sentences at once rather than using more memory. Outputs are at most 1024 tokens, and
    -o may not name the input file.

    Several --checkpoint options decode as one ensemble (each step averages their log-probabilities).

    --alignments forces each output back through the model and links each of its words to one
    input word, by the rule and the attention nmt align uses (see nmt align --help).

    Examples: nmt translate --checkpoint runs/demo/checkpoints/best.pt -i in.txt -o out.txt --beam 5;
    nmt translate --checkpoint best.pt --sample --top-p 0.9 --n-best 5 --seed 7;
    nmt translate --engine onnxruntime --model exports/demo-onnx -i in.txt;
    nmt translate --checkpoint best.pt -i in.txt -o out.txt --alignments out.align
    """
    use_modules(module)
    from nmt.decode.engines import open_engine
    from nmt.decode.request import decode_overrides
    from nmt.decode.translate import translate_file

    options = dict(  # what nmt.Translator.translate builds from the same options
        sample=sample,
        top_k=top_k,
        top_p=top_p,
        temperature=temperature,
        seed=seed,
        no_repeat_ngram=no_repeat_ngram,
        coverage_penalty=coverage_penalty,
        max_len_a=max_len_a,
        max_len_b=max_len_b,
    )
    overrides = (set_ or []) + decode_overrides(options)
    translate_file(
        lambda: open_engine(engine, checkpoint or [], model, compute_type=compute_type),
        input,
        output,
        beam=beam,
        n_best=n_best,
        attention_dir=attention,
        overrides=overrides,
        flush=flush,
        alignments=alignments,
    )


SERVE_LIMITS = Limits()
"""nmt serve's defaults (:class:`nmt.serve.limits.Limits`)."""


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
        help="A folder written by nmt export: DIR or NAME=DIR (default name: the folder's); repeat for several, "
        "all of one format, which chooses the engine unless --engine is given. May be given beside --checkpoint "
        "with a safetensors export (engine torch).",
    ),
    engine: Optional[str] = EngineOpt,
    compute_type: str = ComputeTypeOpt,
    host: str = typer.Option(
        "127.0.0.1", help="Address to listen on (default loopback only; the API has no authentication)."
    ),
    port: int = typer.Option(8000, help="Port to listen on (0 = any free port; the log names it)."),
    device: str = typer.Option(
        "auto",
        help="auto (CUDA, else Apple's MPS, when present), cpu, cuda or mps; --engine onnxruntime and ctranslate2 "
        "run on the CPU.",
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
    module: Optional[list[str]] = ModuleOpt,
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
    use_modules(module)
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


def register(app: typer.Typer) -> None:
    app.command("translate")(translate_cmd)
    app.command("serve")(serve_cmd)
