"""The ``model`` section of the experiment config: the RNN encoder-decoder, its attention and
self-attention blocks, and the Transformer, one pydantic model each.

Every option has its default and a one-line description here; the attention design space the
attention options draw from is data in :mod:`nmt.config.attention_space`.  The other sections
are in :mod:`nmt.config.sections` and :mod:`nmt.config.train_section`; :mod:`nmt.config` re-exports them all.
"""

from __future__ import annotations

from typing import Any, Literal, Optional, Union

from pydantic import Field, field_validator, model_validator

from nmt.config.attention_space import (
    ATTENTION_ENERGIES,
    ATTENTION_MAPS,
    ATTENTION_TYPES,
    ATTENTIONS,
    AXES,
    attention_point,
    attention_problem,
    energy_params,
    energy_traits,
)
from nmt.config.combines import COMBINE_NAMES
from nmt.config.named_code import AttentionType, CombineName, EnergyName, NormalizationName
from nmt.config.section import Section, _model_option
from nmt.config.steps import normalize_field, params_field
from nmt.config.transformer_section import TransformerConfig
from nmt.util.errors import short_repr


def _stateful_here(energy: str, option: str) -> str:
    """Why a stateful energy cannot run where ``option`` puts it."""
    return (
        f"{option}={energy} carries a state across decoder steps (one query per step), so it runs only in the "
        "RNN decoder's cross-attention (model.attention); choose a stateless energy here"
    )


class AttentionConfig(Section):
    """Cross-attention: a preset or a custom point of the design space, and the decoder style."""

    type: AttentionType = Field(
        "bahdanau",
        description="Preset (" + ", ".join(ATTENTION_TYPES) + ") that fills every axis left null "
        "(an axis you set overrides it); custom: no preset, energy required, other axes identity/false/1; "
        "or a registered energy's name or import path (module:Class, the module found beside the config "
        "or on PYTHONPATH): custom with that energy and the axes its class's defaults name "
        "(docs/adding_an_attention.md).",
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
    energy: Optional[EnergyName] = Field(
        None,
        description="Energy: " + ", ".join(ATTENTION_ENERGIES) + ", a registered energy's name or an "
        "import path module:Class; null = the preset's.",
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
    normalize: NormalizationName = normalize_field()
    params: dict[str, Any] = params_field()
    combine: CombineName = Field(
        "tanh",
        description="How the decoder makes its attentional output from the style's parts ([s; c; e] bahdanau, "
        "[c; h] luong): " + ", ".join(COMBINE_NAMES) + " (tanh(W x + b); maxout of pool 2, Bahdanau et al. "
        "2015's readout; gate: sigmoid(W_g x) * (W_i x), Huang et al. 2019), a registered combine's name or an "
        "import path module:Class.",
    )

    def axes(self) -> dict[str, Any]:
        """The resolved point: energy, query_map, key_map, value_map, out_proj, heads."""
        base = attention_point(self.type)
        return {k: base[k] if getattr(self, k) is None else getattr(self, k) for k in AXES}

    @property
    def resolved_style(self) -> str:
        if self.style != "auto":
            return self.style
        return str(attention_point(self.type)["style"])


class SelfAttentionConfig(Section):
    """The axes of a self-attention block; defaults are Transformer-like (scaled dot, QKV, W_o)."""

    energy: EnergyName = Field(
        "scaled_dot",
        description="Energy: " + ", ".join(ATTENTION_ENERGIES) + ", a registered energy's name or an import path.",
    )

    query_map: Literal[ATTENTION_MAPS] = Field("linear", description="Query map: identity or linear.")  # type: ignore[valid-type]
    key_map: Literal[ATTENTION_MAPS] = Field("linear", description="Key map: identity or linear.")  # type: ignore[valid-type]
    value_map: Literal[ATTENTION_MAPS] = Field("linear", description="Value map: identity or linear.")  # type: ignore[valid-type]
    out_proj: bool = Field(True, description="Project pooled heads back to the state size.")
    heads: int = Field(1, ge=1, description="Heads splitting mapped queries, keys and values.")
    dim: Optional[int] = Field(None, ge=1, description="Size of linearly mapped vectors; null = the state size.")
    max_len: int = Field(256, ge=1, description="location: positions W_a scores; later ones get no weight.")
    normalize: NormalizationName = normalize_field()
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
                + ", ".join(ATTENTIONS.names())
                + ")"
            )
        axes = att.axes()
        origin = "" if att.type == "custom" else f"model.attention.type={att.type}: "
        note = f" (model.bidirectional={str(self.bidirectional).lower()}"
        note += f", model.enc_hidden_size={self.enc_hidden_size}" if self.enc_hidden_size else ""
        note += f", model.attention.dim={att.dim})" if att.dim else ")"
        # the fix the named variants use (nmt variants): a bidirectional encoder of half the size
        half = self.bidirectional and not self.enc_hidden_size and K == 2 * H
        size_fix = "model.enc_hidden_size=half (as the variants do)" if half else ""
        sides = ("decoder", "encoder")
        problem = attention_problem(axes, H, K, att.dim, _model_option("attention"), sides, note, size_fix=size_fix)
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
            if on and energy_traits(sa.energy).stateful:
                raise ValueError(_stateful_here(sa.energy, f"model.{name}.energy"))
        # the energies' own options (Params), filled in; a frozen section takes them as validated
        object.__setattr__(att, "params", energy_params(axes["energy"], att.params, "model.attention.params"))
        t = self.transformer
        object.__setattr__(t, "params", energy_params(t.energy, t.params, "model.transformer.params"))
        if self.arch == "transformer" and energy_traits(t.energy).stateful:
            raise ValueError(_stateful_here(t.energy, "model.transformer.energy"))
        if self.arch == "transformer" and t.energy != "scaled_dot":  # the qkv point, at d_model
            qkv = dict(energy=t.energy, query_map="linear", key_map="linear", value_map="linear", heads=t.heads)
            problem = attention_problem(
                {**qkv, "out_proj": True}, t.d_model, t.d_model, t.d_model, _model_option("transformer")
            )
            if problem:
                raise ValueError(problem)
        return self
