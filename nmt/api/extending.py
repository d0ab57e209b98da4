"""Extending nmt without forking it: an attention or a teacher-forcing schedule of your own.

- subclass :class:`nmt.Energy` (scores of queries against keys) and register it with
  :func:`register_attention`; a config then names it (``model.attention.type: cosine``) or its
  import path (``my_attention:CosineEnergy``), and every command trains, decodes, compares and
  exports it as it does nmt's own;
- :func:`check_attention` runs the checks nmt's own attentions pass (``nmt train`` runs them too);
- :func:`register_schedule` adds a teacher-forcing schedule ``(step, train) -> p``.

A checkpoint of such a model records the module and a hash of its source; loading it imports that
module only when the caller allows it by name (``nmt.load(path, modules=["my_attention"])``,
``--module my_attention``).  See docs/adding_an_attention.md.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Union

from nmt.config.attention_space import register_attention as register_attention
from nmt.config.schedules import register_schedule as register_schedule
from nmt.util.errors import UserError
from nmt.util.registry import PluginError as PluginError
from nmt.util.registry import allowing

__all__ = ["PluginError", "allowing_modules", "check_attention", "register_attention", "register_schedule"]


def check_attention(energy: Union[str, type], seed: int = 0) -> list[str]:
    """Check an energy (a subclass of :class:`nmt.Energy`, or a registered name) as nmt checks its own:
    scores of shape (B, h, T, S) and finite, zero weight on padding, rows summing to 1, a sentence's
    context independent of its padding and batch, one query at a time equal to all at once, and
    gradients reaching the energy's parameters.  Returns the properties checked.

    Raises:
        nmt.PluginError: the first property that fails, in one line naming it.
    """
    from nmt.model.attention_check import check_attention as run_checks  # torch: imported on use

    if isinstance(seed, bool) or not isinstance(seed, int):
        raise UserError(f"seed: expected an integer, not {type(seed).__name__}")
    return run_checks(energy, seed)


def allowing_modules(modules: Sequence[str] = ()) -> Any:
    """A context in which checkpoints may import their recorded code from ``modules`` (module names,
    or paths of ``.py`` files, which are imported at once); what ``modules=`` arguments use."""
    if isinstance(modules, str):
        raise UserError(f"modules: give a list of module names, not one string (e.g. modules=[{modules!r}])")
    if not all(isinstance(m, str) for m in modules):
        raise UserError("modules: every item is a module name or a .py file's path (a string)")
    return allowing(modules)
