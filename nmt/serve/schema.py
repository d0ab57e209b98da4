"""The JSON a client sends to ``POST /translate``, validated once by pydantic.

The bounds come from :class:`~nmt.serve.limits.Limits`, so the schema is built per server
(:func:`request_model`); a request outside them is a 422 with a JSON error, never a search.
Types are strict: ``true`` or ``2.0`` is not an integer and ``1`` or ``"true"`` not a boolean,
so a client's mistake is refused rather than read as something it did not write.
"""

from __future__ import annotations

from typing import Annotated, Optional

from pydantic import BaseModel, ConfigDict, Field, StringConstraints, create_model, model_validator

from nmt.serve.limits import Limits


class TranslateRequest(BaseModel):
    """The fields of a request; :func:`request_model` adds this server's bounds to them."""

    model_config = ConfigDict(extra="forbid", strict=True)  # no coercion: True is not beam 1

    text: list[str]
    beam: Optional[int] = None
    n_best: int = 1
    model: Optional[str] = None
    attention: bool = False
    max_len: Optional[int] = None

    @model_validator(mode="after")
    def _n_best_within_beam(self) -> TranslateRequest:
        if self.beam is not None and self.n_best > self.beam:
            raise ValueError(f"n_best {self.n_best} exceeds beam {self.beam}: a beam keeps at most beam hypotheses")
        return self


def request_model(limits: Limits) -> type[TranslateRequest]:
    """:class:`TranslateRequest` with this server's bounds on every field."""
    sentence = Annotated[str, StringConstraints(max_length=limits.max_chars)]
    return create_model(
        "TranslateRequest",
        __base__=TranslateRequest,
        text=(
            list[sentence],
            Field(min_length=1, max_length=limits.max_sentences, description="Sentences to translate."),
        ),
        beam=(
            Optional[int],
            Field(
                None, ge=1, le=limits.max_beam, description="Beam size (default: the model's decode.beam; 1 = greedy)."
            ),
        ),
        n_best=(int, Field(1, ge=1, le=limits.max_beam, description="Hypotheses per sentence, at most beam.")),
        model=(Optional[str], Field(None, max_length=200, description="A name from GET /models (default: the first).")),
        attention=(bool, Field(False, description="Also return the attention weights of the best hypothesis.")),
        max_len=(
            Optional[int],
            Field(
                None,
                ge=1,
                le=limits.max_output_tokens,
                description="Most output tokens, EOS included (default: the model's a * source length + b).",
            ),
        ),
    )
