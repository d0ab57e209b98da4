"""How the scripts end on a bad argument: one line ``SCRIPT: error: ...`` and exit status 2, as the
nmt CLI ends on a user error, and before any file is read or written.

argparse's own ending prints a usage block above its line, and ``sys.exit(message)`` exits with
status 1, which a caller cannot tell from a crash; a script that checks an argument only when it
reaches it may already have written files (``choose_on_valid.py`` rewrote ``avg_lastN.pt`` before
a bad ``--test`` stopped it).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from typing import NoReturn, Optional


def fail(prog: str, message: str) -> NoReturn:
    """End the script as the nmt CLI ends on a user error: one line on stderr, exit status 2."""
    print(f"{prog}: error: {message}", file=sys.stderr)
    sys.exit(2)


class Parser(argparse.ArgumentParser):
    """argparse's parser whose refusals are one line (:func:`fail`), without the usage block."""

    def error(self, message: str) -> NoReturn:
        fail(self.prog, message)


def whole_number(low: int, high: Optional[int] = None, shown: str = "", why: str = "") -> Callable[[str], int]:
    """An argparse ``type``: a whole number from ``low`` up to, not including, ``high`` (where given).

    ``shown`` writes the range in the message (``[0, 2^32)``); ``why`` says why the bound is there.
    """

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected a whole number, got {text[:40]!r}") from None
        if value < low or (high is not None and value >= high):
            bound = f"be in {shown or f'[{low}, {high})'}" if high is not None else f"be at least {low}"
            raise argparse.ArgumentTypeError(f"must {bound}{f' ({why})' if why else ''}, got {value}")
        return value

    return parse
