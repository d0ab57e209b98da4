"""Tables the library returns: a list of dicts, one per row, that becomes a pandas DataFrame on request.

Records are what JSON, a notebook and a test read without help; pandas is not a dependency of
nmt, so :meth:`Records.to_pandas` imports it only when called and says how to get it if missing.
"""

from __future__ import annotations

from typing import Any

from nmt.util.errors import UserError


class Records(list[dict[str, Any]]):
    """Rows as dicts (column name -> value), in order; a plain ``list`` in every other way."""

    def to_pandas(self) -> Any:
        """The rows as a ``pandas.DataFrame`` (one column per key); needs pandas installed."""
        try:
            import pandas as pd
        except ImportError:
            raise UserError("to_pandas() needs pandas, which nmt does not install: pip install pandas") from None
        return pd.DataFrame.from_records(list(self))
