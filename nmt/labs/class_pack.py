"""A lecturer's pack: the baseline a whole class compares against, trained once and handed out.

Notebook 07 compares a student's energy with Bahdanau's over seeds.  In class time a student can
train only short runs of both, and two seeds of 150 updates give intervals of tens of BLEU.  The pack
moves the baseline's runs to the lecturer: ``nmt class pack`` trains Bahdanau's runs of the
comparison (its seeds, its updates, its test split and beam) and keeps, per run, what a comparison
reuses (the config, the metrics and events, the SentencePiece models, the best checkpoint and its
scores of the test split), with the
comparison's report and a manifest, ``pack.json``.  A notebook that finds the pack (``class-pack/``
in its folder, or ``pack:`` in ``nmt-class.yaml``) trains only the student's arm, at the pack's seeds
and updates; ``nmt.compare`` reuses the baseline's runs, being the same config to the last option,
and pairs the seeds as it always does.

The class-setting pack holds Multi30k runs of ``configs/multi30k_de_en_class.yaml``; the smoke pack
(``--smoke``) tiny synthetic runs for the tests, in seconds.
"""

from __future__ import annotations

import datetime
import json
import shutil
import tarfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Optional

import yaml

import nmt
from nmt.labs.base import PACKAGED_CONFIGS
from nmt.run.events import last_stop
from nmt.run.paths import ATTENTION, CONFIG, TENSORBOARD, RunPaths, report_json
from nmt.util.errors import UserError
from nmt.util.fileio import atomic_write_bytes

PACK_FOLDER = "class-pack"
"""A pack's folder name, which a notebook looks for beside it."""
MANIFEST = "pack.json"
BASELINE = "bahdanau"
SPLITS = {"class": "test2016", "smoke": "test"}
DEFAULT_SEEDS = (1, 2, 3)
DEFAULT_STEPS = {"class": 400, "smoke": 20}
DROPPED = (ATTENTION, TENSORBOARD)
"""Folders of a run that a pack leaves out (the validation heat maps and TensorBoard's copy of the
metrics); of its checkpoints it keeps best.pt alone: last.pt, with the optimizer's state, only resumes
training, and a finished run is never resumed."""

SMOKE_CONFIG: dict[str, Any] = {
    "data": {
        "corpus": "synthetic",
        "src": "en",
        "tgt": "de",
        "synthetic_sizes": {"train": 600, "valid": 20, "test": 20},
        "synthetic_max_words": 8,
        "vocab_size": 300,
    },
    "model": {"emb_size": 32, "hidden_size": 32, "attention": {"type": "bahdanau"}},
    "train": {"lr": 0.005, "max_tokens": 1000, "max_steps": 20, "valid_every": 10, "tensorboard": False},
    "decode": {"beam": 3},
}
"""The smoke pack's model: the notebooks' tiny synthetic config."""


@dataclass(frozen=True)
class ClassPack:
    """A pack read back: its folder and its manifest (``pack.json``)."""

    folder: Path
    manifest: dict[str, Any]

    @property
    def setting(self) -> str:
        return str(self.manifest["setting"])

    @property
    def seeds(self) -> list[int]:
        return [int(seed) for seed in self.manifest["seeds"]]

    @property
    def steps(self) -> int:
        return int(self.manifest["steps"])

    @property
    def runs(self) -> Path:
        return self.folder / "runs"

    def compare_arguments(self, variants: list[str], out: Path) -> dict[str, Any]:
        """The keyword arguments of ``nmt.compare`` that reuse the pack's baseline runs: its config,
        seeds, updates, split and beam, its runs folder, and ``variants`` (the baseline first)."""
        if not variants or variants[0] != self.manifest["baseline"]:
            raise UserError(f"the pack's baseline is {self.manifest['baseline']}: give it first among the variants")
        return {
            "config": self.folder / CONFIG,
            "variants": list(variants),
            "seeds": self.seeds,
            "steps": self.steps,
            "split": self.manifest["split"],
            "beam": int(self.manifest["beam"]),
            "runs_dir": self.runs,
            "overrides": {"train.valid_every": self.steps},
            "out": out,
        }

    def summary(self) -> str:
        bleu = self.manifest.get("bleu", {})
        per_seed = ", ".join(f"{float(bleu[str(seed)]):.2f}" for seed in self.seeds if str(seed) in bleu)
        return (
            f"{self.manifest['baseline']} at seeds {', '.join(map(str, self.seeds))}, {self.steps} updates each "
            f"({self.manifest['split']} BLEU {per_seed}; made {self.manifest['created']} by nmt "
            f"{self.manifest['nmt_version']} on {self.manifest['machine']})"
        )


def read_pack(folder: Path) -> ClassPack:
    """The pack in ``folder``; one line naming what is missing where it is no complete pack."""
    manifest_path = folder / MANIFEST
    if not manifest_path.is_file():
        raise UserError(f"{folder}: no {MANIFEST}, so not a pack that nmt class pack made (or not finished)")
    try:
        manifest = json.loads(manifest_path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as error:
        raise UserError(f"{manifest_path}: not readable ({type(error).__name__})") from None
    pack = ClassPack(folder, manifest)
    missing = [f"runs/{pack.manifest['baseline']}_s{seed}/checkpoints/best.pt" for seed in pack.seeds]
    missing = [name for name in [CONFIG, *missing] if not (folder / name).is_file()]
    if missing:
        raise UserError(
            f"{folder}: an incomplete pack, without {', '.join(missing)}; make it again with nmt class pack"
        )
    return pack


def make_pack(
    out: Path,
    *,
    smoke: bool = False,
    seeds: tuple[int, ...] = DEFAULT_SEEDS,
    steps: Optional[int] = None,
    jobs: int = 1,
    progress: bool = True,
    archive: bool = False,
) -> ClassPack:
    """Train the baseline's runs into ``out`` (finished ones are reused: a pack interrupted is made
    again from where it stopped), keep what a comparison reuses, and write the manifest last; with
    ``archive``, also ``OUT.tar.gz``, one file to hand out."""
    from nmt.comparison.command import run_compare
    from nmt.comparison.plan import Plan
    from nmt.util.runtime import machine

    setting = "smoke" if smoke else "class"
    steps = DEFAULT_STEPS[setting] if steps is None else steps
    if steps < 1 or not seeds or len(set(seeds)) < len(seeds) or len(seeds) < 2:
        raise UserError("a pack needs at least two different seeds and at least one update per run")
    if out.exists() and not out.is_dir():
        raise UserError(f"{out}: not a folder")
    (out / "runs").mkdir(parents=True, exist_ok=True)
    atomic_write_bytes(out / CONFIG, yaml.safe_dump(_config(smoke), sort_keys=False).encode("utf-8"))
    manifest = {
        "setting": setting,
        "baseline": BASELINE,
        "seeds": list(seeds),
        "steps": steps,
        "split": SPLITS[setting],
        "beam": 1,  # greedy, as validation decodes and as notebook 07 compares
    }
    pack = ClassPack(out, manifest)
    arguments = pack.compare_arguments([BASELINE], out / "report")
    plan = Plan(
        config=arguments["config"],
        variants=arguments["variants"],
        seeds=arguments["seeds"],
        steps=steps,
        split=arguments["split"],
        beam=arguments["beam"],
        runs_dir=arguments["runs_dir"],
        overrides=[f"{key}={json.dumps(value)}" for key, value in arguments["overrides"].items()],
    )
    run_compare(plan, out=arguments["out"], progress=progress, jobs=jobs)
    _prune(out / "runs")
    report = json.loads(report_json(out / "report").read_text(encoding="utf-8"))
    record = next(row for row in report["variants"] if row["variant"] == BASELINE)
    manifest.update(
        bleu={str(seed): record["per_seed_bleu"][str(seed)] for seed in seeds},
        created=datetime.date.today().isoformat(),
        train_minutes={str(seed): _train_minutes(out / "runs" / f"{BASELINE}_s{seed}") for seed in seeds},
        nmt_version=nmt.__version__,
        machine=machine(),
    )
    atomic_write_bytes(out / MANIFEST, (json.dumps(manifest, indent=2) + "\n").encode("utf-8"))
    made = read_pack(out)
    if archive:
        with tarfile.open(out.with_name(out.name + ".tar.gz"), "w:gz") as tar:
            tar.add(out, arcname=PACK_FOLDER)
    return made


def _train_minutes(run: Path) -> float:
    """How long the run trained, validations included, as its stop event says (shared with any run beside it)."""
    stop = last_stop(run)
    assert stop is not None, f"{run} did not finish"
    return round(stop.elapsed_s / 60, 1)


def _config(smoke: bool) -> dict[str, Any]:
    """The pack's config: the class config (its 10-minute cap lifted: a run ends after its updates) or the smoke one."""
    if smoke:
        return json.loads(json.dumps(SMOKE_CONFIG))
    config = yaml.safe_load((PACKAGED_CONFIGS / "multi30k_de_en_class.yaml").read_text(encoding="utf-8"))
    config["train"]["time_budget_min"] = None
    return dict(config)


def _prune(runs: Path) -> None:
    """Leave out of each finished run what a comparison does not read again (:data:`DROPPED`)."""
    for run in runs.iterdir():
        paths = RunPaths(run)
        if not paths.best.is_file():
            continue
        for name in DROPPED:
            shutil.rmtree(run / name, ignore_errors=True)
        for checkpoint in paths.checkpoints.iterdir():
            if checkpoint != paths.best:
                checkpoint.unlink()
