"""Alignment error rate of German-to-English models, and of eflomal, on the RWTH gold alignments.

The RWTH German-English set (Vilar et al. 2006: 508 Europarl sentence pairs with sure and possible
links, ../shared/data/alignments/) is read from its archive, which is extracted into a temporary
folder and never copied anywhere else.  Its sentences are Latin-1 and already tokenized; the last
line of each file is blank and is dropped.  Each model (a run folder or a checkpoint, de->en) is
loaded through the library (``nmt.load``), aligns the 508 pairs with its target forced
(``Translator.align``: pieces summed into words, each target word linked to its heaviest source
word) and is scored with ``nmt.alignment_error`` (AER, precision and recall, Och and Ney 2003).
Logs on stderr; a mistake ends the script in one line (exit 2).

Each model writes one JSON line per attention it reads (``"layer"``, ``"head"``):

- an RNN with one head: one line, layer and head null;
- an RNN whose attention has several heads (``qkv`` with ``model.attention.heads`` > 1): the heads
  averaged (head null), then one line per head (``"head": h``).  ``Translator.align`` reads such an
  RNN's heads averaged and takes no head, so for these lines the script swaps the attention's
  returned weights for one head's while forcing (its context, so every prediction, is unchanged;
  scripts/_align_readings.py);
- a Transformer: one line per decoder layer, heads averaged (``"layer": i``, head null); with
  ``--per-head`` also one line per head of every layer.

``--readings`` and ``--merges`` multiply those lines: each attention read at the step that predicts
each target word (``"reading": "predict"``, the default) and/or at the step that takes it as input
(``"input"``, Chen et al. 2020's shift), a source word's pieces merged by their sum (the default), mean
and/or maximum (``"merge"``).  ``--seen-src``/``--seen-tgt`` (a training text) add ``seen_*`` fields to
every line, models and baselines alike: the same scores on the links whose German and English words the
training text both holds (predicted, sure and possible links kept only there), so a model is not charged
for words it never read.

``"default": true`` marks the line of what ``Translator.align`` reads when given no layer or head
(an RNN's heads averaged; a Transformer's penultimate layer, heads averaged, after Garg et al.
2019; read at the predicting step, pieces summed): the line a plot of the variant takes
(scripts/plot_aer_bleu.py).  Each line names the run, its reading and merge rule, its attention variant (config.yaml model.attention.type; "transformer" for a Transformer), the
model's arch, its attention heads and decoder layers (a Transformer's), its seed (train.seed), the
test BLEU its run folder holds (``<run>/compare-<split>/scored.json``, else null), the share of the
gold set's running words that the model's SentencePiece vocabularies read as more than one piece
(German words by the source vocabulary, English by the target one), the seconds its alignment took
(the model's loading not counted), and the date, machine and commit.

``--eflomal`` adds the classical aligner (``pip install 'nmt-attention[align]'``,
:mod:`nmt.evaluation.statistical_aligner`, what ``nmt align --baseline eflomal`` runs), trained on a parallel corpus (default the prepared Multi30k de-en training split) plus the 508
pairs, and scores four alignments per run: "forward" links each English word to at most one German
word, "reverse" each German word to at most one English word, "grow-diag-final-and" joins the two
(Koehn et al. 2005; nmt/score/symmetrize.py, as eflomal 2.0.0 ships no symmetrizer) and
"intersection" keeps the links both directions hold.  ``--diagonal`` adds a baseline that reads no
words at all: each target word linked to the source word at the same relative position.

Commands behind docs/alignment.md's results (the cosine runs need their attention's module; run
before the per-head lines, the eflomal joins and the fields ``layer``, ``head``, ``heads``, ``layers``
and ``default`` existed)::

    python scripts/align_rwth.py runs/cosine/de-en/{bahdanau,luong_general,cosine}_s{1,2,3} \\
        --module examples/attention/cosine.py --threads 1 --diagonal --eflomal --eflomal-repeats 3 \\
        > docs/measurements/align_rwth_2026-11-28_cpu.jsonl
    python scripts/align_rwth.py --eflomal --eflomal-tokens punct --eflomal-repeats 3 \\
        >> docs/measurements/align_rwth_2026-11-28_cpu.jsonl

Europarl models in their own domain, both readings, two merge rules, every score also on the words
the Europarl training split holds, eflomal trained on that split (the gold's sentences were removed
from it by ``nmt data prepare europarl``)::

    python scripts/align_rwth.py runs/europarl_cpu/de-en/*_s[456] --bleu-split test --readings predict,input \
        --merges sum,max --seen-src data/europarl/de-en/train.de --seen-tgt data/europarl/de-en/train.en \
        --diagonal --eflomal --eflomal-repeats 3 --train-src data/europarl/de-en/train.de \
        --train-tgt data/europarl/de-en/train.en > align_europarl.jsonl

Every variant and the Transformer, three seeds each (run folders named here as RUNS), every head of
every Transformer layer, the two baselines, then AER against test2016 BLEU per variant::

    python scripts/align_rwth.py RUNS --per-head --threads 1 --diagonal --eflomal --eflomal-repeats 3 > aer.jsonl
    python scripts/plot_aer_bleu.py aer.jsonl --out aer_bleu.png
"""

from __future__ import annotations

import argparse
import contextlib
import datetime
import itertools
import json
import logging
import re
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Optional

import torch
import yaml

import _bench_common as common
import nmt
from _align_baselines import Seen, align_eflomal, diagonal, scores, seen_scores
from _align_readings import align_reading, model_shape, readings
from _rwth_gold import GoldSet, read_archive
from nmt.data.tokenizer import Tokenizer
from nmt.decode.alignment import READINGS
from nmt.decode.word_merge import MERGES, merge_rule, word_pieces
from nmt.evaluation.record import git_commit
from nmt.evaluation.statistical_aligner import DEFAULT_TRAIN, share
from nmt.score.alignment import read_words
from nmt.util.errors import UserError
from nmt.util.extras import require
from nmt.util.runtime import machine

SCRIPT = "align_rwth"
REPO = Path(__file__).resolve().parent.parent
DEFAULT_ARCHIVE = REPO.parent / "shared" / "data" / "alignments" / "DeEnGoldAlignment.tar.gz"
log = logging.getLogger(SCRIPT)


def split_words(tok: Tokenizer, sentences: Sequence[str]) -> tuple[int, int]:
    """(running words, those read as more than one piece), words being whitespace tokens, each
    split on its own as ``Translator.align`` splits them."""
    words = split = 0
    for sentence, (_, owner) in zip(sentences, word_pieces(tok, sentences)):
        pieces = Counter(owner)
        words += len(sentence.split())
        split += sum(1 for n in pieces.values() if n > 1)
    return words, split


def read_yaml(path: Path) -> dict[str, Any]:
    """A YAML mapping, or {} where the file is missing or holds something else."""
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    except (OSError, yaml.YAMLError):
        return {}
    return data if isinstance(data, dict) else {}


def run_folder(path: Path) -> Path:
    """The run folder of a run folder or of a checkpoint in its ``checkpoints/``."""
    return path.parent.parent if path.is_file() else path


def run_facts(path: Path, split: str) -> dict[str, Any]:
    """Variant, arch, seed, test BLEU and updates trained as the run folder records them (null where it
    does not).

    The variant is the name ``nmt compare`` gave the folder (``<variant>_s<seed>``: luong_location,
    which is a custom energy, keeps its name), else the config's attention type (a custom one's
    energy); a Transformer's is "transformer" (its config keeps the RNN's unused attention section)."""
    folder = run_folder(path)
    config = read_yaml(folder / "config.yaml")
    model = config.get("model") or {}
    attention = model.get("attention") or {}
    scored: dict[str, Any] = {}
    with contextlib.suppress(OSError, ValueError):  # no scored test: its BLEU is null
        scored = json.loads((folder / f"compare-{split}" / "scored.json").read_text(encoding="utf-8"))
    result = scored.get("result") if isinstance(scored, dict) else None
    if not isinstance(result, dict):
        result = {}
    named = re.fullmatch(r"(.+)_s\d+", folder.name)
    kind = attention.get("energy") if attention.get("type") == "custom" else attention.get("type")
    return {
        "variant": "transformer" if model.get("arch") == "transformer" else (named.group(1) if named else kind),
        "arch": model.get("arch"),
        "corpus": (config.get("data") or {}).get("corpus"),  # what it was trained on
        "seed": (config.get("train") or {}).get("seed"),
        f"{split}_bleu": result.get("bleu"),
        "updates": result.get("updates"),  # trained; "step" is the checkpoint read
    }


def align_model(
    path: Path, rwth: GoldSet, args: argparse.Namespace, seen: Optional[Seen] = None
) -> list[dict[str, Any]]:
    """One model's records, one per attention it reads (:func:`readings`): its alignment of the set,
    scored, and how its vocabularies split the words."""
    model = nmt.load(path, device=args.device, threads=args.threads, modules=args.module)
    arch, layers, heads = model_shape(model, path)
    src_words, src_split = split_words(model.engine.src_tok, rwth.sources)
    tgt_words, tgt_split = split_words(model.engine.tgt_tok, rwth.targets)
    facts = run_facts(path, args.bleu_split)
    facts.update(arch=arch, variant="transformer" if arch == "transformer" else facts["variant"])
    records = []
    for reading, step, merge in itertools.product(
        readings(arch, layers or 0, heads, args.per_head), args.readings, args.merges
    ):
        start = time.perf_counter()
        aligned = align_reading(model, rwth.sources, rwth.targets, reading, args.batch_size, step, merge)
        records.append(
            {
                "aligner": "nmt",
                "run": str(path),
                **facts,
                "step": model.step,
                "engine": model.engine_name,
                "threads": torch.get_num_threads(),
                "direction": "forced de->en attention",
                "reading": step,
                "merge": merge,
                "rule": merge_rule(merge),
                "layer": reading.layer,
                "head": reading.head,
                "default": reading.default and step == "predict" and merge == "sum",
                "heads": heads,
                "layers": layers,
                **scores(nmt.alignment_error(aligned, rwth.gold)),
                **seen_scores(aligned, rwth, seen),
                "src_words": src_words,
                "src_split_share": share(src_split, src_words),
                "tgt_words": tgt_words,
                "tgt_split_share": share(tgt_split, tgt_words),
                "seconds": round(time.perf_counter() - start, 1),
            }
        )
    return records


def choices_list(valid: Sequence[str]) -> Any:
    """An argparse type: a comma-separated list of names from ``valid``, in order, without repeats."""

    def parse(text: str) -> list[str]:
        names = list(dict.fromkeys(n.strip() for n in text.split(",") if n.strip()))
        wrong = [n for n in names if n not in valid]
        if wrong or not names:
            raise argparse.ArgumentTypeError(f"{text!r}: give one or more of {', '.join(valid)}, comma-separated")
        return names

    return parse


def build_parser() -> argparse.ArgumentParser:
    parser = common.one_line_parser(SCRIPT, __doc__.split("\n\n")[0])
    parser.add_argument(
        "models",
        nargs="*",
        type=Path,
        metavar="RUN",
        help="Run folders (their best.pt) or checkpoints of de->en models.",
    )
    parser.add_argument(
        "--archive",
        type=Path,
        default=DEFAULT_ARCHIVE,
        help="The RWTH DeEnGoldAlignment.tar.gz (default: ../shared/data/alignments/ beside the repository).",
    )
    parser.add_argument(
        "--module",
        action="append",
        default=[],
        metavar="MODULE",
        help="A module or .py file that may supply a model's own attention (nmt.load's modules); repeatable.",
    )
    parser.add_argument(
        "--device", choices=("auto", "cpu", "cuda"), default="cpu", help="Where models run (default: cpu)."
    )
    parser.add_argument(
        "--threads", type=int, default=0, metavar="N", help="Torch CPU threads; 0 = the free cores (default: 0)."
    )
    parser.add_argument(
        "--batch-size", type=int, default=None, metavar="N", help="Pairs forced at once (default: the model's)."
    )
    parser.add_argument(
        "--per-head",
        action="store_true",
        help="A Transformer's lines for each head of each decoder layer too, besides each layer's heads averaged "
        "(an RNN's several heads get their lines always).",
    )
    parser.add_argument(
        "--readings",
        type=choices_list(READINGS),
        default=["predict"],
        metavar="LIST",
        help="Where each target word's attention is read, comma-separated: predict (the step that predicts it) "
        "and/or input (the step that takes it as input, Chen et al. 2020's shift); a line each (default: predict).",
    )
    parser.add_argument(
        "--merges",
        type=choices_list(MERGES),
        default=["sum"],
        metavar="LIST",
        help="How a source word's pieces merge, comma-separated: sum, mean and/or max; a line each (default: sum).",
    )
    parser.add_argument(
        "--seen-src",
        type=Path,
        default=None,
        metavar="FILE",
        help="A training text (German, tokenized): with --seen-tgt, every line also scores the links whose two words "
        "the training texts hold (seen_aer, seen_precision, ...).",
    )
    parser.add_argument("--seen-tgt", type=Path, default=None, metavar="FILE", help="Its English side, for --seen-src.")
    parser.add_argument(
        "--bleu-split",
        default="test2016",
        metavar="SPLIT",
        help="Whose BLEU each record carries, from <run>/compare-SPLIT/scored.json (default: test2016).",
    )
    parser.add_argument(
        "--diagonal",
        action="store_true",
        help="Also score a baseline that reads no words: target word j of T linked to source word floor((j + 0.5) * S / T).",
    )
    parser.add_argument(
        "--eflomal",
        action="store_true",
        help="Also align with eflomal (pip install 'nmt-attention[align]'): forward, reverse, grow-diag-final-and, intersection.",
    )
    parser.add_argument(
        "--train-src", default=DEFAULT_TRAIN[0], help=f"eflomal's German training text (default: {DEFAULT_TRAIN[0]})."
    )
    parser.add_argument(
        "--train-tgt", default=DEFAULT_TRAIN[1], help=f"eflomal's English training text (default: {DEFAULT_TRAIN[1]})."
    )
    parser.add_argument(
        "--eflomal-tokens",
        choices=("whitespace", "punct"),
        default="whitespace",
        help='Words of the training text: its whitespace tokens, or with . , ! ? ; : " ( ) split off first '
        "(default: whitespace).",
    )
    parser.add_argument(
        "--eflomal-repeats", type=int, default=1, metavar="N", help="Independent eflomal runs (default: 1)."
    )
    parser.add_argument("--eflomal-samplers", type=int, default=3, metavar="N", help="eflomal's samplers (default: 3).")
    return parser


def main(argv: Optional[Sequence[str]] = None) -> int:
    args = build_parser().parse_args(argv)
    logging.basicConfig(level=logging.INFO, stream=sys.stderr, format="%(name)s: %(message)s")
    if not (args.models or args.diagonal or args.eflomal):
        common.fail(SCRIPT, "give at least one run folder or checkpoint, --diagonal or --eflomal")
    for option, value in (("--eflomal-repeats", args.eflomal_repeats), ("--eflomal-samplers", args.eflomal_samplers)):
        if value < 1:
            common.fail(SCRIPT, f"{option} must be 1 or more (got {value})")
    if (args.seen_src is None) != (args.seen_tgt is None):
        common.fail(SCRIPT, "give --seen-src and --seen-tgt together (the German and English training texts)")
    try:
        seen = (
            None
            if args.seen_src is None
            else (read_words(args.seen_src, "--seen-src"), read_words(args.seen_tgt, "--seen-tgt"))
        )
    except UserError as exc:
        common.fail(SCRIPT, str(exc))
    if args.eflomal:
        try:
            require("eflomal", "align", "--eflomal")
        except UserError as exc:
            common.fail(SCRIPT, str(exc))
    base = {
        "bench": SCRIPT,
        "archive": str(args.archive),
        "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        "machine": machine(),
        "commit": git_commit(),
    }
    try:
        with tempfile.TemporaryDirectory(prefix="align_rwth_") as tmp:
            rwth = read_archive(args.archive, Path(tmp))
            base["archive_sha256"] = rwth.archive_sha256
            log.info("%d RWTH pairs read from %s", len(rwth.gold), args.archive)
            for path in args.models:
                for record in align_model(path, rwth, args, seen):
                    log.info(
                        "%s layer %s head %s, %s reading, %s: AER %.3f",
                        *(path, record["layer"], record["head"], record["reading"], record["merge"], record["aer"]),
                    )
                    common.emit({**base, **record})
            if args.diagonal:
                common.emit({**base, **diagonal(rwth, seen)})
            train_files = (Path(args.train_src), Path(args.train_tgt))
            for repeat in range(args.eflomal_repeats if args.eflomal else 0):
                records = align_eflomal(
                    rwth,
                    train_files,
                    tokens=args.eflomal_tokens,
                    samplers=args.eflomal_samplers,
                    folder=Path(tmp),
                    repeat=repeat,
                    seen=seen,
                )
                for record in records:
                    log.info("eflomal %s: AER %.3f", record["direction"], record["aer"])
                    common.emit({**base, **record})
    except UserError as exc:
        common.fail(SCRIPT, str(exc))
    return 0


if __name__ == "__main__":
    sys.exit(main())
