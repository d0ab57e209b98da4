"""The ``train`` section of the experiment config: optimization, batching, the learning-rate and
teacher-forcing schedules, validation, checkpoints and stopping.

Every option has its default and a one-line description here, and nowhere else.  The section
validates its own fields and the combinations inside it; checks across sections live in
:mod:`nmt.config`.
"""

from __future__ import annotations

import re
from typing import Literal, Optional

from pydantic import Field, field_validator, model_validator

from nmt.config.named_code import LoopName, ScheduleName
from nmt.config.section import Section

SELECT_PATTERN = "best|(average|on_valid)_last_[1-9][0-9]*"
"""Valid ``train.select``: ``best``, ``average_last_N`` or ``on_valid_last_N`` (the JSON Schema lists the three)."""


def select_rule(select: str) -> tuple[str, int]:
    """``train.select`` as (rule, N): ("best", 0), ("average", N) or ("on_valid", N)."""
    if select == "best":
        return "best", 0
    rule, _, last = select.rpartition("_last_")
    return rule, int(last)


class TrainConfig(Section):
    """Optimization, batching, validation and stopping."""

    seed: int = Field(
        1,
        ge=0,
        lt=2**32,
        description="Seed for initialisation, batching, dropout and teacher "
        "forcing, in [0, 2^32) (the range numpy's generators take).",
    )
    device: Literal["auto", "cpu", "cuda", "mps"] = Field(
        "auto", description="auto = CUDA when present, else Apple's MPS when present, else CPU."
    )
    amp: Literal["auto", "off", "bf16", "fp16"] = Field(
        "auto", description="Mixed precision on CUDA (auto = bf16 if supported); always off on CPU."
    )
    threads: int = Field(
        0,
        ge=0,
        description="CPU threads for torch (0 = one per core that other processes leave free, re-checked every 2 s; fix it for bit-identical reruns).",
    )
    compile: Literal["off", "default", "reduce-overhead", "max-autotune"] = Field(
        "off", description="torch.compile mode for the decoder step (reduce-overhead: CUDA graphs); off = eager."
    )
    optimizer: Literal["adam", "adamw", "sgd"] = Field("adam", description="Optimizer.")
    lr: float = Field(1e-3, gt=0.0, description="Peak learning rate.")
    weight_decay: float = Field(0.0, ge=0.0, description="Weight decay (decoupled for adamw).")
    momentum: float = Field(0.9, ge=0.0, lt=1.0, description="SGD momentum.")
    schedule: Literal["constant", "plateau", "inverse_sqrt", "cosine"] = Field(
        "constant", description="Learning-rate schedule (model.arch=transformer: inverse_sqrt unless given)."
    )
    warmup_steps: int = Field(
        0,
        ge=0,
        description="Linear warm-up steps (every schedule but plateau; model.arch=transformer: 4000 unless given).",
    )
    plateau_factor: float = Field(
        0.5, gt=0.0, lt=1.0, description="plateau: multiply lr by this when the metric stalls."
    )
    plateau_patience: int = Field(1, ge=0, description="plateau: validations without improvement before decaying.")
    min_lr: float = Field(1e-6, ge=0.0, description="Floor for decaying schedules.")
    schedule_clock: Literal["steps", "time"] = Field(
        "steps",
        description="What cosine decays over after the warm-up: updates, to max_steps, or wall-clock time, to "
        "time_budget_min (validation included; a budget-aware schedule, Li et al. 2020), so that runs given equal "
        "time decay fully on any machine.",
    )
    clip_grad_norm: float = Field(1.0, ge=0.0, description="Clip the gradient norm to this (0 = off).")
    accumulate: int = Field(1, ge=1, description="Batches whose gradients are summed per update.")
    max_tokens: Optional[int] = Field(
        4096, ge=1, description="Token budget per batch (padded cells); null to batch by sentences."
    )
    batch_size: Optional[int] = Field(None, ge=1, description="Sentences per batch when max_tokens is null.")
    max_len: int = Field(128, ge=2, description="Truncate training sentences to this many subword tokens.")
    max_words: Optional[int] = Field(
        None,
        ge=1,
        description="Train only on the pairs with at most this many words (whitespace-separated) on each side, "
        "chosen from the prepared training split when the run starts; null: every pair. Unlike data.max_len, "
        "which drops pairs when the corpus is prepared, runs of two caps share one prepared folder and its "
        "SentencePiece models, as Bahdanau et al. (2015)'s RNNsearch-30 and -50 shared a vocabulary.",
    )
    subword_alpha: float = Field(
        0.0,
        ge=0.0,
        le=1.0,
        description="Subword regularization (Kudo 2018): 0 = the one segmentation; else every "
        "epoch segments the training text anew, drawn from (seed, epoch) with this "
        "SentencePiece alpha (unigram: smoothing, lower = more varied; bpe: dropout).",
    )
    curriculum_epochs: int = Field(
        0, ge=0, description="Length curriculum: epoch e < N trains on the shortest (e+1)/(N+1) of the pairs (0 = off)."
    )
    max_epochs: int = Field(20, ge=1, description="Stop after this many epochs.")
    max_steps: Optional[int] = Field(None, ge=1, le=10**9, description="Stop after this many updates.")
    time_budget_min: Optional[float] = Field(
        None, gt=0.0, description="Stop after this many minutes of wall-clock time."
    )
    metric: Literal["bleu", "chrf", "loss"] = Field(
        "bleu", description="Validation metric for best checkpoint, plateau and early stopping."
    )
    patience: Optional[int] = Field(None, ge=1, description="Early stopping: validations without improvement.")
    valid_every: int = Field(
        0, ge=0, description="Validate every N updates (0 = only at the end of each epoch); the final model always."
    )
    valid_max_sentences: Optional[int] = Field(None, ge=1, description="Score only the first N validation sentences.")
    valid_batch_size: Optional[int] = Field(
        None, ge=1, description="Sentences per greedy validation batch (null = decode.batch_size on CPU, 512 on CUDA)."
    )
    keep_best: int = Field(
        1,
        ge=1,
        description="Best checkpoints kept besides last.pt (best.pt; 2 or more also "
        "keeps step files, for nmt average --best).",
    )
    keep_last: int = Field(
        0,
        ge=0,
        description="Latest validated step checkpoints kept besides last.pt (for nmt average --last; 0 = none).",
    )
    select: str = Field(
        "best",
        json_schema_extra={
            "anyOf": [
                {"type": "string", "const": "best"},
                {"type": "string", "pattern": "^average_last_[1-9][0-9]*$"},
                {"type": "string", "pattern": "^on_valid_last_[1-9][0-9]*$"},
            ]
        },
        description="The model the run stands for when training ends (what nmt.load and nmt.evaluate of the "
        "run folder load): best (best.pt); average_last_N (the average of the last N validated checkpoints, "
        "checkpoints/avg_lastN.pt); on_valid_last_N (whichever of the two translates the validation split "
        "with higher BLEU at decode.beam, best.pt on a tie, as nmt select does). N from 2 to keep_last; "
        "the choice is recorded in RUN/selection.json.",
    )
    log_every: int = Field(100, ge=1, description="Write a training line to metrics.jsonl every N updates.")
    valid_attention_map: bool = Field(
        True,
        description="At each validation, draw the first validation sentence's attention into "
        "RUN/attention/ (about a second on a CPU; tiny runs and the labs' tiny sizes turn it off).",
    )
    tensorboard: bool = Field(
        True,
        description="Also write every metrics.jsonl event to RUN/tb/ for TensorBoard "
        "(scalars, validation sample and attention map; rank 0).",
    )
    teacher_forcing: float = Field(
        1.0, ge=0.0, le=1.0, description="Probability p of feeding the reference token instead of the prediction."
    )
    tf_schedule: ScheduleName = Field(
        "constant",
        description="Decay of p over updates (scheduled sampling, Bengio et al. 2015): constant, linear, "
        "inverse_sigmoid, a schedule registered with nmt.register_schedule, or an import path module:function "
        "(a function (step, train) -> p).",
    )
    decoder_loop: LoopName = Field(
        "sampled",
        description="The loop over target positions that feeds the decoder in training: sampled (one coin per "
        "sentence and position: the reference with probability p, else the previous argmax; at p = 1 nmt runs "
        "the same loop without coins), a loop registered with nmt.register_loop, or an import path "
        "module:function (a function (step, tgt_in, state, p) -> logits, run at every update).",
    )
    tf_min: float = Field(0.0, ge=0.0, le=1.0, description="linear: lowest p.")
    tf_decay_steps: int = Field(10000, ge=1, description="linear: updates to go from teacher_forcing to tf_min.")
    tf_k: float = Field(1000.0, ge=1.0, description="inverse_sigmoid: p = k / (k + exp(step / k)).")
    label_smoothing: float = Field(0.1, ge=0.0, lt=1.0, description="Label smoothing of the cross-entropy.")
    coverage_loss: float = Field(
        0.0,
        ge=0.0,
        description="lambda of See et al.'s (2017) coverage loss, lambda sum_i min(a_t,i, c_t,i) per target token "
        "(c_t the sum of earlier steps' weights): penalizes attending again where attention has been; 1 in "
        "the paper, 0 = off.  Added to the training loss only (validation loss and BLEU are unchanged).",
    )
    max_nonfinite: int = Field(10, ge=1, description="Stop after this many non-finite losses in a row.")

    @field_validator("select")
    @classmethod
    def _select_rule(cls, value: str) -> str:
        if not re.fullmatch(SELECT_PATTERN, value):
            raise ValueError(
                f"train.select={value[:40]}: give best, average_last_N or on_valid_last_N (N: checkpoints averaged)"
            )
        return value

    @model_validator(mode="after")
    def _check_schedule_and_select(self) -> TrainConfig:
        if self.schedule_clock == "time" and (self.schedule != "cosine" or self.time_budget_min is None):
            raise ValueError(
                f"train.schedule_clock=time decays cosine over train.time_budget_min: set both (schedule is "
                f"{self.schedule}, time_budget_min {self.time_budget_min})"
            )
        rule, last = select_rule(self.select)
        if rule != "best" and last < 2:
            raise ValueError(
                f"train.select={self.select}: an average of one checkpoint is that checkpoint; N is 2 or more"
            )
        if last > self.keep_last:
            raise ValueError(
                f"train.select={self.select} averages the last {last} validated checkpoints: set train.keep_last "
                f"to {last} or more (it is {self.keep_last})"
            )
        return self
