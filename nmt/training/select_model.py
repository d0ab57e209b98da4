"""Model selection, the last step of training: best.pt or the average of the last N validated checkpoints.

The rule of configs/multi30k_de_en_gpu_reg.yaml (``nmt select``, ``train.select: on_valid_last_N``):
average the last N validated step checkpoints into ``checkpoints/avg_lastN.pt``, translate the
validation split with best.pt and with the average (beam B), keep the one with the higher
validation BLEU (best.pt on a tie), and only then, if asked, read a test split once with the
chosen one.  ``train.select: average_last_N`` keeps the average without scoring.  Translations
are scored in memory (no ``eval-*`` folder is written into the run); the choice and every test
read go to the run's ``selection.json`` (:mod:`nmt.run.selection`), which makes the run folder
stand for the chosen checkpoint (:attr:`nmt.run.paths.RunPaths.chosen`).

Every argument is checked (:func:`check_selection`) before ``avg_lastN.pt`` is written.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import replace
from pathlib import Path
from typing import Any, Optional

import torch

from nmt.config import Config
from nmt.config.train_section import select_rule
from nmt.data.pipeline import check_same_text
from nmt.data.splits import check_split
from nmt.decode.inference import check_beam, encode_sources, load_checkpoint, translate_ids
from nmt.run import checkpoint as ckpt
from nmt.run import selection as record_file
from nmt.run.paths import RunPaths
from nmt.run.test_reads import is_test_split
from nmt.score.metrics import score
from nmt.training.average import average, check_output, resolve
from nmt.training.results import RunOutcome
from nmt.training.selection import BEST, Candidate, Selection, TestRead
from nmt.util.errors import UserError
from nmt.util.fileio import read_lines

log = logging.getLogger(__name__)

FLAGS = {"valid": "--valid", "test": "--test"}
"""How the messages of :func:`check_selection` name the splits: ``nmt select``'s options."""


def check_selection(
    run: Path, last: int, beam: Optional[int], valid: str, test: Optional[str], names: Mapping[str, str] = FLAGS
) -> tuple[str, Optional[str]]:
    """Everything selection would refuse part-way, refused now, before any file is written: our
    names of the validation and test splits (None: no test split), or a UserError naming the
    options as ``names`` gives them (the library: its parameters ``valid=``, ``test=``).  A test split
    (:func:`nmt.run.test_reads.is_test_split`) is refused as the split the choice is made on."""
    paths = RunPaths(run)
    if not paths.best.is_file():
        raise UserError(f"{paths.best} not found; train the run first")
    record_file.read(paths.selection)  # a file of that name that is not our record is refused
    check_output(paths.average(last), resolve([run], last=last, best=None), force=True)
    loaded = load_checkpoint(paths.best, torch.device("cpu"))
    check_same_text(loaded.config.data, str(paths.config))  # the corpus the run trained on, still there
    if beam is not None:
        check_beam(beam, loaded.model)
    valid_split = check_split(loaded.config.data, valid, names["valid"])
    test_split = None if test is None else check_split(loaded.config.data, test, names["test"])
    if test_split is not None and test_split == valid_split:
        raise UserError(
            f"{names['test']} {test} is the split the choice is made on ({names['valid']} {valid}); "
            "give another test split, or none to read no test split"
        )
    if is_test_split(valid_split):  # a choice made on test is a test read that selection.json would not count
        raise UserError(
            f"{names['valid']} {valid}: a test split; the choice is made on a validation split (valid), "
            f"and a test split is read once with the chosen model ({names['test'] or 'test'})"
        )
    return valid_split, test_split


def score_split(checkpoint: Path, split: str, beam: int, device: torch.device) -> dict[str, Any]:
    """BLEU, chrF and length ratio of ``checkpoint``'s translations of ``split`` (its own corpus,
    beam ``beam``, the rest of its ``decode`` section), translated and scored in memory."""
    loaded = load_checkpoint(checkpoint, device)
    data = loaded.config.data
    check_same_text(data, str(RunPaths.of_checkpoint(checkpoint).config))
    folder = data.prepared_dir
    src_path = folder / f"{split}.{data.src}"
    srcs, refs = read_lines(src_path), read_lines(folder / f"{split}.{data.tgt}")
    ids = encode_sources(loaded.src_tok, srcs, loaded.config.decode.max_src_len, str(src_path))
    with torch.inference_mode():
        results = translate_ids(loaded.model, ids, loaded.config.decode, device, beam=beam)
    found = score([loaded.tgt_tok.decode(r.ids[0]) for r in results], refs).to_dict()
    log.info("%s on %s, beam %d: BLEU %.2f", checkpoint, split, beam, found["bleu"])
    return {"step": loaded.step, **{key: found[key] for key in ("bleu", "chrf", "length_ratio")}}


def _relative(run: Path, checkpoint: Path) -> str:
    return checkpoint.relative_to(run).as_posix()


def _write_average(run: Path, last: int) -> tuple[Path, int]:
    """``checkpoints/avg_lastN.pt`` written anew, and the update of its newest checkpoint."""
    paths = resolve([run], last=last, best=None)
    output = RunPaths(run).average(last)
    check_output(output, paths, force=True)  # replaces this rule's own earlier average, never an input
    averaged = average(paths)
    ckpt.save(output, averaged)
    log.info("averaged %d checkpoints into %s", len(paths), output)
    return output, averaged.state.step


def choose(
    run: Path,
    *,
    last: int,
    beam: Optional[int],
    valid: str,
    test: Optional[str],
    device: torch.device,
    rule: str = "on_valid",
) -> Selection:
    """Average, choose by ``rule``, read ``test`` with the choice (None: no test), record it all in
    selection.json.  The caller has checked the arguments (:func:`check_selection`) and holds the
    run's lock; ``valid`` and ``test`` are our split names."""
    run = Path(run)
    paths = RunPaths(run)
    averaged, step = _write_average(run, last)
    name = averaged.stem
    if rule == "average":
        candidates: tuple[Candidate, ...] = (Candidate(name, averaged, step),)
        chosen = candidates[0]
    else:
        assert beam is not None
        candidates = tuple(
            Candidate(label, path, **score_split(path, valid, beam, device))
            for label, path in ((BEST, paths.best), (name, averaged))
        )
        best, avg = candidates
        assert best.bleu is not None and avg.bleu is not None
        chosen = avg if avg.bleu > best.bleu else best
    record = record_file.read(paths.selection) or record_file.empty()
    when = record_file.now()
    if record["chosen"] is not None:
        record["earlier"].append(record["chosen"])
    record["chosen"] = {
        "name": chosen.name,
        "checkpoint": _relative(run, chosen.checkpoint),
        "rule": rule,
        "settings": {"last": last, "beam": beam, "valid": valid if rule == "on_valid" else None},
        "candidates": [{**vars(c), "checkpoint": _relative(run, c.checkpoint)} for c in candidates],
        "time": when,
    }
    read: Optional[TestRead] = None
    if test is not None:
        assert beam is not None
        scores = score_split(chosen.checkpoint, test, beam, device)
        read = TestRead(
            split=test,
            read=record_file.test_reads(record, test) + 1,
            name=chosen.name,
            checkpoint=chosen.checkpoint,
            beam=beam,
            bleu=scores["bleu"],
            chrf=scores["chrf"],
            length_ratio=scores["length_ratio"],
            time=record_file.now(),
        )
        record["tests"].append({**vars(read), "checkpoint": _relative(run, chosen.checkpoint)})
        if read.read > 1:
            log.warning("%s: test split %s read %d times now (selection.json lists each)", run, test, read.read)
    record_file.write(paths.selection, record)
    return Selection(
        run=run,
        rule=rule,
        last=last,
        beam=beam,
        valid=valid if rule == "on_valid" else None,
        candidates=candidates,
        chosen=chosen.name,
        checkpoint=chosen.checkpoint,
        test=read,
        time=when,
    )


def run_select(
    run: Path,
    *,
    last: int,
    beam: int,
    valid: str = "valid",
    test: Optional[str] = None,
    names: Mapping[str, str] = FLAGS,
) -> Selection:
    """``nmt select`` and ``nmt.select``: check everything, hold the run's lock (no training
    may write the run meanwhile), choose on validation, read ``test`` once if given."""
    from nmt.run.folder import RunLock
    from nmt.util import runtime, threads

    valid_split, test_split = check_selection(run, last, beam, valid, test, names)
    threads.configure(0)  # follow the cores other processes leave free, as nmt eval does
    with RunLock(run):
        return choose(
            run, last=last, beam=beam, valid=valid_split, test=test_split, device=runtime.select_device("auto")
        )


def select_at_end(outcome: RunOutcome, cfg: Config, run: Path, device: torch.device) -> RunOutcome:
    """``train.select``'s choice once a run has finished (its lock still held): the outcome with the
    choice added to its summary.  A run that cannot be chosen for (no validation yet, fewer
    validated checkpoints than N) keeps best.pt, which a warning and the summary say."""
    rule, last = select_rule(cfg.train.select)
    if rule == "best":
        return outcome
    beam = cfg.decode.beam if rule == "on_valid" else None
    try:
        valid, _ = check_selection(run, last, beam, "valid", None, {"valid": "the validation split", "test": ""})
        result = choose(run, last=last, beam=beam, valid=valid, test=None, device=device, rule=rule)
    except UserError as exc:
        log.warning("train.select=%s not applied, the run stands for best.pt: %s", cfg.train.select, exc)
        return replace(outcome, summary=f"{outcome.summary}; train.select={cfg.train.select} not applied ({exc})")
    scores = "; ".join(f"{c.name} valid BLEU {c.bleu:.2f}" for c in result.candidates if c.bleu is not None)
    chosen = f"the run stands for {result.checkpoint.relative_to(run).as_posix()}"
    return replace(outcome, summary=f"{outcome.summary}; {chosen}" + (f" ({scores})" if scores else ""))
