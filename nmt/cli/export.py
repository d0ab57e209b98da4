"""``nmt export``: a checkpoint as a folder another engine runs (ONNX, CTranslate2) or a pickle-free release."""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer

from nmt.cli.options import ModuleOpt, use_modules

FORMATS = ("onnx", "ctranslate2", "safetensors")


def export_cmd(
    checkpoint: Path = typer.Option(
        ..., "--checkpoint", help="The checkpoint to export, e.g. runs/x/checkpoints/best.pt."
    ),
    format: str = typer.Option(
        ...,
        "--format",
        help="onnx (every model kind; run with --engine onnxruntime), ctranslate2 (the Transformer; "
        "--engine ctranslate2) or safetensors (weights, config.yaml and SentencePiece models; --engine torch).",
    ),
    output: Path = typer.Option(..., "--output", "-o", help="The folder to write (absent or empty)."),
    force: bool = typer.Option(False, "--force", help="Replace an earlier export in that folder."),
    module: Optional[list[str]] = ModuleOpt,
) -> None:
    """Write a checkpoint as a folder that nmt translate, eval and serve load with --model DIR.

    The folder holds the model, both SentencePiece models and export.json (format, nmt version,
    model kind, the run's decode options). It is written whole under a hidden name and renamed,
    so an interrupted export leaves nothing that loads. An ONNX export takes a minute or so.

    Examples: nmt export --checkpoint runs/demo/checkpoints/best.pt --format onnx -o exports/demo-onnx;
    nmt translate --engine onnxruntime --model exports/demo-onnx -i in.txt
    """
    use_modules(module)
    from nmt.util.errors import UserError
    from nmt.util.extras import require

    if format not in FORMATS:
        raise UserError(f"--format {format}: unknown; valid options: {', '.join(FORMATS)}")
    if not checkpoint.is_file():
        raise UserError(f"--checkpoint {checkpoint}: no such file")
    if format == "onnx":
        for extra in ("onnx", "onnxscript"):
            require(extra, "export", "nmt export --format onnx")
        from nmt.export.onnx_export import export_onnx

        export_onnx(checkpoint, output, force=force)
    elif format == "ctranslate2":
        require("ctranslate2", "export", "nmt export --format ctranslate2")
        from nmt.export.ctranslate2 import export_ctranslate2

        export_ctranslate2(checkpoint, output, force=force)
    else:
        from nmt.export.release import write_release

        write_release(checkpoint, output, force)
    typer.echo(f"wrote {output} ({format})")


def register(app: typer.Typer) -> None:
    app.command("export")(export_cmd)
