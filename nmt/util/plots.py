"""Figures for evaluation reports: attention maps, BLEU by length, training curves.

Figures are built with matplotlib's object API on the Agg canvas: no screen, no pyplot
global state, so plotting in a loop does not leak figures. matplotlib is imported
inside the functions, which keeps `import nmt.util.plots` cheap for commands that never plot.
Every PNG is written to a temporary file and moved into place.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from nmt.util.fileio import atomic_write

if TYPE_CHECKING:
    import torch
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

logger = logging.getLogger(__name__)

_DPI = 150


def _new_figure(width: float, height: float) -> Figure:
    """A figure attached to an Agg canvas, independent of any pyplot backend."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(figsize=(width, height), layout="constrained")
    FigureCanvasAgg(fig)
    return fig


def _save(fig: Figure, path: Path) -> Path:
    """Write `fig` as a PNG at `path` atomically and return the path."""
    path = Path(path)
    with atomic_write(path) as handle:
        fig.savefig(handle, format="png", dpi=_DPI)
    logger.debug("wrote figure %s", path)
    return path


def _as_array(weights: np.ndarray | torch.Tensor) -> np.ndarray:
    """A float numpy copy of `weights`, accepting torch tensors on any device."""
    if hasattr(weights, "detach"):  # a torch.Tensor; checked by duck type to avoid importing torch
        weights = weights.detach().float().cpu().numpy()
    return np.asarray(weights, dtype=np.float64)


def plot_attention(
    weights: np.ndarray | torch.Tensor,
    src_tokens: list[str],
    tgt_tokens: list[str],
    path: Path,
    title: str = "",
) -> Path:
    """Heat map of one sentence's attention, written as a PNG (:func:`draw_attention`)."""
    data = _as_array(weights)
    T, S = len(tgt_tokens), len(src_tokens)
    fig = _new_figure(width=min(2.5 + 0.35 * S, 30.0), height=min(2.0 + 0.3 * T, 30.0))
    draw_attention(fig.add_subplot(), data, src_tokens, tgt_tokens, title)
    return _save(fig, path)


def draw_attention(
    ax: Axes,
    weights: np.ndarray | torch.Tensor,
    src_tokens: list[str],
    tgt_tokens: list[str],
    title: str = "",
    *,
    fontsize: float | None = None,
    colorbar: bool = True,
    limits: tuple[float, float] | None = None,
) -> Axes:
    """Heat map of one sentence's attention on ``ax``: row t shows where target token t looked.

    `weights` has shape (T, S) with T = len(tgt_tokens) and S = len(src_tokens); the tokens
    label the axes and, with `colorbar`, a colour bar sits beside them. The colour scale is
    `limits`, by default fixed to [0, 1] for probabilities so maps are comparable (else the
    data's range). `fontsize` sets the tick labels, axis labels and title (None: matplotlib's).
    """
    data = _as_array(weights)
    expected = (len(tgt_tokens), len(src_tokens))
    if data.ndim != 2 or data.shape != expected:
        raise ValueError(
            f"attention weights have shape {tuple(data.shape)}, expected (T, S) = {expected} "
            f"from {len(tgt_tokens)} target and {len(src_tokens)} source tokens"
        )
    if 0 in expected:
        raise ValueError("cannot plot attention for an empty source or target")
    if limits is None:
        is_probability = bool(np.all((data >= 0.0) & (data <= 1.0)))
        limits = (0.0, 1.0) if is_probability else None
    vmin, vmax = limits if limits is not None else (None, None)

    font: dict[str, Any] = {} if fontsize is None else {"fontsize": fontsize}  # None: the rc sizes stay
    T, S = expected
    image = ax.imshow(data, aspect="auto", cmap="viridis", vmin=vmin, vmax=vmax, interpolation="nearest")
    ax.set_xticks(range(S), labels=src_tokens, rotation=90, **font)
    ax.set_yticks(range(T), labels=tgt_tokens, **font)
    ax.set_xlabel("source", **font)
    ax.set_ylabel("target", **font)
    if title:
        ax.set_title(title, **font)
    if colorbar:
        bar = ax.figure.colorbar(image, ax=ax)
        bar.set_label("attention weight", **font)
        if fontsize is not None:
            bar.ax.tick_params(labelsize=fontsize)
    return ax


def plot_attention_grid(
    weights: np.ndarray | torch.Tensor,
    col_tokens: list[str],
    row_tokens: list[str],
    path: Path,
    title: str = "",
) -> Path:
    """Every layer and head of one kind of attention for one sentence: a grid of heat maps.

    ``weights`` is (L, h, rows, columns): grid row l is layer l + 1, grid column k head k + 1;
    each map's rows are ``row_tokens`` and its columns ``col_tokens``, on one [0, 1] scale.
    """
    data = _as_array(weights)
    if data.ndim != 4 or data.shape[2:] != (len(row_tokens), len(col_tokens)) or 0 in data.shape:
        raise ValueError(
            f"attention weights have shape {tuple(data.shape)}, expected (L, h, {len(row_tokens)}, "
            f"{len(col_tokens)}) from the tokens, none of them empty"
        )
    L, h, T, S = data.shape
    fig = _new_figure(width=min(1.0 + h * (1.0 + 0.18 * S), 40.0), height=min(0.8 + L * (1.0 + 0.18 * T), 40.0))
    axes = fig.subplots(L, h, squeeze=False)
    for layer in range(L):
        for head in range(h):
            ax = axes[layer][head]
            image = ax.imshow(
                data[layer, head], aspect="auto", cmap="viridis", vmin=0.0, vmax=1.0, interpolation="nearest"
            )
            ax.set_xticks(range(S), labels=col_tokens if layer == L - 1 else [], rotation=90, fontsize=6)
            ax.set_yticks(range(T), labels=row_tokens if head == 0 else [], fontsize=6)
            ax.set_title(f"layer {layer + 1}, head {head + 1}", fontsize=7)
    if title:
        fig.suptitle(title)
    fig.colorbar(image, ax=axes, label="attention weight", shrink=0.6)
    return _save(fig, path)


def bucket_start(label: str) -> int:
    """Lower edge of a bucket label such as '10-19' or '50+', for ordering the x axis."""
    return int(label.split("-")[0].rstrip("+"))


def plot_bleu_by_length(
    series: dict[str, list[dict[str, Any]]],
    path: Path,
    title: str = "BLEU by source length",
) -> Path:
    """BLEU against source-length bucket, one line per system.

    `series` maps a system name to the output of `nmt.score.metrics.bleu_by_length`. The
    classic use: with and without attention, where the gap widens on long sentences.
    """
    if not any(series.values()):
        raise ValueError("plot_bleu_by_length needs at least one non-empty series")
    labels = sorted({row["bucket"] for rows in series.values() for row in rows}, key=bucket_start)
    position = {label: i for i, label in enumerate(labels)}

    fig = _new_figure(width=max(5.0, 1.0 + 0.8 * len(labels)), height=4.0)
    ax = fig.add_subplot()
    for name, rows in series.items():
        if not rows:
            continue
        ordered = sorted(rows, key=lambda row: position[row["bucket"]])
        ax.plot([position[r["bucket"]] for r in ordered], [r["bleu"] for r in ordered], marker="o", label=name)
    ax.set_xticks(range(len(labels)), labels=labels)
    ax.set_xlabel("source length")
    ax.set_ylabel("BLEU")
    ax.set_title(title)
    ax.grid(True, alpha=0.3)
    ax.legend()
    return _save(fig, path)


def plot_curves(
    series: Mapping[str, Sequence[tuple[float, float]]],
    path: Path,
    xlabel: str,
    ylabel: str,
    title: str = "",
) -> Path:
    """Generic x/y line plot, one line per named series (e.g. validation BLEU vs minutes).

    Points are drawn in the order given, so a resumed run's curve is not reordered.
    """
    if not any(series.values()):
        raise ValueError("plot_curves needs at least one non-empty series")
    fig = _new_figure(width=6.0, height=4.0)
    ax = fig.add_subplot()
    for name, points in series.items():
        if not points:
            continue
        xs, ys = zip(*points)
        ax.plot(xs, ys, marker="o" if len(points) <= 30 else None, markersize=3, label=name)
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    if title:
        ax.set_title(title)
    ax.grid(True, alpha=0.3)
    ax.legend()
    return _save(fig, path)
