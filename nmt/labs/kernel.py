"""Lab "kernel": attention pooling as Nadaraya-Watson kernel regression, then the gaussian variant.

The lectures (``../shared/seeds/003_*``) read attention as a soft database lookup: a query q
pools the values v_i with weights softmax_i(a(q, k_i)), and a Gaussian kernel
a(q, k) = -(q - k)^2 / (2 sigma^2) makes this Nadaraya-Watson regression (Nadaraya 1964, Watson
1964).  The left half of the figure is that regression on a one-dimensional toy,
y = 2 sin x + x^0.8 + noise on 50 training points, with the kernel's width sigma fixed at 1 (the
lecture's kernel exp(-||q - k||^2 / 2)) and with sigma learned by gradient descent on the
leave-one-out error of the training points.  The right half is the same kernel inside a
translation model: the ``gaussian`` variant scores a decoder state s against an encoder state h
by -||W_q s - W_k h||^2 / 2 (:func:`nmt.model.energies.gaussian_energy`).  It has no width
parameter of its own: the learned maps W_q and W_k play the role of the toy's 1 / sigma, one
inverse width per direction (their singular values), which the lab reads from the checkpoint
and compares with the same maps at initialization.

The translation run is the shared gaussian run with seed 1
(:func:`nmt.labs.variant_runs.variant_plan`), which the lab "matrices" reads too, so it is trained once for both labs.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from nmt.comparison.plan import Plan
from nmt.labs.base import Lab, LabContext, LabResult
from nmt.labs.matrices import (
    SEED,
    TINY_DECODE,
    WORDS_FULL,
    WORDS_TINY,
    SentenceAttention,
    attend,
    cell_text,
    entropy_bits,
    pick_sentences,
    run_dirs,
    save_png,
    split_lines,
)
from nmt.labs.variant_runs import variant_plan
from nmt.run.paths import RunPaths, report_json

if TYPE_CHECKING:
    from matplotlib.figure import Figure

TOY_POINTS = 50
"""Training points of the toy regression."""

TOY_NOISE = 0.5
"""Standard deviation of the Gaussian noise on the toy's training targets."""

TOY_SEED = 0
"""Seed of the toy's inputs and noise: the same toy on every machine and at both sizes."""

FIXED_WIDTH = 1.0
"""The lecture's kernel exp(-||q - k||^2 / 2): width sigma = 1."""

FIT_STEPS = 200
"""Gradient-descent steps on log sigma; the toy's leave-one-out error is flat long before."""

FIT_LR = 0.5
"""Step size of that descent (on log sigma, so sigma stays positive)."""


def truth(x: np.ndarray) -> np.ndarray:
    """The toy's noise-free function 2 sin x + x^0.8."""
    return 2 * np.sin(x) + x**0.8


@dataclass(frozen=True)
class Toy:
    """Noisy training points and a noise-free held-out grid of the toy regression."""

    x_train: np.ndarray  # (50,), sorted, uniform in [0, 5)
    y_train: np.ndarray  # truth + noise
    x_test: np.ndarray  # (50,): 0, 0.1, ..., 4.9
    y_test: np.ndarray  # truth, no noise


def make_toy(seed: int = TOY_SEED) -> Toy:
    """The toy data, drawn from ``seed``."""
    rng = np.random.default_rng(seed)
    x = np.sort(rng.uniform(0.0, 5.0, TOY_POINTS))
    y = truth(x) + rng.normal(0.0, TOY_NOISE, TOY_POINTS)
    grid = np.arange(0.0, 5.0, 0.1)
    return Toy(x, y, grid, truth(grid))


def kernel_weights(queries: np.ndarray, keys: np.ndarray, width: float, leave_one_out: bool = False) -> np.ndarray:
    """Attention weights softmax_i(-(q - k_i)^2 / (2 width^2)), one row per query.

    With ``leave_one_out`` the queries are the keys themselves and each ignores its own key, so
    a point is predicted from the others only (queries and keys must then be the same array).
    """
    scores = -((queries[:, None] - keys[None, :]) ** 2) / (2 * width**2)
    if leave_one_out:
        np.fill_diagonal(scores, -np.inf)
    scores -= scores.max(axis=1, keepdims=True)
    weights = np.exp(scores)
    return weights / weights.sum(axis=1, keepdims=True)


def mse(prediction: np.ndarray, target: np.ndarray) -> float:
    return float(np.mean((prediction - target) ** 2))


@dataclass(frozen=True)
class WidthFit:
    """The learned width and how the descent ended."""

    width: float
    steps: int
    final_gradient: float  # d(leave-one-out MSE) / d(log sigma) at the end: near 0 at a minimum


def fit_width(toy: Toy, start: float = FIXED_WIDTH, steps: int = FIT_STEPS, lr: float = FIT_LR) -> WidthFit:
    """Learn sigma by plain gradient descent on the leave-one-out MSE of the training points.

    Leave-one-out, because with its own point in the pool a query's best width is zero: the
    kernel then copies the noisy target it is asked to predict.  The descent runs on log sigma.
    """
    import torch

    x, y = torch.tensor(toy.x_train), torch.tensor(toy.y_train)
    own = torch.eye(len(x), dtype=torch.bool)
    log_width = torch.tensor(math.log(start), dtype=torch.float64, requires_grad=True)
    gradient = 0.0
    for _ in range(steps):
        scores = -((x[:, None] - x[None, :]) ** 2) / (2 * torch.exp(2 * log_width))
        pooled = torch.softmax(scores.masked_fill(own, float("-inf")), dim=1) @ y
        (grad,) = torch.autograd.grad(((pooled - y) ** 2).mean(), log_width)
        gradient = float(grad)
        with torch.no_grad():
            log_width -= lr * grad
    return WidthFit(width=float(log_width.detach().exp()), steps=steps, final_gradient=gradient)


def toy_errors(toy: Toy, width: float) -> dict[str, float]:
    """Leave-one-out MSE on the training points and MSE against the truth on the held-out grid."""
    loo = kernel_weights(toy.x_train, toy.x_train, width, leave_one_out=True) @ toy.y_train
    held_out = kernel_weights(toy.x_test, toy.x_train, width) @ toy.y_train
    return {"loo_mse": mse(loo, toy.y_train), "held_out_mse": mse(held_out, toy.y_test)}


@dataclass(frozen=True)
class Maps:
    """The gaussian energy's query and key maps as they act (any learned-scale gain applied)."""

    query: np.ndarray  # W_q: (A, decoder state size)
    key: np.ndarray  # W_k: (A, encoder state size)


def gaussian_maps(model: Any) -> Maps:
    """W_q and W_k of the model's gaussian cross-attention (the lab calls it on the gaussian variant only)."""
    from nmt.model.attention import Attention

    found = [m for m in model.modules() if isinstance(m, Attention) and m.kind == "gaussian"]
    assert len(found) == 1, f"expected one gaussian attention, found {len(found)}"
    att = found[0]
    assert att.query_proj is not None and att.key_proj is not None, "the gaussian preset maps queries and keys"
    gain = float(att.qk_gain)
    return Maps(
        query=att.query_proj.weight.detach().double().numpy() * gain,
        key=att.key_proj.weight.detach().double().numpy() * gain,
    )


def learned_and_initial_maps(checkpoint: Path) -> tuple[Maps, Maps]:
    """The maps in ``checkpoint``, and those of the same config built afresh with its run's seed."""
    from nmt.decode.inference import load_checkpoint
    from nmt.model.build import build_model
    from nmt.util import runtime

    loaded = load_checkpoint(checkpoint, runtime.select_device("cpu"))
    runtime.seed_everything(loaded.config.train.seed)  # as training seeds before it builds the model
    fresh = build_model(loaded.config.model, loaded.src_tok.vocab_size, loaded.tgt_tok.vocab_size)
    return gaussian_maps(loaded.model), gaussian_maps(fresh)


def singular_values(matrix: np.ndarray) -> np.ndarray:
    """Descending singular values: the inverse kernel widths along the map's principal directions."""
    return np.linalg.svd(matrix, compute_uv=False)


def rms(values: np.ndarray) -> float:
    """Root mean square of singular values (the Frobenius norm over the square root of their count)."""
    return float(np.sqrt(np.mean(values**2)))


def map_summary(learned: np.ndarray, initial: np.ndarray) -> dict[str, Any]:
    """RMS singular value (inverse width) and its inverse (width) at initialization and learned."""
    sv_learned, sv_initial = singular_values(learned), singular_values(initial)
    return {
        "shape": list(learned.shape),
        "rms_sv_initial": round(rms(sv_initial), 4),
        "rms_sv_learned": round(rms(sv_learned), 4),
        "width_initial": round(1 / rms(sv_initial), 4),
        "width_learned": round(1 / rms(sv_learned), 4),
        "sv_learned_min": round(float(sv_learned[-1]), 4),
        "sv_learned_max": round(float(sv_learned[0]), 4),
    }


def spread_tokens(weights: np.ndarray) -> float:
    """Mean over rows of the standard deviation of the attended source position, in tokens:
    the kernel's width as the sentence sees it (0 for one-hot rows)."""
    positions = np.arange(weights.shape[1])
    mean = weights @ positions
    var = weights @ positions**2 - mean**2
    return float(np.mean(np.sqrt(np.clip(var, 0.0, None))))


def plot_kernel(toy: Toy, fit: WidthFit, sentence: SentenceAttention, learned: Maps, initial: Maps, path: Path) -> Path:
    """:func:`kernel_figure` written as a PNG at ``path``."""
    return save_png(kernel_figure(toy, fit, sentence, learned, initial), path)


def kernel_figure(toy: Toy, fit: WidthFit, sentence: SentenceAttention, learned: Maps, initial: Maps) -> Figure:
    """Left: the toy's fits and its two weight matrices; right: the gaussian model's attention on
    one sentence (source tokens along the x axis, output tokens down the y axis) and the singular
    values of its maps."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(figsize=(13.0, 12.0), layout="constrained")
    FigureCanvasAgg(fig)
    grid = fig.add_gridspec(3, 2, width_ratios=[1.0, 1.3])
    fit_ax = fig.add_subplot(grid[0, 0])
    fit_ax.plot(toy.x_test, toy.y_test, color="black", label="truth 2 sin x + x^0.8")
    fit_ax.scatter(toy.x_train, toy.y_train, s=12, color="gray", label=f"{TOY_POINTS} noisy training points")
    for width, style, what in ((FIXED_WIDTH, "--", "fixed"), (fit.width, "-", "learned")):
        pooled = kernel_weights(toy.x_test, toy.x_train, width) @ toy.y_train
        fit_ax.plot(toy.x_test, pooled, style, label=f"{what} width σ = {width:.3g}")
    fit_ax.set_xlabel("x")
    fit_ax.set_ylabel("y")
    fit_ax.set_title("Nadaraya-Watson regression: attention pooling with a Gaussian kernel", fontsize=9)
    fit_ax.legend(fontsize=7)
    image = None
    for row, (width, what) in enumerate(((FIXED_WIDTH, "fixed"), (fit.width, "learned")), start=1):
        ax = fig.add_subplot(grid[row, 0])
        image = ax.imshow(kernel_weights(toy.x_test, toy.x_train, width), cmap="viridis", vmin=0.0, vmax=1.0)
        ax.set_xlabel("training point (sorted by x)")
        ax.set_ylabel("test input x = 0, 0.1, ..., 4.9 (row)")
        ax.set_title(f"weights of the {what} width σ = {width:.3g}", fontsize=9)
    nmt_ax = fig.add_subplot(grid[0:2, 1])
    weights, src, tgt = sentence.weights, sentence.src_pieces, sentence.tgt_pieces
    nmt_ax.imshow(weights, cmap="viridis", vmin=0.0, vmax=1.0, interpolation="nearest")
    nmt_ax.set_xticks(range(len(src)), labels=src, rotation=45, ha="right", rotation_mode="anchor", fontsize=10)
    nmt_ax.set_yticks(range(len(tgt)), labels=tgt, fontsize=10)
    nmt_ax.set_xlabel("source tokens", fontsize=10)
    nmt_ax.set_ylabel("target (output) tokens", fontsize=10)
    nmt_ax.set_title("gaussian variant on a test sentence (seed 1, greedy)", fontsize=9)
    sv_ax = fig.add_subplot(grid[2, 1])
    for name, matrix, style, colour in (
        ("W_q initial", initial.query, ":", "tab:blue"),
        ("W_q learned", learned.query, "-", "tab:blue"),
        ("W_k initial", initial.key, ":", "tab:red"),
        ("W_k learned", learned.key, "-", "tab:red"),
    ):
        sv_ax.plot(singular_values(matrix), style, color=colour, label=name)
    sv_ax.set_yscale("log")
    sv_ax.set_xlabel("direction (singular values, largest first)")
    sv_ax.set_ylabel("singular value = 1 / width")
    sv_ax.set_title("the gaussian energy's maps: inverse kernel widths per direction", fontsize=9)
    sv_ax.grid(True, alpha=0.3)
    sv_ax.legend(fontsize=7)
    assert image is not None
    fig.colorbar(image, ax=fig.axes[1:3], label="attention weight", shrink=0.8)
    return fig


def markdown(toy_rows: list[dict[str, Any]], maps: dict[str, dict[str, Any]], model: dict[str, Any]) -> str:
    """The toy's two widths, then the gaussian model's maps, BLEU and attention on the sentence."""
    lines = [
        f"Toy: y = 2 sin x + x^0.8 + N(0, {TOY_NOISE}^2) on {TOY_POINTS} training points in [0, 5) (seed {TOY_SEED}); "
        "held-out: mean squared error against the noise-free function on x = 0, 0.1, ..., 4.9.",
        "",
        "| kernel width σ | chosen by | leave-one-out MSE (training) | held-out MSE |",
        "| --- | --- | --- | --- |",
    ]
    for row in toy_rows:
        lines.append(f"| {row['width']:.3f} | {row['chosen_by']} | {row['loo_mse']:.3f} | {row['held_out_mse']:.3f} |")
    lines += [
        "",
        "Gaussian variant, -‖W_q s - W_k h‖²/2: the singular values of W_q and W_k are inverse widths, one per "
        "direction; their root mean square (RMS) summarizes each map, and 1/RMS is the width it stands for.",
        "",
        "| map | shape | RMS singular value, initial | learned | width 1/RMS, initial | learned | learned singular values, min - max |",
        "| --- | --- | --- | --- | --- | --- | --- |",
    ]
    for name, row in maps.items():
        lines.append(
            f"| {name} | {row['shape'][0]} x {row['shape'][1]} | {row['rms_sv_initial']:.3f} | "
            f"{row['rms_sv_learned']:.3f} | {row['width_initial']:.3f} | {row['width_learned']:.3f} | "
            f"{row['sv_learned_min']:.3f} - {row['sv_learned_max']:.3f} |"
        )
    lines += [
        "",
        f"| gaussian variant, seed {SEED} | value |",
        "| --- | --- |",
        f"| {model['split']} BLEU (beam {model['beam']}) | {model['bleu']:.2f} |",
        f"| sentence shown ({model['split']} line {model['line']}) | {cell_text(model['source'])} |",
        f"| its greedy translation | {cell_text(model['hypothesis'])} |",
        f"| attention spread on it: mean sd of the attended position, source tokens | {model['spread_tokens']:.2f} |",
        f"| attention entropy on it, bits (uniform: {model['uniform_entropy_bits']:.2f}) | {model['entropy_bits']:.2f} |",
    ]
    return "\n".join(lines)


def plans(ctx: LabContext) -> list[Plan]:
    """The gaussian variant's seed-1 run, shared with the lab "matrices"."""
    return [variant_plan(ctx, variants=["gaussian"], seeds=[SEED])]


def run(ctx: LabContext) -> LabResult:
    """The toy at both sizes alike; the gaussian variant's seed-1 run trained (or reused) at the lab's size."""
    toy = make_toy()
    fit = fit_width(toy)
    toy_rows = [
        {"width": FIXED_WIDTH, "chosen_by": "fixed (the lecture's kernel)", **toy_errors(toy, FIXED_WIDTH)},
        {
            "width": fit.width,
            "chosen_by": f"learned: {fit.steps} gradient steps on the leave-one-out MSE, from σ = {FIXED_WIDTH:g}",
            **toy_errors(toy, fit.width),
        },
    ]
    (plan,) = plans(ctx)
    report_dir = ctx.runs_dir / "report-kernel"  # not the lab "matrices"' report, which compares every variant
    ctx.compare(plan, out=report_dir)
    row = json.loads(report_json(report_dir).read_text(encoding="utf-8"))["variants"][0]
    run_dir = run_dirs(plan)["gaussian"]
    checkpoint = RunPaths(run_dir).best
    learned, initial = learned_and_initial_maps(checkpoint)
    sources, _refs = split_lines(run_dir, plan.split)
    line = pick_sentences(sources, WORDS_TINY if ctx.tiny else WORDS_FULL, count=1)[0]
    (sentence,) = attend(checkpoint, [sources[line]], TINY_DECODE if ctx.tiny else ())
    maps = {
        "W_q (decoder state -> query)": map_summary(learned.query, initial.query),
        "W_k (encoder state -> key)": map_summary(learned.key, initial.key),
    }
    model = {
        "split": plan.split,
        "beam": row["beam"],
        "bleu": float(row["per_seed_bleu"][str(SEED)]),
        "steps": plan.steps,
        "line": line + 1,
        "source": sources[line],
        "hypothesis": sentence.hypothesis,
        "spread_tokens": round(spread_tokens(sentence.weights), 4),
        "entropy_bits": round(entropy_bits(sentence.weights), 4),
        "uniform_entropy_bits": round(math.log2(len(sentence.src_pieces)), 4),
    }
    figure = plot_kernel(toy, fit, sentence, learned, initial, ctx.out / "kernel.png")
    numbers = {
        "toy": {
            "points": TOY_POINTS,
            "noise_sd": TOY_NOISE,
            "seed": TOY_SEED,
            "fit_steps": fit.steps,
            "fit_lr": FIT_LR,
            "final_gradient": fit.final_gradient,
            "widths": [{k: (round(v, 4) if isinstance(v, float) else v) for k, v in r.items()} for r in toy_rows],
        },
        "gaussian": {"seed": SEED, "maps": maps, **model},
    }
    return LabResult(table=markdown(toy_rows, maps, model), figure=figure, numbers=numbers)


# cpu_minutes: measured on 2026-11-26 (docs/labs/kernel.md): 12.5 min of wall time on the reference
# machine, data preparation included, with a test suite beside it for the first 4.5 min; nothing
# when the lab "matrices" trained the gaussian run first.
LAB = Lab(
    name="kernel",
    title="The kernel view: Nadaraya-Watson regression and the gaussian variant",
    cpu_minutes=13,
    # class_minutes: wall time of `python scripts/time_labs.py --size class` on 2026-11-27 (2 cores, the
    # lab from scratch in a runs folder of its own; docs/measurements/labs_class_2026-11-27_cpu.jsonl)
    class_minutes=2.1,
    run=run,
    plans=plans,
    runs_group="variants",
)
