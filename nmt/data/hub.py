"""Parallel text from the Hugging Face hub (``data.corpus: hub``) through ``datasets``, and the
helpers that the JSON Lines reader of :mod:`nmt.data.sources` shares: which columns hold the two
languages, and ``datasets`` kept quiet and offline when asked.

An unreachable hub is a one-line :class:`~nmt.util.errors.DataError` that suggests offline mode
or local files; ``HF_HUB_OFFLINE`` is read per call, not once at import.
"""

from __future__ import annotations

import contextlib
import logging
import os
import socket
import urllib.parse
from collections.abc import Iterator, Mapping

from nmt.util.errors import DataError

logger = logging.getLogger(__name__)


@contextlib.contextmanager
def _offline_mode_from_env() -> Iterator[None]:
    """Honour ``HF_HUB_OFFLINE`` as it is now, not as it was when ``datasets`` was imported.

    Both libraries read the variable once at import; re-reading it per call lets the CLI and
    tests switch to offline mode later. The previous values are restored afterwards.
    """
    import datasets
    import huggingface_hub.constants as hub_constants

    value = os.environ.get("HF_HUB_OFFLINE") or os.environ.get("HF_DATASETS_OFFLINE") or ""
    offline = value.upper() in ("1", "ON", "YES", "TRUE")
    saved = (datasets.config.HF_HUB_OFFLINE, hub_constants.HF_HUB_OFFLINE)
    if offline:
        datasets.config.HF_HUB_OFFLINE = hub_constants.HF_HUB_OFFLINE = True
    try:
        yield
    finally:
        datasets.config.HF_HUB_OFFLINE, hub_constants.HF_HUB_OFFLINE = saved


@contextlib.contextmanager
def quiet_datasets(progress: bool) -> Iterator[None]:
    """Hide the progress bars and log messages of ``datasets`` and the hub client unless
    ``progress`` is on; the previous settings are restored afterwards.

    Their "Generating train split" bars otherwise go to stderr even with ``--no-progress``
    and fill log files. ``progress`` is the caller's resolved choice, as for our own bars
    (see :mod:`nmt.data`), so a forced ``--progress`` shows them in a log too. Even
    their errors are muted: every failure inside reaches the caller as an exception, which
    we turn into one line, and the library's own log of it would only repeat it.
    """
    import datasets
    import huggingface_hub.utils as hub_utils

    if progress:
        yield
        return
    bars_were_off = (datasets.are_progress_bars_disabled(), hub_utils.are_progress_bars_disabled())
    verbosity = datasets.logging.get_verbosity()
    datasets.disable_progress_bars()
    hub_utils.disable_progress_bars()
    datasets.logging.set_verbosity(datasets.logging.CRITICAL)
    try:
        yield
    finally:
        datasets.logging.set_verbosity(verbosity)
        if not bars_were_off[0]:
            datasets.enable_progress_bars()
        if not bars_were_off[1]:
            hub_utils.enable_progress_bars()


def table_columns(table, src: str, tgt: str, what: str) -> tuple[list[str], list[str]]:
    """Source and target lists from a ``datasets.Dataset`` in one of the accepted layouts.

    Accepted: a ``translation`` column of ``{lang: text}`` dicts (WMT/OPUS style), columns
    named after the two languages, or columns named ``src`` and ``tgt``.
    """
    cols = table.column_names
    if "translation" in cols:
        pairs = table["translation"]
        if pairs and not (src in pairs[0] and tgt in pairs[0]):
            raise DataError(f"{what}: translations have languages {sorted(pairs[0])}, not {src} and {tgt}")
        src_lines, tgt_lines = [p[src] for p in pairs], [p[tgt] for p in pairs]
    elif src in cols and tgt in cols:
        src_lines, tgt_lines = table[src], table[tgt]
    elif "src" in cols and "tgt" in cols:
        src_lines, tgt_lines = table["src"], table["tgt"]
    else:
        raise DataError(f"{what}: columns {cols} hold neither 'translation' nor '{src}'/'{tgt}' nor 'src'/'tgt'")
    for side in (src_lines, tgt_lines):
        for i, value in enumerate(side):
            if not isinstance(value, str):
                raise DataError(f"{what}: row {i + 1} has {value!r} where text was expected")
    return list(src_lines), list(tgt_lines)


def _hub_unreachable(timeout: float = 3.0) -> str | None:
    """Why the hub's host cannot be reached (DNS, refused, timeout), or None when it can.

    Asked once up front so an offline machine fails in seconds with one line, instead of
    after the hub client's own retries and warnings.  Skipped in offline mode, where a
    dataset may come from the local cache.
    """
    if os.environ.get("HF_HUB_OFFLINE") or os.environ.get("HF_DATASETS_OFFLINE"):
        return None
    host = urllib.parse.urlparse(os.environ.get("HF_ENDPOINT") or "https://huggingface.co")
    try:
        socket.create_connection((host.hostname, host.port or 443), timeout=timeout).close()
    except OSError as e:
        return f"{host.hostname}: {e.strerror or e}"
    return None


def _hub_hint() -> str:
    """What to do without the hub. (``--mirror`` is no help here: it only serves Multi30k.)"""
    local = "or give local files (data.corpus=local with data.local_files)"
    if os.environ.get("HF_HUB_OFFLINE") or os.environ.get("HF_DATASETS_OFFLINE"):
        return f"offline mode uses only a copy already in the datasets cache: download it once online, {local}"
    return f"set HF_HUB_OFFLINE=1 to use a copy already in the datasets cache, {local}"


def load_hub(
    name: str, config: str | None, src: str, tgt: str, splits: Mapping[str, str], progress: bool = False
) -> dict[str, tuple[list[str], list[str]]]:
    """A translation dataset from the Hugging Face hub, e.g. ``load_hub("wmt14", "de-en", ...)``.

    ``splits`` maps our split names to the hub's (``{"valid": "validation", ...}``). Network,
    unknown-dataset and offline failures become one-line DataErrors; a dataset already in
    the local ``datasets`` cache also loads with ``HF_HUB_OFFLINE=1``. ``progress`` shows the
    download and generation bars.
    """
    import datasets

    label = name if config is None else f"{name}/{config}"
    reason = _hub_unreachable()
    if reason is not None:
        raise DataError(f"cannot reach the Hugging Face hub for '{label}' ({reason}); {_hub_hint()}")
    raw: dict[str, tuple[list[str], list[str]]] = {}  # split -> (source lines, target lines)
    for ours, theirs in splits.items():
        try:  # one split at a time: hub datasets in parquet then fetch only that split's files
            with _offline_mode_from_env(), quiet_datasets(progress):
                table = datasets.load_dataset(name, config, split=theirs)
        except ConnectionError as e:
            raise DataError(
                f"cannot reach the Hugging Face hub for '{label}' ({str(e).splitlines()[0]}); {_hub_hint()}"
            ) from None
        except Exception as e:  # unknown names, configs and splits arrive with many exception types
            first = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
            raise DataError(f"cannot load split '{theirs}' of '{label}' from the Hugging Face hub: {first}") from None
        raw[ours] = table_columns(table, src, tgt, f"{label} [{theirs}]")
        logger.info("hub %s %s: %d pairs", label, theirs, len(raw[ours][0]))
    return raw
