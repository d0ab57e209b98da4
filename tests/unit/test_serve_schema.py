"""The request schema of POST /translate is strict: a boolean or a float is not an integer."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import ValidationError

from nmt.serve.limits import Limits
from nmt.serve.schema import request_model

Body = request_model(Limits())


@pytest.mark.parametrize("field", ["beam", "n_best", "max_len"])
@pytest.mark.parametrize("value", [True, False, 2.0, 2.5, "2"])
def test_an_integer_field_takes_only_integers(field: str, value: Any) -> None:
    with pytest.raises(ValidationError) as info:
        Body.model_validate({"text": ["a"], field: value})
    assert info.value.errors()[0]["loc"] == (field,) and info.value.errors()[0]["type"] == "int_type"


@pytest.mark.parametrize("value", [1, 0, "true", 1.0])
def test_attention_takes_only_booleans(value: Any) -> None:
    with pytest.raises(ValidationError, match="attention"):
        Body.model_validate({"text": ["a"], "attention": value})


def test_integers_and_booleans_are_still_taken_from_json() -> None:
    body = Body.model_validate_json('{"text": ["a"], "beam": 2, "n_best": 2, "max_len": 9, "attention": true}')
    assert (body.beam, body.n_best, body.max_len, body.attention) == (2, 2, 9, True)
