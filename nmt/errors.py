"""Error types that separate the user's mistakes from ours.

The CLI turns a :class:`UserError` into one line on stderr and exit status 2;
anything else is an internal error (exit status 1).
"""


class UserError(Exception):
    """Bad input from the user: a path, a config value, a file's content."""


class ConfigError(UserError):
    """The experiment configuration is malformed or inconsistent."""


class DataError(UserError):
    """A corpus file is missing, unreadable, misaligned or not UTF-8."""


class CheckpointError(UserError):
    """A checkpoint is truncated, foreign or does not match the requested model."""
