"""Before a run trains code of the user's (an attention, a teacher-forcing schedule): check it.

nmt's own energies and schedules pass these checks in the test suite; a registered one is checked
here, in a second, before anything is written, so a wrong shape or a p outside [0, 1] is one line
rather than a crash hours in.
"""

from __future__ import annotations

from nmt.config import Config
from nmt.config.attention_space import ATTENTIONS
from nmt.config.schedules import TF_SCHEDULES
from nmt.model.attention_check import check_attention
from nmt.training.schedules import teacher_forcing_p


def energies_named(cfg: Config) -> set[str]:
    """The energies ``cfg``'s model attends with."""
    m = cfg.model
    if m.arch == "transformer":
        return set()
    names = {m.attention.axes()["energy"]}
    if m.enc_self_attention.layers:
        names.add(m.enc_self_attention.energy)
    if m.dec_self_attention.enabled:
        names.add(m.dec_self_attention.energy)
    return names


def check_user_code(cfg: Config) -> None:
    """Run :func:`~nmt.model.attention_check.check_attention` on each of the user's energies the
    config trains, and the user's schedule at the first and last update; one PluginError if one fails."""
    for name in sorted(energies_named(cfg)):
        if not ATTENTIONS.get(name).builtin:
            check_attention(name)
    if not TF_SCHEDULES.get(cfg.train.tf_schedule).builtin:
        for step in (0, cfg.train.max_steps or 1):
            teacher_forcing_p(cfg.train, step)
