"""The training loop: updates, validation, checkpoints, exact resume, stop criteria.

A run lives in ``runs/<name>/`` (its files: :class:`nmt.run.paths.RunPaths`); which folder and
config, and the claim on it, are :mod:`nmt.training.run_start`'s, stop signals
:mod:`nmt.training.signals`' and the progress bar :mod:`nmt.training.progress`'.  The trainer knows
the model only through ``forward`` and ``state_dict``.

Exact resume: a checkpoint holds every random stream, the optimizer and
schedules, and the position inside the epoch's batch order, which is a pure
function of (seed, epoch); so on CPU a resumed run computes the same losses
as one that was never interrupted.

Several processes (torchrun, see :mod:`nmt.training.distributed`): with W ranks and
accumulation A, update u consumes the epoch's global batches
[u*W*A, (u+1)*W*A), rank r the batches r, r+W, ... of them, and the loss is
normalized by the target tokens of all of them.  So W ranks with
``max_tokens`` compute the update of one process with accumulation W*A (up to
float rounding), ``pos`` counts global batches, and a run resumes with any W.
Dropout and teacher forcing draw from seed + rank, so a resume is bit-identical
only with the same W (on CPU).
"""

from __future__ import annotations

import logging
import math
import signal
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, Optional

import torch

from nmt.config import Config
from nmt.config.saved import SAME_MODEL, changes, saved_config
from nmt.data.batching import collate
from nmt.model.build import count_parameters
from nmt.run import checkpoint as ckpt
from nmt.run import events
from nmt.run.paths import RunPaths
from nmt.run.state import TrainState, keep_checkpoints, stop_reason, validates_at_epoch_end
from nmt.training import distributed, tensorboard
from nmt.training import setup as train_setup
from nmt.training.loss import batch_loss
from nmt.training.optim import apply_gradients
from nmt.training.progress import RunProgress
from nmt.training.results import RunOutcome, Update
from nmt.training.schedules import teacher_forcing_p
from nmt.training.signals import StopSignals
from nmt.training.user_code import loop_to_train_with, naming_user_code, nonfinite_advice
from nmt.training.validate import Validation, validate
from nmt.util import runtime, threads
from nmt.util.errors import CheckpointError, UserError
from nmt.util.errors import TrainingError as TrainingError  # re-exported: its home before it became a UserError
from nmt.util.registry import PluginError

log = logging.getLogger(__name__)

StopRule = Callable[[Validation], Optional[str]]
"""A caller's own stop rule, asked after every validation: a reason stops the run there."""


class Trainer:
    """Runs the updates, validations and checkpoints of one run over its :class:`~nmt.training.setup.Parts`.

    ``should_stop``: an extra stop rule of the caller (e.g. a target score), asked after every
    validation; the reason it returns ends the run as ``train.max_steps`` would, with that reason
    in the stop event.  :meth:`request_stop` does the same from anywhere else.  ``interactive``:
    started from Python rather than the CLI (:class:`~nmt.training.signals.StopSignals`).
    """

    def __init__(
        self,
        cfg: Config,
        run_dir: Path,
        progress: bool = True,
        dist: Optional[distributed.Context] = None,
        should_stop: Optional[StopRule] = None,
        interactive: bool = False,
    ) -> None:
        self.dist = dist or distributed.Context(device=runtime.select_device(cfg.train.device))
        self.cfg, self.run_dir, self.progress = cfg, run_dir, progress and self.dist.is_main
        self.paths = RunPaths(run_dir)
        self.board = (  # before the data loads: a missing package fails fast
            tensorboard.Board(run_dir, attention_image=tensorboard.has_attention(cfg.model))
            if cfg.train.tensorboard and self.dist.is_main
            else None
        )
        self.parts = train_setup.build(cfg, run_dir, self.dist, self.progress)
        p = self.parts
        self.device, self.amp, self.model, self.train_model = p.device, p.amp, p.model, p.train_model
        self.optimizer, self.schedule, self.scaler = p.optimizer, p.schedule, p.scaler
        self.data, self.per_update = p.data, p.per_update
        self.train_split, self.sampler = p.data.for_epoch(0)  # the current epoch's pairs and batches
        self.decoder_loop = loop_to_train_with(cfg.train)  # None: nmt's own teacher-forcing loop
        self.state = TrainState()
        self.signals = StopSignals(f"rank {self.dist.rank}: " if self.dist.enabled else "", interactive)
        self.signal = 0  # the stop signal any rank received (SIGINT, SIGTERM), else 0
        self.should_stop = should_stop
        self.requested: Optional[str] = None  # the reason of a caller's stop, once asked

    def request_stop(self, reason: str) -> None:
        """Stop after the current update or validation, as a stop rule would, with ``reason``
        (the first reason asked stays).  Under torchrun every rank must ask alike, as
        ``should_stop`` does: every rank sees the same validation."""
        self.requested = self.requested or reason

    # ------------------------------------------------------------ checkpoints
    def checkpoint(self, rng_ranks: Optional[list[dict[str, Any]]] = None) -> ckpt.Checkpoint:
        """Everything needed to translate with the model and to resume this run exactly."""
        return ckpt.Checkpoint(
            config=self.cfg.model_dump(mode="json"),
            model=self.model.state_dict(),
            tokenizers={"src": self.parts.src_tok.model_bytes, "tgt": self.parts.tgt_tok.model_bytes},
            state=self.state,
            optimizer=self.optimizer.state_dict(),
            schedule=self.schedule.state_dict(),
            scaler=self.scaler.state_dict(),
            rng=runtime.rng_state(),
            rng_ranks=rng_ranks,
            world_size=self.dist.world_size,
        )

    def restore(self, saved: ckpt.Checkpoint) -> None:
        """Continue from ``saved`` (same model config): weights, optimizer, schedules, streams, counters."""
        diff = changes(saved_config(saved.config), self.cfg, SAME_MODEL)
        if diff:
            raise CheckpointError(
                f"checkpoint was trained with a different model config ({', '.join(change.key for change in diff)})"
            )
        if saved.optimizer is None or saved.schedule is None or saved.rng is None:  # not saved.trainable
            raise CheckpointError(
                "checkpoint holds a model only (no optimizer or random streams); "
                "it can translate but not resume training"
            )
        self.model.load_state_dict(saved.model)
        self.optimizer.load_state_dict(saved.optimizer)
        self.schedule.load_state_dict(saved.schedule)
        if saved.scaler is not None:  # a trainer saves one always ({} while fp16 loss scaling is off)
            self.scaler.load_state_dict(saved.scaler)
        streams = saved.rng_ranks or [saved.rng]
        if self.dist.rank < len(streams):  # a rank new to the run keeps its fresh seed + rank stream
            runtime.set_rng_state(streams[self.dist.rank])
        if saved.world_size != self.dist.world_size and self.dist.is_main:
            log.warning(
                "checkpoint written by %d process(es), resuming with %d: same batches, model and "
                "optimizer, but other dropout/teacher-forcing draws than an uninterrupted run",
                saved.world_size,
                self.dist.world_size,
            )
        self.state = TrainState.from_state_dict(saved.state.state_dict())
        log.info("resumed at %s", self.state.position())  # the words the stop line used

    def save(self, path: Path) -> Optional[Path]:
        """Rank 0 writes the checkpoint to ``path`` (one of :attr:`paths`), with every rank's random
        streams; all ranks must call it."""
        streams = self.dist.gather(runtime.rng_state())
        if not self.dist.is_main:
            return None
        return ckpt.save(path, self.checkpoint(streams if self.dist.enabled else None))

    def keep_updates(self, failure: PluginError) -> PluginError:
        """The user's code (an attention, a schedule) failed mid-run: save last.pt, as a stop signal does,
        at the last completed update (a failed one changed no weights), and say so in the one line.
        Rank 0 saves alone (its own random streams): the other ranks may have failed elsewhere, or not at all."""
        if self.state.step == 0 or not self.dist.is_main:
            return failure
        try:
            ckpt.save(self.paths.last, self.checkpoint())
        except (OSError, UserError) as exc:  # a full disk: the failure is still the line to show
            log.warning("could not save %s after the failure: %s", self.paths.last, exc)
            return failure
        return PluginError(f"{failure}; stopped at {self.state.position()}, saved in {self.paths.last}")

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

    def update(self, group: list[list[int]]) -> Update:
        """One optimizer update over the global ``group`` of batches.

        This rank computes its :func:`~nmt.training.distributed.shard` of ``group``; every loss is
        divided by the target tokens of the whole group, so the gradients summed over ranks are
        those of one process on all of ``group``.  DDP averages over the W ranks: hence ``* W``.
        """
        start = time.perf_counter()
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
                    loss = batch_loss(
                        self.train_model,
                        batch,
                        label_smoothing=t.label_smoothing,
                        teacher_forcing=p,
                        coverage_loss=t.coverage_loss,
                        loop=self.decoder_loop,
                        device=self.device,
                        amp=self.amp,
                    )
                    self.scaler.scale(loss * weight / n_tokens).backward()
            except torch.OutOfMemoryError:
                raise UserError(
                    f"out of memory on a batch of {batch.src.size(0)} sentences, source length "
                    f"{batch.src.size(1)}, target length {batch.tgt_in.size(1)} (step {state.step + 1}); "
                    f"lower train.max_tokens (now {t.max_tokens}) and raise train.accumulate"
                ) from None
            value = loss.item()
            total += value if weight else 0.0 * value  # 0 * nan is nan: a bad stand-in still vetoes
        total = self.dist.all_sum([total])[0]  # every rank skips, or steps, alike
        if not math.isfinite(total):
            self.optimizer.zero_grad(set_to_none=True)
            state.nonfinite += 1
            log.warning("non-finite loss at step %d: update skipped (%d in a row)", state.step + 1, state.nonfinite)
            if state.nonfinite >= t.max_nonfinite:
                raise TrainingError(
                    f"{state.nonfinite} non-finite losses in a row at step {state.step + 1}; "
                    f"{nonfinite_advice(self.cfg)}"
                )
            return Update(None, n_tokens, p, n_tokens / max(time.perf_counter() - start, 1e-9))
        state.nonfinite = 0
        grad_norm = apply_gradients(self.model, self.optimizer, self.scaler, t.clip_grad_norm)
        self.schedule.step(state.elapsed)  # agreed by every rank at the last stop check
        state.step += 1
        return Update(total / n_tokens, n_tokens, p, n_tokens / max(time.perf_counter() - start, 1e-9), grad_norm)

    # ------------------------------------------------------------ validation
    def run_validation(self) -> Validation:
        """Rank 0 validates while the others wait; then every rank applies the same score."""
        t, state, parts = self.cfg.train, self.state, self.parts
        result = self.dist.on_main(
            lambda: validate(
                self.model,
                parts.valid,
                self.cfg,
                parts.tgt_tok,
                parts.src_tok,
                self.device,
                self.amp,
                plot_path=self.paths.attention_map(state.step) if t.valid_attention_map else None,
            )
        )
        value = result.score(t.metric)
        better = state.validated(t.metric, value)
        if better:
            self.save(self.paths.best)
        self._keep_step_checkpoints(value)
        self.schedule.validated(value)
        self.record(
            result.event(
                step=state.step,
                epoch=state.epoch + 1,
                elapsed_s=round(state.elapsed, 2),
                lr=self.schedule.lr,
                best=state.best,
            )
        )
        result.log_line(state.step, better)
        if self.should_stop is not None:
            reason = self.should_stop(result)
            if reason:
                self.request_stop(reason)
        return result

    def _keep_step_checkpoints(self, value: float) -> None:
        """Keep the ``keep_best`` best and ``keep_last`` latest step checkpoints besides best.pt and last.pt."""
        state, t = self.state, self.cfg.train
        decision = keep_checkpoints(state.history, state.recent, t.metric, value, state.step, t.keep_best, t.keep_last)
        state.history, state.recent = decision.history, decision.recent
        if decision.save:
            self.save(self.paths.step(state.step))
        for step in decision.drop:
            if self.dist.is_main:
                self.paths.step(step).unlink(missing_ok=True)

    # ------------------------------------------------------------ the loop
    def stop_reason(self) -> Optional[str]:
        """Why to stop now, if at all; ranks agree on signals (any rank) and time (slowest clock).
        The run's own limits come first, then a caller's :meth:`request_stop`."""
        signum, self.state.elapsed = self.dist.all_max([float(self.signals.received), self.state.elapsed])
        self.signal = int(signum)
        return stop_reason(self.state, self.cfg.train, self.signal) or self.requested

    def after_update(self, update: Update) -> None:
        """Log one update (every ``log_every``) and validate when due."""
        t, state = self.cfg.train, self.state
        threads.tick()
        if update.loss is not None and state.step % t.log_every == 0:
            self.record(
                update.event(
                    step=state.step,
                    epoch=state.epoch + 1,
                    lr=self.schedule.lr,
                    elapsed_s=round(state.elapsed, 2),
                    world_size=self.dist.world_size,
                )
            )
        if t.valid_every and state.step % t.valid_every == 0 and update.loss is not None:
            self.run_validation()
            self.save(self.paths.last)

    def run_epoch(self, clock: float, bar: RunProgress) -> Optional[str]:
        """Updates from the current position to the end of the epoch, unless a stop rule fires first."""
        state, reason = self.state, None
        self.train_split, self.sampler = self.data.for_epoch(state.epoch)
        batches = self.sampler.batches(state.epoch)
        while state.pos < len(batches) and reason is None:
            group = batches[state.pos : state.pos + self.per_update]
            update = self.update(group)
            state.pos += len(group)
            state.elapsed = time.perf_counter() - clock
            bar.update(state.step, state.epoch + 1, update.loss, self.schedule.lr, update.tok_s)
            self.after_update(update)
            reason = self.stop_reason()
        if state.pos >= len(batches):
            state.epoch, state.pos = state.epoch + 1, 0
            if validates_at_epoch_end(state.step, self.cfg.train.valid_every):
                self.run_validation()
            self.save(self.paths.last)
            reason = self.stop_reason()
        return reason

    def _train(self, clock: float) -> str:
        """Epochs until a stop rule fires, a validation of the final model unless one just
        happened (an update budget off the ``valid_every`` grid, a time budget), last.pt; the reason."""
        reason = self.stop_reason()
        with RunProgress(self.parts.planned, self.state.step, self.progress) as bar:
            while reason is None:
                reason = self.run_epoch(clock, bar)
        if reason != "interrupted" and self.state.last_valid != self.state.step:
            self.run_validation()
        self.save(self.paths.last)
        return reason

    def fit(self) -> RunOutcome:
        t, state = self.cfg.train, self.state
        clock = time.perf_counter() - state.elapsed
        with self.signals:
            self.record(
                events.Start(
                    step=state.step,
                    epoch=state.epoch,
                    elapsed_s=round(state.elapsed, 2),
                    params=count_parameters(self.model),
                    world_size=self.dist.world_size,
                    amp=runtime.amp_name(self.amp),
                    hardware=runtime.hardware(self.device),
                )
            )
            try:
                with naming_user_code(self.cfg):  # what the user's attention or schedule raises: one line naming it
                    reason = self._train(clock)
            except BaseException as exc:
                if self.board is not None:  # flush what it buffered; its own failure is not raised over this one
                    self.board.close(quiet=True)
                if isinstance(exc, PluginError):
                    raise self.keep_updates(exc) from None
                raise
        if self.board is not None:
            self.board.close()
        self.record(
            events.Stop(
                reason=reason, step=state.step, epoch=state.epoch, elapsed_s=round(state.elapsed, 2), best=state.best
            )
        )
        if reason == "interrupted":
            log.warning(
                "stopped by %s at %s; checkpoints/last.pt is saved and the run can be resumed",
                signal.Signals(self.signal).name,
                state.position(),
            )
            return RunOutcome.interrupted(self.signal, state, self.run_dir)
        return RunOutcome.finished(reason, state, t.metric, self.run_dir)
