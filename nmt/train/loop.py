"""The training loop: updates, validation, checkpoints, exact resume, stop criteria.

A run lives in ``runs/<name>/``: ``config.yaml`` (resolved), the SentencePiece
models, ``checkpoints/{last,best}.pt``, ``metrics.jsonl`` and plots.  The
trainer knows the model only through ``forward`` and ``state_dict``.

Exact resume: a checkpoint holds every random stream, the optimizer and
schedules, and the position inside the epoch's batch order, which is a pure
function of (seed, epoch); so on CPU a resumed run computes the same losses
as one that was never interrupted.

Several processes (torchrun, see :mod:`nmt.train.distributed`): with W ranks and
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
import logging
import math
import signal
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Optional

import torch
from tqdm import tqdm

from nmt.run import checkpoint as ckpt
from nmt import config as config_mod
from nmt.train import distributed
from nmt.run import events
from nmt.run import folder as rundir
from nmt.util import runtime
from nmt.train import tensorboard
from nmt.util import threads
from nmt.train import setup as train_setup
from nmt.config import Config
from nmt.data.batching import collate
from nmt.util.errors import CheckpointError, UserError
from nmt.util.fileio import atomic_write_bytes
from nmt.train.loss import batch_loss
from nmt.model.build import count_parameters
from nmt.train.optim import apply_gradients, teacher_forcing_p
from nmt.run.state import TrainState, keep_checkpoints, stop_reason
from nmt.train.validate import validate

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
    """Runs the updates, validations and checkpoints of one run over its :class:`~nmt.train.setup.Parts`."""

    def __init__(self, cfg: Config, run_dir: Path, progress: bool = True,
                 dist: Optional[distributed.Context] = None) -> None:
        self.dist = dist or distributed.Context(device=runtime.select_device(cfg.train.device))
        self.cfg, self.run_dir, self.progress = cfg, run_dir, progress and self.dist.is_main
        self.board = (  # before the data loads: a missing package fails fast
            tensorboard.Board(run_dir, attention_image=tensorboard.has_attention(cfg.model))
            if cfg.train.tensorboard and self.dist.is_main else None)
        self.parts = train_setup.build(cfg, run_dir, self.dist, self.progress)
        p = self.parts
        self.device, self.amp, self.model, self.train_model = p.device, p.amp, p.model, p.train_model
        self.optimizer, self.schedule, self.scaler = p.optimizer, p.schedule, p.scaler
        self.data, self.per_update = p.data, p.per_update
        self.train_split, self.sampler = p.data.for_epoch(0)  # the current epoch's pairs and batches
        self.state = TrainState()
        self.tokens = 0   # target tokens of the last update
        self.signal = 0   # the number of a stop signal received (SIGINT, SIGTERM), else 0
        self.grad_norm: Optional[torch.Tensor] = None  # of the last update, before clipping

    # ------------------------------------------------------------ checkpoints
    def checkpoint(self, rng_ranks: Optional[list[dict[str, Any]]] = None) -> ckpt.Checkpoint:
        """Everything needed to translate with the model and to resume this run exactly."""
        return ckpt.Checkpoint(
            config=self.cfg.model_dump(mode="json"), model=self.model.state_dict(),
            tokenizers={"src": self.parts.src_tok.model_bytes, "tgt": self.parts.tgt_tok.model_bytes},
            state=self.state, optimizer=self.optimizer.state_dict(), schedule=self.schedule.state_dict(),
            scaler=self.scaler.state_dict(), rng=runtime.rng_state(), rng_ranks=rng_ranks,
            world_size=self.dist.world_size)

    def restore(self, saved: ckpt.Checkpoint) -> None:
        """Continue from ``saved`` (same model config): weights, optimizer, schedules, streams, counters."""
        saved_cfg = config_mod.from_dict(config_mod.fill_saved_defaults(saved.config))
        if saved_cfg.model != self.cfg.model:
            diff = [k for k in type(saved_cfg.model).model_fields
                    if getattr(saved_cfg.model, k) != getattr(self.cfg.model, k)]
            raise CheckpointError(f"checkpoint was trained with a different model config "
                                  f"({', '.join('model.' + k for k in diff)})")
        if not saved.trainable:
            raise CheckpointError("checkpoint holds a model only (no optimizer or random streams); "
                                  "it can translate but not resume training")
        self.model.load_state_dict(saved.model)
        self.optimizer.load_state_dict(saved.optimizer)
        self.schedule.load_state_dict(saved.schedule)
        self.scaler.load_state_dict(saved.scaler)
        streams = saved.rng_ranks or [saved.rng]
        if self.dist.rank < len(streams):  # a rank new to the run keeps its fresh seed + rank stream
            runtime.set_rng_state(streams[self.dist.rank])
        if saved.world_size != self.dist.world_size and self.dist.is_main:
            log.warning("checkpoint written by %d process(es), resuming with %d: same batches, model and "
                        "optimizer, but other dropout/teacher-forcing draws than an uninterrupted run",
                        saved.world_size, self.dist.world_size)
        self.state = TrainState.from_state_dict(saved.state.state_dict())
        log.info("resumed at %s", self.state.position())  # the words the stop line used

    def save(self, name: str) -> Optional[Path]:
        """Rank 0 writes the checkpoint, with every rank's random streams; all ranks must call it."""
        streams = self.dist.gather(runtime.rng_state())
        if not self.dist.is_main:
            return None
        return ckpt.save(self.run_dir / "checkpoints" / name,
                         self.checkpoint(streams if self.dist.enabled else None))

    def record(self, event: events.Event) -> None:
        """Append one event to metrics.jsonl (rank 0), and to TensorBoard when it is on."""
        if self.dist.is_main:
            events.append(self.run_dir, event)
        if self.board is not None:
            self.board.write(event)

    # ------------------------------------------------------------ one update
    def target_tokens(self, group: list[list[int]]) -> int:
        """Scored target tokens (EOS included) of ``group``, from the lengths: no tensors, no messages."""
        lengths = self.sampler.tgt_lengths  # already cut to max_len, like collate
        return sum(int(lengths[idx].sum()) + len(idx) for idx in group)

    def update(self, group: list[list[int]]) -> tuple[Optional[float], int]:
        """One optimizer update over the global ``group`` of batches; returns (loss per token, target tokens).

        This rank computes its :func:`~nmt.train.distributed.shard` of ``group``; every loss is
        divided by the target tokens of the whole group, so the gradients summed over ranks are
        those of one process on all of ``group``.  DDP averages over the W ranks: hence ``* W``.
        """
        t, world, state = self.cfg.train, self.dist.world_size, self.state
        n_tokens = self.target_tokens(group)
        mine, weight = distributed.shard(group, self.dist.rank, world), world
        if not mine:  # an epoch's short last group: still join DDP's all-reduce, with zero gradient
            mine, weight = group[:1], 0
        batches = [collate(self.train_split, idx, t.max_len) for idx in mine]
        p = teacher_forcing_p(t, state.step)
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
                    f"{batch.src.size(1)}, target length {batch.tgt_in.size(1)} (step {state.step + 1}); "
                    f"lower train.max_tokens (now {t.max_tokens}) and raise train.accumulate") from None
            value = loss.item()
            total += value if weight else 0.0 * value  # 0 * nan is nan: a bad stand-in still vetoes
        total = self.dist.all_sum([total])[0]  # every rank skips, or steps, alike
        if not math.isfinite(total):
            self.optimizer.zero_grad(set_to_none=True)
            state.nonfinite += 1
            log.warning("non-finite loss at step %d: update skipped (%d in a row)", state.step + 1, state.nonfinite)
            if state.nonfinite >= t.max_nonfinite:
                raise TrainingError(f"{state.nonfinite} non-finite losses in a row at step {state.step + 1}; "
                                    f"lower train.lr or enable train.clip_grad_norm")
            return None, n_tokens
        state.nonfinite = 0
        self.grad_norm = apply_gradients(self.model, self.optimizer, self.scaler, t.clip_grad_norm)
        self.schedule.step()
        state.step += 1
        return total / n_tokens, n_tokens

    # ------------------------------------------------------------ validation
    def run_validation(self) -> dict[str, Any]:
        """Rank 0 validates while the others wait; then every rank applies the same score."""
        t, state, parts = self.cfg.train, self.state, self.parts
        metrics = self.dist.on_main(lambda: validate(
            self.model, parts.valid, self.cfg, parts.tgt_tok, parts.src_tok, self.device, self.amp,
            plot_path=self.run_dir / "attention" / f"step{state.step:07d}.png"))
        value = metrics[t.metric]
        better = state.validated(t.metric, value)
        if better:
            self.save("best.pt")
        self._keep_step_checkpoints(value)
        self.schedule.validated(value)
        self.record(events.Valid(
            step=state.step, epoch=state.epoch + 1, elapsed_s=round(state.elapsed, 2), lr=self.schedule.lr,
            best=state.best, loss=metrics["loss"], ppl=metrics["ppl"], bleu=metrics["bleu"],
            chrf=metrics["chrf"], bleu_signature=metrics["bleu_signature"], samples=metrics["samples"]))
        log.info("valid step %d: loss %.3f ppl %.2f BLEU %.2f chrF %.2f%s", state.step, metrics["loss"],
                 metrics["ppl"], metrics["bleu"], metrics["chrf"], " (best)" if better else "")
        for sample in metrics["samples"][:1]:
            log.info("  src: %s\n  ref: %s\n  hyp: %s", sample["src"], sample["ref"], sample["hyp"])
        return metrics

    def _keep_step_checkpoints(self, value: float) -> None:
        """Keep the ``keep_best`` best and ``keep_last`` latest step checkpoints besides best.pt and last.pt."""
        state, t = self.state, self.cfg.train
        decision = keep_checkpoints(state.history, state.recent, t.metric, value, state.step, t.keep_best, t.keep_last)
        state.history, state.recent = decision.history, decision.recent
        if decision.save:
            self.save(ckpt.step_path(self.run_dir, state.step).name)
        for step in decision.drop:
            if self.dist.is_main:
                ckpt.step_path(self.run_dir, step).unlink(missing_ok=True)

    # ------------------------------------------------------------ the loop
    def stop_reason(self) -> Optional[str]:
        """Why to stop now, if at all; ranks agree on signals (any rank) and time (slowest clock)."""
        signum, self.state.elapsed = self.dist.all_max([float(self.signal), self.state.elapsed])
        self.signal = int(signum)
        return stop_reason(self.state, self.cfg.train, self.signal)

    def _on_signal(self, signum: int, _frame: Any) -> None:
        log.warning("%s%s received: saving a checkpoint after this update (again to abort)",
                    f"rank {self.dist.rank}: " if self.dist.enabled else "", signal.Signals(signum).name)
        self.signal = signum
        signal.signal(signum, signal.SIG_DFL)

    def after_update(self, loss: Optional[float], tokens_per_s: float) -> None:
        """Log one update (every ``log_every``) and validate when due."""
        t, state = self.cfg.train, self.state
        threads.tick()
        if loss is not None and state.step % t.log_every == 0:
            self.record(events.Train(
                step=state.step, epoch=state.epoch + 1, loss=loss, lr=self.schedule.lr,
                tf=teacher_forcing_p(t, state.step - 1), tok_s=round(tokens_per_s, 1), tgt_tokens=self.tokens,
                elapsed_s=round(state.elapsed, 2), world_size=self.dist.world_size,
                grad_norm=None if self.grad_norm is None else round(float(self.grad_norm), 4)))
        if t.valid_every and state.step % t.valid_every == 0 and loss is not None:
            self.run_validation()
            self.save("last.pt")

    def run_epoch(self, clock: float) -> Optional[str]:
        """Updates from the current position to the end of the epoch, unless a stop rule fires first."""
        state, reason = self.state, None
        self.train_split, self.sampler = self.data.for_epoch(state.epoch)
        batches = self.sampler.batches(state.epoch)
        bar = tqdm(total=len(batches), initial=state.pos, desc=f"epoch {state.epoch + 1}",
                   disable=not self.progress, unit="batch", dynamic_ncols=True, leave=False)
        while state.pos < len(batches) and reason is None:
            group = batches[state.pos:state.pos + self.per_update]
            start = time.perf_counter()
            loss, self.tokens = self.update(group)
            state.pos += len(group)
            state.elapsed = time.perf_counter() - clock
            speed = self.tokens / max(time.perf_counter() - start, 1e-9)
            bar.update(len(group))
            if loss is not None:
                bar.set_postfix(loss=f"{loss:.3f}", lr=f"{self.schedule.lr:.2e}", tok_s=f"{speed:.0f}")
            self.after_update(loss, speed)
            reason = self.stop_reason()
        bar.close()
        if state.pos >= len(batches):
            t = self.cfg.train
            state.epoch, state.pos = state.epoch + 1, 0
            if not (t.valid_every and state.step % t.valid_every == 0):
                self.run_validation()
            self.save("last.pt")
            reason = self.stop_reason()
        return reason

    def _end_loop(self, handlers: dict[int, Any], failed: bool = False) -> None:
        """Give the signal handlers back and flush what TensorBoard buffered, also when the loop
        raised (``failed``: then a failed TensorBoard write is not raised over the first error)."""
        for sig, handler in handlers.items():
            signal.signal(sig, handler)
        if self.board is not None:
            self.board.close(quiet=failed)

    def fit(self) -> "RunOutcome":
        t, state = self.cfg.train, self.state
        handlers = {s: signal.signal(s, self._on_signal) for s in (signal.SIGINT, signal.SIGTERM)}
        clock = time.perf_counter() - state.elapsed
        self.record(events.Start(step=state.step, epoch=state.epoch, elapsed_s=round(state.elapsed, 2),
                                 params=count_parameters(self.model), world_size=self.dist.world_size,
                                 amp=runtime.amp_name(self.amp), hardware=runtime.hardware(self.device)))
        reason = self.stop_reason()
        try:
            while reason is None:
                reason = self.run_epoch(clock)
            if reason != "interrupted" and state.best is None:  # never validated (no best.pt)
                self.run_validation()
            self.save("last.pt")
        except BaseException:
            self._end_loop(handlers, failed=True)
            raise
        self._end_loop(handlers)
        self.record(events.Stop(reason=reason, step=state.step, epoch=state.epoch,
                                elapsed_s=round(state.elapsed, 2), best=state.best))
        if reason == "interrupted":
            name = signal.Signals(self.signal).name
            log.warning("stopped by %s at %s; checkpoints/last.pt is saved and the run can be resumed",
                        name, state.position())
            return RunOutcome(f"interrupted by {name} at {state.position()}; checkpoints/last.pt saved; "
                              f"continue with: nmt train --resume {self.run_dir}", self.signal)
        return RunOutcome(f"stopped ({reason}) at {state.position()}, after "
                          f"{state.elapsed / 60:.1f} min; best {t.metric} {state.best}; run in {self.run_dir}")


def resolve_run(config: Optional[Path], overrides: list[str], resume: Optional[Path] = None) -> tuple[Config, Path]:
    """The run's config and directory; a bad config or nothing to resume is a user error.

    On resume, the run's own config.yaml is the config: ``--config`` is refused, and ``--set``
    may change only :data:`nmt.run.folder.RESUMABLE_CHANGES`, checked here before any file is touched.
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
    cfg, run_dir = resolve_run(config, overrides, resume)
    if cfg.train.tensorboard:
        tensorboard.require()
    if resume is None:
        rundir.check_replaceable(run_dir, overwrite)
    rundir.probe(run_dir)


def run_training(config: Optional[Path], overrides: list[str], resume: Optional[Path] = None,
                 overwrite: bool = False, progress: bool = True) -> RunOutcome:
    """Entry point of ``nmt train``: a fresh run from a config, or a resumed one.

    Under torchrun every rank calls this; only rank 0 creates or changes files, and it holds
    the run directory's lock (:class:`nmt.run.folder.RunLock`) until the run ends.
    """
    cfg, run_dir = resolve_run(config, overrides, resume)
    with distributed.process_group(cfg.train.device) as dist, contextlib.ExitStack() as held:
        def claim() -> None:
            if cfg.train.tensorboard:  # a missing package fails here, before any file is touched
                tensorboard.require()
            if resume is None:  # refuse a foreign folder before putting a lock file in it
                rundir.check_replaceable(run_dir, overwrite)
            held.enter_context(rundir.RunLock(run_dir))
            if resume is None:
                open_run_dir(cfg, run_dir, overwrite)

        dist.on_main(claim)
        if resume is None:
            return Trainer(cfg, run_dir, progress, dist).fit()
        saved = ckpt.load(run_dir / "checkpoints" / "last.pt")  # a bad file fails before data loads
        trainer = Trainer(cfg, run_dir, progress, dist)
        trainer.restore(saved)
        if overrides and dist.is_main:
            atomic_write_bytes(run_dir / "config.yaml", config_mod.dump(cfg).encode("utf-8"))
        return trainer.fit()
