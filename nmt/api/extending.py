"""Extending nmt without forking it: an attention or a teacher-forcing schedule of your own.

- subclass :class:`nmt.Energy` (scores of queries against keys) and register it with
  :func:`register_attention`; a config then names it (``model.attention.type: cosine``) or its
  import path (``my_attention:CosineEnergy``), and every command trains, decodes, compares and
  exports it as it does nmt's own;
- :func:`check_attention` runs the checks nmt's own attentions pass (``nmt train`` runs them too);
- :func:`register_schedule` adds a teacher-forcing schedule ``(step, train) -> p``;
- :func:`register_loop` adds the loop over target positions that decides what the decoder reads,
  ``(step, tgt_in, state, p) -> logits`` (nmt's ``sampled``), which :func:`check_loop` checks;
- :func:`register_normalization` adds the step that makes scores into weights,
  ``(scores, mask) -> weights`` (nmt's ``softmax``, ``sparsemax``, ``entmax15``), which
  :func:`check_normalization` checks as nmt's own;
- :func:`register_combine` adds the step that makes the decoder's attentional output from the
  query and the context (a subclass of :class:`nmt.Combine`; nmt's ``tanh``, ``maxout``, ``gate``),
  which :func:`check_combine` checks as nmt's own.

A checkpoint of such a model records the module and a hash of its source; loading it imports that
module only when the caller allows it by name (``nmt.load(path, modules=["my_attention"])``,
``--module my_attention``).  See docs/adding_an_attention.md.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Optional, Union

from nmt.config.attention_space import register_attention as register_attention
from nmt.config.combines import register_combine as register_combine
from nmt.config.decoder_loops import register_loop as register_loop
from nmt.config.normalizations import register_normalization as register_normalization
from nmt.config.schedules import register_schedule as register_schedule
from nmt.util.errors import UserError, short_repr
from nmt.util.registry import PluginError as PluginError
from nmt.util.registry import allowing

__all__ = [
    "PluginError",
    "allowing_modules",
    "check_attention",
    "check_combine",
    "check_loop",
    "check_normalization",
    "register_attention",
    "register_combine",
    "register_loop",
    "register_normalization",
    "register_schedule",
]


def check_attention(
    energy: Union[str, type], seed: int = 0, learn: bool = False, params: Optional[dict[str, Any]] = None
) -> list[str]:
    """Check an energy (a subclass of :class:`nmt.Energy`, or a registered name) as nmt checks its own:
    scores of shape (B, h, T, S) and finite, zero weight on padding, rows summing to 1, a sentence's
    context independent of its padding and batch, one query at a time equal to all at once, and
    gradients reaching the energy's parameters.  With ``learn``, also the learning test nmt's own
    attention variants pass: a tiny model with it learns to reverse sentences of 10 to 24 words to
    greedy BLEU 70 in 600 updates (about a minute on 2 CPU cores; :mod:`nmt.training.learning_check`).
    Returns the properties checked.  ``params``: the energy's own options (its ``Params``), as
    ``model.attention.params`` gives them; its defaults when None.

    Raises:
        nmt.PluginError: the first property that fails, in one line naming it.
    """
    from nmt.model.attention_check import check_attention as run_checks  # torch: imported on use

    if isinstance(seed, bool) or not isinstance(seed, int):
        raise UserError(f"seed: expected an integer, not {type(seed).__name__}")
    if not isinstance(learn, bool):
        raise UserError(f"learn: expected True or False, not {type(learn).__name__}")
    if params is not None and not isinstance(params, dict):
        raise UserError(f"params: expected a dict of the energy's options, not {type(params).__name__}")
    passed = run_checks(energy, seed, params)
    if learn:
        passed.append(_learns(energy))
    return passed


def check_normalization(normalization: Union[str, Any], seed: int = 0) -> list[str]:
    """Check a normalization (a function ``(scores, mask) -> weights``, or a registered name) as nmt
    checks its own: weights of the scores' shape, finite and non-negative, masked keys at exactly 0,
    rows summing to 1 with a padding and a per-query mask, a sentence's weights independent of its
    padding and batch, finite weights for a row with no key and for large scores, and finite
    gradients.  Returns the properties checked.

    Raises:
        nmt.PluginError: the first property that fails, in one line naming it.
    """
    from nmt.model.normalization_check import check_normalization as run_checks  # torch: imported on use

    if isinstance(seed, bool) or not isinstance(seed, int):
        raise UserError(f"seed: expected an integer, not {type(seed).__name__}")
    return run_checks(normalization, seed)


def check_combine(combine: Union[str, type], seed: int = 0) -> list[str]:
    """Check a combine step (a subclass of :class:`nmt.Combine`, or a registered name) as nmt checks its
    own: built as ``cls(in_size, out_size)``, output (..., out_size) and finite for one step and a whole
    target, each row independent of the others, gradients reaching its parameters.  Returns the properties
    checked.

    Raises:
        nmt.PluginError: the first property that fails, in one line naming it.
    """
    from nmt.model.combine import check_combine as run_checks  # torch: imported on use

    if isinstance(seed, bool) or not isinstance(seed, int):
        raise UserError(f"seed: expected an integer, not {type(seed).__name__}")
    return run_checks(combine, seed)


def check_loop(loop: Union[str, Any], seed: int = 0) -> list[str]:
    """Check a decoder loop (a function ``(step, tgt_in, state, p) -> logits``, or a registered name) as
    nmt checks its own: one step per target position, BOS first, the step's logits returned with their
    gradients; the reference at p = 1, the previous argmax at p = 0, and in between the reference with
    probability p by one coin per sentence and position from torch's RNG.  Returns the properties checked.

    Raises:
        nmt.PluginError: the first property that fails, in one line naming it.
    """
    from nmt.model.loop_check import check_loop as run_checks  # torch: imported on use

    if isinstance(seed, bool) or not isinstance(seed, int):
        raise UserError(f"seed: expected an integer, not {type(seed).__name__}")
    return run_checks(loop, seed)


def _learns(energy: Union[str, type]) -> str:
    """The learning test of :func:`check_attention` on ``energy`` (its registered name, or its class's)."""
    import tempfile
    from pathlib import Path

    from nmt.config.attention_space import ATTENTIONS
    from nmt.training.learning_check import FLOOR, STEPS, reversal_bleu

    name = energy if isinstance(energy, str) else ATTENTIONS.name_of(energy)
    with tempfile.TemporaryDirectory(prefix="nmt-learn-") as folder:
        bleu = reversal_bleu(Path(folder), [f"model.attention.type={name}"])
    if bleu < FLOOR:
        raise PluginError(
            f"attention {name} fails the learning test: greedy BLEU {bleu:.1f} on long reversal after {STEPS} "
            f"updates, below {FLOOR:.0f} (nmt's own attentions reach 83.5 to 100, none 24.7)"
        )
    return f"learns long reversal: greedy BLEU {bleu:.1f} >= {FLOOR:.0f} after {STEPS} updates"


def allowing_modules(modules: Sequence[str] = ()) -> Any:
    """A context in which checkpoints may import their recorded code from ``modules`` (module names,
    or paths of ``.py`` files, which are imported at once); what ``modules=`` arguments use."""
    if isinstance(modules, str):
        raise UserError(f"modules: give a list of module names, not one string (e.g. modules=[{short_repr(modules)}])")
    if not isinstance(modules, (list, tuple)):
        raise UserError(f"modules: give a list of module names or .py paths, not {short_repr(modules)}")
    if not all(isinstance(m, str) for m in modules):
        raise UserError("modules: every item is a module name or a .py file's path (a string)")
    return allowing(modules)
