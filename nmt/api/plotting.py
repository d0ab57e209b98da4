"""``nmt.plot_attention`` and ``nmt.plot_attention_grid``: results' attention matrices drawn with
matplotlib for a notebook or a slide, one on an axes or several in a grid with one colour bar.

A result's attention is what its search attended with: one (T, S) matrix, the mean over heads for a
multi-head attention (a Transformer's last layer).  There is no head axis to draw; every layer's
and head's maps of a Transformer are drawn by ``nmt translate --attention DIR`` on the torch engine.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Optional, Union

import numpy as np

from nmt.api import arguments as check
from nmt.api.results import ScoreResult, TranslationResult
from nmt.util.errors import UserError, short_repr
from nmt.util.plots import draw_attention

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

Result = Union[TranslationResult, ScoreResult]

_DEFAULT_FONTSIZE = 10.0
"""matplotlib's default font size, against which a larger ``fontsize`` widens a new figure."""


def _attention_of(result: Any, name: str) -> np.ndarray:
    """``result``'s (T, S) attention; anything else is a UserError naming the parameter ``name``."""
    if not isinstance(result, (TranslationResult, ScoreResult)):
        raise UserError(
            f"{name}: give one result of Translator.translate or Translator.score, not {type(result).__name__}"
        )
    who = "this result" if name == "result" else name
    if result.attention is None:
        raise UserError(f"{who} has no attention: translate with return_attention=True (engine torch or onnxruntime)")
    if result.attention.size == 0:
        raise UserError(f"{who} is of a blank sentence: there is no attention to draw")
    return result.attention


def _fontsize(fontsize: Any) -> Optional[float]:
    return None if fontsize is None else check.number("fontsize", fontsize, above=0.0, maximum=200.0)


def _panel_size(T: int, S: int, fontsize: Optional[float]) -> tuple[float, float]:
    """Inches for one (T, S) map whose tokens are set in ``fontsize`` points (None: the default)."""
    scale = max(1.0, (fontsize or _DEFAULT_FONTSIZE) / _DEFAULT_FONTSIZE)
    return min(2.5 + 0.35 * S * scale, 30.0), min(2.0 + 0.3 * T * scale, 30.0)


def plot_attention(
    result: Result,
    ax: Optional[Axes] = None,
    title: str = "",
    *,
    fontsize: Optional[float] = None,
    colorbar: bool = True,
) -> Axes:
    """Draw ``result``'s attention: source tokens along the x axis, target tokens (``</s>`` last)
    down the y axis, a colour bar beside; returns the axes.

    The colour scale is fixed to [0, 1], so maps drawn apart compare by colour.  For several maps
    side by side under one colour bar, see :func:`plot_attention_grid`.

    Args:
        result: from :meth:`~nmt.api.translator.Translator.translate` with ``return_attention=True``,
            or from :meth:`~nmt.api.translator.Translator.score`.  A multi-head model's result holds
            the mean over heads (there is no head axis to draw).
        ax: where to draw; None makes a new figure with pyplot (so a notebook shows it), larger
            with a larger ``fontsize``.
        title: the axes' title.
        fontsize: points of the tick labels (the tokens), the axis labels and the title, e.g. 16
            for a lecture hall; None keeps matplotlib's sizes.
        colorbar: draw the colour bar beside the map (False: leave it to the caller, e.g. one bar
            for a figure of several maps).

    Raises:
        nmt.util.errors.UserError: a result without attention, or of a blank sentence, or an
            argument of the wrong type or out of range (naming the parameter).
    """
    attention = _attention_of(result, "result")
    check.text("title", title)
    size = _fontsize(fontsize)
    check.flag("colorbar", colorbar)
    if ax is None:
        import matplotlib.pyplot as plt

        T, S = attention.shape
        _, ax = plt.subplots(figsize=_panel_size(T, S, size), layout="constrained")
    return draw_attention(
        ax, attention, result.source_tokens, result.tokens, title, fontsize=size, colorbar=colorbar, limits=(0.0, 1.0)
    )


def plot_attention_grid(
    results: Sequence[Result],
    titles: Optional[Sequence[str]] = None,
    *,
    ncols: int = 2,
    fontsize: Optional[float] = None,
    title: str = "",
) -> Figure:
    """Draw several results' attention as panels of one figure, row by row, with one colour bar
    for all of them; returns the figure (made with pyplot, so a notebook shows it).

    Every panel's colour scale is [0, 1], so the one bar reads true for each; each panel keeps its
    own tokens (the results may be of different sentences, or one sentence by different models).

    Args:
        results: results with attention, as :func:`plot_attention` takes them; at least one.
        titles: one title per result (None: no panel titles).
        ncols: panels per row (at most the number of results); the rows follow.
        fontsize: points of the tokens, axis labels and titles (None: matplotlib's sizes).
        title: the figure's title, above the panels.

    Raises:
        nmt.util.errors.UserError: an item without attention or of a blank sentence (naming it,
            e.g. ``results[2]``), titles not one per result, or an argument of the wrong type or out
            of range (naming the parameter).
    """
    if isinstance(results, (TranslationResult, ScoreResult)) or not isinstance(results, Sequence):
        raise UserError(f"results: give a list of results, not {type(results).__name__} (e.g. [result])")
    if len(results) == 0:
        raise UserError("results: give at least one result")
    maps = [_attention_of(result, f"results[{i}]") for i, result in enumerate(results)]
    if titles is not None:
        if isinstance(titles, str) or not isinstance(titles, Sequence):
            raise UserError(f"titles={short_repr(titles)}: give a list of strings, one per result")
        if len(titles) != len(results):
            raise UserError(f"titles: {len(titles)} titles for {len(results)} results; give one per result")
        for i, text in enumerate(titles):
            check.text(f"titles[{i}]", text)
    columns = min(check.integer("ncols", ncols, minimum=1), len(results))
    size = _fontsize(fontsize)
    check.text("title", title)

    import matplotlib.pyplot as plt
    from matplotlib.cm import ScalarMappable
    from matplotlib.colors import Normalize

    rows = -(-len(results) // columns)
    width, height = _panel_size(max(m.shape[0] for m in maps), max(m.shape[1] for m in maps), size)
    fig = plt.figure(figsize=(min(columns * width + 1.0, 40.0), min(rows * height, 40.0)), layout="constrained")
    axes = fig.subplots(rows, columns, squeeze=False).ravel()
    for i, (ax, result, attention) in enumerate(zip(axes, results, maps)):
        draw_attention(
            ax,
            attention,
            result.source_tokens,
            result.tokens,
            titles[i] if titles is not None else "",
            fontsize=size,
            colorbar=False,
            limits=(0.0, 1.0),
        )
    for ax in axes[len(results) :]:
        ax.set_axis_off()
    bar = fig.colorbar(ScalarMappable(Normalize(0.0, 1.0), cmap="viridis"), ax=list(axes[: len(results)]))
    font: dict[str, Any] = {} if size is None else {"fontsize": size}
    bar.set_label("attention weight", **font)
    if size is not None:
        bar.ax.tick_params(labelsize=size)
    if title:
        fig.suptitle(title, **font)
    return fig
