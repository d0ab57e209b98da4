"""The library's argument checks: a wrong type or value is one :class:`UserError` naming the
Python parameter, before it reaches torch, SentencePiece or the config.

A command's options are typed by its parser; a function's are whatever the caller passes, so
``translate(beam=1.5)``, ``beam="3"``, ``beam=True`` (a bool is an int in Python and ran as
beam 1), ``seed=2**70`` or ``evaluate(hyps="h.txt")`` (a string iterates into characters) are
refused here, with the parameter's name (``beam``), not the command's (``--beam``).  Decoding
options take their bounds from :class:`~nmt.config.DecodeConfig`'s fields, the same bounds a
``decode.*`` setting meets, so the two cannot drift apart.
"""

from __future__ import annotations

import math
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Optional, Union

from annotated_types import Ge, Gt, Le, Lt

from nmt.config import DecodeConfig
from nmt.util.errors import UserError, short_repr

PathLike = Union[str, "os.PathLike[str]"]

MAX_SEED = 2**32 - 1
"""The largest seed numpy's generators (and so every seeded draw of nmt) take."""


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _shown(bound: float) -> str:
    return str(bound) if isinstance(bound, int) else f"{bound:g}"


def _bounds(minimum: Optional[float], maximum: Optional[float], above: Optional[float] = None) -> str:
    if above is not None:
        return f"greater than {_shown(above)}" + (f" and at most {_shown(maximum)}" if maximum is not None else "")
    if minimum is not None and maximum is not None:
        return f"from {_shown(minimum)} to {_shown(maximum)}"
    if minimum is not None:
        return f"of at least {_shown(minimum)}"
    return f"of at most {_shown(maximum)}" if maximum is not None else ""


def integer(name: str, value: Any, *, minimum: Optional[int] = None, maximum: Optional[int] = None) -> int:
    """``value`` if it is an int (not a bool) within the bounds; else a UserError naming ``name``."""
    if not _is_int(value) or (minimum is not None and value < minimum) or (maximum is not None and value > maximum):
        raise UserError(f"{name}={short_repr(value)}: give a whole number {_bounds(minimum, maximum)}".rstrip())
    return int(value)


def number(
    name: str,
    value: Any,
    *,
    minimum: Optional[float] = None,
    maximum: Optional[float] = None,
    above: Optional[float] = None,
) -> float:
    """``value`` as a float if it is a finite int or float (not a bool) within the bounds."""
    ok = isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)
    if ok and (
        (minimum is not None and value < minimum)
        or (above is not None and value <= above)
        or (maximum is not None and value > maximum)
    ):
        ok = False
    if not ok:
        raise UserError(f"{name}={short_repr(value)}: give a finite number {_bounds(minimum, maximum, above)}".rstrip())
    return float(value)


def flag(name: str, value: Any) -> bool:
    """``value`` if it is True or False (a 0, 1 or "yes" is refused: it hides a mistake)."""
    if not isinstance(value, bool):
        raise UserError(f"{name}={short_repr(value)}: give True or False")
    return value


def text(name: str, value: Any) -> str:
    """``value`` if it is a string that is valid Unicode (no lone surrogate such as ``"\\ud800"``)."""
    if not isinstance(value, str):
        raise UserError(f"{name}={short_repr(value)}: give a string, not {type(value).__name__}")
    try:
        value.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise UserError(
            f"{name}: {short_repr(value)} holds {short_repr(value[exc.start : exc.end])} at {exc.start}, "
            "a lone surrogate, which is not Unicode text"
        ) from None
    return value


def choice(name: str, value: Any, options: Sequence[str]) -> str:
    """``value`` if it is one of ``options``."""
    if not isinstance(value, str) or value not in options:
        raise UserError(f"{name}={short_repr(value)}: give one of {', '.join(map(repr, options))}")
    return value


def path(name: str, value: Any) -> Path:
    """``value`` as a Path if it is a string or an ``os.PathLike`` (None, a number or bytes are refused)."""
    if not isinstance(value, (str, os.PathLike)) or isinstance(value, bytes) or value == "":
        raise UserError(f"{name}={short_repr(value)}: give a path (a str or pathlib.Path)")
    return Path(value)


def optional_path(name: str, value: Any) -> Optional[Path]:
    return None if value is None else path(name, value)


def paths(name: str, value: Any) -> list[Path]:
    """A list of paths from a list (or tuple) of them; one string is refused, since iterating it
    would give its characters."""
    if isinstance(value, (str, bytes, os.PathLike)) or not isinstance(value, Sequence):
        raise UserError(f"{name}={short_repr(value)}: give a list of paths, e.g. [{short_repr(str(value))}]")
    return [path(f"{name}[{i}]", item) for i, item in enumerate(value)]


def decode_option(name: str, value: Any) -> Any:
    """A decoding option given by keyword (``beam``, ``top_p``, ``seed``, ...), checked against the
    type and bounds of :class:`~nmt.config.DecodeConfig`'s field of that name; None passes (the
    model's own value)."""
    if value is None:
        return None
    field = DecodeConfig.model_fields[name]
    bounds: dict[str, Optional[float]] = {"minimum": None, "maximum": None, "above": None}
    for bound in field.metadata:
        if isinstance(bound, Ge):
            bounds["minimum"] = float(bound.ge)  # type: ignore[arg-type]
        elif isinstance(bound, Gt):
            bounds["above"] = float(bound.gt)  # type: ignore[arg-type]
        elif isinstance(bound, (Le, Lt)):
            bounds["maximum"] = float(bound.le if isinstance(bound, Le) else bound.lt)  # type: ignore[arg-type]
    annotation = field.annotation
    if annotation is bool:
        return flag(name, value)
    if annotation is float:
        return number(name, value, **bounds)
    low, high = bounds["minimum"], bounds["maximum"]
    return integer(
        name,
        value,
        minimum=None if low is None else int(low),
        maximum=MAX_SEED if name == "seed" else None if high is None else int(high),
    )
