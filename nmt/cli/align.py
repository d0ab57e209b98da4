"""``nmt align``: hard word alignments read from a model's attention, and their error against gold links.

:func:`register` adds the command to the ``nmt`` app (:mod:`nmt.cli`), which owns the error
handling; it parses its options and calls :func:`nmt.evaluation.align_command.align_files`, the
function behind ``Translator.align`` and ``nmt.alignment_error`` too.
"""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer

from nmt.cli.options import EngineOpt, ModelDirOpt, ModuleOpt, use_modules


def align_cmd(
    src: Path = typer.Option(
        ...,
        "--src",
        help="Source sentences, one per line, words separated by spaces (tokenized text).",
        show_default=False,
    ),
    tgt: Path = typer.Option(
        ..., "--tgt", help="Their translations, one per line, words separated by spaces.", show_default=False
    ),
    checkpoint: Optional[list[Path]] = typer.Option(
        None,
        "--checkpoint",
        help="A checkpoint, e.g. runs/x/checkpoints/best.pt (several: an ensemble, whose attention is its "
        "members' mean). Or give --model.",
    ),
    model: Optional[Path] = ModelDirOpt,
    engine: Optional[str] = EngineOpt,
    output: Optional[Path] = typer.Option(
        None, "--output", "-o", help="Where to write the alignments, one Pharaoh line per pair (default stdout)."
    ),
    encoding: str = typer.Option(
        "utf-8",
        "--encoding",
        help="Text encoding of --src, --tgt and --gold, e.g. latin-1 for the RWTH German-English files.",
    ),
    layer: Optional[int] = typer.Option(
        None,
        "--layer",
        help="Transformer: the decoder layer whose cross-attention is read (0 the first, -1 the last; "
        "default the penultimate, as Garg et al. 2019 found best). An RNN has one attention (layer 0).",
    ),
    head: Optional[int] = typer.Option(
        None,
        "--head",
        help="Read one head (0 the first, -1 the last) of a Transformer's layer, or of a multi-head RNN "
        "attention (model.attention.heads above 1) on --engine torch; default the heads' average.",
    ),
    reading: str = typer.Option(
        "predict",
        help="Which step aligns a target word: predict (the step that predicts it, as attention is drawn) or "
        "input (the step that reads it as its input: Chen et al. 2020's shift).",
    ),
    merge: str = typer.Option(
        "sum",
        help="How a source word's pieces merge: sum (a word of many pieces gets all their weight), mean or max "
        "(a word weighs what its pieces do, however many).",
    ),
    batch_size: Optional[int] = typer.Option(
        None, "--batch-size", min=1, help="Pairs forced through the model at once (default decode.batch_size)."
    ),
    gold: Optional[Path] = typer.Option(
        None,
        "--gold",
        help="Gold alignments, one line per pair (i-j sure, ipj possible links): print AER, precision and recall.",
    ),
    gold_format: Optional[str] = typer.Option(
        None,
        "--gold-format",
        help="How --gold counts words: rwth (from 1, as the RWTH files) or pharaoh (from 0). Required with --gold.",
    ),
    gold_reverse: bool = typer.Option(
        False,
        "--gold-reverse",
        help="--gold's i is the target word and j the source (e.g. the de-en RWTH file for an en-de model).",
    ),
    report: Optional[Path] = typer.Option(
        None,
        "--report",
        help="With --gold: folder for alignment_error.json (every count and setting) and alignment_error.txt "
        "(the line printed).",
    ),
    module: Optional[list[str]] = ModuleOpt,
) -> None:
    """Align the words of given sentence pairs by forcing each target through the model and reading
    its attention; one line per pair in the Pharaoh format (i-j: source word i, target word j, from 0).

    Words are the whitespace tokens of each line, each split into subword pieces on its own. The
    merge rule: sum the attention over a target word's pieces, then over a source word's pieces
    (--merge: sum, mean or max), and link each target word to the source word of highest weight
    (the first on a tie). --reading input reads each target word at the step that takes it as input. So each
    target word has one link; a pair with a blank side has an empty line. A Transformer is read
    at one decoder layer (--layer; default the penultimate) with its heads averaged (or --head);
    an RNN at its one attention, heads averaged (or --head on --engine torch); --engine
    onnxruntime gives only the last layer, heads averaged; ctranslate2 gives no attention and is
    refused.

    With --gold: alignment error rate, precision and recall against the sure and possible gold
    links, counts summed over the corpus (Och and Ney 2003): AER = 1 - (|A&S| + |A&P|) / (|A| +
    |S|). The line goes to stdout with -o, else to stderr (stdout holds the alignments).

    Examples: nmt align --checkpoint runs/demo/checkpoints/best.pt --src test.de --tgt test.en -o test.align;
    nmt align --checkpoint best.pt --src DeEn/de --tgt DeEn/en --encoding latin-1 --gold DeEn/alignmentDeEn.talp
    --gold-format rwth -o rwth.align --report reports/align
    """
    use_modules(module)
    from nmt.decode.alignment import AttentionChoice
    from nmt.decode.engines import open_engine
    from nmt.evaluation.align_command import align_files

    found = align_files(
        lambda: open_engine(engine, checkpoint or [], model),
        src,
        tgt,
        output,
        encoding=encoding,
        choice=AttentionChoice(layer, head, reading, merge),
        batch_size=batch_size,
        gold=gold,
        gold_format=gold_format,
        gold_reverse=gold_reverse,
        report=report,
    )
    if output is None:
        for alignment in found.alignments:
            typer.echo(alignment.pharaoh)
    if found.score is not None:
        typer.echo(found.score.summary, err=output is None)


def register(app: typer.Typer) -> None:
    app.command("align")(align_cmd)
