"""``nmt.train``: train a model from Python, logging and stopping as ``nmt train`` does, and the
:class:`Run` it leaves (its folder, checkpoints, validation history, a translator of its best model).

The same entry point as the command (:func:`nmt.training.entry.run_training`) does the work.  The
log lines a shell shows are set up when the program has configured no logging of its own
(:func:`nmt.util.logs.ensure_configured`).  Ctrl-C (or a notebook's "interrupt kernel") saves
``checkpoints/last.pt`` after the current update and stops, as it does in a shell; the library
then raises :class:`TrainingInterrupted`, a KeyboardInterrupt that carries the :class:`Run`, so
the cell or program stops there and ``nmt.train(resume=run.folder)`` continues it.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Optional, Union

from nmt.api import arguments as check
from nmt.api.extending import allowing_modules
from nmt.api.records import Records
from nmt.api.translator import Translator, load
from nmt.config import Config
from nmt.run import events
from nmt.run.paths import RunPaths
from nmt.util.errors import UserError, short_repr
from nmt.util.logs import ensure_configured

ConfigLike = Union[str, Path, Mapping[str, Any], Config, None]
Overrides = Union[Sequence[str], Mapping[str, Any], None]


@dataclass(frozen=True)
class Run:
    """A run folder written by training (``runs/<name>``), read when asked (it may still grow)."""

    folder: Path
    summary: str = ""

    @classmethod
    def open(cls, folder: Union[str, Path]) -> Run:
        """The run in ``folder``; a folder without a metrics.jsonl (not a run) is a UserError."""
        folder = check.path("folder", folder)
        if not RunPaths(folder).metrics.is_file():
            raise UserError(
                f"{folder}: not a run folder (no {RunPaths(folder).metrics.name}); train one with nmt.train"
            )
        return cls(folder)

    @property
    def best(self) -> Optional[Path]:
        """``checkpoints/best.pt`` (best validation by ``train.metric``), None before the first validation."""
        path = RunPaths(self.folder).best
        return path if path.is_file() else None

    @property
    def chosen(self) -> Optional[Path]:
        """The checkpoint the run stands for: the one :func:`nmt.select` (or ``train.select``) chose,
        as ``selection.json`` names it, else best.pt; None before the first validation."""
        path = RunPaths(self.folder).chosen
        return path if path.is_file() else None

    @property
    def last(self) -> Optional[Path]:
        """``checkpoints/last.pt``, the checkpoint a resumed run continues from."""
        path = RunPaths(self.folder).last
        return path if path.is_file() else None

    @property
    def config(self) -> Config:
        """The resolved config the run trained with (its config.yaml)."""
        from nmt import config as config_mod

        return config_mod.load(RunPaths(self.folder).config, saved=True)

    def events(self) -> list[events.Event]:
        """Every event of metrics.jsonl (start, train, valid, stop), typed."""
        try:
            return events.read(self.folder)
        except ValueError as exc:
            raise UserError(str(exc)) from None

    @property
    def history(self) -> Records:
        """One record per validation (step, epoch, loss, ppl, bleu, chrf, best, ...), as metrics.jsonl holds it."""
        return Records(asdict(e) for e in events.of_kind(self.events(), events.Valid))

    @property
    def train_log(self) -> Records:
        """One record per logged update (step, loss, lr, tok_s, ...)."""
        return Records(asdict(e) for e in events.of_kind(self.events(), events.Train))

    @property
    def stop_reason(self) -> Optional[str]:
        """Why training last stopped (e.g. ``max_steps``, ``interrupted``); None while it has not."""
        stops = events.of_kind(self.events(), events.Stop)
        return stops[-1].reason if stops else None

    def translator(self, engine: Optional[str] = None, device: str = "auto", modules: Sequence[str] = ()) -> Translator:
        """The run's model, loaded (:func:`nmt.load` of this folder: :attr:`chosen`)."""
        return load(self.folder, engine=engine, device=device, modules=modules)


class TrainingInterrupted(KeyboardInterrupt):
    """Training stopped by Ctrl-C or SIGTERM after saving ``checkpoints/last.pt``; :attr:`run` is the run."""

    def __init__(self, message: str, run: Run) -> None:
        super().__init__(message)
        self.run = run


def override_list(overrides: Overrides) -> list[str]:
    """``KEY=VALUE`` assignments as ``--set`` takes them, from a list of them or a mapping
    (``{"train.lr": 0.001}``: each value written as JSON, which the YAML reader reads back as given)."""
    if overrides is None:
        return []
    if isinstance(overrides, str):
        raise UserError(f"overrides: give a list of KEY=VALUE strings or a mapping, not one string ({overrides!r:.60})")
    if isinstance(overrides, Mapping):
        bad = next((key for key in overrides if not isinstance(key, str)), None)
        if bad is not None:
            raise UserError(f"overrides: the key {short_repr(bad)} is not a string; keys are KEY or section.KEY")
        try:
            return [f"{key}={json.dumps(value, allow_nan=False)}" for key, value in overrides.items()]
        except (TypeError, ValueError) as exc:
            raise UserError(f"overrides: {exc}; give numbers, strings, lists and mappings") from None
    if not isinstance(overrides, Sequence):
        raise UserError(f"overrides: give a list of KEY=VALUE strings or a mapping, not {type(overrides).__name__}")
    bad_item = next((item for item in overrides if not isinstance(item, str)), None)
    if bad_item is not None:
        raise UserError(f"overrides: {short_repr(bad_item)} is not a KEY=VALUE string")
    return list(overrides)


def train(
    config: ConfigLike = None,
    overrides: Overrides = None,
    *,
    progress: bool = True,
    resume: Union[str, Path, None] = None,
    overwrite: bool = False,
    modules: Sequence[str] = (),
) -> Run:
    """Train a model as ``nmt train`` does and return its :class:`Run`.

    Args:
        config: a YAML file, the config as a nested mapping (what the file would hold), a
            :class:`~nmt.config.Config`, or None for the defaults; leave out with ``resume``.
        overrides: ``["train.lr=0.001", ...]`` as ``--set`` takes them, or ``{"train.lr": 0.001}``.
        progress: show a progress bar.
        resume: a run folder to continue where it stopped (its own config; overrides may change
            ``train.*`` and ``decode.*``).
        overwrite: replace an existing run of the same name: only a folder that holds nothing but
            what training wrote; one that also holds other files (an evaluation report, notes, an
            averaged checkpoint) is refused, naming them, and left as it is.
        modules: modules to import first (names or ``.py`` paths), for an attention or schedule
            the config names by its registered name (``model.attention.type: cosine``); a name in
            import-path form (``cosine:CosineEnergy``) is imported without it.  A resumed run's
            checkpoint may load code from them.

    A mapping given for a section (``{"train": {"max_steps": 3}}``) changes the options it names
    and keeps the section's others, as ``{"train.max_steps": 3}`` does.

    Raises:
        nmt.util.errors.UserError: a bad config, path or run folder, or an argument of the wrong
            type (naming the parameter), in one line; a ``ConfigError`` (a UserError) for a config
            value out of range; ``TrainingError`` (a UserError) when the losses stop being finite.
        TrainingInterrupted: Ctrl-C or SIGTERM stopped the run after saving ``checkpoints/last.pt``.
    """
    from nmt.training.entry import run_training

    ensure_configured()
    if isinstance(config, (str, os.PathLike)):
        config = check.path("config", config)
    elif config is not None and not isinstance(config, (Mapping, Config)):
        raise UserError(f"config: give a YAML path, a mapping, a Config or None, not {type(config).__name__}")
    assignments = override_list(overrides)
    with allowing_modules(modules):
        outcome = run_training(
            config,
            assignments,
            resume=check.optional_path("resume", resume),
            overwrite=check.flag("overwrite", overwrite),
            progress=check.flag("progress", progress),
            interactive=True,
        )
    assert outcome.run_dir is not None, "the trainer names its run"
    run = Run(Path(outcome.run_dir), outcome.summary)
    if outcome.signal:
        raise TrainingInterrupted(f"{outcome.summary} (from Python: nmt.train(resume={str(run.folder)!r}))", run)
    return run
