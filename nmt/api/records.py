"""Tables the library returns: a list of dicts, one per row, that becomes a pandas DataFrame on request.

Records are what JSON, a notebook and a test read without help; pandas is not a dependency of
nmt, so :meth:`Records.to_pandas` imports it only when called and says how to get it if missing.
Printed (or shown as a notebook cell's value) they are a compact table: columns aligned, long
cells cut, at most :data:`MAX_ROWS` rows (the first and last halves around a ``...`` row).
"""

from __future__ import annotations

import html
import math
from typing import Any, Optional

from nmt.util.errors import UserError

MAX_ROWS = 20
"""Rows a printed table shows; a longer one shows its first and last ten around ``...``."""

MAX_CELL = 24
"""Characters a printed cell shows; a longer value is cut, ending in ``…``."""


def _cell(value: Any) -> str:
    """One value as a short string: numbers to four significant digits, containers by their size."""
    if value is None:
        return ""
    if isinstance(value, float):
        if not math.isfinite(value) or abs(value) < 1e4:
            text = f"{value:.4g}"
        else:
            text = f"{value:.0f}"
    elif isinstance(value, (list, tuple)):
        text = f"[{len(value)} items]"
    elif isinstance(value, dict):
        text = f"{{{len(value)} keys}}"
    else:
        text = str(value).replace("\n", " ")
    return text if len(text) <= MAX_CELL else text[: MAX_CELL - 1] + "…"


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


class Records(list[dict[str, Any]]):
    """Rows as dicts (column name -> value), in order; a plain ``list`` in every other way, but
    for how it prints: a text table (``repr``, ``str``) or an HTML one in a notebook."""

    def to_pandas(self) -> Any:
        """The rows as a ``pandas.DataFrame`` (one column per key); needs pandas installed."""
        try:
            import pandas as pd
        except ImportError:
            raise UserError("to_pandas() needs pandas, which nmt does not install: pip install pandas") from None
        return pd.DataFrame.from_records(list(self))

    def columns(self) -> list[str]:
        """Every row's keys, in the order they first appear."""
        return list(dict.fromkeys(key for row in self for key in row))

    def _shown(self) -> tuple[list[str], list[Optional[list[str]]], list[bool]]:
        """The columns, the shown rows as cells (None: the ``...`` between the first and last
        rows), and which columns hold only numbers (aligned right)."""
        columns = self.columns()
        rows: list[Optional[dict[str, Any]]] = list(self)
        if len(self) > MAX_ROWS:
            half = MAX_ROWS // 2
            rows = [*self[:half], None, *self[-half:]]
        cells = [None if row is None else [_cell(row.get(c)) for c in columns] for row in rows]
        numeric = [all(_is_number(row[c]) for row in self if row.get(c) is not None) for c in columns]
        return columns, cells, numeric

    def _footer(self) -> str:
        return f"[{len(self)} row{'s' if len(self) != 1 else ''} x {len(self.columns())} columns]"

    def __repr__(self) -> str:
        """The rows as a text table: a header, at most :data:`MAX_ROWS` rows, and the table's size."""
        if not self:
            return "Records([]): no rows"
        columns, cells, numeric = self._shown()
        widths = [max([len(c), *(len(row[i]) for row in cells if row is not None)]) for i, c in enumerate(columns)]

        def line(texts: list[str]) -> str:
            parts = [t.rjust(w) if right else t.ljust(w) for t, w, right in zip(texts, widths, numeric)]
            return "  ".join(parts).rstrip()

        shown = [line(columns)]
        shown += [line(["..."] * len(columns)) if row is None else line(row) for row in cells]
        return "\n".join([*shown, self._footer()])

    __str__ = __repr__

    def _repr_html_(self) -> str:
        """The table as HTML, for a notebook."""
        if not self:
            return "<p>Records: no rows</p>"
        columns, cells, numeric = self._shown()

        def cell(tag: str, text: str, right: bool) -> str:
            return f'<{tag} style="text-align: {"right" if right else "left"}">{html.escape(text)}</{tag}>'

        head = "".join(cell("th", c, right) for c, right in zip(columns, numeric))
        body = "".join(
            "<tr>"
            + "".join(cell("td", "..." if row is None else row[i], right) for i, right in enumerate(numeric))
            + "</tr>"
            for row in cells
        )
        footer = f"<p>{html.escape(self._footer())}</p>"
        return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>{footer}"
