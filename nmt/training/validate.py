"""Validation: teacher-forced loss and perplexity, greedy BLEU/chrF, samples, an attention map."""

from __future__ import annotations

import logging
import math
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Optional

import torch

from nmt.config import Config, DecodeConfig
from nmt.data.batching import BatchSampler, collate
from nmt.data.dataset import EncodedSplit
from nmt.data.tokenizer import Tokenizer
from nmt.decode.inference import translate_ids
from nmt.model.build import TranslationModel
from nmt.run import events
from nmt.score.metrics import score
from nmt.training.loss import batch_loss
from nmt.util import runtime

log = logging.getLogger(__name__)

GPU_VALID_BATCH = 512  # greedy validation batch on CUDA when train.valid_batch_size is null


@dataclass(frozen=True)
class Validation:
    """One validation's scores and samples: what a metrics.jsonl ``valid`` event adds to the
    run's position (:meth:`event`)."""

    loss: float  # cross-entropy per target token, teacher-forced, no label smoothing
    ppl: float
    bleu: float  # greedy, sacreBLEU
    chrf: float
    bleu_signature: str
    samples: list[dict[str, str]]  # src, ref, hyp of the first sentences
    length_ratio: float  # translations / references in BLEU's tokens; below 1 the brevity penalty applies

    def score(self, metric: str) -> float:
        """The value of ``train.metric`` (loss, bleu or chrf)."""
        return float(getattr(self, metric))

    def event(self, *, step: int, epoch: int, elapsed_s: float, lr: float, best: Optional[float]) -> events.Valid:
        """The ``valid`` event of this validation at the run's position."""
        return events.Valid(step=step, epoch=epoch, elapsed_s=elapsed_s, lr=lr, best=best, **asdict(self))

    def log_line(self, step: int, better: bool) -> None:
        """The validation's line in the training log, and its first sample."""
        log.info(
            "valid step %d: loss %.3f ppl %.2f BLEU %.2f (length ratio %.3f) chrF %.2f%s",
            step,
            self.loss,
            self.ppl,
            self.bleu,
            self.length_ratio,
            self.chrf,
            " (best)" if better else "",
        )
        for sample in self.samples[:1]:
            log.info("  src: %s\n  ref: %s\n  hyp: %s", sample["src"], sample["ref"], sample["hyp"])


@dataclass
class ValidationSet:
    split: EncodedSplit
    refs: list[str]  # raw reference lines (detokenized), for sacreBLEU
    srcs: list[str]  # raw source lines, for samples


def token_loss(
    model: TranslationModel, split: EncodedSplit, cfg: Config, device: torch.device, amp: torch.dtype | None
) -> tuple[float, int]:
    """Summed cross-entropy (no label smoothing) over all target tokens, and their count."""
    sampler = BatchSampler(
        split.src_lengths,
        split.tgt_lengths,
        max_tokens=cfg.train.max_tokens,
        batch_size=cfg.train.batch_size,
        shuffle=False,
        seed=0,
        max_len=cfg.train.max_len,
    )
    total, count = 0.0, 0
    for indices in sampler.batches(0):
        batch = collate(split, indices, cfg.train.max_len).to(device)
        total += batch_loss(model, batch, label_smoothing=0.0, teacher_forcing=1.0, device=device, amp=amp).item()
        count += int(batch.n_tgt_tokens)
    return total, count


def validation_decode(cfg: Config, device: torch.device) -> DecodeConfig:
    """The decode settings of greedy validation: a GPU decodes large batches (one step's kernels
    cost about the same for 64 sentences as for 512), a CPU the configured ones."""
    size = cfg.train.valid_batch_size or (GPU_VALID_BATCH if device.type == "cuda" else cfg.decode.batch_size)
    return cfg.decode.model_copy(update={"batch_size": size})


@torch.no_grad()
def validate(
    model: TranslationModel,
    data: ValidationSet,
    cfg: Config,
    tgt_tok: Tokenizer,
    src_tok: Tokenizer,
    device: torch.device,
    amp: torch.dtype | None,
    plot_path: Path | None = None,
) -> Validation:
    """Score the model on the validation split; leaves the model in training mode."""
    model.eval()
    with runtime.preserved_rng():
        total, count = token_loss(model, data.split, cfg, device, amp)
        n = min(len(data.split), cfg.train.valid_max_sentences or len(data.split))
        sources = [data.split.src(i)[: cfg.train.max_len].tolist() for i in range(n)]
        outputs = translate_ids(
            model, sources, validation_decode(cfg, device), device, beam=1, return_attention=plot_path is not None
        )
    hyps = [tgt_tok.decode(t.ids[0]) for t in outputs]
    result = score(hyps, data.refs[:n])
    loss = total / max(count, 1)
    metrics = Validation(
        loss=loss,
        ppl=math.exp(min(loss, 50.0)),
        bleu=result.bleu,
        chrf=result.chrf,
        bleu_signature=result.bleu_signature,
        samples=[{"src": data.srcs[i], "ref": data.refs[i], "hyp": hyps[i]} for i in range(min(3, n))],
        length_ratio=result.length_ratio,
    )
    attention = outputs[0].attention if outputs else None  # of the first sentence's best output
    if plot_path is not None and attention is not None:
        from nmt.util.plots import plot_attention

        src_labels = src_tok.decode_pieces(sources[0])
        tgt_labels = tgt_tok.decode_pieces(outputs[0].ids[0]) + ["</s>"]
        plot_attention(
            attention, src_labels, tgt_labels, plot_path, title=f"validation sentence 0, BLEU {result.bleu:.1f}"
        )
    model.train()
    return metrics
