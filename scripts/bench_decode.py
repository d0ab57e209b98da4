"""Decoding speed of a trained checkpoint: sentences per second by beam size and batch size.

For each beam in ``--beams`` and batch size in ``--batch-sizes``, all input lines (or the
first ``--limit``) are translated with :func:`nmt.decode.inference.translate_ids` using the
checkpoint's decode settings (length penalty, output length limits).  Sentences are
encoded before the clock starts, and one untimed batch warms each setting up.  One JSON
line per setting on stdout, logs on stderr.

The input defaults to the test split of the checkpoint's own corpus:
``<data.root>/<corpus>/<src>-<tgt>/test2016.<src>`` when present (Multi30k), else
``test.<src>``.  ``--quick`` translates 200 sentences and skips batch size 1 for beams
above 1 (the slowest setting; the skip is logged on stderr).

Commands behind the README figures (from the repository root, after ``make demo``)::

    python scripts/bench_decode.py --checkpoint runs/demo/checkpoints/best.pt
    python scripts/bench_decode.py --checkpoint runs/demo/checkpoints/best.pt --no-keep-memory
    python scripts/bench_decode.py --checkpoint runs/demo/checkpoints/best.pt --quick   # `make bench`
"""

from __future__ import annotations

import argparse
import logging
from pathlib import Path
from typing import Any, Optional

import torch

import _bench_common as common
from nmt.config import Config
from nmt.decode.inference import Loaded, encode_sources, load_checkpoint, translate_ids
from nmt.model.build import count_parameters
from nmt.util import runtime, threads
from nmt.util.errors import UserError
from nmt.util.fileio import read_lines

log = logging.getLogger("bench_decode")
SCRIPT = "bench_decode.py"
QUICK_LIMIT = 200
EXAMPLE = "runs/demo/checkpoints/best.pt"


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


def bench_setting(
    loaded: Loaded, sentences: list[list[int]], beam: int, batch_size: int, device: torch.device
) -> dict[str, Any]:
    """Translate every sentence once (after one untimed batch); returns the measurements."""
    decode = loaded.config.decode.model_copy(update={"batch_size": batch_size})
    translate_ids(loaded.model, sentences[:batch_size], decode, device, beam=beam)  # warm-up
    with common.Stopwatch(device) as clock:
        results = translate_ids(loaded.model, sentences, decode, device, beam=beam)
    out_tokens = sum(len(r.ids[0]) for r in results)
    return {
        "beam": beam,
        "batch_size": batch_size,
        "sentences": len(sentences),
        "sentences_per_s": round(len(sentences) / clock.seconds, 2),
        "seconds": round(clock.seconds, 3),
        "output_tokens": out_tokens,
        "output_tokens_per_s": round(out_tokens / clock.seconds, 1),
    }


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
        "--limit",
        type=int,
        default=None,
        metavar="N",
        help=f"Translate only the first N lines (default: all; --quick: {QUICK_LIMIT}).",
    )
    parser.add_argument("--beams", default="1,5", help="Comma-separated beam sizes; 1 = greedy (default: 1,5).")
    parser.add_argument("--batch-sizes", default="1,64", help="Comma-separated sentences per batch (default: 1,64).")
    common.add_common_options(parser, f"the first {QUICK_LIMIT} lines; batch size 1 only for beam 1")
    return parser


def main(argv: Optional[list[str]] = None) -> None:
    args = build_parser().parse_args(argv)
    keep_memory = common.start(args)
    if args.checkpoint is None:
        common.fail(SCRIPT, f"--checkpoint is required, e.g. --checkpoint {EXAMPLE} (`make demo` trains it)")
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
    if limit is not None and limit < 1:
        common.fail(SCRIPT, f"--limit must be at least 1 (got {limit})")
    try:
        threads.configure(args.threads)
        device = runtime.select_device(args.device)
        loaded = load_checkpoint(args.checkpoint, device)
        source = args.input or default_input(loaded.config)
        lines = read_lines(source)[:limit]
    except UserError as exc:
        common.fail(SCRIPT, str(exc))
    if not lines:
        common.fail(SCRIPT, f"{source}: no lines to translate")
    sentences = encode(loaded, lines)
    model = loaded.config.model
    about = {
        "checkpoint": str(args.checkpoint),
        "input": str(source),
        "step": loaded.step,
        "attention": model.attention.type,
        "style": model.attention.resolved_style,
        "cell": model.cell,
        "params": count_parameters(loaded.model),
        "length_penalty": loaded.config.decode.length_penalty,
        "quick": args.quick,
        **common.environment(device, keep_memory),
    }
    for beam in beams:
        for batch_size in sizes:
            if args.quick and beam > 1 and batch_size == 1:
                log.info("--quick: skipping beam %d with batch size 1", beam)
                continue
            common.emit({"bench": "decode", **bench_setting(loaded, sentences, beam, batch_size, device), **about})


if __name__ == "__main__":
    main()
