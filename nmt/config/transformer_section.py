"""The ``model.transformer`` section: the Transformer's sizes and options, and the steps its attentions
are built from (energy, normalization, the energy's own options).  Re-exported by
:mod:`nmt.config.model_sections`, whose ``ModelConfig`` holds it.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field, model_validator

from nmt.config.named_code import EnergyName, NormalizationName
from nmt.config.section import Section
from nmt.config.steps import normalize_field, params_field


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
    attention_dropout: float = Field(
        0.0,
        ge=0.0,
        lt=1.0,
        description="Dropout on the attention weights of every self- and cross-attention, in training only "
        "(model.dropout acts on the sublayer outputs).",
    )
    share_embeddings: bool = Field(
        False, description="One embedding table for source and target (needs data.joint_vocab)."
    )
    energy: EnergyName = Field(
        "scaled_dot",
        description="Energy of every self- and cross-attention (with linear query, key and value maps, "
        "heads and W_o): scaled_dot (Vaswani et al. 2017), another of nmt's, a registered energy's name "
        "or an import path module:Class.",
    )
    normalize: NormalizationName = normalize_field()
    params: dict[str, Any] = params_field()

    @model_validator(mode="after")
    def _check_heads(self) -> TransformerConfig:
        if self.d_model % self.heads:
            raise ValueError(
                f"model.transformer.heads={self.heads} does not divide model.transformer.d_model={self.d_model}"
            )
        return self
