"""Lab "beam": how the beam size and the GNMT length penalty change BLEU and output length.

One Bahdanau model (seed 1) is trained as ``nmt compare`` trains it, then its best checkpoint
is loaded once and translates the validation split with every beam size and length-penalty
weight alpha of the grid, through the same search ``nmt translate`` uses
(:func:`nmt.decode.inference.translate_ids`).  Each setting's BLEU and sacreBLEU's length
ratio (hypothesis over reference length, in 13a tokens) are kept in the run folder, so a
second call, or one after an interruption, decodes only what is missing.

The grid is read on validation, not on test: choosing a beam and alpha by looking at test
scores would be tuning on test.  Test is scored once, at the beam and alpha the config fixed
before the lab ran (by ``nmt compare``), as a reference that no choice here depends on.
Validation scores are slightly optimistic for every setting alike, since the best checkpoint
was also picked on validation (by greedy BLEU).
"""

from __future__ import annotations

import json
import logging
import time
from pathlib import Path
from typing import Any

from nmt.comparison.plan import Plan
from nmt.labs.base import Lab, LabContext, LabResult
from nmt.run.paths import REPORT, RunPaths, report_json
from nmt.util.fileio import atomic_write, atomic_write_bytes

log = logging.getLogger(__name__)

BEAMS = (1, 2, 3, 5, 10, 20)
ALPHAS = (0.0, 0.5, 1.0, 1.5, 2.0)
CLASS_BEAMS = (1, 3, 5, 10)
CLASS_ALPHAS = (0.0, 1.0, 2.0)
CLASS_STEPS = 500  # the class-size config's model at update 500 scored 31 validation BLEU (greedy)
TINY_BEAMS = (1, 2)
TINY_ALPHAS = (0.0, 1.0)
VARIANT, SEED = "bahdanau", 1
GRID_FIELDS = ("beam", "alpha", "bleu", "length_ratio", "hyp_len", "ref_len", "seconds", "threads")
FORMATS = {"bleu": ".2f", "length_ratio": ".3f", "seconds": ".1f"}  # table cells
SPLIT = "valid"  # the split the grid is read on; test only at the config's setting (module docstring)


def plans(ctx: LabContext) -> list[Plan]:
    """The one model, scored on test at the config's beam and alpha."""
    config, overrides = ctx.base()
    return [
        Plan(
            config=config,
            variants=[VARIANT],
            seeds=[SEED],
            steps=ctx.steps(1500, CLASS_STEPS),
            split=ctx.score_split,
            runs_dir=ctx.runs_dir,
            overrides=overrides,
            force=ctx.force,
        )
    ]


def _train(ctx: LabContext) -> tuple[Path, dict[str, Any], str]:
    """Train (or reuse) the one model and score test at the config's beam and alpha: its run
    folder, compare's report row and the test split's name."""
    (plan,) = plans(ctx)
    ctx.compare(plan)
    report = json.loads(report_json(ctx.runs_dir / REPORT).read_text(encoding="utf-8"))
    (row,) = report["variants"]
    return ctx.runs_dir / f"{plan.arms[0].run_stem}_s{SEED}", row, plan.split


def _bleu_and_ratio(hyps: list[str], refs: list[str]) -> dict[str, Any]:
    """Corpus BLEU with nmt's one sacreBLEU configuration, and that score's length ratio."""
    from nmt.score.metrics import bleu_with_length

    found = bleu_with_length(hyps, refs)
    return {**found, "bleu": round(found["bleu"], 2), "length_ratio": round(found["length_ratio"], 3)}


def _decode_grid(
    run_dir: Path, beams: tuple[int, ...], alphas: tuple[float, ...]
) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """BLEU, length ratio and decoding seconds of every (beam, alpha) on the validation split,
    and what the rows were decoded with (the checkpoint's update, its config's alpha, the device).

    The model loads once.  Beam 1 is greedy search, which has no length penalty, so it is
    decoded once and its row stands for every alpha.  A setting already decoded with this
    best checkpoint is read back from ``lab-beam-valid/`` in the run folder.
    """
    import torch

    from nmt.config import with_decode_overrides
    from nmt.decode.inference import encode_sources, load_checkpoint, translate_ids
    from nmt.util import runtime, threads
    from nmt.util.fileio import read_lines

    paths = RunPaths(run_dir)
    stat = paths.best.stat()
    checkpoint_key = [stat.st_size, stat.st_mtime_ns]
    cache = run_dir / f"lab-beam-{SPLIT}"
    cache.mkdir(exist_ok=True)
    device = runtime.select_device("auto")
    threads.configure(0)  # follow the cores other processes leave free, as nmt eval does
    loaded = load_checkpoint(paths.best, device)
    data = loaded.config.data
    srcs = read_lines(data.prepared_dir / f"{SPLIT}.{data.src}")
    refs = read_lines(data.prepared_dir / f"{SPLIT}.{data.tgt}")
    ids = encode_sources(loaded.src_tok, srcs, loaded.config.decode.max_src_len, SPLIT)
    warmed = False
    rows = []
    for beam in beams:
        for alpha in alphas[:1] if beam == 1 else alphas:
            file = cache / f"beam{beam}-alpha{alpha:g}.json"
            key = {"checkpoint": checkpoint_key, "split": SPLIT, "beam": beam, "alpha": alpha}
            saved = json.loads(file.read_text(encoding="utf-8")) if file.is_file() else {}
            if saved.get("key") != key:
                decode = with_decode_overrides(loaded.config, [f"decode.length_penalty={alpha}"]).decode
                with torch.inference_mode():
                    if not warmed:  # the first call pays one-time costs that no setting should carry
                        translate_ids(loaded.model, ids[:8], decode, device, beam=1)
                        warmed = True
                    log.info("beam lab: decoding %s with beam %d, alpha %g", SPLIT, beam, alpha)
                    start = time.perf_counter()
                    results = translate_ids(loaded.model, ids, decode, device, beam=beam)
                    seconds = time.perf_counter() - start
                hyps = [loaded.tgt_tok.decode(r.ids[0]) for r in results]
                result = {
                    **_bleu_and_ratio(hyps, refs),
                    "seconds": round(seconds, 2),
                    "threads": torch.get_num_threads(),
                }
                saved = {"key": key, "result": result}
                atomic_write_bytes(file, json.dumps(saved).encode("utf-8"))
            for shown in alphas if beam == 1 else (alpha,):
                rows.append({"beam": beam, "alpha": shown, "sentences": len(srcs), **saved["result"]})
    info = {"best_step": loaded.step, "default_alpha": loaded.config.decode.length_penalty, "device": str(device)}
    return rows, info


def _cell(rows: list[dict[str, Any]], beam: int, alpha: float) -> dict[str, Any]:
    return next(r for r in rows if r["beam"] == beam and r["alpha"] == alpha)


def _grid_table(rows: list[dict[str, Any]], field: str, beams: tuple[int, ...], alphas: tuple[float, ...]) -> str:
    """A Markdown table of one field: a line per beam, a column per alpha."""
    lines = ["| beam | " + " | ".join(f"α = {a:g}" for a in alphas) + " |", "|---:" * (len(alphas) + 1) + "|"]
    for beam in beams:
        cells = [_cell(rows, beam, a)[field] for a in alphas]
        lines.append(f"| {beam} | " + " | ".join(f"{c:{FORMATS[field]}}" for c in cells) + " |")
    return "\n".join(lines)


def _plot(rows: list[dict[str, Any]], beams: tuple[int, ...], alphas: tuple[float, ...], path: Path) -> Path:
    """Two panels against the beam size, one line per alpha: BLEU, and the length ratio."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(figsize=(10.0, 4.0), layout="constrained")
    FigureCanvasAgg(fig)
    left, right = fig.subplots(1, 2)
    for alpha in alphas:
        cells = [_cell(rows, b, alpha) for b in beams]
        for ax, field in ((left, "bleu"), (right, "length_ratio")):
            ax.plot(beams, [c[field] for c in cells], marker="o", label=f"α = {alpha:g}")
    right.axhline(1.0, color="grey", linestyle="--", linewidth=1)  # as long as the references
    for ax, ylabel in ((left, f"BLEU ({SPLIT})"), (right, "length ratio (hypothesis / reference)")):
        ax.set_xscale("log")
        ax.set_xticks(beams, labels=[str(b) for b in beams])
        ax.minorticks_off()
        ax.set_xlabel("beam size")
        ax.set_ylabel(ylabel)
        ax.grid(True, alpha=0.3)
        ax.legend()
    fig.suptitle("Beam size and GNMT length penalty α (beam 1 is greedy: no α)")
    with atomic_write(path) as handle:
        fig.savefig(handle, format="png", dpi=150)
    return path


def _trend(rows: list[dict[str, Any]], beams: tuple[int, ...], alphas: tuple[float, ...]) -> str:
    """For the smallest and the largest alpha: the beam with the best BLEU, and BLEU and length
    ratio there and at the widest beam (the fall Koehn and Knowles 2017 saw without normalization)."""
    wide = beams[-1]
    parts = []
    for alpha in dict.fromkeys((alphas[0], alphas[-1])):
        cells = [_cell(rows, b, alpha) for b in beams]
        peak, last = max(cells, key=lambda c: c["bleu"]), cells[-1]
        parts.append(
            f"α = {alpha:g}: best BLEU {peak['bleu']:.2f} at beam {peak['beam']} (length ratio "
            f"{peak['length_ratio']:.3f}); at beam {wide}, BLEU {last['bleu']:.2f} (length ratio {last['length_ratio']:.3f})."
        )
    return " ".join(parts)


def run(ctx: LabContext) -> LabResult:
    """Train or reuse the model, decode the grid, write the figure; the tables and numbers."""
    beams, alphas = ctx.pick((BEAMS, ALPHAS), (CLASS_BEAMS, CLASS_ALPHAS), (TINY_BEAMS, TINY_ALPHAS))
    run_dir, test_row, test_split = _train(ctx)
    rows, info = _decode_grid(run_dir, beams, alphas)
    figure = _plot(rows, beams, alphas, ctx.out / "beam.png")
    best = max((r for r in rows if r["beam"] > 1 or r["alpha"] == alphas[0]), key=lambda r: r["bleu"])
    default_alpha = info["default_alpha"]
    n = rows[0]["sentences"]
    threads = " or ".join(str(t) for t in sorted({r["threads"] for r in rows}))
    table = "\n".join(
        [
            f"One {VARIANT} model (seed {SEED}, {test_row['updates']} updates, best checkpoint at update "
            f"{info['best_step']} by greedy validation BLEU) translates the {SPLIT} split ({n} sentences) "
            "with each beam size and GNMT length-penalty weight α; beam 1 is greedy search, which has no α. "
            "The grid is read on validation so that no setting is chosen on test.",
            "",
            f"BLEU on {SPLIT}:",
            "",
            _grid_table(rows, "bleu", beams, alphas),
            "",
            f"Length ratio on {SPLIT} (sacreBLEU's: hypothesis over reference tokens; below 1 is too short):",
            "",
            _grid_table(rows, "length_ratio", beams, alphas),
            "",
            f"Decoding seconds for the {SPLIT} split ({info['device']}; torch threads: {threads}):",
            "",
            _grid_table(rows, "seconds", beams, alphas),
            "",
            _trend(rows, beams, alphas),
            "",
            f"Best on {SPLIT}: beam {best['beam']}, α {best['alpha']:g}, BLEU {best['bleu']:.2f}. "
            f"Reference only: {test_split} BLEU {test_row['bleu']:.2f} (chrF {test_row['chrf']:.2f}) at the "
            f"config's own beam {test_row['beam']} and α {default_alpha:g}, fixed before this lab ran.",
            "",
            f"BLEU: {rows[0]['bleu_signature']}",
        ]
    )
    numbers = {
        "variant": VARIANT,
        "seed": SEED,
        "updates": test_row["updates"],
        "split": SPLIT,
        "sentences": n,
        "beams": list(beams),
        "alphas": list(alphas),
        "best_step": info["best_step"],
        "device": info["device"],
        "grid": [{k: r[k] for k in GRID_FIELDS} for r in rows],
        "best_on_valid": {"beam": best["beam"], "alpha": best["alpha"], "bleu": best["bleu"]},
        "test_reference": {
            "split": test_split,
            "beam": test_row["beam"],
            "alpha": default_alpha,
            "bleu": test_row["bleu"],
            "chrf": test_row["chrf"],
        },
        "bleu_signature": rows[0]["bleu_signature"],
    }
    return LabResult(table=table, figure=figure, numbers=numbers)


# cpu_minutes: measured on 2026-11-26 (docs/labs/beam.md): 40 min of wall time on the reference machine,
# 29.5 of them for the 1,500 updates and their validations, the rest for the 26 decodings of the grid.
LAB = Lab(
    name="beam",
    title="Beam size and length penalty",
    cpu_minutes=40,
    # class_minutes: wall time of `python scripts/time_labs.py --size class` on 2026-11-27 (2 cores, the
    # lab from scratch in a runs folder of its own; docs/measurements/labs_class_2026-11-27_cpu.jsonl)
    class_minutes=5.5,
    run=run,
    plans=plans,
    runs_group="beam",
)
