"""The training loop: updates, validation, checkpoints, exact resume, stop criteria.

A run lives in ``runs/<name>/``: ``config.yaml`` (resolved), the SentencePiece
models, ``checkpoints/{last,best}.pt``, ``metrics.jsonl`` and plots.  The
trainer knows the model only through ``forward`` and ``state_dict``.

Exact resume: a checkpoint holds every random stream, the optimizer and
schedules, and the position inside the epoch's batch order, which is a pure
function of (seed, epoch); so on CPU a resumed run computes the same losses
as one that was never interrupted.

Several processes (torchrun, see :mod:`nmt.distributed`): with W ranks and
accumulation A, update u consumes the epoch's global batches
[u*W*A, (u+1)*W*A), rank r the batches r, r+W, ... of them, and the loss is
normalized by the target tokens of all of them.  So W ranks with
``max_tokens`` compute the update of one process with accumulation W*A (up to
float rounding), ``pos`` counts global batches, and a run resumes with any W.
Dropout and teacher forcing draw from seed + rank, so a resume is bit-identical
only with the same W (on CPU).
"""

from __future__ import annotations

import contextlib
import json
import logging
import math
import signal
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Optional

import torch
from tqdm import tqdm

from nmt import checkpoint as ckpt
from nmt import config as config_mod
from nmt import distributed, rundir, runtime, threads
from nmt.config import Config
from nmt.data.batching import BatchSampler, collate
from nmt.data.pipeline import load_corpus
from nmt.errors import CheckpointError, UserError
from nmt.fileio import atomic_write_bytes
from nmt.model.seq2seq import build_model, count_parameters
from nmt.loss import batch_loss
from nmt.optim import Schedule, apply_gradients, build_optimizer, teacher_forcing_p
from nmt.validate import ValidationSet, validate

log = logging.getLogger(__name__)


class TrainingError(RuntimeError):
    """Training cannot go on (e.g. the loss keeps being non-finite)."""


def open_run_dir(cfg: Config, run_dir: Path, overwrite: bool) -> Path:
    """Make ``run_dir`` a fresh run: clear an old run (only with ``overwrite``), write config.yaml.

    The caller holds the run's lock, so no other process writes there meanwhile.
    """
    if rundir.check_replaceable(run_dir, overwrite):
        rundir.clear(run_dir)
    (run_dir / "checkpoints").mkdir(parents=True, exist_ok=True)
    atomic_write_bytes(run_dir / "config.yaml", config_mod.dump(cfg).encode("utf-8"))
    return run_dir


@dataclass(frozen=True)
class RunOutcome:
    """How ``nmt train`` ended: a one-line summary and, if a signal stopped it, that signal."""

    summary: str
    signal: int = 0

    @property
    def exit_code(self) -> int:
        """0 for a finished run; 128 + the signal number for one stopped by a signal (shell convention)."""
        return 128 + self.signal if self.signal else 0


class Trainer:
    """Owns model, optimizer, data order and counters of one run."""

    def __init__(self, cfg: Config, run_dir: Path, progress: bool = True,
                 dist: Optional[distributed.Context] = None) -> None:
        t = cfg.train
        self.dist = dist or distributed.Context(device=runtime.select_device(t.device))
        self.cfg, self.run_dir, self.progress = cfg, run_dir, progress and self.dist.is_main
        threads.configure(t.threads)  # 0: follow the cores other processes leave free
        # Each rank its own dropout / teacher-forcing stream; DDP copies rank 0's initial weights.
        runtime.seed_everything(t.seed + self.dist.rank)
        self.device = self.dist.device
        self.amp = runtime.amp_dtype(self.device, t.amp)
        # Rank 0 prepares the corpus if needed, then the others load it.
        corpus = self.dist.main_first(lambda: load_corpus(cfg.data, splits=("train", "valid"), progress=self.progress))
        self.src_tok, self.tgt_tok = corpus.src_tok, corpus.tgt_tok
        self.train_split = corpus.splits["train"]
        self.valid = ValidationSet(corpus.splits["valid"], corpus.text("valid", cfg.data.tgt),
                                   corpus.text("valid", cfg.data.src))
        if self.dist.is_main:
            for side, tok in (("src", self.src_tok), ("tgt", self.tgt_tok)):
                atomic_write_bytes(run_dir / f"spm.{side}.model", tok.model_bytes)
        self.sampler = BatchSampler(self.train_split.src_lengths, self.train_split.tgt_lengths,
                                    max_tokens=t.max_tokens, batch_size=t.batch_size,
                                    shuffle=True, seed=t.seed, max_len=t.max_len,
                                    curriculum_epochs=t.curriculum_epochs)
        self.model = build_model(cfg.model, self.src_tok.vocab_size, self.tgt_tok.vocab_size).to(self.device)
        self.model.decoder.compile_step(t.compile)
        self.train_model = self.dist.wrap(self.model)  # training forwards; the rest uses self.model
        self.optimizer = build_optimizer(t, self.model)
        self.per_update = self.dist.world_size * t.accumulate  # global batches per update
        # Curriculum epochs are shorter; every later epoch has the size of the first full one.
        full = min(t.curriculum_epochs, t.max_epochs)
        epochs = [self.sampler.n_batches(e) for e in range(full)]
        epochs += [self.sampler.n_batches(full)] * (t.max_epochs - full)
        total = sum(math.ceil(n / self.per_update) for n in epochs)
        self.schedule = Schedule(t, self.optimizer, t.max_steps or total)
        self.scaler = runtime.grad_scaler(self.device, self.amp)
        self.step = self.epoch = self.pos = self.tokens = 0
        self.best: Optional[float] = None
        self.best_history: list[tuple[float, int]] = []
        self.bad_validations = self.nonfinite = 0
        self.elapsed = 0.0
        self.signal = 0  # the number of a stop signal received (SIGINT, SIGTERM), else 0
        log.info("model: %s parameters; %d training pairs, %d batches per full epoch, %d updates planned",
                 f"{count_parameters(self.model):,}", len(self.train_split), epochs[-1] if epochs else 0, total)
        unit, size = ("tokens", t.max_tokens) if t.max_tokens else ("sentences", t.batch_size)
        log.info("%d process(es)%s; batch per update: up to %d x %d x %d = %d %s (processes x "
                 "accumulate x train.max_tokens/batch_size)", self.dist.world_size,
                 f" ({self.dist.backend})" if self.dist.backend else "", self.dist.world_size,
                 t.accumulate, size, self.per_update * size, unit)

    # ------------------------------------------------------------ state
    def state(self) -> dict[str, Any]:
        return {
            "config": self.cfg.model_dump(mode="json"), "model": self.model.state_dict(),
            "optimizer": self.optimizer.state_dict(), "schedule": self.schedule.state_dict(),
            "scaler": self.scaler.state_dict(), "rng": runtime.rng_state(), "step": self.step,
            "epoch": self.epoch, "pos": self.pos, "best": self.best,
            "best_history": self.best_history, "bad_validations": self.bad_validations,
            "elapsed": self.elapsed, "world_size": self.dist.world_size,
            "tokenizers": {"src": ckpt.bytes_to_tensor(self.src_tok.model_bytes),
                           "tgt": ckpt.bytes_to_tensor(self.tgt_tok.model_bytes)},
        }

    def restore(self, payload: dict[str, Any]) -> None:
        saved = config_mod.from_dict(config_mod.fill_saved_defaults(payload["config"]))
        if saved.model != self.cfg.model:
            diff = [k for k in type(saved.model).model_fields if getattr(saved.model, k) != getattr(self.cfg.model, k)]
            raise CheckpointError(f"checkpoint was trained with a different model config ({', '.join('model.' + k for k in diff)})")
        self.model.load_state_dict(payload["model"])
        self.optimizer.load_state_dict(payload["optimizer"])
        self.schedule.load_state_dict(payload["schedule"])
        self.scaler.load_state_dict(payload["scaler"])
        streams = payload.get("rng_ranks") or [payload["rng"]]
        if self.dist.rank < len(streams):  # a rank new to the run keeps its fresh seed + rank stream
            runtime.set_rng_state(streams[self.dist.rank])
        saved_world = payload.get("world_size", 1)
        if saved_world != self.dist.world_size and self.dist.is_main:
            log.warning("checkpoint written by %d process(es), resuming with %d: same batches, model and "
                        "optimizer, but other dropout/teacher-forcing draws than an uninterrupted run",
                        saved_world, self.dist.world_size)
        self.step, self.epoch, self.pos = payload["step"], payload["epoch"], payload["pos"]
        self.best, self.bad_validations = payload["best"], payload["bad_validations"]
        self.best_history = [tuple(x) for x in payload["best_history"]]
        self.elapsed = payload["elapsed"]
        log.info("resumed at step %d (epoch %d, batch %d)", self.step, self.epoch + 1, self.pos)

    def save(self, name: str) -> Optional[Path]:
        """Rank 0 writes the checkpoint, with every rank's random streams; all ranks must call it."""
        streams = self.dist.gather(runtime.rng_state())
        if not self.dist.is_main:
            return None
        payload = self.state()
        if self.dist.enabled:
            payload["rng_ranks"] = streams
        return ckpt.save(self.run_dir / "checkpoints" / name, payload)

    def record(self, event: dict[str, Any]) -> None:
        """Append one machine-readable line to metrics.jsonl (rank 0)."""
        if not self.dist.is_main:
            return
        with open(self.run_dir / "metrics.jsonl", "a", encoding="utf-8") as handle:
            handle.write(json.dumps(event) + "\n")

    # ------------------------------------------------------------ one update
    def target_tokens(self, group: list[list[int]]) -> int:
        """Scored target tokens (EOS included) of ``group``, from the lengths: no tensors, no messages."""
        lengths = self.sampler.tgt_lengths  # already cut to max_len, like collate
        return sum(int(lengths[idx].sum()) + len(idx) for idx in group)

    def update(self, group: list[list[int]]) -> tuple[Optional[float], int]:
        """One optimizer update over the global ``group`` of batches; returns (loss per token, target tokens).

        This rank computes its :func:`~nmt.distributed.shard` of ``group``; every loss is
        divided by the target tokens of the whole group, so the gradients summed over ranks are
        those of one process on all of ``group``.  DDP averages over the W ranks: hence ``* W``.
        """
        t, world = self.cfg.train, self.dist.world_size
        n_tokens = self.target_tokens(group)
        mine, weight = distributed.shard(group, self.dist.rank, world), world
        if not mine:  # an epoch's short last group: still join DDP's all-reduce, with zero gradient
            mine, weight = group[:1], 0
        batches = [collate(self.train_split, idx, t.max_len) for idx in mine]
        p = teacher_forcing_p(t, self.step)
        total = 0.0
        for i, batch in enumerate(batches):
            batch = batch.to(self.device, non_blocking=True)
            try:
                with self.dist.no_sync(self.train_model, sync=i == len(batches) - 1):
                    loss = batch_loss(self.train_model, batch, label_smoothing=t.label_smoothing,
                                      teacher_forcing=p, device=self.device, amp=self.amp)
                    self.scaler.scale(loss * weight / n_tokens).backward()
            except torch.OutOfMemoryError:
                raise UserError(
                    f"out of memory on a batch of {batch.src.size(0)} sentences, source length "
                    f"{batch.src.size(1)}, target length {batch.tgt_in.size(1)} (step {self.step + 1}); "
                    f"lower train.max_tokens (now {t.max_tokens}) and raise train.accumulate") from None
            value = loss.item()
            total += value if weight else 0.0 * value  # 0 * nan is nan: a bad stand-in still vetoes
        total = self.dist.all_sum([total])[0]  # every rank skips, or steps, alike
        if not math.isfinite(total):
            self.optimizer.zero_grad(set_to_none=True)
            self.nonfinite += 1
            log.warning("non-finite loss at step %d: update skipped (%d in a row)", self.step + 1, self.nonfinite)
            if self.nonfinite >= t.max_nonfinite:
                raise TrainingError(f"{self.nonfinite} non-finite losses in a row at step {self.step + 1}; "
                                    f"lower train.lr or enable train.clip_grad_norm")
            return None, n_tokens
        self.nonfinite = 0
        apply_gradients(self.model, self.optimizer, self.scaler, t.clip_grad_norm)
        self.schedule.step()
        self.step += 1
        return total / n_tokens, n_tokens

    # ------------------------------------------------------------ validation
    def run_validation(self) -> dict[str, Any]:
        """Rank 0 validates while the others wait; then every rank applies the same score."""
        t = self.cfg.train
        metrics = self.dist.on_main(lambda: validate(
            self.model, self.valid, self.cfg, self.tgt_tok, self.src_tok, self.device, self.amp,
            plot_path=self.run_dir / "attention" / f"step{self.step:07d}.png"))
        value = metrics[t.metric]
        better = self.best is None or (value < self.best if t.metric == "loss" else value > self.best)
        if better:
            self.best, self.bad_validations = value, 0
            self.save("best.pt")
        else:
            self.bad_validations += 1
        self._keep_best(value)
        self.schedule.validated(value)
        event = {"event": "valid", "step": self.step, "epoch": self.epoch + 1,
                 "elapsed_s": round(self.elapsed, 2), "lr": self.schedule.lr, "best": self.best,
                 **{k: v for k, v in metrics.items()}}
        self.record(event)
        log.info("valid step %d: loss %.3f ppl %.2f BLEU %.2f chrF %.2f%s", self.step, metrics["loss"],
                 metrics["ppl"], metrics["bleu"], metrics["chrf"], " (best)" if better else "")
        for sample in metrics["samples"][:1]:
            log.info("  src: %s\n  ref: %s\n  hyp: %s", sample["src"], sample["ref"], sample["hyp"])
        return metrics

    def _keep_best(self, value: float) -> None:
        """Keep the ``keep_best`` best step checkpoints besides best.pt and last.pt."""
        keep = self.cfg.train.keep_best
        if keep <= 1:
            return
        self.best_history.append((value, self.step))
        sign = 1 if self.cfg.train.metric == "loss" else -1
        self.best_history.sort(key=lambda vs: (sign * vs[0], vs[1]))
        if (value, self.step) in self.best_history[:keep]:
            self.save(f"step{self.step:07d}.pt")
        for _, step in self.best_history[keep:]:
            if self.dist.is_main:
                (self.run_dir / "checkpoints" / f"step{step:07d}.pt").unlink(missing_ok=True)
        self.best_history = self.best_history[:keep]

    # ------------------------------------------------------------ the loop
    def _stop_reason(self) -> Optional[str]:
        """Why to stop now, if at all; ranks agree on signals (any rank) and time (slowest clock)."""
        t = self.cfg.train
        signum, self.elapsed = self.dist.all_max([float(self.signal), self.elapsed])
        self.signal = int(signum)
        if self.signal:
            return "interrupted"
        if t.max_steps is not None and self.step >= t.max_steps:
            return "max_steps"
        if t.time_budget_min is not None and self.elapsed >= 60 * t.time_budget_min:
            return "time_budget"
        if t.patience is not None and self.bad_validations >= t.patience:
            return "early_stopping"
        if self.epoch >= t.max_epochs:
            return "max_epochs"
        return None

    def _on_signal(self, signum: int, _frame: Any) -> None:
        log.warning("%s%s received: saving a checkpoint after this update (again to abort)",
                    f"rank {self.dist.rank}: " if self.dist.enabled else "", signal.Signals(signum).name)
        self.signal = signum
        signal.signal(signum, signal.SIG_DFL)

    def after_update(self, loss: Optional[float], tokens_per_s: float) -> None:
        """Log one update (every ``log_every``) and validate when due."""
        t = self.cfg.train
        threads.tick()
        if loss is not None and self.step % t.log_every == 0:
            self.record({"event": "train", "step": self.step, "epoch": self.epoch + 1, "loss": loss,
                         "lr": self.schedule.lr, "tf": teacher_forcing_p(t, self.step - 1),
                         "tok_s": round(tokens_per_s, 1), "tgt_tokens": self.tokens,
                         "world_size": self.dist.world_size, "elapsed_s": round(self.elapsed, 2)})
        if t.valid_every and self.step % t.valid_every == 0 and loss is not None:
            self.run_validation()
            self.save("last.pt")

    def fit(self) -> "RunOutcome":
        t = self.cfg.train
        handlers = {s: signal.signal(s, self._on_signal) for s in (signal.SIGINT, signal.SIGTERM)}
        clock = time.perf_counter() - self.elapsed
        self.record({"event": "start", "step": self.step, "epoch": self.epoch, "elapsed_s": round(self.elapsed, 2),
                     "params": count_parameters(self.model), "world_size": self.dist.world_size,
                     "amp": runtime.amp_name(self.amp),
                     **runtime.hardware(self.device)})
        reason = self._stop_reason()
        try:
            while reason is None:
                batches = self.sampler.batches(self.epoch)
                bar = tqdm(total=len(batches), initial=self.pos, desc=f"epoch {self.epoch + 1}",
                           disable=not self.progress, unit="batch", dynamic_ncols=True, leave=False)
                while self.pos < len(batches) and reason is None:
                    group = batches[self.pos:self.pos + self.per_update]
                    start = time.perf_counter()
                    loss, self.tokens = self.update(group)
                    self.pos += len(group)
                    self.elapsed = time.perf_counter() - clock
                    speed = self.tokens / max(time.perf_counter() - start, 1e-9)
                    bar.update(len(group))
                    if loss is not None:
                        bar.set_postfix(loss=f"{loss:.3f}", lr=f"{self.schedule.lr:.2e}", tok_s=f"{speed:.0f}")
                    self.after_update(loss, speed)
                    reason = self._stop_reason()
                bar.close()
                if self.pos >= len(batches):
                    self.epoch, self.pos = self.epoch + 1, 0
                    if not (t.valid_every and self.step % t.valid_every == 0):
                        self.run_validation()
                    self.save("last.pt")
                    reason = self._stop_reason()
            if reason != "interrupted" and self.best is None:  # never validated (no best.pt)
                self.run_validation()
            self.save("last.pt")
        finally:
            for sig, handler in handlers.items():
                signal.signal(sig, handler)
        self.record({"event": "stop", "reason": reason, "step": self.step, "epoch": self.epoch,
                     "elapsed_s": round(self.elapsed, 2), "best": self.best})
        if reason == "interrupted":
            name = signal.Signals(self.signal).name
            log.warning("stopped by %s at step %d; checkpoints/last.pt is saved and the run can be resumed",
                        name, self.step)
            return RunOutcome(f"interrupted by {name} at step {self.step}; checkpoints/last.pt saved; "
                              f"continue with: nmt train --resume {self.run_dir}", self.signal)
        return RunOutcome(f"stopped ({reason}) at step {self.step}, epoch {self.epoch}, after "
                          f"{self.elapsed / 60:.1f} min; best {t.metric} {self.best}; run in {self.run_dir}")


def resolve_run(config: Optional[Path], overrides: list[str], resume: Optional[Path] = None) -> tuple[Config, Path]:
    """The run's config and directory; a bad config or nothing to resume is a user error.

    On resume, the run's own config.yaml is the config: ``--config`` is refused, and ``--set``
    may change only :data:`nmt.rundir.RESUMABLE_CHANGES`, checked here before any file is touched.
    """
    if resume is None:
        cfg = config_mod.load(config, overrides)
        return cfg, Path(cfg.runs_dir) / cfg.name
    run_dir = Path(resume)
    if config is not None:
        raise UserError(f"--resume {run_dir} continues with the run's own {run_dir / 'config.yaml'}; "
                        f"leave out --config {config} (--set can change train.* and decode.* options)")
    if not (run_dir / "checkpoints" / "last.pt").is_file():
        raise UserError(f"{run_dir}: no checkpoints/last.pt to resume from")
    saved = config_mod.load(run_dir / "config.yaml", saved=True)
    cfg = config_mod.load(run_dir / "config.yaml", overrides, saved=True)
    fixed = rundir.fixed_changes(saved, cfg)
    if fixed:
        raise UserError(f"--resume {run_dir}: these options are fixed for the run and cannot change "
                        f"({'; '.join(fixed)}); start a new run (another name) to change them")
    return cfg, run_dir


def check_run(config: Optional[Path], overrides: list[str], resume: Optional[Path], overwrite: bool) -> None:
    """Raise the user errors ``nmt train`` meets before reading data (``--nproc`` checks first).

    Touches nothing: rank 0 of the relaunched run creates, clears and locks the run directory.
    """
    _, run_dir = resolve_run(config, overrides, resume)
    if resume is None:
        rundir.check_replaceable(run_dir, overwrite)
    rundir.probe(run_dir)


def run_training(config: Optional[Path], overrides: list[str], resume: Optional[Path] = None,
                 overwrite: bool = False, progress: bool = True) -> RunOutcome:
    """Entry point of ``nmt train``: a fresh run from a config, or a resumed one.

    Under torchrun every rank calls this; only rank 0 creates or changes files, and it holds
    the run directory's lock (:class:`nmt.rundir.RunLock`) until the run ends.
    """
    cfg, run_dir = resolve_run(config, overrides, resume)
    with distributed.process_group(cfg.train.device) as dist, contextlib.ExitStack() as held:
        def claim() -> None:
            if resume is None:  # refuse a foreign folder before putting a lock file in it
                rundir.check_replaceable(run_dir, overwrite)
            held.enter_context(rundir.RunLock(run_dir))
            if resume is None:
                open_run_dir(cfg, run_dir, overwrite)

        dist.on_main(claim)
        if resume is None:
            return Trainer(cfg, run_dir, progress, dist).fit()
        payload = ckpt.load(run_dir / "checkpoints" / "last.pt")  # a bad file fails before data loads
        trainer = Trainer(cfg, run_dir, progress, dist)
        trainer.restore(payload)
        if overrides and dist.is_main:
            atomic_write_bytes(run_dir / "config.yaml", config_mod.dump(cfg).encode("utf-8"))
        return trainer.fit()
