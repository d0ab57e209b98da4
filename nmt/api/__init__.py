"""The library: what ``import nmt`` offers, and what the ``nmt`` commands call.

- :func:`load` a checkpoint, run folder or export folder into a :class:`Translator`, which
  :meth:`~Translator.translate`\\ s lists of sentences and :meth:`~Translator.score`\\ s given
  translations (per-token log-probabilities and attention);
- :func:`plot_attention` draws a result's attention matrix on a matplotlib axes, and
  :func:`plot_attention_grid` several results' as panels of one figure with one colour bar;
- :func:`train` trains a model from a YAML file, a mapping or a Config into a :class:`Run`;
- :func:`evaluate` and :func:`compare` run ``nmt eval`` and ``nmt compare`` and return their
  tables as records (a pandas DataFrame with ``.to_pandas()`` where pandas is installed).

Results are dataclasses of plain types and NumPy arrays (:mod:`nmt.api.results`); a mistake the
caller can fix raises :class:`~nmt.util.errors.UserError` (one line, naming the parameter where an
argument is wrong; :mod:`nmt.api.arguments` checks them) or one of its kinds (``ConfigError``,
``DataError``, ``CheckpointError``, ``TrainingError``), never ``sys.exit``.
Imports every stage below it; only nmt.cli imports it.  Torch is imported when a torch model
loads or a run trains, not before.
"""

from nmt.api.evaluation import Comparison, Evaluation, compare, evaluate
from nmt.api.plotting import plot_attention, plot_attention_grid
from nmt.api.records import Records
from nmt.api.results import Hypothesis, ScoreResult, TranslationResult
from nmt.api.training import Run, TrainingInterrupted, train
from nmt.api.translator import Translator, load
from nmt.util.errors import CheckpointError, ConfigError, DataError, TrainingError, UserError

__all__ = [
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
    "evaluate",
    "load",
    "plot_attention",
    "plot_attention_grid",
    "train",
]
