"""Optional packages: what needs each, and the one line that says how to get it.

A plain ``pip install nmt-attention`` trains, translates, evaluates, compares, serves and runs
the notebooks; the packages of the ``export`` extra (onnx, onnxscript, onnxruntime, ctranslate2)
are needed only to write ONNX or CTranslate2 exports and to run them on their engines.
:func:`require` imports one of them where that work starts and turns its absence into a
:class:`~nmt.util.errors.UserError` naming the extra, instead of ``internal error:
ModuleNotFoundError`` from deep inside a command.
"""

from __future__ import annotations

import sys
from types import ModuleType

from nmt.util.errors import UserError

DISTRIBUTION = "nmt-attention"
"""The name ``pip`` installs nmt by (``nmt`` on the package index is another project)."""


def require(module: str, extra: str, what: str) -> ModuleType:
    """``import module``; where it is missing, one line saying that ``what`` needs it and which extra has it."""
    try:
        __import__(module)  # the import statement's path: -X importtime lists it, as tests of what loads read
    except ImportError as exc:
        missing = getattr(exc, "name", None) or module
        raise UserError(
            f"{what} needs the Python package {missing!r}, which a plain install leaves out: "
            f"pip install '{DISTRIBUTION}[{extra}]'"
        ) from None
    return sys.modules[module]
