"""Error types that separate the user's mistakes from ours.

The CLI turns a :class:`UserError` into one line on stderr and exit status 2;
anything else is an internal error (exit status 1).  A message quotes a value the user gave
through :func:`short_repr`, so no value (a YAML alias bomb, a huge string) can make it long.
"""

from __future__ import annotations

from typing import Any

SHOWN_VALUE_CHARS = 80
"""An error quotes at most this many characters of a value, or of one key."""

MAX_PHRASE_CHARS = 400
"""An error describes one problem in at most this many characters."""


class UserError(Exception):
    """Bad input from the user: a path, a config value, a file's content."""


class ConfigError(UserError):
    """The experiment configuration is malformed or inconsistent."""


class DataError(UserError):
    """A corpus file is missing, unreadable, misaligned or not UTF-8."""


class CheckpointError(UserError):
    """A checkpoint is truncated, foreign or does not match the requested model."""


class TrainingError(UserError):
    """Training cannot go on, for a reason a setting changes: the loss kept being non-finite
    (``train.max_nonfinite`` updates in a row), which a lower ``train.lr`` or gradient clipping cures."""


class Interrupted(KeyboardInterrupt):
    """A command stopped by a signal after saving its work: the CLI prints ``what`` (what was saved and
    how to go on) in one line, and exits with 128 + ``signum``, as ``nmt train`` does."""

    def __init__(self, signum: int, what: str) -> None:
        super().__init__(what)
        self.signum = signum
        self.what = what


def short_repr(value: Any, limit: int = SHOWN_VALUE_CHARS) -> str:
    """``repr(value)`` cut to ``limit`` characters with an ellipsis, never building a huge string.

    A list or mapping is shown item by item until ``limit`` is reached, so a value that YAML
    aliases made enormous costs no more to show than a small one.
    """
    if isinstance(value, (list, tuple, dict)):
        opening, closing = ("{", "}") if isinstance(value, dict) else ("[", "]")
        text = opening
        for item in value.items() if isinstance(value, dict) else value:
            budget = limit - len(text)
            if budget < 4:  # no room for another item (this also bounds the depth of nesting shown)
                return text[: limit - 3] + "..."
            part = (
                f"{short_repr(item[0], budget)}: {short_repr(item[1], budget)}"
                if isinstance(value, dict)
                else short_repr(item, budget)
            )
            text += (", " if text != opening else "") + part
        text += closing
    elif isinstance(value, (str, bytes)):
        text = repr(value[: limit + 1])
    else:
        text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def shorten(phrase: str, limit: int = MAX_PHRASE_CHARS) -> str:
    """``phrase`` cut to ``limit`` characters with an ellipsis."""
    return phrase if len(phrase) <= limit else phrase[: limit - 3] + "..."
