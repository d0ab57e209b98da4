"""nmt: attention-based RNN encoder-decoder translation, from YAML to BLEU.

The library's functions and types (:mod:`nmt.api`) are attributes of this package, imported
when first used, so ``import nmt`` (and ``nmt --help``) stays fast::

    import nmt
    translator = nmt.load("runs/demo")
    translator.translate(["The cats do not like dogs."])  # the demo translates English to German

``nmt.train`` and ``nmt.evaluate`` are also the names of two stages (subpackages); each is made
callable, running :func:`nmt.api.train` and :func:`nmt.api.evaluate`, so both uses of the names
work.  The facade is imported by name (``importlib``) rather than by an import statement: modules
of every layer read ``nmt.__version__`` here, and a static import of the top layer would make
each of them import it too, as import-linter would rightly report.
"""

from __future__ import annotations

import importlib
import types
from typing import Any

__version__ = "0.1.0"

_API = "nmt.api"
_EXPORTS = (
    "CheckpointError",
    "Comparison",
    "ConfigError",
    "DataError",
    "Evaluation",
    "Hypothesis",
    "Records",
    "Run",
    "ScoreResult",
    "TrainingError",
    "TrainingInterrupted",
    "TranslationResult",
    "Translator",
    "UserError",
    "compare",
    "load",
    "plot_attention",
    "plot_attention_grid",
)
"""The names of :mod:`nmt.api` that ``nmt`` shows as its own."""
_CALLABLE_STAGES = ("train", "evaluate")
"""The stages that are also library functions of the same name."""


def __getattr__(name: str) -> Any:
    if name in _EXPORTS:
        return getattr(importlib.import_module(_API), name)
    raise AttributeError(f"module 'nmt' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted([*globals(), *_EXPORTS])


class _CallableStage(types.ModuleType):
    """A stage's package that, called, runs the library function of its name (``nmt.train(...)``)."""

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return getattr(importlib.import_module(_API), self.__name__.rpartition(".")[2])(*args, **kwargs)


for _stage in _CALLABLE_STAGES:
    importlib.import_module(f"nmt.{_stage}").__class__ = _CallableStage
