"""``nmt.plot_attention``: one result's attention matrix drawn on a matplotlib axes, for a notebook."""

from __future__ import annotations

from typing import TYPE_CHECKING, Optional, Union

from nmt.api.results import ScoreResult, TranslationResult
from nmt.util.errors import UserError
from nmt.util.plots import draw_attention

if TYPE_CHECKING:
    from matplotlib.axes import Axes


def plot_attention(result: Union[TranslationResult, ScoreResult], ax: Optional[Axes] = None, title: str = "") -> Axes:
    """Draw ``result``'s attention: source tokens along the x axis, target tokens (``</s>`` last)
    down the y axis, a colour bar beside; returns the axes.

    Args:
        result: from :meth:`~nmt.api.translator.Translator.translate` with ``return_attention=True``,
            or from :meth:`~nmt.api.translator.Translator.score`.
        ax: where to draw; None makes a new figure with pyplot (so a notebook shows it).
        title: the axes' title.

    Raises:
        nmt.util.errors.UserError: a result without attention, or of a blank sentence, or an
            argument of the wrong type (naming the parameter).
    """
    if not isinstance(result, (TranslationResult, ScoreResult)):
        raise UserError(
            f"result: give one result of Translator.translate or Translator.score, not {type(result).__name__}"
        )
    if not isinstance(title, str):
        raise UserError(f"title: give a string, not {type(title).__name__}")
    if result.attention is None:
        raise UserError(
            "this result has no attention: translate with return_attention=True (engine torch or onnxruntime)"
        )
    if result.attention.size == 0:
        raise UserError("this result is of a blank sentence: there is no attention to draw")
    if ax is None:
        import matplotlib.pyplot as plt

        T, S = result.attention.shape
        _, ax = plt.subplots(figsize=(min(2.5 + 0.35 * S, 30.0), min(2.0 + 0.3 * T, 30.0)), layout="constrained")
    return draw_attention(ax, result.attention, result.source_tokens, result.tokens, title)
