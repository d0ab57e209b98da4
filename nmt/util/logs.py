"""The log's look, set in one place: ``nmt``'s commands and the library (``import nmt``) log alike.

The command line configures logging for its process (:func:`configure`); the library does so only
when the program has configured none (:func:`ensure_configured`), so a program with its own logging
keeps it.  In a Jupyter kernel the library shows warnings and errors only: a class that trains a
model in a cell sees the progress bar and what the notebook prints, not a dozen INFO lines per run.
``logging.getLogger("nmt").setLevel("INFO")`` in a cell brings them back (the handler passes every
level; the ``nmt`` logger decides).
"""

from __future__ import annotations

import logging
import sys

FORMAT = "%(asctime)s %(levelname)s %(message)s"
DATE_FORMAT = "%H:%M:%S"


def configure(quiet: bool = False) -> None:
    """The CLI's logging: INFO and up (WARNING with ``quiet``), one timestamped line each, on stderr."""
    logging.basicConfig(level=logging.WARNING if quiet else logging.INFO, format=FORMAT, datefmt=DATE_FORMAT)


def in_kernel() -> bool:
    """Whether this process is a Jupyter (IPython) kernel: a notebook's, not a shell's Python."""
    shell = getattr(sys.modules.get("IPython"), "get_ipython", lambda: None)()
    return type(shell).__name__ == "ZMQInteractiveShell"


def ensure_configured() -> None:
    """:func:`configure` unless the root logger already has a handler (the program chose its own);
    quiet in a Jupyter kernel (:func:`in_kernel`)."""
    if not logging.getLogger().handlers:
        configure(quiet=in_kernel())
