"""nmt serve's naming of checkpoints, its limits and its error bodies, without a server."""

from __future__ import annotations

from pathlib import Path

import pytest

from nmt.serve.app import validation_errors
from nmt.serve.limits import Limits
from nmt.serve.models import default_name, parse_checkpoint_arg
from nmt.serve.server import is_loopback
from nmt.util.errors import UserError


@pytest.mark.parametrize(
    "arg, name, path",
    [
        ("runs/x/checkpoints/best.pt", "x", "runs/x/checkpoints/best.pt"),
        ("models/A.pt", "A", "models/A.pt"),
        ("qkv=runs/y/checkpoints/last.pt", "qkv", "runs/y/checkpoints/last.pt"),
    ],
)
def test_checkpoint_names(arg: str, name: str, path: str) -> None:
    given, parsed = parse_checkpoint_arg(arg)
    assert parsed == Path(path) and (given or default_name(parsed)) == name


@pytest.mark.parametrize("field", ["max_sentences", "max_beam", "max_request_bytes", "batch_sentences"])
def test_limits_below_one_are_refused(field: str) -> None:
    with pytest.raises(UserError, match=field.replace("_", "-")):
        Limits(**{field: 0})


def test_an_output_limit_beyond_what_any_search_writes_is_refused() -> None:
    from nmt.config.sections import MAX_OUTPUT_TOKENS

    assert Limits(max_output_tokens=MAX_OUTPUT_TOKENS).max_output_tokens == MAX_OUTPUT_TOKENS
    with pytest.raises(UserError, match=f"max-output-tokens {MAX_OUTPUT_TOKENS + 1}: at most {MAX_OUTPUT_TOKENS}"):
        Limits(max_output_tokens=MAX_OUTPUT_TOKENS + 1)


def test_validation_errors_do_not_echo_the_input() -> None:
    errors = [
        {
            "type": "string_too_long",
            "loc": ("body", "text", 0),
            "msg": "too long",
            "input": "\ud800" * 9,
            "ctx": {"max_length": 3},
        }
    ]
    message, detail = validation_errors(errors)
    assert message == "text.0: too long"
    assert detail == [{"type": "string_too_long", "loc": ["body", "text", "0"], "msg": "too long"}]
    assert (
        validation_errors([{"type": "json_invalid", "loc": ("body", 0), "msg": "x"}])[0]
        == "the request body is not valid JSON"
    )


@pytest.mark.parametrize(
    "host, loopback",
    [
        ("127.0.0.1", True),
        ("127.8.0.1", True),
        ("::1", True),
        ("localhost", True),
        ("0.0.0.0", False),
        ("10.1.2.3", False),
        ("example.org", False),
    ],
)
def test_loopback_hosts(host: str, loopback: bool) -> None:
    assert is_loopback(host) is loopback
