"""``nmt eval``: translate a split (or read hypothesis files), score, compare, plot, report."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Optional, Sequence

import torch

from nmt import runtime, threads
from nmt.config import with_decode_overrides
from nmt.errors import UserError
from nmt.evaluate import bleu_by_length, compare_systems, score, write_report
from nmt.fileio import read_lines, write_lines

log = logging.getLogger(__name__)


def translate_split(checkpoints: Sequence[Path], split: str, beam: Optional[int], overrides: list[str],
                    out: Path) -> tuple[dict[str, list[str]], list[str], list[str], dict, torch.nn.Module]:
    """Translate a split of the (first) checkpoint's own corpus into ``out``, with one model or
    an ensemble of several; returns systems, refs, sources, info and the model."""
    from nmt.inference import check_beam, encode_sources, load_models, translate_ids

    device = runtime.select_device("auto")
    threads.configure(0)  # follow the cores other processes leave free
    loaded = load_models(checkpoints, device)
    cfg = with_decode_overrides(loaded.config, overrides)
    folder = cfg.data.prepared_dir
    src_path, ref_path = folder / f"{split}.{cfg.data.src}", folder / f"{split}.{cfg.data.tgt}"
    if not src_path.is_file():
        found = sorted({p.stem for p in folder.glob(f"*.{cfg.data.src}")}) if folder.is_dir() else []
        raise UserError(f"{src_path}: no split '{split}' (have: {', '.join(found) or 'none'}); "
                        f"run nmt data prepare first")
    srcs, refs = read_lines(src_path), read_lines(ref_path)
    beam = beam if beam is not None else cfg.decode.beam
    check_beam(beam, loaded.model)  # at least 1, at most the target vocabulary
    ids = encode_sources(loaded.src_tok, srcs, cfg.decode.max_src_len, str(src_path))
    with torch.inference_mode():
        results = translate_ids(loaded.model, ids, cfg.decode, device, beam=beam)
    hyps = [loaded.tgt_tok.decode(r.ids[0]) for r in results]
    hyp_path = out / f"{split}.hyp.{cfg.data.tgt}"
    write_lines(hyp_path, hyps)
    info = {"checkpoints": [str(c) for c in checkpoints], "step": loaded.step, "split": split, "beam": beam,
            "length_penalty": cfg.decode.length_penalty, "hypotheses": str(hyp_path)}
    return {f"beam{beam}": hyps}, refs, srcs, info, loaded.model


def run_eval(*, checkpoints: Sequence[Path], split: str, hyps: list[Path], ref: Optional[Path],
             src: Optional[Path], out: Optional[Path], beam: Optional[int], overrides: list[str]) -> str:
    """Score one or more systems and write ``report.json`` / ``report.md`` (+ a length plot)."""
    if (not checkpoints) == (not hyps):
        raise UserError("give either --checkpoint (to translate a split) or --hyp files with --ref")
    if out is None:  # beside the (first) run's checkpoints; an ensemble never overwrites a member's report
        folder = "eval" if len(checkpoints) <= 1 else "eval-ensemble"
        out = Path(checkpoints[0]).parent.parent / folder if checkpoints else Path("eval")
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    if checkpoints:
        systems, refs, srcs, info, _ = translate_split([Path(c) for c in checkpoints], split, beam, overrides, out)
    else:
        if ref is None:
            raise UserError("--hyp needs --ref (the reference translations)")
        refs = read_lines(ref)
        systems = {Path(h).name: read_lines(h) for h in hyps}
        if len(systems) < len(hyps):
            systems = {str(h): read_lines(h) for h in hyps}
        srcs = read_lines(src) if src is not None else None
        info = {"reference": str(ref)}
    rows, payload = [], {"info": info, "systems": {}}
    for name, lines in systems.items():
        result = score(lines, refs)
        payload["systems"][name] = result.to_dict()
        rows.append({"system": name, "BLEU": round(result.bleu, 2), "chrF": round(result.chrf, 2),
                     "n": result.n, "bleu_signature": result.bleu_signature,
                     "chrf_signature": result.chrf_signature})
    if len(systems) > 1:
        payload["comparison"] = compare_systems(systems, refs)
        for row, cmp in zip(rows, payload["comparison"]):
            row["p (vs first)"] = None if cmp["bleu_p_value"] is None else round(cmp["bleu_p_value"], 4)
            row["significant"] = cmp["significant"]
    if srcs is not None:
        if len(srcs) != len(refs):
            raise UserError(f"--src has {len(srcs)} lines but --ref has {len(refs)}")
        lengths = [len(s.split()) for s in srcs]
        series = {name: bleu_by_length(lengths, lines, refs) for name, lines in systems.items()}
        payload["bleu_by_length"] = series
        from nmt.plots import plot_bleu_by_length

        payload["length_plot"] = str(plot_bleu_by_length(series, out / "bleu_by_length.png"))
    json_path, md_path = write_report(out / "report", payload, rows)
    table = md_path.read_text(encoding="utf-8")
    return f"{table}\nwrote {json_path} and {md_path}"
