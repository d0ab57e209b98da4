"""Before and while a run trains code of the user's (an attention, a teacher-forcing schedule): check it, name it.

nmt's own energies and schedules pass these checks in the test suite; a registered one is checked
here, in a second, before anything is written, so a wrong shape or a p outside [0, 1] is one line
rather than a crash hours in.  What the user's code raises later, mid-run, is one line naming it
too (:func:`naming_user_code`), and so is the advice when the loss stops being finite
(:func:`nonfinite_advice`).
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from types import CodeType, TracebackType
from typing import Any, Optional

from nmt.config import Config, TrainConfig
from nmt.config.attention_space import ATTENTIONS
from nmt.config.combines import COMBINES
from nmt.config.decoder_loops import DECODER_LOOPS
from nmt.config.normalizations import NORMALIZATIONS
from nmt.config.schedules import TF_SCHEDULES
from nmt.model.attention_check import check_attention, raised
from nmt.model.combine import check_combine
from nmt.model.loop_check import check_loop
from nmt.model.normalization_check import check_normalization
from nmt.training.schedules import teacher_forcing_p
from nmt.util.errors import UserError
from nmt.util.registry import PluginError


def energies_named(cfg: Config) -> set[str]:
    """The energies ``cfg``'s model attends with."""
    m = cfg.model
    if m.arch == "transformer":
        return {m.transformer.energy}
    names = {m.attention.axes()["energy"]}
    if m.enc_self_attention.layers:
        names.add(m.enc_self_attention.energy)
    if m.dec_self_attention.enabled:
        names.add(m.dec_self_attention.energy)
    return names


def user_energies(cfg: Config) -> list[str]:
    """The energies of ``cfg``'s model that are the user's code (registered, not nmt's own), sorted."""
    return sorted(name for name in energies_named(cfg) if not ATTENTIONS.get(name).builtin)


def user_normalizations(cfg: Config) -> list[str]:
    """The normalizations of ``cfg``'s model that are the user's code, sorted."""
    m = cfg.model
    if m.arch == "transformer":
        names = {m.transformer.normalize}
    else:
        names = {m.attention.normalize}
        names |= {m.enc_self_attention.normalize} if m.enc_self_attention.layers else set()
        names |= {m.dec_self_attention.normalize} if m.dec_self_attention.enabled else set()
    return sorted(name for name in names if not NORMALIZATIONS.get(name).builtin)


def user_schedule(cfg: Config) -> Optional[str]:
    """``train.tf_schedule`` where it is the user's code, else None."""
    name = cfg.train.tf_schedule
    return None if TF_SCHEDULES.get(name).builtin else name


def user_loop(cfg: Config) -> Optional[str]:
    """``train.decoder_loop`` where it is the user's code, else None (nmt's ``sampled``)."""
    name = cfg.train.decoder_loop
    return None if DECODER_LOOPS.get(name).builtin else name


def loop_to_train_with(train: TrainConfig) -> Optional[Callable[..., Any]]:
    """The user's decoder loop (``train.decoder_loop``) to call at every update, or None where nmt's own
    loop decides."""
    entry = DECODER_LOOPS.get(train.decoder_loop)
    return None if entry.builtin else entry.target


def check_user_energies(cfg: Config) -> None:
    """:func:`~nmt.model.attention_check.check_attention` on each of the user's energies ``cfg``
    trains; one PluginError if one fails (a forward not written yet, NotImplementedError, included)."""
    m = cfg.model
    params = m.transformer.params if m.arch == "transformer" else m.attention.params
    for name in user_energies(cfg):
        try:
            check_attention(
                name, params=params if name in (m.attention.axes()["energy"], m.transformer.energy) else None
            )
        except NotImplementedError as exc:
            raise PluginError(f"attention {name}: its forward raised {raised(exc)}") from exc


def check_user_code(cfg: Config) -> None:
    """Check each of the user's energies the config trains (:func:`check_user_energies`), and the
    user's schedule: called as nmt calls it, at the first and last update; one PluginError if one fails."""
    check_user_energies(cfg)
    for name in user_normalizations(cfg):
        check_normalization(name)
    if cfg.model.arch == "rnn" and not COMBINES.get(cfg.model.attention.combine).builtin:
        check_combine(cfg.model.attention.combine)
    if user_schedule(cfg) is not None:
        for step in (0, cfg.train.max_steps or 1):
            teacher_forcing_p(cfg.train, step)
    loop = user_loop(cfg)
    if loop is not None:
        check_loop(loop)


def _codes(target: Any) -> set[CodeType]:
    """The code objects of a function, or of the methods a class of the user's defines (its bases' too)."""
    if not isinstance(target, type):
        code = getattr(target, "__code__", None)
        return {code} if isinstance(code, CodeType) else set()
    codes = set()
    for klass in target.__mro__:
        if klass.__module__.startswith(("nmt.", "torch.", "builtins")):
            continue
        for value in vars(klass).values():
            function = getattr(value, "__func__", getattr(value, "fget", value))  # static/class methods, properties
            if isinstance(getattr(function, "__code__", None), CodeType):
                codes.add(function.__code__)
    return codes


def _culprit(cfg: Config, tb: Optional[TracebackType]) -> Optional[str]:
    """The user's attention or schedule (as a message names it) whose code ran in traceback ``tb``, if any:
    the innermost frame of one of its functions or methods, else of a module that defines one of them."""
    named = [(f"attention {name}", ATTENTIONS.get(name).target) for name in user_energies(cfg)]
    named += [(f"normalization {name}", NORMALIZATIONS.get(name).target) for name in user_normalizations(cfg)]
    schedule = user_schedule(cfg)
    if schedule is not None:
        named.append((f"train.tf_schedule={schedule}", TF_SCHEDULES.get(schedule).target))
    loop = user_loop(cfg)
    if loop is not None:
        named.append((f"train.decoder_loop={loop}", DECODER_LOOPS.get(loop).target))
    codes = {code: what for what, target in named for code in _codes(target)}
    modules: dict[str, str] = {}
    for what, target in named:
        modules.setdefault(getattr(target, "__module__", ""), what)
    by_code = by_module = None
    while tb is not None:
        code, module = tb.tb_frame.f_code, tb.tb_frame.f_globals.get("__name__", "")
        by_code = codes.get(code, by_code)
        if not module.startswith("nmt."):
            by_module = modules.get(module, by_module)
        tb = tb.tb_next
    return by_code or by_module


@contextlib.contextmanager
def naming_user_code(cfg: Config, doing: str = "training") -> Iterator[None]:
    """Within the block, an exception raised in the user's attention or schedule (its frame on the
    traceback) becomes one PluginError naming it; nmt's own errors and the user's errors pass unchanged."""
    try:
        yield
    except (UserError, KeyboardInterrupt):
        raise
    except Exception as exc:
        culprit = _culprit(cfg, exc.__traceback__)
        if culprit is None:
            raise
        raise PluginError(f"{culprit} raised {raised(exc)} while {doing}") from exc


def nonfinite_advice(cfg: Config) -> str:
    """What to try when the loss keeps being non-finite: a lower learning rate or clipping, and,
    for a model that attends with the user's energy, that energy first (its scores, its gradients)."""
    advice = "lower train.lr or enable train.clip_grad_norm"
    theirs = user_energies(cfg)
    if not theirs:
        return advice
    return (
        f"the model attends with your attention {', '.join(theirs)}: check that its scores and their "
        f"gradients stay finite (nmt.check_attention), or {advice}"
    )
