"""Options that several ``nmt`` commands share, defined once so their flags and help read the same."""

from __future__ import annotations

import sys
from typing import Optional

import typer

ConfigOpt = typer.Option(None, "--config", "-c", help="Experiment YAML file (defaults apply when omitted).")
SetOpt = typer.Option(None, "--set", "-s", help="Override one option, e.g. --set model.attention.type=luong_dot.")
EngineOpt = typer.Option(
    None,
    "--engine",
    help="What runs the model: torch (--checkpoint, or --model with a safetensors export), onnxruntime "
    "(--model with an ONNX export) or ctranslate2 (--model with a CTranslate2 export); see nmt export. "
    "Default: torch for --checkpoint, the export's own engine for --model.",
    show_default=False,
)
ModelDirOpt = typer.Option(
    None,
    "--model",
    help="A folder written by nmt export, instead of --checkpoint (its format chooses the engine; "
    "with --engine, the format must suit it).",
)
ComputeTypeOpt = typer.Option(
    "float32", "--compute-type", help="--engine ctranslate2: float32, or int8 (quantized weights, faster on CPU)."
)
ProgressOpt = typer.Option(
    None,
    "--progress/--no-progress",
    help="Progress bars: shown on a terminal, left out of logs and pipes (where they would fill the file "
    "with redrawn lines); --progress shows them anyway, --no-progress never.",
    show_default=False,
)


def progress_shown(flag: Optional[bool]) -> bool:
    """Whether to draw progress bars: as asked, else only when standard error is a terminal."""
    if flag is not None:
        return flag
    stream = sys.stderr
    return stream is not None and hasattr(stream, "isatty") and stream.isatty()


ModuleOpt = typer.Option(
    None,
    "--module",
    help="A module of your own to import first and to trust (repeatable): a name found in this folder or "
    "on PYTHONPATH, or a .py file. It registers an attention or a schedule (nmt.register_attention); "
    "a checkpoint that needs it loads only when it is named here.",
)


def use_modules(modules: Optional[list[str]]) -> None:
    """Import the ``--module`` modules and let checkpoints load code from them (this command only)."""
    if modules:
        from nmt.util.registry import allow

        allow(modules)
