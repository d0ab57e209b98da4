"""Everything a run trains with, built once from its config: data, model, optimizer, schedule.

:func:`build` is the trainer's set-up in the order it happens: threads and seeds, the
corpus (rank 0 prepares it if needed), the tokenizer files of the run, the batch order,
the model (and its DDP wrapper), the optimizer and the learning-rate schedule.
"""

from __future__ import annotations

import logging
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Optional

import torch
from torch import nn

from nmt.config import Config, TrainConfig
from nmt.data.batching import BatchSampler
from nmt.data.clean import within_words
from nmt.data.dataset import EncodedSplit
from nmt.data.pipeline import Corpus, load_corpus
from nmt.data.tokenizer import Tokenizer
from nmt.model.build import TranslationModel, build_model, count_parameters
from nmt.model.seq2seq import Seq2Seq
from nmt.model.size import check_fits
from nmt.run.paths import RunPaths
from nmt.training import distributed
from nmt.training.optim import Schedule, build_optimizer
from nmt.training.validate import ValidationSet
from nmt.util import runtime, threads
from nmt.util.errors import ConfigError
from nmt.util.fileio import atomic_write_bytes

log = logging.getLogger(__name__)


class TrainingData:
    """The training pairs and their batches, epoch by epoch.

    Without ``train.subword_alpha`` every epoch reads the cached ids of the one segmentation.
    With it, each epoch segments the training text anew (subword regularization, Kudo 2018),
    drawn from (seed, epoch) alone, so every rank draws the same and a resumed run finds the
    batches the interrupted one had.
    """

    def __init__(
        self,
        split: EncodedSplit,
        t: TrainConfig,
        text: Optional[tuple[list[str], list[str]]] = None,
        tokenizers: Optional[tuple[Tokenizer, Tokenizer]] = None,
    ) -> None:
        if t.subword_alpha > 0 and (text is None or tokenizers is None):
            raise ValueError("subword sampling needs the training text and both tokenizers")
        self.t, self.text, self.tokenizers = t, text, tokenizers
        self.split, self.sampler = split, make_sampler(split, t)  # the one segmentation
        self._memo: Optional[tuple[int, EncodedSplit, BatchSampler]] = None

    def for_epoch(self, epoch: int) -> tuple[EncodedSplit, BatchSampler]:
        """The pairs and the batch sampler of ``epoch``."""
        if self.t.subword_alpha == 0 or self.text is None or self.tokenizers is None:  # (both given when > 0)
            return self.split, self.sampler
        if self._memo is None or self._memo[0] != epoch:
            seed = 2 * (self.t.seed * 1_000_003 + epoch)  # one stream per (seed, epoch, side)
            (src_text, tgt_text), (src_tok, tgt_tok) = self.text, self.tokenizers
            split = EncodedSplit.from_sequences(
                src_tok.sample(src_text, self.t.subword_alpha, seed),
                tgt_tok.sample(tgt_text, self.t.subword_alpha, seed + 1),
            )
            self._memo = (epoch, split, make_sampler(split, self.t))
        return self._memo[1], self._memo[2]


def capped_pairs(corpus: Corpus, cfg: Config) -> Optional[list[int]]:
    """The training pairs within ``train.max_words`` words on each side, in corpus order (None: no cap,
    every pair); a ConfigError when the cap leaves none."""
    cap = cfg.train.max_words
    if cap is None:
        return None
    kept = within_words(corpus.text("train", cfg.data.src), corpus.text("train", cfg.data.tgt), cap)
    total = len(corpus.splits["train"])
    if not kept:
        raise ConfigError(f"train.max_words={cap} leaves none of the {total} training pairs")
    log.info("train.max_words=%d: training on %d of the %d pairs", cap, len(kept), total)
    return kept


def training_split(corpus: Corpus, cfg: Config, kept: Optional[list[int]] = None) -> EncodedSplit:
    """The pairs a run trains on: the prepared training split, or its pairs ``kept`` (default: those
    :func:`capped_pairs` keeps), as the trainer, the update timing and the attention health check read them."""
    if kept is None:
        kept = capped_pairs(corpus, cfg)
    return corpus.splits["train"] if kept is None else corpus.splits["train"].subset(kept)


def make_sampler(split: EncodedSplit, t: TrainConfig, curriculum: bool = True) -> BatchSampler:
    """Shuffled, length-bucketed training batches of ``split`` as ``t`` sets them (without the
    curriculum's short first epochs when ``curriculum`` is false, as the update timing wants)."""
    return BatchSampler(
        split.src_lengths,
        split.tgt_lengths,
        max_tokens=t.max_tokens,
        batch_size=t.batch_size,
        shuffle=True,
        seed=t.seed,
        max_len=t.max_len,
        curriculum_epochs=t.curriculum_epochs if curriculum else 0,
    )


@dataclass
class Parts:
    """The objects of one run; the trainer changes their state, never which objects they are."""

    device: torch.device
    amp: Optional[torch.dtype]  # autocast dtype, None for fp32
    src_tok: Tokenizer
    tgt_tok: Tokenizer
    data: TrainingData
    valid: ValidationSet
    model: TranslationModel  # for validation, checkpoints and everything but training forwards
    train_model: nn.Module  # ``model`` or its DDP wrapper
    optimizer: torch.optim.Optimizer
    schedule: Schedule
    scaler: torch.amp.GradScaler
    per_update: int  # global batches per update (processes x accumulate)
    planned: int  # updates the run expects: train.max_steps, else train.max_epochs' worth


def planned_updates(sampler: BatchSampler, t: TrainConfig, per_update: int) -> tuple[int, int]:
    """(updates of ``max_epochs`` epochs, batches of a full epoch).

    Curriculum epochs are shorter; every later epoch has the size of the first full one.
    """
    full = min(t.curriculum_epochs, t.max_epochs)
    sizes = [sampler.n_batches(e) for e in range(full)]
    full_size = sampler.n_batches(full)
    total = sum(math.ceil(n / per_update) for n in sizes) + (t.max_epochs - full) * math.ceil(full_size / per_update)
    return total, full_size


def build(cfg: Config, run_dir: Path, dist: distributed.Context, progress: bool) -> Parts:
    """Set up a fresh run in ``run_dir`` (a resume then loads its checkpoint into these parts)."""
    t = cfg.train
    threads.configure(t.threads, "train.threads")  # 0: follow the cores other processes leave free
    # Each rank its own dropout / teacher-forcing stream; DDP copies rank 0's initial weights.
    runtime.seed_everything(t.seed + dist.rank)
    device = dist.device
    corpus = dist.main_first(lambda: load_corpus(cfg.data, splits=("train", "valid"), progress=progress))
    if dist.is_main:
        for side, tok in (("src", corpus.src_tok), ("tgt", corpus.tgt_tok)):
            atomic_write_bytes(RunPaths(run_dir).tokenizer(side), tok.model_bytes)
    kept = capped_pairs(corpus, cfg)
    train_split = training_split(corpus, cfg, kept)
    text = None
    if t.subword_alpha > 0:
        src, tgt = corpus.text("train", cfg.data.src), corpus.text("train", cfg.data.tgt)
        text = (src, tgt) if kept is None else ([src[i] for i in kept], [tgt[i] for i in kept])
    data = TrainingData(train_split, t, text, (corpus.src_tok, corpus.tgt_tok))
    check_fits(cfg.model, corpus.src_tok.vocab_size, corpus.tgt_tok.vocab_size, device)  # before the allocator fails
    model = build_model(cfg.model, corpus.src_tok.vocab_size, corpus.tgt_tok.vocab_size).to(device)
    if t.compile != "off" and isinstance(model, Seq2Seq):  # the config allows it for the RNN only
        model.decoder.compile_step(t.compile)
    optimizer = build_optimizer(t, model)
    per_update = dist.world_size * t.accumulate
    total, epoch_batches = planned_updates(data.for_epoch(0)[1], t, per_update)  # sampled segmentations are longer
    planned = min(total, t.max_steps) if t.max_steps else total
    amp = runtime.amp_dtype(device, t.amp)
    parts = Parts(
        device=device,
        amp=amp,
        src_tok=corpus.src_tok,
        tgt_tok=corpus.tgt_tok,
        data=data,
        valid=ValidationSet(
            corpus.splits["valid"], corpus.text("valid", cfg.data.tgt), corpus.text("valid", cfg.data.src)
        ),
        model=model,
        train_model=dist.wrap(model),
        optimizer=optimizer,
        schedule=Schedule(t, optimizer, t.max_steps or total),
        scaler=runtime.grad_scaler(device, amp),
        per_update=per_update,
        planned=planned,
    )
    log.info(
        "model: %s parameters; %d training pairs, %d batches per full epoch, %d updates planned",
        f"{count_parameters(model):,}",
        len(train_split),
        epoch_batches,
        planned,
    )
    unit, size = ("tokens", t.max_tokens) if t.max_tokens else ("sentences", t.batch_size or 0)  # the config sets one
    log.info(
        "%d process(es)%s; batch per update: up to %d x %d x %d = %d %s (processes x "
        "accumulate x train.max_tokens/batch_size)",
        dist.world_size,
        f" ({dist.backend})" if dist.backend else "",
        dist.world_size,
        t.accumulate,
        size,
        per_update * size,
        unit,
    )
    return parts
