"""What a comparison's record keeps of each run and of the data, so that a reader can rerun it.

Per run: its arm and seed, the SHA-256 of its resolved config (``config.yaml``), the validation
scores of the checkpoint it was scored with, its test scores, parameters, and the software it
trained with (from its own metrics.jsonl, not the writer's).  Per arm: the resolved config itself
(seed 1's; the seeds differ in ``train.seed`` alone).  The data: each prepared file's SHA-256 and
split sizes from the corpus's manifest, and the SentencePiece model's hash.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any, Optional

import yaml

from nmt.comparison.plan import Plan
from nmt.run import events
from nmt.run.paths import SCORED, RunPaths
from nmt.run.test_reads import read_counts


def _sha256(path: Path) -> Optional[str]:
    return hashlib.sha256(path.read_bytes()).hexdigest() if path.is_file() else None


def run_entry(run_dir: Path, arm: str, seed: int, split: str, tag: str = "") -> dict[str, Any]:
    """One run as the record keeps it (see the module docstring)."""
    paths = RunPaths(run_dir)
    scored_path = paths.compare_folder(split, tag) / SCORED
    scored = json.loads(scored_path.read_text(encoding="utf-8"))["result"] if scored_path.is_file() else {}
    log = events.read(run_dir)
    starts = events.of_kind(log, events.Start)
    chosen = [v for v in events.of_kind(log, events.Valid) if v.step == scored.get("best_step")]
    hardware = starts[-1].hardware if starts else {}
    return {
        "run": run_dir.name,
        "arm": arm,
        "seed": seed,
        "config_sha256": _sha256(paths.config),
        "valid_of_scored_checkpoint": (
            {"step": chosen[-1].step, "bleu": chosen[-1].bleu, "chrf": chosen[-1].chrf, "loss": chosen[-1].loss}
            if chosen
            else None
        ),
        "test": {k: scored.get(k) for k in ("bleu", "chrf", "beam", "updates", "best_step")},
        "params": scored.get("params"),
        "software": {"torch": hardware.get("torch")},
        "test_reads": read_counts(run_dir),
        "device": hardware.get("device_name") or hardware.get("device"),
    }


def arm_configs(entries: list[dict[str, Any]], run_dirs: dict[str, Path]) -> dict[str, Any]:
    """Each arm's resolved config, from its first seed's config.yaml."""
    configs: dict[str, Any] = {}
    for entry in entries:
        path = RunPaths(run_dirs[entry["run"]]).config
        if entry["arm"] not in configs and path.is_file():
            configs[entry["arm"]] = yaml.safe_load(path.read_text(encoding="utf-8"))
    return configs


def data_entry(plan: Plan) -> dict[str, Any]:
    """The prepared corpus the arms read: split sizes, each file's SHA-256, the SentencePiece model's.
    Arms that read different folders (a sweep of a data option such as ``data.max_len``) get one
    entry each, under ``per_arm``, by label."""
    from nmt import config as config_mod

    folders = {
        arm.label: config_mod.load(plan.config, [*plan.overrides, *arm.train]).data.prepared_dir for arm in plan.arms
    }
    if len(set(folders.values())) == 1:
        return folder_entry(next(iter(folders.values())))
    return {"per_arm": {label: folder_entry(folder) for label, folder in folders.items()}}


def folder_entry(folder: Path) -> dict[str, Any]:
    """One prepared folder's record (its manifest's split sizes and hashes; null where unprepared)."""
    from nmt.data.prepare import MANIFEST

    manifest_path = folder / MANIFEST
    if not manifest_path.is_file():
        return {"folder": str(folder), "manifest": None}
    manifest = json.loads(manifest_path.read_text(encoding="utf-8"))
    splits = {
        name: {
            "pairs": split.get("pairs"),
            "sha256": {lang: f.get("sha256") for lang, f in split.get("files", {}).items()},
        }
        for name, split in manifest.get("splits", {}).items()
    }
    spm = {p.name: _sha256(p) for p in sorted(folder.glob("spm*.model"))}
    return {"folder": str(folder), "corpus": manifest.get("corpus"), "splits": splits, "sentencepiece": spm}
