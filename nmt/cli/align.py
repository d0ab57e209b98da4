"""``nmt align``: hard word alignments read from a model's attention, and their error against gold links.

:func:`register` adds the command to the ``nmt`` app (:mod:`nmt.cli`), which owns the error
handling; it parses its options and calls :func:`nmt.evaluation.align_command.align_files`, the
function behind ``Translator.align`` and ``nmt.alignment_error`` too.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Optional

import typer

from nmt.cli.options import EngineOpt, ModelDirOpt, ModuleOpt, use_modules
from nmt.util.errors import UserError

if TYPE_CHECKING:
    from nmt.evaluation.align_command import Aligned


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
    seen_src: Optional[Path] = typer.Option(
        None,
        "--seen-src",
        help="With --gold: the source side of the model's training text (tokenized, UTF-8); also score only the "
        "links whose source word it holds and whose target word --seen-tgt holds.",
    ),
    seen_tgt: Optional[Path] = typer.Option(
        None, "--seen-tgt", help="With --seen-src: the target side of the model's training text."
    ),
    baseline: Optional[str] = typer.Option(
        None,
        "--baseline",
        help="Align with a statistical aligner instead of a model: eflomal (Östling and Tiedemann 2016; "
        "pip install 'nmt-attention[align]'), trained on --train-src/--train-tgt plus the pairs.",
    ),
    join: str = typer.Option(
        "grow-diag-final-and",
        "--join",
        help="--baseline: how eflomal's two directions join: grow-diag-final-and (Koehn et al. 2005), "
        "intersection, forward or reverse.",
    ),
    train_src: Optional[Path] = typer.Option(
        None, "--train-src", help="--baseline: a parallel training corpus's source side (tokenized; optional)."
    ),
    train_tgt: Optional[Path] = typer.Option(None, "--train-tgt", help="--baseline: its target side."),
    samplers: int = typer.Option(1, "--samplers", min=1, help="--baseline: eflomal's independent samplers."),
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

    With --seen-src and --seen-tgt (the training text's two sides): a second line scores only the links,
    predicted and gold alike, whose two words occur in that text, the words a model could have learned.

    With --baseline eflomal: no model; a statistical aligner trained on --train-src/--train-tgt (if
    given) plus the pairs, its two directions joined by --join, scored the same way: attention beside
    a classical aligner on the same data.

    Examples: nmt align --checkpoint runs/demo/checkpoints/best.pt --src test.de --tgt test.en -o test.align;
    nmt align --checkpoint best.pt --src DeEn/de --tgt DeEn/en --encoding latin-1 --gold DeEn/alignmentDeEn.talp
    --gold-format rwth -o rwth.align --report reports/align;
    nmt align --baseline eflomal --train-src train.de --train-tgt train.en --src DeEn/de --tgt DeEn/en ...
    """
    use_modules(module)
    from nmt.decode.alignment import AttentionChoice
    from nmt.decode.engines import open_engine
    from nmt.evaluation.align_command import align_files, align_with_baseline

    model_options = {
        "--checkpoint": bool(checkpoint),
        "--model": model is not None,
        "--engine": engine is not None,
        "--layer": layer is not None,
        "--head": head is not None,
        "--reading": reading != "predict",
        "--merge": merge != "sum",
        "--batch-size": batch_size is not None,
    }
    baseline_options = {
        "--join": join != "grow-diag-final-and",
        "--train-src": train_src is not None,
        "--train-tgt": train_tgt is not None,
        "--samplers": samplers != 1,
    }
    if (seen_src is None) != (seen_tgt is None):
        raise UserError("--seen-src and --seen-tgt go together: the two sides of the training text")
    seen = (seen_src, seen_tgt) if seen_src is not None and seen_tgt is not None else None
    if baseline is not None:
        if baseline != "eflomal":
            raise UserError(f"--baseline {baseline}: the baseline aligner nmt runs is eflomal")
        given = [name for name, set_ in model_options.items() if set_]
        if given:
            raise UserError(f"--baseline eflomal aligns without a model: leave out {', '.join(given)}")
        if (train_src is None) != (train_tgt is None):
            raise UserError("--train-src and --train-tgt go together: the two sides of one parallel corpus")
        train = (train_src, train_tgt) if train_src is not None and train_tgt is not None else None
        found = align_with_baseline(
            src,
            tgt,
            output,
            encoding=encoding,
            join=join,
            train=train,
            samplers=samplers,
            gold=gold,
            gold_format=gold_format,
            gold_reverse=gold_reverse,
            report=report,
            seen=seen,
        )
        _print(found, output)
        return
    given = [name for name, set_ in baseline_options.items() if set_]
    if given:
        raise UserError(f"{', '.join(given)} go with --baseline eflomal")
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
        seen=seen,
    )
    _print(found, output)


def _print(found: Aligned, output: Optional[Path]) -> None:
    """The alignments on stdout unless written to ``output``; the score line after them (stderr if not)."""
    if output is None:
        for alignment in found.alignments:
            typer.echo(alignment.pharaoh)
    for line in found.summary:
        typer.echo(line, err=output is None)


def register(app: typer.Typer) -> None:
    app.command("align")(align_cmd)
