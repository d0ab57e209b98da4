"""The log's look, set in one place: ``nmt``'s commands and the library (``import nmt``) log alike.

The command line configures logging for its process (:func:`configure`); the library does so only
when the program has configured none (:func:`ensure_configured`), so a notebook sees the same
lines a shell does, and a program with its own logging keeps it.
"""

from __future__ import annotations

import logging

FORMAT = "%(asctime)s %(levelname)s %(message)s"
DATE_FORMAT = "%H:%M:%S"


def configure(quiet: bool = False) -> None:
    """The CLI's logging: INFO and up (WARNING with ``quiet``), one timestamped line each, on stderr."""
    logging.basicConfig(level=logging.WARNING if quiet else logging.INFO, format=FORMAT, datefmt=DATE_FORMAT)


def ensure_configured() -> None:
    """:func:`configure` unless the root logger already has a handler (the program chose its own)."""
    if not logging.getLogger().handlers:
        configure()
