"""Lab "matrices": the attention weights of every attention variant on the same three test sentences.

The lectures read attention as a soft alignment: row t of the matrix says which source tokens
the decoder looked at while it wrote target token t (Bahdanau et al. 2015, figure 3).  This lab
puts the matrices of every variant of :data:`nmt.config.variants.VARIANTS` side by side, on the
same three test sentences, so the energies can be compared by eye, and gives two numbers per
matrix that say what the eye sees: its entropy (how spread each row is) and the share of weight
near the diagonal (how monotone the alignment is).  ``none`` has no attention (its context is the
mean of the encoder states), so it has no matrix and is left out.

The runs are the shared variant runs (:func:`nmt.labs.variant_runs.variant_plan`, seed 1 only): the
attention comes from each run's best checkpoint (by validation BLEU), through the same greedy
search with attention capture that ``nmt translate --attention`` uses.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from nmt import config as config_mod
from nmt.comparison.plan import Plan
from nmt.config import with_decode_overrides
from nmt.config.variants import VARIANTS, registered_variants
from nmt.labs.base import Lab, LabContext, LabResult
from nmt.labs.variant_runs import variant_plan
from nmt.run.paths import RunPaths, report_json
from nmt.util.fileio import atomic_write, read_lines

if TYPE_CHECKING:
    from matplotlib.figure import Figure

SEED = 1
"""The seed whose runs the lab reads (of every variant; the lab "kernel" reads its gaussian run)."""

CLASS_VARIANTS = ["bahdanau", "luong_general", "scaled_dot"]
"""The variants drawn at class size: one of each energy family (additive, bilinear, scaled dot),
three runs that fit the class hour; full size draws every attention variant."""

SHOWN = 3
"""Test sentences in the figure."""

WORDS_FULL = (8, 15)
"""Source length in words of the sentences shown at full size: long enough to need an alignment,
short enough to read the tokens; the first three test2016 sentences of these lengths are taken."""

WORDS_TINY = (4, 6)
"""The same for the synthetic corpus, whose sentences have at most 8 words."""

TINY_DECODE = ("decode.max_len_a=1.0", "decode.max_len_b=2")
"""Tiny models have not learned to stop and run to the length limit; at most the source length
plus two keeps their matrices (and the time to draw them) small.  Full size decodes as configured."""

DIAGONAL_REACH = 1
"""A weight counts as on the diagonal within this many source tokens of it."""


def attention_variants() -> list[str]:
    """Every variant with an attention matrix: all of :data:`VARIANTS` but ``none``, then the
    attentions registered in this process (``nmt lab matrices --module FILE``)."""
    return [name for name in VARIANTS if name != "none"] + registered_variants()


def pick_sentences(sources: list[str], words: tuple[int, int], count: int = SHOWN) -> list[int]:
    """Line numbers (from 0) of the first ``count`` sources whose length in words lies within
    ``words`` (both ends included), topped up in file order if fewer qualify: a fixed rule, so
    every variant, every rerun and the reader see the same sentences."""
    low, high = words
    chosen = [i for i, line in enumerate(sources) if low <= len(line.split()) <= high][:count]
    chosen += [i for i in range(len(sources)) if i not in chosen][: count - len(chosen)]
    return sorted(chosen)


@dataclass(frozen=True)
class SentenceAttention:
    """One sentence's greedy translation by one model and where its cross-attention looked."""

    src_pieces: list[str]  # source subwords: the matrix's columns
    tgt_pieces: list[str]  # output subwords and </s>: its rows
    hypothesis: str  # the detokenized translation
    weights: np.ndarray  # (len(tgt_pieces), len(src_pieces)); rows sum to 1


def attend(checkpoint: Path, sentences: list[str], overrides: Sequence[str] = ()) -> list[SentenceAttention]:
    """Translate ``sentences`` greedily with ``checkpoint``, capturing the cross-attention.

    The path of ``nmt translate --attention``: the same model loading, subword encoding, greedy
    search (beam 1) with ``return_attention`` and token labels, so the matrices are the ones a
    user of that command would see.  A model with several heads gives their mean.  ``overrides``
    are ``decode.*`` options, as ``nmt translate --set`` takes them.
    """
    from nmt.decode.inference import encode_sources, load_checkpoint, translate_ids
    from nmt.util import runtime, threads

    device = runtime.select_device("auto")
    threads.configure(0)  # follow the cores other processes leave free, as nmt translate does
    loaded = load_checkpoint(checkpoint, device)
    decode = with_decode_overrides(loaded.config, overrides).decode
    ids = encode_sources(loaded.src_tok, sentences, decode.max_src_len, str(checkpoint))
    results = translate_ids(loaded.model, ids, decode, device, beam=1, return_attention=True)
    out = []
    for src_ids, result in zip(ids, results):
        assert result.attention is not None, f"{checkpoint}: the model returned no attention weights"
        out.append(
            SentenceAttention(
                src_pieces=loaded.src_tok.decode_pieces(src_ids),
                tgt_pieces=loaded.tgt_tok.decode_pieces(result.ids[0]) + ["</s>"],
                hypothesis=loaded.tgt_tok.decode(result.ids[0]),
                weights=result.attention.float().numpy().astype(np.float64),
            )
        )
    return out


def entropy_bits(weights: np.ndarray) -> float:
    """Mean over rows of each row's entropy in bits: 0 when every row puts all its weight on one
    token, log2(S) when it spreads it evenly over the S source tokens."""
    w = np.clip(weights, 1e-12, 1.0)
    return float(np.mean(-(weights * np.log2(w)).sum(axis=1)))


def diagonal_share(weights: np.ndarray, reach: int = DIAGONAL_REACH) -> float:
    """Mean over rows of the weight within ``reach`` source tokens of the diagonal.

    The diagonal is the straight line from the first source token (first row) to the last (last
    row): the alignment of a translation that keeps the word order, stretched to both lengths.
    """
    rows, cols = weights.shape
    centre = np.linspace(0.0, cols - 1.0, rows) if rows > 1 else np.zeros(1)
    near = np.abs(np.arange(cols)[None, :] - centre[:, None]) <= reach  # (T, S)
    return float(np.mean((weights * near).sum(axis=1)))


def run_dirs(plan: Plan, seed: int = SEED) -> dict[str, Path]:
    """Variant label -> the folder of its run with ``seed`` (as :func:`nmt.comparison.plan.run_overrides` names it)."""
    return {arm.label: plan.runs_dir / f"{arm.run_stem}_s{seed}" for arm in plan.arms}


def seed_bleu(report: Path, seed: int = SEED) -> dict[str, float]:
    """Variant -> test BLEU of its ``seed`` run, from a comparison's report.json."""
    rows = json.loads(report.read_text(encoding="utf-8"))["variants"]
    return {row["variant"]: float(row["per_seed_bleu"][str(seed)]) for row in rows}


def split_lines(run_dir: Path, split: str) -> tuple[list[str], list[str]]:
    """Source and reference lines of ``split`` in the corpus a run was trained on."""
    data = config_mod.load(RunPaths(run_dir).config, saved=True).data
    folder = data.prepared_dir
    return read_lines(folder / f"{split}.{data.src}"), read_lines(folder / f"{split}.{data.tgt}")


def plot_matrices(grid: dict[str, list[SentenceAttention]], path: Path) -> Path:
    """Rows = variants, columns = sentences; source tokens across, output tokens down, one [0, 1] scale.

    Each token gets a square cell of the same size in every panel.  The panels are placed by hand
    rather than by a layout engine, which on thirty panels with a thousand tick labels takes
    longer than everything else the lab does when its runs are reused.  Source tokens label the
    first and the last row (a column shares its sentence); every panel labels its own output.
    """
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    names = list(grid)
    columns = len(grid[names[0]])
    widths = [len(grid[names[0]][c].src_pieces) for c in range(columns)]  # the same source in every row
    heights = [max(len(s.tgt_pieces) for s in grid[n]) for n in names]
    cell, left, gap, right, top, row_gap, bottom = 0.12, 1.1, 1.0, 1.2, 1.3, 0.35, 0.9  # inches
    axes_w, axes_h = cell * sum(widths), cell * sum(heights)
    fig_w = left + axes_w + gap * (columns - 1) + right
    fig_h = top + axes_h + row_gap * (len(names) - 1) + bottom
    fig = Figure(figsize=(fig_w, fig_h))
    FigureCanvasAgg(fig)
    fig.subplots_adjust(
        left=left / fig_w,
        right=1 - right / fig_w,
        bottom=bottom / fig_h,
        top=1 - top / fig_h,
        wspace=gap / (axes_w / columns),
        hspace=row_gap / (axes_h / len(names)),
    )
    axes = fig.subplots(
        len(names), columns, squeeze=False, gridspec_kw={"width_ratios": widths, "height_ratios": heights}
    )
    image = None
    for r, name in enumerate(names):
        for c, item in enumerate(grid[name]):
            ax = axes[r][c]
            image = ax.imshow(item.weights, cmap="viridis", vmin=0.0, vmax=1.0, interpolation="nearest")
            ax.set_anchor("N")
            if r in (0, len(names) - 1):
                ax.set_xticks(range(len(item.src_pieces)), labels=item.src_pieces, rotation=90, fontsize=5)
                if r == 0:
                    ax.xaxis.tick_top()
            else:
                ax.set_xticks([])
            ax.set_yticks(range(len(item.tgt_pieces)), labels=item.tgt_pieces, fontsize=5)
            if c == 0:
                ax.set_ylabel(name, fontsize=9, fontweight="bold")
            if r == 0:  # a figure text at a fixed height: an axes title would climb above the longest token
                box = ax.get_position()
                fig.text((box.x0 + box.x1) / 2, 1 - 0.45 / fig_h, f"sentence {c + 1}", ha="center", fontsize=9)
    assert image is not None
    bar = fig.add_axes((1 - 0.7 / fig_w, 1 - (top + 3.0) / fig_h, 0.15 / fig_w, 3.0 / fig_h))
    fig.colorbar(image, cax=bar, label="attention weight")
    fig.suptitle("Cross-attention of every variant: rows output tokens, columns source tokens", y=1 - 0.15 / fig_h)
    return save_png(fig, path)


def save_png(fig: Figure, path: Path) -> Path:
    """Write ``fig`` as a PNG at the house resolution (:mod:`nmt.util.plots`), atomically."""
    with atomic_write(path) as handle:
        fig.savefig(handle, format="png", dpi=150)
    return path


def cell_text(text: str) -> str:
    """Text that cannot break a Markdown table row."""
    return text.replace("|", "\\|").replace("\n", " ")


def markdown(
    sources: list[tuple[int, str, str]], grid: dict[str, list[SentenceAttention]], bleu: dict[str, float], split: str
) -> str:
    """The sentences, a summary row per variant, and every hypothesis with its two numbers."""
    lines = [f"Sentences (line numbers of {split}, from 1; source, then reference):", ""]
    for k, (line, src, ref) in enumerate(sources, start=1):
        lines.append(f"{k}. line {line + 1}: {cell_text(src)} — {cell_text(ref)}")
    lines += [
        "",
        "`none` has no attention matrix (its context is the mean of the encoder states) and is left out.",
        f"H: mean entropy of a row, in bits (uniform over S source tokens: log2 S); diagonal: mean share of a "
        f"row's weight within {DIAGONAL_REACH} source token of the diagonal. A variant with several heads (qkv) shows their mean.",
        "",
        f"| variant | {split} BLEU (seed {SEED}) | mean H (bits) | mean diagonal |",
        "| --- | --- | --- | --- |",
    ]
    for name, items in grid.items():
        h = np.mean([entropy_bits(s.weights) for s in items])
        d = np.mean([diagonal_share(s.weights) for s in items])
        lines.append(f"| {name} | {bleu[name]:.2f} | {h:.2f} | {d:.2f} |")
    lines += [
        "",
        "| variant | sentence | hypothesis (greedy) | H (bits) | diagonal |",
        "| --- | --- | --- | --- | --- |",
    ]
    for name, items in grid.items():
        for k, s in enumerate(items, start=1):
            lines.append(
                f"| {name} | {k} | {cell_text(s.hypothesis)} | {entropy_bits(s.weights):.2f} | {diagonal_share(s.weights):.2f} |"
            )
    return "\n".join(lines)


def plans(ctx: LabContext) -> list[Plan]:
    """Seed 1 of every attention variant (:data:`CLASS_VARIANTS` at class size), the runs the lab "kernel" shares."""
    variants = CLASS_VARIANTS + registered_variants() if ctx.size == "class" else attention_variants()
    return [variant_plan(ctx, variants=variants, seeds=[SEED])]


def run(ctx: LabContext) -> LabResult:
    """Train (or reuse) seed 1 of every attention variant, then draw and measure their matrices."""
    (plan,) = plans(ctx)
    report_dir = ctx.runs_dir / "report-matrices"  # a report of its own beside the lab "kernel"'s
    ctx.compare(plan, out=report_dir)
    bleu = seed_bleu(report_json(report_dir))
    folders = run_dirs(plan)
    sources, refs = split_lines(next(iter(folders.values())), plan.split)
    picked = pick_sentences(sources, WORDS_TINY if ctx.tiny else WORDS_FULL)
    texts = [sources[i] for i in picked]
    cap = TINY_DECODE if ctx.tiny else ()
    grid = {name: attend(RunPaths(folder).best, texts, cap) for name, folder in folders.items()}
    figure = plot_matrices(grid, ctx.out / "matrices.png")
    numbers: dict[str, Any] = {
        "split": plan.split,
        "seed": SEED,
        "steps": plan.steps,
        "sentences": [{"line": i + 1, "source": sources[i], "reference": refs[i]} for i in picked],
        "uniform_entropy_bits": [round(math.log2(len(s.src_pieces)), 3) for s in grid[next(iter(grid))]],
        "variants": {
            name: {
                "bleu": bleu[name],
                "sentences": [
                    {
                        "hypothesis": s.hypothesis,
                        "entropy_bits": round(entropy_bits(s.weights), 4),
                        "diagonal_share": round(diagonal_share(s.weights), 4),
                    }
                    for s in items
                ],
            }
            for name, items in grid.items()
        },
    }
    table = markdown([(i, sources[i], refs[i]) for i in picked], grid, bleu, plan.split)
    return LabResult(table=table, figure=figure, numbers=numbers)


# cpu_minutes: an estimate. Measured on 2026-11-27 with --jobs 2, the ten attention runs of then (600
# updates each, data preparation and validations included), their scoring and the figure took 57
# minutes of wall time (half a minute when their runs were already trained); the sixteen attention
# variants of today at that rate take about 92.
LAB = Lab(
    name="matrices",
    title="Attention matrices of every variant, side by side",
    cpu_minutes=92,
    # class_minutes: wall time of `python scripts/time_labs.py --size class` on 2026-11-27 (2 cores, the
    # lab from scratch in a runs folder of its own; docs/measurements/labs_class_2026-11-27_cpu.jsonl)
    class_minutes=6.0,
    run=run,
    plans=plans,
    runs_group="variants",
)
