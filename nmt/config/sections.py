"""The ``data``, ``train`` and ``decode`` sections of the experiment config, one model each.

Every option has its default and a one-line description here (the ``model`` section's in
:mod:`nmt.config.model_sections`), and nowhere else: the data layer's
cleaning and SentencePiece settings, for one, come from :class:`DataConfig`.  Each
section validates its own fields and the combinations inside it; checks across sections,
loading and overrides live in :mod:`nmt.config`.
"""

from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path
from typing import Annotated, Any, Literal, Optional

from pydantic import Field, field_validator, model_validator

from nmt.config.named_code import LoopName, ScheduleName
from nmt.config.section import Section

NORMALIZATIONS = ("nfc", "nfkc", "none")
"""Valid ``data.normalization``: Unicode composed form, compatibility form, or neither."""

SPM_MODEL_TYPES = ("unigram", "bpe")
"""Valid ``data.spm_type``: the SentencePiece model types we train."""


class DataConfig(Section):
    """Corpus source, the cleaning of its training split, and SentencePiece training."""

    corpus: Literal["synthetic", "multi30k", "europarl", "tatoeba", "hub", "local"] = Field(
        "synthetic",
        description="Corpus source: embedded synthetic en-de, Multi30k, the Europarl sample (NLTK's ComTrans, "
        "de-en), Tatoeba de-en (manythings.org), a Hugging Face hub set, or local files.",
    )
    src: str = Field("en", min_length=2, description="Source language code.")
    tgt: str = Field("de", min_length=2, description="Target language code.")
    root: str = Field("data", description="Folder under which prepared corpora live (data/<corpus>/<src>-<tgt>/).")
    mirror: Optional[str] = Field(
        None,
        description="Local folder standing in for the download of Multi30k, Europarl or Tatoeba (else "
        "$NMT_DATA_MIRROR): the upstream file names (Europarl: comtrans.g.gz and comtrans.e.gz, or comtrans.zip; "
        "Tatoeba: deu-eng.zip).",
    )
    gold_alignments: Optional[str] = Field(
        None,
        description="corpus europarl: the RWTH gold alignments (DeEnGoldAlignment.tar.gz or its folder; null: "
        "<root>/alignments/, where nmt data fetch-alignments puts it); every pair sharing a German or English "
        "line with them is removed before the split, and counted.",
    )
    split_seed: int = Field(
        1, description="corpus europarl or tatoeba: seed of the hash that splits pairs into train, valid and test."
    )
    synthetic_sizes: dict[str, Annotated[int, Field(ge=0)]] = Field(
        {"train": 40000, "valid": 500, "test": 1000}, description="Pairs per split for the synthetic corpus."
    )
    synthetic_seed: int = Field(1, description="Seed of the synthetic corpus generator.")
    synthetic_min_words: int = Field(3, ge=3, description="Shortest synthetic English sentence, in words.")
    synthetic_max_words: int = Field(40, ge=3, description="Longest synthetic English sentence, in words.")
    hub_name: Optional[str] = Field(None, description="Hugging Face dataset name (corpus: hub), e.g. wmt14.")
    hub_config: Optional[str] = Field(None, description="Hugging Face dataset configuration, e.g. de-en.")
    hub_splits: dict[str, str] = Field(
        {"train": "train", "valid": "validation", "test": "test"}, description="Our split name -> hub split name."
    )
    local_files: dict[str, list[str]] = Field(
        {}, description="corpus: local; split -> [src_file, tgt_file] or [tsv_or_jsonl_file]."
    )
    normalization: Literal[NORMALIZATIONS] = Field(  # type: ignore[valid-type]
        "nfc", description="Unicode normalization of all splits."
    )
    min_len: int = Field(1, ge=1, description="Training pairs with fewer words on a side are dropped.")
    max_len: int = Field(100, ge=1, description="Training pairs with more words on a side are dropped.")
    max_ratio: float = Field(
        9.0, ge=1.0, description="Training pairs whose word-length ratio exceeds this are dropped (Moses default 9)."
    )
    join_captions: int = Field(
        1,
        ge=1,
        le=20,
        description="Join each split's consecutive pairs in groups of 1, 2, ..., N pairs in turn (N = this): "
        "long pairs made of short ones, for BLEU by length beyond the captions' 30 words (the length lab); "
        "not natural long sentences. 1 = off; N > 1 prepares into <root>/<corpus>/<src>-<tgt>-joinN-maxL/ "
        "(L = data.max_len, so the paper's two training caps keep a folder each).",
    )
    vocab_size: int = Field(8000, ge=16, description="SentencePiece vocabulary size (per model).")
    spm_type: Literal[SPM_MODEL_TYPES] = Field(  # type: ignore[valid-type]
        "unigram", description="SentencePiece model type."
    )
    joint_vocab: bool = Field(True, description="One SentencePiece model for both languages (else one per side).")
    character_coverage: float = Field(1.0, gt=0.0, le=1.0, description="SentencePiece character coverage.")
    input_sentence_size: int = Field(1_000_000, ge=1, description="Most sentences SentencePiece trains on.")

    @property
    def pair(self) -> str:
        return f"{self.src}-{self.tgt}"

    @property
    def prepared_dir(self) -> Path:
        """``<root>/<corpus>/<src>-<tgt>``; for local files one folder further, named after the
        files (:meth:`local_key`), so two local corpora of one pair never replace each other.
        Joined captions go to ``<src>-<tgt>-joinN-maxL``: N captions at most per pair, training
        pairs of at most L words, so runs trained with two caps (Bahdanau et al. 2015's 30 and 50
        words) can be prepared side by side and trained at once."""
        joined = f"-join{self.join_captions}-max{self.max_len}" if self.join_captions > 1 else ""
        folder = Path(self.root) / self.corpus / (self.pair + joined)
        return folder / self.local_key() if self.corpus == "local" else folder

    def local_key(self) -> str:
        """Ten hex digits of a hash of ``local_files`` as written (split -> paths, in split order)."""
        spec = json.dumps({split: list(files) for split, files in sorted(self.local_files.items())})
        return hashlib.sha256(spec.encode("utf-8")).hexdigest()[:10]


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


MAX_BEAM_ROWS = 4096
"""Most beam rows (sentences x beam, or sentences x samples) one search call may hold, on every
engine.

A row costs a few hundred KB on a large model (a 64-sentence batch with beam 1000,
64,000 rows, took 21 GB), so 4096 rows stay near 1-2 GB whatever the beam; the
defaults (64 sentences, beam 5: 320 rows) and beams up to 64 are never cut.
"""

MAX_OUTPUT_TOKENS = 1024
"""Most tokens (EOS included) any search writes for one sentence, whatever ``a * S + b`` says.

Every search clamps its per-sentence budget to this (:func:`nmt.decode.greedy.max_lengths`), so
no decode option can grow an output, and the state that grows with it, without bound:
the defaults (1.5 x a 256-token source + 10 = 394) stay well below it.
"""

MAX_LEN_A = 10.0
"""Largest ``decode.max_len_a``: an output ten times its source is already far past any translation."""

SAMPLING_ONLY = {"top_k": "--top-k", "top_p": "--top-p", "temperature": "--temperature"}
"""Decode options that only sampling reads, with their ``nmt translate`` flags."""


class DecodeConfig(Section):
    """Greedy and beam search settings, also applied at translation time."""

    beam: int = Field(5, ge=1, description="Beam size (1 = greedy).")
    length_penalty: float = Field(1.0, ge=0.0, description="GNMT length penalty alpha (0 = none).")
    max_len_a: float = Field(
        1.5,
        ge=0.0,
        le=MAX_LEN_A,
        description=f"Max output length = a * source length + b: a, at most {MAX_LEN_A:g} "
        f"(the length itself is at most {MAX_OUTPUT_TOKENS} tokens).",
    )
    max_len_b: int = Field(
        10,
        ge=1,
        le=MAX_OUTPUT_TOKENS,
        description=f"Max output length = a * source length + b: b, at most "
        f"{MAX_OUTPUT_TOKENS}; any longer a * S + b is cut to "
        f"{MAX_OUTPUT_TOKENS} tokens (EOS included).",
    )
    min_len: int = Field(1, ge=0, description="Least output tokens before EOS (1 = never an empty translation).")
    batch_size: int = Field(64, ge=1, description="Sentences decoded at once.")
    n_best: int = Field(1, ge=1, description="Hypotheses written per input (at most beam).")
    max_src_len: int = Field(256, ge=1, description="Longer inputs are cut to this many tokens, with a warning.")
    no_repeat_ngram: Optional[int] = Field(
        None, ge=1, description="Forbid repeating any n-gram of this many tokens in an output (null = off)."
    )
    coverage_penalty: float = Field(
        0.0, ge=0.0, description="GNMT coverage penalty beta for beam search (0 = off; Wu et al. 2016 use 0.2)."
    )
    sample: bool = Field(False, description="Draw each token instead of searching; n_best samples per input, beam 1.")
    top_k: int = Field(
        0, ge=0, description="Sampling: draw from the k most probable tokens only (0 = all; needs sample)."
    )
    top_p: float = Field(
        1.0,
        gt=0.0,
        le=1.0,
        description="Sampling: draw from the smallest set of tokens "
        "holding this probability (nucleus; 1 = all; needs sample).",
    )
    temperature: float = Field(
        1.0, gt=0.0, description="Sampling: divide the logits by this (<1 sharper, >1 flatter; needs sample)."
    )
    seed: int = Field(1, ge=0, description="Sampling: random seed, so the same command draws the same samples.")

    @model_validator(mode="after")
    def _check_search(self) -> DecodeConfig:
        if self.sample and self.beam > 1:
            raise ValueError(f"decode.sample draws samples instead of a beam: set decode.beam 1 (not {self.beam})")
        if self.coverage_penalty > 0 and (self.sample or self.beam == 1):
            raise ValueError("decode.coverage_penalty applies to beam search: needs decode.beam > 1 and no sampling")
        unused = [key for key in SAMPLING_ONLY if getattr(self, key) != type(self).model_fields[key].default]
        if unused and not self.sample:  # a value that would do nothing is refused, so nobody trusts it
            values = ", ".join(f"decode.{key}={getattr(self, key)}" for key in unused)
            flags = ", ".join(SAMPLING_ONLY[key] for key in unused)
            verb, them = ("applies", "it") if len(unused) == 1 else ("apply", "them")
            raise ValueError(
                f"{values} ({flags}) only {verb} when sampling: add --sample (decode.sample=true) or leave {them} out"
            )
        return self

    @classmethod
    def relax_saved(cls, raw: Any) -> None:
        """Make a saved decode section (a dict, changed in place) pass today's checks, so an older
        checkpoint or run still loads: sampling options saved without ``sample`` did nothing and
        return to their defaults; length limits above today's maxima come down to them."""
        if not isinstance(raw, dict):
            return
        if not raw.get("sample"):
            for key in SAMPLING_ONLY:
                raw.pop(key, None)
        for key, most in (("max_len_a", MAX_LEN_A), ("max_len_b", MAX_OUTPUT_TOKENS)):
            value = raw.get(key)
            if isinstance(value, (int, float)) and not isinstance(value, bool) and value > most:
                raw[key] = type(value)(most)
