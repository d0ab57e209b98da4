"""Lecture labs: each figure and table of the attention lectures, made from scratch by one command.

``nmt lab NAME`` runs one lab (:mod:`nmt.labs.base` says what a lab is); ``nmt lab --list`` names
them.  Each lab lives in its own module, listed here and imported only when it runs or is
listed.  Every lab also runs at a tiny size on the synthetic corpus
(``--tiny``, in the tests), so the code behind a committed figure cannot rot.

Imports nmt.comparison (labs train and score their runs as ``nmt compare`` does) and everything below it;
only nmt.cli imports it.
"""

from __future__ import annotations

LAB_MODULES: dict[str, str] = {
    "teacher_forcing": "nmt.labs.teacher_forcing",
    "length": "nmt.labs.length",
    "matrices": "nmt.labs.matrices",
    "kernel": "nmt.labs.kernel",
    "beam": "nmt.labs.beam",
    "heads": "nmt.labs.heads",
}
"""Lab name -> the module whose ``LAB`` (a :class:`nmt.labs.base.Lab`) runs it, in the order of the lectures."""
