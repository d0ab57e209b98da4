"""nmt: attention-based RNN encoder-decoder translation, from YAML to BLEU.

The library's functions and types (:mod:`nmt.api`) are attributes of this package, imported
when first used, so ``import nmt`` (and ``nmt --help``) stays fast::

    import nmt
    translator = nmt.load("runs/demo")
    translator.translate(["The cats do not like dogs."])  # the demo translates English to German

No stage (subpackage) shares a name with a function here: training is ``nmt.training``, evaluation
``nmt.evaluation`` and comparison ``nmt.comparison``, so ``nmt.train``, ``nmt.evaluate`` and
``nmt.compare`` are only ever the functions.  The facade is imported by name (``importlib``) rather
than by an import statement: modules of every layer read ``nmt.__version__`` here, and a static
import of the top layer would make each of them import it too, as import-linter would rightly report.
"""

from __future__ import annotations

import importlib
from typing import Any

__version__ = "0.1.0"

_API = "nmt.api"
_EXPORTS = (
    "AlignmentScore",
    "AttentionHealth",
    "CheckpointError",
    "ClassSetting",
    "Combine",
    "Comparison",
    "ConfigError",
    "DataError",
    "Energy",
    "Evaluation",
    "FitGap",
    "GroupsResult",
    "GoldAlignment",
    "Hypothesis",
    "PluginError",
    "Records",
    "Run",
    "ScoreContext",
    "ScoreResult",
    "Selection",
    "TrainingError",
    "TrainingInterrupted",
    "TranslationResult",
    "Translator",
    "UserError",
    "WordAlignment",
    "alignment_error",
    "attention_health",
    "check_attention",
    "check_combine",
    "check_loop",
    "check_normalization",
    "class_setting",
    "compare",
    "compare_groups",
    "evaluate",
    "fit_gap",
    "load",
    "plot_attention",
    "plot_attention_grid",
    "read_gold_alignments",
    "register_attention",
    "register_combine",
    "register_loop",
    "register_normalization",
    "register_schedule",
    "select",
    "train",
)
"""The names of :mod:`nmt.api` that ``nmt`` shows as its own: the one list of the library's
surface (``nmt.api.__all__`` is this list, so the two cannot drift apart)."""


def __getattr__(name: str) -> Any:
    if name in _EXPORTS:
        return getattr(importlib.import_module(_API), name)
    raise AttributeError(f"module 'nmt' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted([*globals(), *_EXPORTS])
