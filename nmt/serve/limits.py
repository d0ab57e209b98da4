"""The bounds a server puts on every request, so one request cannot take the machine."""

from __future__ import annotations

from dataclasses import dataclass

from nmt.config.sections import MAX_OUTPUT_TOKENS
from nmt.util.errors import UserError

READ_TIMEOUT = 30.0
"""Seconds a client has to send a whole request (``nmt serve --read-timeout``); slower: 408 or closed."""


@dataclass(frozen=True)
class Limits:
    """Per-request bounds (``nmt serve --help`` names the option of each)."""

    max_request_bytes: int = 65_536  # body size; larger -> 413
    max_sentences: int = 32  # sentences per request
    max_chars: int = 1_000  # characters per sentence
    max_src_tokens: int = 128  # subword tokens per sentence, after SentencePiece
    max_beam: int = 16  # beam size (and n-best)
    max_output_tokens: int = 256  # the largest "max_len" a request may ask for (at most MAX_OUTPUT_TOKENS)
    max_attention_sentences: int = 4  # sentences per request with "attention": true (its weights are large)
    batch_sentences: int = 64  # most sentences merged into one search call
    batch_wait_ms: float = 5.0  # how long the worker waits for more requests to merge
    max_pending: int = 256  # queued requests before the server answers 503

    def __post_init__(self) -> None:
        for name, value in vars(self).items():
            if value < (0 if name == "batch_wait_ms" else 1):
                raise UserError(
                    f"--{name.replace('_', '-')} {value}: must be {'>= 0' if name == 'batch_wait_ms' else 'at least 1'}"
                )
        if self.max_output_tokens > MAX_OUTPUT_TOKENS:  # every search stops there anyway: say so, not cut silently
            raise UserError(
                f"--max-output-tokens {self.max_output_tokens}: at most {MAX_OUTPUT_TOKENS}, "
                f"the longest output any search writes"
            )
