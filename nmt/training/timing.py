"""Seconds per training update of a config, measured in this process on real batches of its corpus.

:func:`time_updates` builds the config's model, runs ``warmup`` untimed updates and then times
``updates`` more: full updates as the trainer makes them (forward under the config's autocast,
label-smoothed cross-entropy summed and divided by the update's target tokens, backward, clip,
optimizer step), no validation, logging or checkpoints.  The batches are the first of epoch 0's
shuffled, length-bucketed order (without the curriculum's short first epochs), collated and moved
to the device before the clock starts, so two configs of one corpus are timed on the same
batches; a corpus with fewer batches is cycled.  The thread count is the caller's
(:func:`nmt.util.threads.configure`; a governor is let re-check it every update, as in training).

``same_batches`` warms up on the timed updates' own batches instead of the ones before them, so
that torch.compile has compiled, and ``reduce-overhead`` has recorded a CUDA graph, for every batch
shape the clock will meet.

``scripts/bench_train.py`` (one batch per update, a variant's decoder path), ``nmt compare
--time-updates`` (each arm alone, after its runs) and ``scripts/gpu_report.py`` (an untimed pass
over the timed batches first, ``same_batches``) all time with it.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Optional

import torch
from torch import nn

from nmt.config import Config, TrainConfig
from nmt.data.batching import Batch, collate
from nmt.data.dataset import EncodedSplit
from nmt.data.pipeline import Corpus
from nmt.model.build import build_model, count_parameters
from nmt.model.seq2seq import Seq2Seq
from nmt.training.loss import batch_loss
from nmt.training.optim import apply_gradients, build_optimizer
from nmt.training.schedules import teacher_forcing_p
from nmt.training.setup import make_sampler, training_split
from nmt.training.user_code import loop_to_train_with
from nmt.util import runtime, threads

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class UpdateTiming:
    """What :func:`time_updates` measured: the timed updates, their tokens and seconds, and the model."""

    seconds: float  # the timed updates together, device work included
    updates: int  # timed updates
    warmup: int  # untimed updates before them
    warmup_seconds: float  # the untimed updates together, device work and compilation included
    batches_per_update: int
    tokens: int  # target tokens (EOS included) of the timed updates
    threads: int  # torch intra-op threads when the clock stopped
    params: int
    fast_path: bool  # the RNN decoder ran all target steps at once (always true for the Transformer)
    loss_first: float  # loss per target token of the first update (warm-up included) ...
    loss_last: float  # ... and of the last
    peak_gpu_mb: Optional[float]  # the timed updates' peak of allocated CUDA memory; None off CUDA
    warmup_peak_gpu_mb: Optional[float]  # the same from the model's build through the warm-up; None off CUDA

    @property
    def seconds_per_update(self) -> float:
        return self.seconds / self.updates

    @property
    def tokens_per_second(self) -> float:
        return self.tokens / self.seconds


def train_update(
    model: nn.Module,
    optimizer: torch.optim.Optimizer,
    scaler: torch.amp.GradScaler,
    batches: list[Batch],
    n_tokens: int,
    t: TrainConfig,
    amp: Optional[torch.dtype],
    device: torch.device,
    fast: Optional[bool] = None,
) -> torch.Tensor:
    """One update over ``batches`` (already on ``device``) with the trainer's loss and gradient step.

    ``n_tokens`` is the target tokens of all of them, counted on the CPU; returns the summed loss,
    detached and not synchronized.
    """
    total: Optional[torch.Tensor] = None
    for batch in batches:
        loss = batch_loss(
            model,
            batch,
            label_smoothing=t.label_smoothing,
            teacher_forcing=teacher_forcing_p(t, 0),
            coverage_loss=t.coverage_loss,
            loop=loop_to_train_with(t),  # a user's loop runs step by step even at p = 1: time that
            device=device,
            amp=amp,
            fast=fast,
        )
        scaler.scale(loss / n_tokens).backward()
        total = loss.detach() if total is None else total + loss.detach()
    apply_gradients(model, optimizer, scaler, t.clip_grad_norm)
    assert total is not None, "an update of no batches"
    return total


def _update_batches(
    split: EncodedSplit, t: TrainConfig, n_updates: int, per_update: int, device: torch.device
) -> list[tuple[list[Batch], int]]:
    """The batches of ``n_updates`` updates of ``per_update`` batches each, on ``device``, with
    their target tokens: the first of epoch 0's order of the training pairs ``split``, cycled where
    it has fewer."""
    order, wanted = make_sampler(split, t, curriculum=False).batches(0), n_updates * per_update
    if len(order) < wanted:
        log.warning("the corpus has %d batches per epoch; reusing them to make %d", len(order), wanted)
    batches = [collate(split, order[i % len(order)], t.max_len) for i in range(wanted)]
    groups = [batches[i : i + per_update] for i in range(0, wanted, per_update)]
    # tokens counted on the CPU before the move, so the timed loop never waits for the device
    return [([b.to(device) for b in group], sum(b.n_tgt_tokens for b in group)) for group in groups]


def time_updates(
    cfg: Config,
    corpus: Corpus,
    *,
    updates: int,
    warmup: int,
    device: torch.device,
    amp: Optional[torch.dtype],
    batches_per_update: int = 1,
    fast: Optional[bool] = None,
    same_batches: bool = False,
) -> UpdateTiming:
    """Build ``cfg``'s model (seeded by ``train.seed``) and time ``updates`` training updates of
    ``batches_per_update`` batches each after ``warmup`` untimed ones, on ``corpus``'s training split.

    ``fast`` picks the RNN decoder's path (None: automatic; False: step by step).  ``same_batches``
    takes the warm-up's batches from the timed updates' own (cycled) rather than from before them:
    with ``warmup == updates``, one untimed pass over exactly the batches then timed.  The updates
    change the model and optimizer built here, nothing of the caller's but the random streams
    (seeded here) and the thread governor's count.
    """
    if updates < 1 or warmup < 0 or batches_per_update < 1:
        raise ValueError(f"updates {updates}, warmup {warmup}, batches_per_update {batches_per_update}")
    t = cfg.train
    split = training_split(corpus, cfg)  # within train.max_words, as the run trains
    if same_batches:
        timed = _update_batches(split, t, updates, batches_per_update, device)
        work = [timed[i % updates] for i in range(warmup)] + timed
    else:
        work = _update_batches(split, t, warmup + updates, batches_per_update, device)
    cuda = device.type == "cuda"
    if cuda:
        torch.cuda.reset_peak_memory_stats(device)
    runtime.seed_everything(t.seed)  # the same initial weights for every timing of a config
    model = build_model(cfg.model, corpus.src_tok.vocab_size, corpus.tgt_tok.vocab_size).to(device).train()
    if t.compile != "off" and isinstance(model, Seq2Seq):  # the config allows it for the RNN only
        model.decoder.compile_step(t.compile)
    optimizer = build_optimizer(t, model)
    scaler = runtime.grad_scaler(device, amp)
    step = (t, amp, device, fast)
    with runtime.Stopwatch(device) as warm:
        losses = [train_update(model, optimizer, scaler, batches, n, *step) for batches, n in work[:warmup]]
    warmup_peak = _peak_mb(device) if cuda else None
    if cuda:
        torch.cuda.reset_peak_memory_stats(device)
    with runtime.Stopwatch(device) as clock:
        for batches, n in work[warmup:]:
            threads.tick()
            losses.append(train_update(model, optimizer, scaler, batches, n, *step))
    fast_path = not isinstance(model, Seq2Seq) or (
        teacher_forcing_p(t, 0) >= 1.0
        and model.decoder.can_run_fast
        and fast is not False
        and loop_to_train_with(t) is None
    )
    return UpdateTiming(
        seconds=clock.seconds,
        updates=updates,
        warmup=warmup,
        warmup_seconds=warm.seconds,
        batches_per_update=batches_per_update,
        tokens=sum(n for _batches, n in work[warmup:]),
        threads=torch.get_num_threads(),
        params=count_parameters(model),
        fast_path=bool(fast_path),
        loss_first=losses[0].item() / work[0][1],
        loss_last=losses[-1].item() / work[-1][1],
        peak_gpu_mb=_peak_mb(device) if cuda else None,
        warmup_peak_gpu_mb=warmup_peak,
    )


def _peak_mb(device: torch.device) -> float:
    """Peak allocated CUDA memory in MiB since the last reset of ``device``'s peak."""
    return round(torch.cuda.max_memory_allocated(device) / 2**20, 1)
