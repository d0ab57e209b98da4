"""``nmt eval``: translate a split (or read hypothesis files), score, compare, plot, report.

Several ``--hyp`` files are compared with the first (the baseline) by paired bootstrap
resampling and approximate randomization; ``report.json`` holds every number and
``report.md`` (:mod:`nmt.evaluation.eval_page`) shows them to a person.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Optional

from nmt.config import with_decode_overrides
from nmt.data.splits import split_name
from nmt.evaluation.eval_page import eval_page, summary
from nmt.evaluation.report_files import LENGTH_PLOT, REPORT_FILES, check_report_outputs, hypotheses_in
from nmt.evaluation.run_report import check_out_folder
from nmt.run.paths import EVAL, RunPaths, report_stem, run_of_checkpoint
from nmt.run.test_reads import check_log, is_test_split, log_read
from nmt.score.metrics import bleu_by_length, compare_systems, score, write_report
from nmt.util.errors import UserError
from nmt.util.fileio import read_lines, write_lines
from nmt.util.owned import claim

if TYPE_CHECKING:
    import torch

log = logging.getLogger(__name__)

# What `--test` accepts, and the tests of nmt.score.metrics.compare_systems each one runs.
TEST_CHOICES: dict[str, tuple[str, ...]] = {"both": ("bootstrap", "ar"), "bootstrap": ("bootstrap",), "ar": ("ar",)}


def translate_split(
    checkpoints: Sequence[Path],
    split: str,
    beam: Optional[int],
    overrides: list[str],
    out: Path,
    reader: str = "nmt eval",
) -> tuple[dict[str, list[str]], list[str], list[str], dict, torch.nn.Module]:
    """Translate a split of the (first) checkpoint's own corpus into ``out``, with one model or
    an ensemble of several; returns systems, refs, sources, info and the model.  A test split's
    read is logged in each checkpoint's run folder (:mod:`nmt.run.test_reads`), naming ``reader``."""
    import torch

    from nmt.data.pipeline import check_same_text
    from nmt.data.splits import check_split
    from nmt.decode.inference import check_search, encode_sources, load_models, translate_ids
    from nmt.util import runtime, threads

    runs = list(dict.fromkeys(r for r in map(run_of_checkpoint, checkpoints) if r is not None))
    if is_test_split(split):
        for run_dir in runs:
            check_log(run_dir)  # a log that is a link is refused before any work, not after
    device = runtime.select_device("auto")
    threads.configure(0)  # follow the cores other processes leave free
    loaded = load_models(checkpoints, device)
    cfg = with_decode_overrides(loaded.config, overrides)
    split = check_split(cfg.data, split)  # the split this corpus lacks: why, and the splits it has
    folder = cfg.data.prepared_dir
    src_path, ref_path = folder / f"{split}.{cfg.data.src}", folder / f"{split}.{cfg.data.tgt}"
    run = run_of_checkpoint(checkpoints[0])
    check_same_text(cfg.data, str(RunPaths(run).config) if run is not None else "<the run's config.yaml>")
    srcs, refs = read_lines(src_path), read_lines(ref_path)
    beam = beam if beam is not None else cfg.decode.beam
    check_search(cfg.decode, beam, 1, loaded.model, overrides)  # the beam, and options it cannot use
    ids = encode_sources(loaded.src_tok, srcs, cfg.decode.max_src_len, str(src_path))
    with torch.inference_mode():
        results = translate_ids(loaded.model, ids, cfg.decode, device, beam=beam)
    hyps = [loaded.tgt_tok.decode(r.ids[0]) for r in results]
    for run_dir in runs:
        log_read(run_dir, split, reader, checkpoints)
    hyp_path = out / f"{split}.hyp.{cfg.data.tgt}"
    claim(out, [hyp_path.name])
    write_lines(hyp_path, hyps)
    info = {
        "checkpoints": [str(c) for c in checkpoints],
        "step": loaded.step,
        "split": split,
        "beam": beam,
        "length_penalty": cfg.decode.length_penalty,
        "hypotheses": str(hyp_path),
    }
    return {f"beam{beam}": hyps}, refs, srcs, info, loaded.model


def translate_lines(
    engine_name: str, model: Path, src: Path, beam: Optional[int], overrides: list[str], out: Path, compute_type: str
) -> tuple[dict[str, list[str]], list[str], dict[str, Any]]:
    """Translate the lines of ``src`` with an export folder on ``engine_name`` into ``out``; returns the
    system (named by engine and beam), the source lines and what the report says of them."""
    from nmt.decode.batched import encode_sources
    from nmt.decode.engines import open_engine

    srcs = read_lines(src)
    engine = open_engine(engine_name, [], model, compute_type=compute_type)
    decode = engine.decode_config(overrides)
    beam = beam if beam is not None else decode.beam
    engine.check(decode, beam, 1, overrides)
    out.mkdir(parents=True, exist_ok=True)  # once the model is loaded: a refusal before leaves no folder
    results = engine.translate(
        encode_sources(engine.src_tok, srcs, decode.max_src_len, str(src)), decode, beam=beam, n_best=1, attention=False
    )
    hyps = [engine.tgt_tok.decode(r.ids[0]) for r in results]
    hyp_path = out / f"{src.name}.hyp"
    claim(out, [hyp_path.name])
    write_lines(hyp_path, hyps)
    info = {
        "model": str(model),
        "engine": engine_name,
        "step": engine.step,
        "source": str(src),
        "beam": beam,
        "length_penalty": decode.length_penalty,
        "hypotheses": str(hyp_path),
    }
    return {f"{engine_name} beam{beam}": hyps}, srcs, info


def read_hypotheses(
    hyps: Sequence[Path], ref: Path, src: Optional[Path]
) -> tuple[dict[str, list[str]], list[str], Optional[list[str]]]:
    """Systems named by file (the full path where two names clash), references and sources,
    after checking that every file has one line per reference line: a paired comparison
    needs the same segments from every system."""
    refs = read_lines(ref)
    seen = [str(h) for h in hyps]
    repeated = next((h for i, h in enumerate(seen) if h in seen[:i]), None)
    if repeated is not None:
        raise UserError(f"--hyp {repeated} is given twice; give each hypothesis file once")
    names = [Path(h).name for h in hyps]
    if len(set(names)) < len(names):
        names = seen
    systems: dict[str, list[str]] = {}
    for name, path in zip(names, hyps):
        lines = read_lines(path)
        if len(lines) != len(refs):
            raise UserError(
                f"{path}: {len(lines)} lines, but the reference {ref} has {len(refs)}; "
                f"every --hyp file needs one line per reference line"
            )
        systems[name] = lines
    srcs = read_lines(src) if src is not None else None
    if srcs is not None and len(srcs) != len(refs):
        raise UserError(
            f"{src}: {len(srcs)} lines, but the reference {ref} has {len(refs)}; "
            f"--src needs one line per reference line"
        )
    return systems, refs, srcs


def default_out(checkpoints: Sequence[Path]) -> Path:
    """Where ``nmt eval`` writes without ``--out``: beside the (first) run's checkpoints (an ensemble
    never overwrites a member's report), else ``eval/`` here."""
    if checkpoints:
        return RunPaths.of_checkpoint(Path(checkpoints[0])).eval_folder(len(checkpoints) > 1)
    return Path(EVAL)


def run_eval(
    *,
    checkpoints: Sequence[Path],
    split: str,
    hyps: list[Path],
    ref: Optional[Path],
    src: Optional[Path],
    out: Optional[Path],
    beam: Optional[int],
    overrides: list[str],
    test: str = "both",
    bootstrap_samples: int = 1000,
    ar_trials: int = 10000,
    seed: int = 12345,
    model: Optional[Path] = None,
    engine: Optional[str] = None,
    compute_type: str = "float32",
) -> str:
    """Score one or more systems and write ``report.json`` / ``report.md`` (+ a length plot);
    returns the summary to print (scores, comparison, where the report went).

    The systems: a split translated by ``checkpoints``, the lines of ``src`` translated by an
    export folder ``model`` on ``engine`` (None: the one its format names), or the files ``hyps``."""
    if sum(map(bool, (checkpoints, hyps, model))) != 1:
        raise UserError(
            "give one of --checkpoint (to translate a split), --model with --src and --ref (an export folder "
            "translates --src), or --hyp files with --ref"
        )
    if model is not None and (src is None or ref is None):
        raise UserError("--model translates --src and scores it against --ref: give both")
    from nmt.decode.engines import check_compute_type, choose_engine, require_export

    engine = choose_engine(engine, [Path(model)] if model is not None else [])  # torch for --checkpoint, --hyp
    require_export(engine, model)  # --checkpoint and --hyp never run another engine
    check_compute_type(engine, compute_type)
    if test not in TEST_CHOICES:
        raise UserError(f"--test must be one of {', '.join(TEST_CHOICES)}, got {test!r}")
    for option, value in (("--bootstrap-samples", bootstrap_samples), ("--ar-trials", ar_trials), ("--seed", seed)):
        if value < 1:
            raise UserError(f"{option} must be at least 1, got {value}")
    if (hyps or model is not None) and ref is None:
        raise UserError("--hyp needs --ref (the reference translations)")
    out = Path(out) if out is not None else default_out(checkpoints)
    check_out_folder(out)  # before any model loads or file is read
    split = split_name(split)  # Multi30k's own names (test_2016_flickr) name our splits too
    written = [*REPORT_FILES, *([LENGTH_PLOT] if not hyps or src is not None else [])]  # the plot needs sources
    translated = []  # the hypothesis files a model writes into out
    if checkpoints:
        translated = hypotheses_in(out, split)
    elif model is not None and src is not None:
        translated = [f"{src.name}.hyp"]
    check_report_outputs(out, [*written, *translated])  # a user's report.md or .hyp there is refused now
    srcs: Optional[list[str]]  # the source lines, where known
    if checkpoints:  # the folder is made by the first file written: a refusal before it leaves none
        systems, refs, srcs, info, _ = translate_split([Path(c) for c in checkpoints], split, beam, overrides, out)
    elif model is not None:
        assert src is not None and ref is not None
        refs = read_lines(ref)
        systems, srcs, info = translate_lines(engine, Path(model), Path(src), beam, overrides, out, compute_type)
        if len(srcs) != len(refs):
            raise UserError(f"--src {src} has {len(srcs)} lines but --ref {ref} has {len(refs)}; give parallel files")
        info["reference"] = str(ref)
    else:
        assert ref is not None
        systems, refs, srcs = read_hypotheses(hyps, ref, src)
        info = {"hyp_files": [str(h) for h in hyps], "reference": str(ref), "source": None if src is None else str(src)}
        out.mkdir(parents=True, exist_ok=True)
    scores = {name: score(lines, refs).to_dict() for name, lines in systems.items()}
    payload: dict[str, Any] = {"info": info, "systems": scores}
    if len(systems) > 1:
        payload["significance"] = {
            "tests": list(TEST_CHOICES[test]),
            "bootstrap_samples": bootstrap_samples,
            "ar_trials": ar_trials,
            "seed": seed,
        }
        payload["comparison"] = compare_systems(
            systems, refs, n_samples=bootstrap_samples, seed=seed, tests=TEST_CHOICES[test], ar_trials=ar_trials
        )
    if srcs is not None:
        lengths = [len(s.split()) for s in srcs]
        series = {name: bleu_by_length(lengths, lines, refs) for name, lines in systems.items()}
        payload["bleu_by_length"] = series
        from nmt.util.plots import plot_bleu_by_length

        payload["length_plot"] = str(plot_bleu_by_length(series, out / "bleu_by_length.png"))
    claim(out, written)
    json_path, md_path = write_report(report_stem(out), payload, [], markdown=eval_page(payload))
    return f"{summary(payload)}\nwrote {json_path} and {md_path}"
