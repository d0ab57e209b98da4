"""The sections of the experiment config (``data``, ``model``, ``train``, ``decode``), one model each.

Every option has its default and a one-line description here, and nowhere else: the data
layer's cleaning and SentencePiece settings, for one, come from :class:`DataConfig`.  Each
section validates its own fields and the combinations inside it; checks across sections,
loading and overrides live in :mod:`nmt.config`.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any, Literal, Optional, Union

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from nmt.config.attention_space import (
    ATTENTION_ENERGIES,
    ATTENTION_MAPS,
    ATTENTION_PRESETS,
    ATTENTION_TYPES,
    AXES,
    CUSTOM_ATTENTION,
    attention_problem,
)
from nmt.util.errors import short_repr

NORMALIZATIONS = ("nfc", "nfkc", "none")
"""Valid ``data.normalization``: Unicode composed form, compatibility form, or neither."""

SPM_MODEL_TYPES = ("unigram", "bpe")
"""Valid ``data.spm_type``: the SentencePiece model types we train."""


def _model_option(subsection: str) -> Callable[[str], str]:
    """How an error names an option of ``model.<subsection>``: by its full YAML path."""
    return lambda key: f"model.{subsection}.{key}"


class Section(BaseModel):
    """Base of every config section: unknown keys are errors, values are immutable."""

    model_config = ConfigDict(extra="forbid", frozen=True, validate_default=True)


class DataConfig(Section):
    """Corpus source, the cleaning of its training split, and SentencePiece training."""

    corpus: Literal["synthetic", "multi30k", "hub", "local"] = Field(
        "synthetic",
        description="Corpus source: embedded synthetic en-de, Multi30k, a Hugging Face hub set, or local files.",
    )
    src: str = Field("en", min_length=2, description="Source language code.")
    tgt: str = Field("de", min_length=2, description="Target language code.")
    root: str = Field("data", description="Folder under which prepared corpora live (data/<corpus>/<src>-<tgt>/).")
    mirror: Optional[str] = Field(
        None, description="Local folder standing in for the Multi30k download URL (else $NMT_DATA_MIRROR)."
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
        return Path(self.root) / self.corpus / self.pair


class AttentionConfig(Section):
    """Cross-attention: a preset or a custom point of the design space, and the decoder style."""

    type: Literal[ATTENTION_TYPES + ("custom",)] = Field(  # type: ignore[valid-type]
        "bahdanau",
        description="Preset (" + ", ".join(ATTENTION_TYPES) + ") that fills every axis left null "
        "(an axis you set overrides it), or custom: no preset, energy required, other axes identity/false/1.",
    )
    style: Literal["auto", "bahdanau", "luong"] = Field(
        "auto",
        description="Decoder style; auto = the preset's (bahdanau for bahdanau/none, luong for the others and custom).",
    )
    input_feeding: bool = Field(True, description="Luong style: feed the previous attentional vector into the RNN.")
    scale_out_proj: bool = Field(
        True,
        description="qkv: learn the output projection as W_o'/sqrt(A_v), the same map but moved sqrt(A_v) times "
        "slower by Adam, so the context does not saturate tanh(W_c [c; h]) (docs/attention_diagnosis.md).",
    )
    out_proj_start: Literal["xavier", "scaled"] = Field(
        "xavier",
        description="With scale_out_proj, how W_o starts: xavier = as an ordinary Xavier-initialized map "
        "(W_o' = sqrt(A_v) x Xavier), so the context is used from the first update; scaled = "
        "W_o' Xavier, W_o sqrt(A_v) times smaller, measured to learn slower "
        "(docs/attention_diagnosis.md).",
    )
    scale_bilinear: bool = Field(
        True,
        description="luong_general (bilinear energy): learn W as W'/sqrt(A/heads), the same q^T W k but moved "
        "sqrt(A/heads) times slower by Adam, so the scores do not outrun the softmax (docs/attention_diagnosis.md).",
    )
    bilinear_start: Literal["xavier", "scaled"] = Field(
        "xavier",
        description="With scale_bilinear, how W starts: xavier = as an ordinary Xavier-initialized map "
        "(W' = sqrt(A/heads) x Xavier); scaled = W' Xavier, W that many times smaller, measured to learn "
        "slower (docs/attention_diagnosis.md).",
    )
    scale_gaussian: bool = Field(
        True,
        description="gaussian energy: learn the linear query and key maps as W'/(A/heads)^(1/4), starting as "
        "Xavier maps: the same -||W_q q - W_k k||^2/2, but its scores move sqrt(A/heads) times slower "
        "under Adam, so the attention does not freeze one-hot (docs/attention_diagnosis.md).",
    )
    learn_scale: bool = Field(
        True,
        description="dot and scaled_dot energies over identity query and key maps (luong_dot, scaled_dot): "
        "multiply the scores by a learned e^s, one s per head starting at 0, so the equation holds at "
        "the start and the softmax's sharpness is learned instead of pushing the RNN states into tanh "
        "saturation (docs/attention_diagnosis.md). A linear map can scale the scores itself, so qkv "
        "and custom points with one get no e^s.",
    )
    energy: Optional[Literal[ATTENTION_ENERGIES]] = Field(  # type: ignore[valid-type]
        None, description="Energy: " + ", ".join(ATTENTION_ENERGIES) + "; null = the preset's."
    )
    query_map: Optional[Literal[ATTENTION_MAPS]] = Field(  # type: ignore[valid-type]
        None, description="Query map: identity or linear (bias-free); null = the preset's."
    )
    key_map: Optional[Literal[ATTENTION_MAPS]] = Field(  # type: ignore[valid-type]
        None,
        description="Key map: identity or linear (bias-free, but carries the mlp's hidden bias); null = the preset's.",
    )
    value_map: Optional[Literal[ATTENTION_MAPS]] = Field(  # type: ignore[valid-type]
        None, description="Value map: identity or linear (with bias); null = the preset's."
    )
    out_proj: Optional[bool] = Field(
        None, description="Project pooled heads back to the encoder output size; null = the preset's."
    )
    heads: Optional[int] = Field(
        None, ge=1, description="Heads splitting mapped queries, keys and values; null = the preset's (1)."
    )
    dim: Optional[int] = Field(
        None, ge=1, description="Size of linearly mapped vectors; null = hidden_size (a lone query map: the key size)."
    )
    max_src_len: int = Field(
        256, ge=1, description="location: source positions W_a scores (must cover train.max_len, decode.max_src_len)."
    )

    def axes(self) -> dict[str, Any]:
        """The resolved point: energy, query_map, key_map, value_map, out_proj, heads."""
        base = ATTENTION_PRESETS.get(self.type, CUSTOM_ATTENTION)
        return {k: base[k] if getattr(self, k) is None else getattr(self, k) for k in AXES}

    @property
    def resolved_style(self) -> str:
        if self.style != "auto":
            return self.style
        return ATTENTION_PRESETS.get(self.type, CUSTOM_ATTENTION)["style"]


class SelfAttentionConfig(Section):
    """The axes of a self-attention block; defaults are Transformer-like (scaled dot, QKV, W_o)."""

    energy: Literal[ATTENTION_ENERGIES] = Field(  # type: ignore[valid-type]
        "scaled_dot", description="Energy: " + ", ".join(ATTENTION_ENERGIES) + "."
    )
    query_map: Literal[ATTENTION_MAPS] = Field("linear", description="Query map: identity or linear.")  # type: ignore[valid-type]
    key_map: Literal[ATTENTION_MAPS] = Field("linear", description="Key map: identity or linear.")  # type: ignore[valid-type]
    value_map: Literal[ATTENTION_MAPS] = Field("linear", description="Value map: identity or linear.")  # type: ignore[valid-type]
    out_proj: bool = Field(True, description="Project pooled heads back to the state size.")
    heads: int = Field(1, ge=1, description="Heads splitting mapped queries, keys and values.")
    dim: Optional[int] = Field(None, ge=1, description="Size of linearly mapped vectors; null = the state size.")
    max_len: int = Field(256, ge=1, description="location: positions W_a scores; later ones get no weight.")
    norm: Literal["post", "pre"] = Field(
        "pre",
        description="Layer norm placement: pre = x + a f(LayerNorm(x)) (Xiong et al. 2020), post = "
        "LayerNorm(x + a f(x)) (Vaswani et al. 2017; measured to slow learning, "
        "docs/attention_diagnosis.md).",
    )
    gate: bool = Field(
        True,
        description="Residual gate a learned from 0 (ReZero, Bachlechner et al. 2020): with norm pre the block "
        "starts as the identity, so adding it starts from the model without it; false: a = 1.",
    )

    def axes(self) -> dict[str, Any]:
        return {k: getattr(self, k) for k in AXES}


class EncoderSelfAttentionConfig(SelfAttentionConfig):
    layers: int = Field(
        0, ge=0, description="Residual self-attention blocks after the RNN encoder, padding masked (0 = none)."
    )


class DecoderSelfAttentionConfig(SelfAttentionConfig):
    enabled: bool = Field(
        False, description="Causal self-attention refining the decoder's query state over its past query states."
    )


class TransformerConfig(Section):
    """The Transformer (``model.arch: transformer``, Vaswani et al. 2017); these defaults are ``transformer_small``."""

    d_model: int = Field(256, ge=1, description="Model size: embeddings, every layer's input and output.")
    heads: int = Field(4, ge=1, description="Attention heads in every self- and cross-attention (must divide d_model).")
    ff_size: int = Field(1024, ge=1, description="Hidden size of the position-wise feed-forward layers.")
    enc_layers: int = Field(3, ge=1, description="Encoder layers (self-attention + feed-forward).")
    dec_layers: int = Field(
        3, ge=1, description="Decoder layers (causal self-attention + cross-attention + feed-forward)."
    )
    pre_norm: bool = Field(
        True,
        description="LayerNorm before each sublayer (x + f(LN(x)), final LN on top; "
        "Xiong et al. 2020); false = after (LN(x + f(x)), the original).",
    )
    positions: Literal["sinusoidal", "learned"] = Field(
        "sinusoidal",
        description="Position encodings added to the scaled embeddings: fixed sinusoids or a learned table.",
    )
    max_len: int = Field(512, ge=1, description="learned: positions in the table (later ones reuse the last row).")
    share_embeddings: bool = Field(
        False, description="One embedding table for source and target (needs data.joint_vocab)."
    )

    @model_validator(mode="after")
    def _check_heads(self) -> TransformerConfig:
        if self.d_model % self.heads:
            raise ValueError(
                f"model.transformer.heads={self.heads} does not divide model.transformer.d_model={self.d_model}"
            )
        return self


RNN_ONLY = (
    "cell",
    "emb_size",
    "hidden_size",
    "enc_hidden_size",
    "enc_layers",
    "dec_layers",
    "bidirectional",
    "init_state",
    "output_init",
    "attention",
    "enc_self_attention",
    "dec_self_attention",
)
"""``model`` options that only the RNN encoder-decoder reads; ``transformer`` is the Transformer's own."""


class ModelConfig(Section):
    """Encoder, decoder and their attention, built by :func:`nmt.model.build.build_model`."""

    arch: Literal["rnn", "transformer"] = Field(
        "rnn",
        description="rnn: RNN encoder-decoder with the attention below; transformer: no recurrence "
        "(model.transformer; RNN-only options must stay at their defaults).",
    )
    cell: Literal["gru", "lstm"] = Field("gru", description="Recurrent cell of encoder and decoder.")
    emb_size: int = Field(256, ge=1, description="Word embedding size (source and target).")
    hidden_size: int = Field(
        256,
        ge=1,
        description="Decoder RNN size; also the encoder's size per direction unless model.enc_hidden_size is set.",
    )
    enc_hidden_size: Union[int, Literal["half"], None] = Field(  # checked by _one_line_encoder_size
        None,
        description="Encoder RNN size per direction (>= 1); null = hidden_size; half = hidden_size/2, so a "
        "bidirectional encoder's outputs (the keys) have the decoder's size, which the dot "
        "energies (luong_dot, scaled_dot) need.",
    )
    enc_layers: int = Field(1, ge=1, description="Encoder RNN layers.")
    dec_layers: int = Field(1, ge=1, description="Decoder RNN layers.")
    bidirectional: bool = Field(True, description="Bidirectional encoder (keys/values then have 2 x the encoder size).")
    dropout: float = Field(0.2, ge=0.0, lt=1.0, description="Dropout between RNN layers and before the output layer.")
    emb_dropout: float = Field(0.1, ge=0.0, lt=1.0, description="Dropout on embeddings.")
    src_word_dropout: float = Field(
        0.0,
        ge=0.0,
        lt=1.0,
        description="Training only: each source token is read as <unk> with this probability "
        "(word dropout, Gal & Ghahramani 2016).",
    )
    tgt_word_dropout: float = Field(
        0.0,
        ge=0.0,
        lt=1.0,
        description="Training only: each reference token fed to the decoder is <unk> with "
        "this probability (word dropout; the loss still targets the real token).",
    )
    init_state: Literal["zero", "last", "bridge"] = Field(
        "bridge", description="Decoder start state: zeros, the encoder's final state, or a learned projection of it."
    )
    tie_embeddings: bool = Field(
        False, description="Share target embeddings and output projection (needs emb_size == hidden_size)."
    )
    output_init: Literal["embedding", "xavier"] = Field(
        "embedding",
        description="How the RNN decoder's untied output layer W_out (V x H) starts: embedding = normal with std H^-1/2, "
        "as a tied one starts; xavier = Xavier uniform, std sqrt(2/(H+V)), sqrt(2H/(H+V)) times the "
        "other (1/2 at V = 7H, 1/4 at H = 256, V = 8000), measured to drive Luong-style readouts into tanh saturation "
        "(docs/attention_diagnosis.md). Inert with tie_embeddings.",
    )
    attention: AttentionConfig = Field(default_factory=AttentionConfig, description="Cross-attention from the decoder.")
    enc_self_attention: EncoderSelfAttentionConfig = Field(
        default_factory=EncoderSelfAttentionConfig, description="Self-attention over the encoder outputs."
    )
    dec_self_attention: DecoderSelfAttentionConfig = Field(
        default_factory=DecoderSelfAttentionConfig, description="Causal self-attention in the decoder."
    )
    transformer: TransformerConfig = Field(
        default_factory=TransformerConfig, description="The Transformer's sizes and options (model.arch: transformer)."
    )

    @property
    def key_size(self) -> int:
        """Size of encoder outputs, which are the attention keys and values."""
        return self.enc_size * (2 if self.bidirectional else 1)

    @property
    def enc_size(self) -> int:
        """The encoder RNN's size per direction."""
        if self.enc_hidden_size == "half":
            return self.hidden_size // 2
        return self.hidden_size if self.enc_hidden_size is None else self.enc_hidden_size

    @property
    def output_size(self) -> int:
        """Size of the vector the output layer reads: a tied target embedding must have it."""
        return self.transformer.d_model if self.arch == "transformer" else self.hidden_size

    @model_validator(mode="after")
    def _check_arch(self) -> ModelConfig:
        """Options of the other architecture must stay at their defaults: they would be silently ignored."""
        if self.arch == "transformer":
            default = ModelConfig()
            given = [f"model.{k}" for k in RNN_ONLY if getattr(self, k) != getattr(default, k)]
            for section in ("attention", "enc_self_attention", "dec_self_attention"):
                if f"model.{section}" in given:  # name the nested options, e.g. model.attention.input_feeding
                    ours, base = getattr(self, section), getattr(default, section)
                    given.remove(f"model.{section}")
                    given += [
                        f"model.{section}.{k}" for k in type(ours).model_fields if getattr(ours, k) != getattr(base, k)
                    ]
            if given:
                verb = "applies" if len(given) == 1 else "apply"
                raise ValueError(
                    f"model.arch=transformer: {', '.join(given)} only {verb} to model.arch=rnn "
                    f"(the Transformer's options are under model.transformer)"
                )
        elif self.transformer != TransformerConfig():
            changed = [
                f"model.transformer.{k}"
                for k in TransformerConfig.model_fields
                if getattr(self.transformer, k) != getattr(TransformerConfig(), k)
            ]
            verb = "applies" if len(changed) == 1 else "apply"
            raise ValueError(f"model.arch=rnn: {', '.join(changed)} only {verb} to model.arch=transformer")
        return self

    @field_validator("enc_hidden_size", mode="before")
    @classmethod
    def _one_line_encoder_size(cls, value: Any) -> Any:
        """One message for a bad value, instead of one per member of the union."""
        if value is None or value == "half" or (isinstance(value, int) and not isinstance(value, bool) and value >= 1):
            return value
        raise ValueError(f"model.enc_hidden_size: expected a positive integer, half or null (got {short_repr(value)})")

    @model_validator(mode="after")
    def _check_encoder_size(self) -> ModelConfig:
        if self.enc_hidden_size == "half" and self.hidden_size % 2:
            raise ValueError(f"model.enc_hidden_size=half needs an even model.hidden_size (got {self.hidden_size})")
        if self.arch == "rnn" and self.init_state == "last" and self.enc_size != self.hidden_size:
            raise ValueError(
                f"model.init_state=last copies the encoder's final state, so the encoder's size per "
                f"direction ({self.enc_size}, model.enc_hidden_size={self.enc_hidden_size}) must equal "
                f"model.hidden_size ({self.hidden_size}); use init_state=bridge or zero"
            )
        return self

    @model_validator(mode="after")
    def _check_attention(self) -> ModelConfig:
        att, H, K = self.attention, self.hidden_size, self.key_size
        if att.type == "custom" and att.energy is None:
            raise ValueError(
                "model.attention.type=custom needs model.attention.energy (one of "
                + ", ".join(ATTENTION_ENERGIES)
                + ")"
            )
        axes = att.axes()
        origin = "" if att.type == "custom" else f"model.attention.type={att.type}: "
        note = f" (model.bidirectional={str(self.bidirectional).lower()}"
        note += f", model.enc_hidden_size={self.enc_hidden_size}" if self.enc_hidden_size else ""
        note += f", model.attention.dim={att.dim})" if att.dim else ")"
        problem = attention_problem(axes, H, K, att.dim, _model_option("attention"), ("decoder", "encoder"), note)
        if problem:
            raise ValueError(origin + problem)
        if axes["energy"] == "uniform" and att.style == "luong":
            raise ValueError(
                f"model.attention.style=luong needs an attention; model.attention.type={att.type} has energy=uniform"
            )
        for name, sa, size, on in (
            ("enc_self_attention", self.enc_self_attention, K, self.enc_self_attention.layers),
            ("dec_self_attention", self.dec_self_attention, H, self.dec_self_attention.enabled),
        ):
            problem = attention_problem(sa.axes(), size, size, sa.dim, _model_option(name), residual=True)
            if on and problem:
                raise ValueError(problem)
        return self


class TrainConfig(Section):
    """Optimization, batching, validation and stopping."""

    seed: int = Field(
        1,
        ge=0,
        lt=2**32,
        description="Seed for initialisation, batching, dropout and teacher "
        "forcing, in [0, 2^32) (the range numpy's generators take).",
    )
    device: Literal["auto", "cpu", "cuda"] = Field("auto", description="auto = CUDA when present, else CPU.")
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
    clip_grad_norm: float = Field(1.0, ge=0.0, description="Clip the gradient norm to this (0 = off).")
    accumulate: int = Field(1, ge=1, description="Batches whose gradients are summed per update.")
    max_tokens: Optional[int] = Field(
        4096, ge=1, description="Token budget per batch (padded cells); null to batch by sentences."
    )
    batch_size: Optional[int] = Field(None, ge=1, description="Sentences per batch when max_tokens is null.")
    max_len: int = Field(128, ge=2, description="Truncate training sentences to this many subword tokens.")
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
    max_steps: Optional[int] = Field(None, ge=1, description="Stop after this many updates.")
    time_budget_min: Optional[float] = Field(
        None, gt=0.0, description="Stop after this many minutes of wall-clock time."
    )
    metric: Literal["bleu", "chrf", "loss"] = Field(
        "bleu", description="Validation metric for best checkpoint, plateau and early stopping."
    )
    patience: Optional[int] = Field(None, ge=1, description="Early stopping: validations without improvement.")
    valid_every: int = Field(0, ge=0, description="Validate every N updates (0 = only at the end of each epoch).")
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
    log_every: int = Field(100, ge=1, description="Write a training line to metrics.jsonl every N updates.")
    tensorboard: bool = Field(
        True,
        description="Also write every metrics.jsonl event to RUN/tb/ for TensorBoard "
        "(scalars, validation sample and attention map; rank 0).",
    )
    teacher_forcing: float = Field(
        1.0, ge=0.0, le=1.0, description="Probability p of feeding the reference token instead of the prediction."
    )
    tf_schedule: Literal["constant", "linear", "inverse_sigmoid"] = Field(
        "constant", description="Decay of p over updates (scheduled sampling, Bengio et al. 2015)."
    )
    tf_min: float = Field(0.0, ge=0.0, le=1.0, description="linear: lowest p.")
    tf_decay_steps: int = Field(10000, ge=1, description="linear: updates to go from teacher_forcing to tf_min.")
    tf_k: float = Field(1000.0, ge=1.0, description="inverse_sigmoid: p = k / (k + exp(step / k)).")
    label_smoothing: float = Field(0.1, ge=0.0, lt=1.0, description="Label smoothing of the cross-entropy.")
    max_nonfinite: int = Field(10, ge=1, description="Stop after this many non-finite losses in a row.")


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
