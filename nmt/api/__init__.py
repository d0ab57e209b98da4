"""The library: what ``import nmt`` offers, and what the ``nmt`` commands call.

- :func:`load` a checkpoint, run folder or export folder into a :class:`Translator`, which
  :meth:`~Translator.translate`\\ s lists of sentences and :meth:`~Translator.score`\\ s given
  translations (per-token log-probabilities and attention);
- :func:`plot_attention` draws a result's attention matrix on a matplotlib axes, and
  :func:`plot_attention_grid` several results' as panels of one figure with one colour bar;
- :func:`train` trains a model from a YAML file, a mapping or a Config into a :class:`Run`;
- :func:`evaluate` and :func:`compare` run ``nmt eval`` and ``nmt compare`` and return their
  tables as records (a pandas DataFrame with ``.to_pandas()`` where pandas is installed);
- :func:`select` chooses a run's model on validation (best.pt or the average of the last N) and
  reads a test split once with it, as ``nmt select`` does, into a :class:`Selection`;
- :class:`Energy`, :class:`ScoreContext`, :func:`register_attention`, :func:`check_attention` and :func:`register_schedule`
  add an attention or a teacher-forcing schedule of your own (:mod:`nmt.api.extending`);
- :meth:`Translator.align` reads hard word alignments out of the attention (:class:`WordAlignment`),
  and :func:`alignment_error` scores them against gold links (:func:`read_gold_alignments`) as an
  :class:`AlignmentScore`: alignment error rate, precision and recall;
- :func:`fit_gap` and :func:`attention_health` run ``nmt diagnose fit-gap`` and ``nmt diagnose
  attention``: lists of :class:`FitGap` and :class:`AttentionHealth` rows;
- :func:`class_setting` reads the notebooks' setting (``nmt-class.yaml``, written by ``nmt class
  setting``) into a :class:`ClassSetting`, with the lecturer's pack where one is found.

Results are dataclasses of plain types and NumPy arrays (:mod:`nmt.api.results`); a mistake the
caller can fix raises :class:`~nmt.util.errors.UserError` (one line, naming the parameter where an
argument is wrong; :mod:`nmt.api.arguments` checks them) or one of its kinds (``ConfigError``,
``DataError``, ``CheckpointError``, ``TrainingError``), never ``sys.exit``.
Imports every stage below it; only nmt.cli imports it.  Torch is imported when a torch model
loads or a run trains, not before.
"""

from typing import Any

from nmt import _EXPORTS
from nmt.api.alignment import alignment_error as alignment_error
from nmt.api.alignment import read_gold_alignments as read_gold_alignments
from nmt.api.diagnosis import AttentionHealth as AttentionHealth
from nmt.api.diagnosis import FitGap as FitGap
from nmt.api.diagnosis import attention_health as attention_health
from nmt.api.diagnosis import fit_gap as fit_gap
from nmt.api.evaluation import Comparison as Comparison
from nmt.api.evaluation import Evaluation as Evaluation
from nmt.api.evaluation import compare as compare
from nmt.api.evaluation import evaluate as evaluate
from nmt.api.extending import PluginError as PluginError
from nmt.api.extending import check_attention as check_attention
from nmt.api.extending import check_combine as check_combine
from nmt.api.extending import check_loop as check_loop
from nmt.api.extending import check_normalization as check_normalization
from nmt.api.extending import register_attention as register_attention
from nmt.api.extending import register_combine as register_combine
from nmt.api.extending import register_loop as register_loop
from nmt.api.extending import register_normalization as register_normalization
from nmt.api.extending import register_schedule as register_schedule
from nmt.api.groups import GroupsResult as GroupsResult
from nmt.api.groups import compare_groups as compare_groups
from nmt.api.plotting import plot_attention as plot_attention
from nmt.api.plotting import plot_attention_grid as plot_attention_grid
from nmt.api.records import Records as Records
from nmt.api.results import Hypothesis as Hypothesis
from nmt.api.results import ScoreResult as ScoreResult
from nmt.api.results import TranslationResult as TranslationResult
from nmt.api.selection import Selection as Selection
from nmt.api.selection import select as select
from nmt.api.training import Run as Run
from nmt.api.training import TrainingInterrupted as TrainingInterrupted
from nmt.api.training import train as train
from nmt.api.translator import Translator as Translator
from nmt.api.translator import load as load
from nmt.decode.word_merge import WordAlignment as WordAlignment
from nmt.labs.classroom import ClassSetting as ClassSetting
from nmt.labs.classroom import class_setting as class_setting
from nmt.score.alignment import AlignmentScore as AlignmentScore
from nmt.score.alignment import GoldAlignment as GoldAlignment
from nmt.util.errors import CheckpointError as CheckpointError
from nmt.util.errors import ConfigError as ConfigError
from nmt.util.errors import DataError as DataError
from nmt.util.errors import TrainingError as TrainingError
from nmt.util.errors import UserError as UserError

__all__ = list(_EXPORTS)  # nmt/__init__.py's list, the one definition of the surface


def __getattr__(name: str) -> Any:
    """:class:`Energy` (a torch module) and :class:`ScoreContext` (what a context-reading energy gets):
    imported when first asked for, so ``import nmt`` stays torch-free."""
    if name in ("Energy", "ScoreContext"):
        from nmt.model import energies

        return getattr(energies, name)
    if name == "Combine":
        from nmt.model.combine import Combine

        return Combine
    raise AttributeError(f"module 'nmt.api' has no attribute {name!r}")
