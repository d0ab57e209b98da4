"""One translation request, whoever makes it: ``nmt translate`` (files), ``nmt.Translator`` (lists).

Both turn the options a person gives (a beam, an n-best size, sampling and length options) into
``decode.KEY=VALUE`` overrides of the model's own decode section (:func:`decode_overrides`),
resolve and check the search once before any input is read (:func:`resolve_search`), then
translate lines through the engine (:func:`translate_lines`).  Keeping the three here means the
command line and the library cannot drift apart.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Optional

from nmt.config import DecodeConfig
from nmt.decode.batched import Translation, encode_sources
from nmt.decode.engines import Engine


@dataclass(frozen=True)
class Search:
    """A checked search: the decode options with overrides applied, the beam and the n-best size."""

    decode: DecodeConfig
    beam: int
    n_best: int


DECODE_OPTIONS = (
    "sample",
    "top_k",
    "top_p",
    "temperature",
    "seed",
    "no_repeat_ngram",
    "coverage_penalty",
    "length_penalty",
    "max_len_a",
    "max_len_b",
    "batch_size",
)
"""The decoding options a request names one by one (beside the beam and n-best size, which
:func:`resolve_search` takes): each is the ``decode.*`` option of its name."""


def decode_overrides(options: Mapping[str, Any]) -> list[str]:
    """``decode.KEY=VALUE`` for every option of :data:`DECODE_OPTIONS` given (None: the model's own value).

    With ``sample`` the beam a config names gives way to 1: sampling draws instead of searching
    (a beam given beside it is refused by the engine's check).
    """
    unknown = sorted(set(options) - set(DECODE_OPTIONS))
    assert not unknown, f"not decoding options: {unknown}"
    chosen = {key: value for key, value in options.items() if value is not None and key != "sample"}
    if options.get("sample"):
        chosen.update(sample=True, beam=1)
    return [f"decode.{key}={value}" for key, value in chosen.items()]


def resolve_search(engine: Engine, beam: Optional[int], n_best: Optional[int], overrides: Sequence[str]) -> Search:
    """The search ``engine`` runs for these options, refused in one line (a UserError) if it cannot;
    ``beam`` and ``n_best`` default to the model's decode section (a beam of 1 when sampling)."""
    decode = engine.decode_config(overrides)
    beam = beam if beam is not None else (1 if decode.sample else decode.beam)
    n_best = n_best if n_best is not None else decode.n_best
    engine.check(decode, beam, n_best, overrides)
    return Search(decode, beam, n_best)


def translate_lines(
    engine: Engine,
    search: Search,
    lines: Sequence[str],
    *,
    name: str = "input",
    first_line: int = 1,
    attention: bool = False,
) -> tuple[list[list[int]], list[Translation]]:
    """The source ids of ``lines`` (cut to ``decode.max_src_len`` with a warning naming ``name`` and
    the line) and their translations, in input order; a blank line gets an empty translation."""
    ids = encode_sources(engine.src_tok, lines, search.decode.max_src_len, name, first_line=first_line)
    results = engine.translate(ids, search.decode, beam=search.beam, n_best=search.n_best, attention=attention)
    return ids, results
