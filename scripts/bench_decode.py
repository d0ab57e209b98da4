"""Decoding speed of a trained checkpoint: sentences per second by engine, beam size and batch size.

For each engine in ``--engine`` (ctranslate2 once per ``--compute-type``), beam in ``--beams``
and batch size in ``--batch-sizes``, all input lines (or the first ``--limit``) are translated
by that engine (:mod:`nmt.decode.engines`) with the checkpoint's decode settings.  Sentences are
encoded once, before any clock starts, so every engine gets the same ids; one untimed batch
warms each setting up, and the whole input is translated again until ``--min-seconds`` are
timed (a GPU's pass can last a tenth of a second).  Each line also gives the BLEU of that run's
output, so a faster engine or int8 weights show what they cost in quality.  One JSON line per
setting on stdout, logs on stderr.

onnxruntime and ctranslate2 run an export of ``--checkpoint`` written into
``<run>/exports/<checkpoint name>-<format>/`` (or ``--export-dir``), reused while its export.json
names the checkpoint's update and is newer than the checkpoint file.  Both run on the CPU, and
every engine runs the same number of threads (with ``--threads 0``: torch's default, fixed).
CTranslate2 holds Transformers only: for an RNN, a line says so instead of a figure.  Its figure
includes the rescoring that makes its scores ours (:mod:`nmt.decode.ct2`).

The input defaults to the test split of the checkpoint's own corpus:
``<data.root>/<corpus>/<src>-<tgt>/test2016.<src>`` when present (Multi30k), else
``test.<src>``; the references are the same name with the target suffix (or ``--reference``).
``--quick`` translates 200 sentences and skips batch size 1 for beams above 1 (the slowest
setting; the skip is logged on stderr).

Commands behind the README figures (from the repository root, after ``make demo``)::

    python scripts/bench_decode.py --checkpoint runs/demo/checkpoints/best.pt
    python scripts/bench_decode.py --checkpoint runs/demo/checkpoints/best.pt --no-keep-memory
    python scripts/bench_decode.py --checkpoint runs/demo/checkpoints/best.pt --quick   # `make bench`
    python scripts/bench_decode.py --checkpoint runs/demo/checkpoints/best.pt --device cpu --threads 4 \\
        --engine torch,onnxruntime,ctranslate2 --compute-type float32,int8
"""

from __future__ import annotations

import argparse
import logging
from importlib import metadata
from pathlib import Path
from typing import Any, Optional

import torch

import _bench_common as common
from nmt.config import Config
from nmt.decode.engines import ENGINE_NAMES, FORMAT_OF, Engine, open_engine
from nmt.decode.inference import Loaded, encode_sources, load_checkpoint
from nmt.decode.model_info import attention_label
from nmt.decode.torch_engine import TorchEngine
from nmt.engine.manifest import MANIFEST, ExportError, read_manifest
from nmt.model.build import count_parameters
from nmt.run.paths import run_of_checkpoint
from nmt.score.metrics import bleu_with_length
from nmt.util import runtime, threads
from nmt.util.errors import UserError
from nmt.util.fileio import read_lines

log = logging.getLogger("bench_decode")
SCRIPT = "bench_decode.py"
QUICK_LIMIT = 200
EXAMPLE = "runs/demo/checkpoints/best.pt"
MIN_SECONDS = 2.0  # a GPU decodes 1,000 sentences in 0.1-0.4 s: too short to time once


def default_input(cfg: Config) -> Path:
    """The test split of the checkpoint's prepared corpus (test2016 for Multi30k)."""
    folder, src = cfg.data.prepared_dir, cfg.data.src
    for name in (f"test2016.{src}", f"test.{src}"):
        if (folder / name).is_file():
            return folder / name
    raise UserError(
        f"no test split in {folder} (looked for test2016.{src} and test.{src}); "
        f"prepare the corpus (nmt data prepare) or pass --input FILE"
    )


def encode(loaded: Loaded, lines: list[str]) -> list[list[int]]:
    """Subword ids as `nmt translate` feeds them: no BOS/EOS, cut to decode.max_src_len."""
    return encode_sources(loaded.src_tok, lines, loaded.config.decode.max_src_len)


def export_folder(checkpoint: Path, engine: str, step: int, root: Optional[Path]) -> Path:
    """The export ``engine`` runs, written on first use and reused while it is of this checkpoint.

    Reused when its export.json names the checkpoint's update and was written after the
    checkpoint file last changed (a retrained or re-averaged checkpoint is exported again).
    """
    fmt = FORMAT_OF[engine]
    base = root if root is not None else (run_of_checkpoint(checkpoint) or checkpoint.parent) / "exports"
    folder = base / f"{checkpoint.stem}-{fmt}"
    try:
        fresh = read_manifest(folder, fmt).step == step
        fresh = fresh and (folder / MANIFEST).stat().st_mtime >= checkpoint.stat().st_mtime
    except ExportError:
        fresh = False
    if fresh:
        log.info("reusing the %s export %s", fmt, folder)
        return folder
    log.info("exporting %s as %s into %s", checkpoint, fmt, folder)
    if fmt == "onnx":
        from nmt.export.onnx_export import export_onnx as write
    else:
        from nmt.export.ctranslate2 import export_ctranslate2 as write
    write(checkpoint, folder, force=True)
    return folder


def bench_setting(
    model: Loaded | Engine,
    sentences: list[list[int]],
    beam: int,
    batch_size: int,
    device: torch.device,
    refs: Optional[list[str]] = None,
    min_seconds: float = MIN_SECONDS,
) -> dict[str, Any]:
    """Translate every sentence (after one untimed batch) with a loaded checkpoint or an engine,
    in as many whole passes as it takes to time at least ``min_seconds`` (one pass at least);
    returns the measurements, and the output's BLEU when ``refs`` are given.

    A pass that lasts a fraction of a second (a GPU at large batches) is timed as noisily as
    the clock and the first kernels allow, so its sentences/s is the total over the passes.
    """
    engine = TorchEngine(model, device) if isinstance(model, Loaded) else model
    decode = engine.decode_config([]).model_copy(update={"batch_size": batch_size})
    engine.check(decode, beam, 1, [])
    engine.translate(sentences[:batch_size], decode, beam=beam, n_best=1, attention=False)  # warm-up
    passes, seconds = 0, 0.0
    while passes == 0 or seconds < min_seconds:
        with runtime.Stopwatch(device) as clock:
            results = engine.translate(sentences, decode, beam=beam, n_best=1, attention=False)
        passes, seconds = passes + 1, seconds + clock.seconds
    out_tokens = sum(len(r.ids[0]) for r in results)
    measured = {
        "beam": beam,
        "batch_size": batch_size,
        "sentences": len(sentences),
        "passes": passes,
        "sentences_per_s": round(passes * len(sentences) / seconds, 2),
        "seconds": round(seconds, 3),
        "output_tokens": out_tokens,
        "output_tokens_per_s": round(passes * out_tokens / seconds, 1),
    }
    if refs is not None:
        scored = bleu_with_length([engine.tgt_tok.decode(r.ids[0]) for r in results], refs)
        measured.update(bleu=round(scored["bleu"], 2), length_ratio=round(scored["length_ratio"], 3))
        measured["bleu_signature"] = scored["bleu_signature"]
    return measured


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--checkpoint", type=Path, default=None, help=f"Trained checkpoint to decode with (required), e.g. {EXAMPLE}."
    )
    parser.add_argument(
        "--input",
        type=Path,
        default=None,
        help="Source text, one sentence per line (default: the test split of the checkpoint's corpus).",
    )
    parser.add_argument(
        "--reference", type=Path, default=None, help="References for BLEU (default: the input with the target suffix)."
    )
    parser.add_argument(
        "--limit",
        type=int,
        default=None,
        metavar="N",
        help=f"Translate only the first N lines (default: all; --quick: {QUICK_LIMIT}).",
    )
    parser.add_argument("--beams", default="1,5", help="Comma-separated beam sizes; 1 = greedy (default: 1,5).")
    parser.add_argument("--batch-sizes", default="1,64", help="Comma-separated sentences per batch (default: 1,64).")
    parser.add_argument(
        "--engine",
        default="torch",
        help=f"Comma-separated engines to time, of {', '.join(ENGINE_NAMES)}; the others run an export of "
        "the checkpoint on the CPU (default: torch).",
    )
    parser.add_argument(
        "--compute-type",
        default="float32",
        help="Comma-separated weight types for --engine ctranslate2: float32, int8 (default: float32).",
    )
    parser.add_argument(
        "--min-seconds",
        type=float,
        default=MIN_SECONDS,
        metavar="S",
        help="Repeat each setting's whole pass over the input until at least S seconds are timed "
        f"(one pass at least; 0 = one pass) (default: {MIN_SECONDS:g}).",
    )
    parser.add_argument(
        "--export-dir", type=Path, default=None, help="Where exports are kept (default: the run's exports/ folder)."
    )
    common.add_common_options(parser, f"the first {QUICK_LIMIT} lines; batch size 1 only for beam 1")
    return parser


def parse_choices(text: str, valid: tuple[str, ...], option: str) -> list[str]:
    """``text`` as a comma list of distinct items of ``valid`` (or a one-line exit)."""
    items = common.parse_list(text)
    unknown = [i for i in items if i not in valid]
    if unknown or not items or len(set(items)) < len(items):
        what = f"unknown {unknown[0]!r}" if unknown else "give each at most once"
        common.fail(SCRIPT, f"{option} {text!r}: {what}; valid options: {', '.join(valid)}")
    return items


def parse_engines(args: argparse.Namespace) -> tuple[list[str], list[str]]:
    """The engines and ctranslate2 compute types asked for, checked."""
    engines = parse_choices(args.engine, ENGINE_NAMES, "--engine")
    if "ctranslate2" not in engines:
        if args.compute_type != "float32":
            common.fail(SCRIPT, "--compute-type applies to --engine ctranslate2 only")
        return engines, ["float32"]
    from nmt.decode.ct2 import COMPUTE_TYPES  # imports ctranslate2: only when it is asked for

    return engines, parse_choices(args.compute_type, COMPUTE_TYPES, "--compute-type")


def open_bench_engine(
    name: str, compute_type: str, loaded: Loaded, device: torch.device, args: argparse.Namespace, count: int
) -> tuple[Engine, Optional[Path]]:
    """The engine to time and the export folder it runs (None for torch, which runs the loaded model)."""
    if name == "torch":
        return TorchEngine(loaded, device), None
    folder = export_folder(args.checkpoint, name, loaded.step, args.export_dir)
    return open_engine(name, [], folder, compute_type=compute_type, threads=count), folder


def read_inputs(
    args: argparse.Namespace, cfg: Config, limit: Optional[int]
) -> tuple[Path, list[str], Optional[Path], Optional[list[str]]]:
    """The source file and its (first ``limit``) lines; the reference file and lines, or None (no BLEU)."""
    source = args.input or default_input(cfg)
    lines = read_lines(source)[:limit]
    if not lines:
        raise UserError(f"{source}: no lines to translate")
    guess = source.with_suffix(f".{cfg.data.tgt}") if source.suffix == f".{cfg.data.src}" else None
    reference = args.reference or (guess if guess is not None and guess.is_file() else None)  # test2016.en
    if reference is None:
        log.info("no references for %s (give --reference FILE): bleu is null", source)
        return source, lines, None, None
    refs = read_lines(reference)[: len(lines)]
    if len(refs) < len(lines):
        raise UserError(f"{reference}: {len(refs)} lines for {len(lines)} input lines; give --reference FILE")
    return source, lines, reference, refs


def main(argv: Optional[list[str]] = None) -> None:
    args = build_parser().parse_args(argv)
    keep_memory = common.start(args)
    if args.checkpoint is None:
        common.fail(SCRIPT, f"--checkpoint is required, e.g. --checkpoint {EXAMPLE} (`make demo` trains it)")
    engines, compute_types = parse_engines(args)
    try:
        beams, sizes = common.parse_list(args.beams, int), common.parse_list(args.batch_sizes, int)
    except ValueError:
        common.fail(
            SCRIPT,
            f"--beams and --batch-sizes take comma-separated integers (got {args.beams!r}, {args.batch_sizes!r})",
        )
    if not beams or not sizes or min(beams + sizes) < 1:
        common.fail(SCRIPT, "--beams and --batch-sizes need positive integers")
    limit = args.limit if args.limit is not None else (QUICK_LIMIT if args.quick else None)
    common.check_min_seconds(SCRIPT, args.min_seconds)
    if limit is not None and limit < 1:
        common.fail(SCRIPT, f"--limit must be at least 1 (got {limit})")
    exported = engines != ["torch"]  # a side-by-side run: one fixed thread count for every engine
    count = args.threads if args.threads > 0 or not exported else torch.get_num_threads()
    try:
        threads.configure(count)
        device = runtime.select_device(args.device)
        if exported and device.type != "cpu":
            raise UserError("onnxruntime and ctranslate2 run on the CPU here; give --device cpu to compare engines")
        loaded = load_checkpoint(args.checkpoint, device)
        source, lines, reference, refs = read_inputs(args, loaded.config, limit)
    except UserError as exc:
        common.fail(SCRIPT, str(exc))
    sentences = encode(loaded, lines)
    model = loaded.config.model
    about = {
        "checkpoint": str(args.checkpoint),
        "input": str(source),
        "reference": str(reference) if reference is not None else None,
        "step": loaded.step,
        "arch": model.arch,
        "attention": attention_label(loaded.config),  # "transformer", or the RNN's attention
        **(
            {"d_model": model.transformer.d_model, "layers": model.transformer.enc_layers}
            if model.arch == "transformer"
            else {"style": model.attention.resolved_style, "cell": model.cell}
        ),
        "params": count_parameters(loaded.model),
        "length_penalty": loaded.config.decode.length_penalty,
        "quick": args.quick,
        **common.environment(device, keep_memory),
    }
    for name in engines:
        for compute_type in compute_types if name == "ctranslate2" else ["float32"]:
            head: dict[str, Any] = {"bench": "decode", "engine": name, "compute_type": compute_type}
            if name == "ctranslate2" and model.arch != "transformer":
                reason = f"CTranslate2 holds Transformers only; this checkpoint is an {model.arch.upper()}"
                log.info("skipping --engine ctranslate2 (%s): %s", compute_type, reason)
                common.emit({**head, "skipped": reason, **about})
                continue
            try:
                engine, folder = open_bench_engine(name, compute_type, loaded, device, args, count)
            except UserError as exc:
                common.fail(SCRIPT, str(exc))
            head.update(export=str(folder) if folder else None, engine_version=metadata.version(name), bleu=None)
            for beam in beams:
                for batch_size in sizes:
                    if args.quick and beam > 1 and batch_size == 1:
                        log.info("--quick: skipping beam %d with batch size 1", beam)
                        continue
                    measured = bench_setting(engine, sentences, beam, batch_size, device, refs, args.min_seconds)
                    used = torch.get_num_threads() if name == "torch" else count
                    common.emit({**head, **measured, **about, "threads": used})


if __name__ == "__main__":
    main()
