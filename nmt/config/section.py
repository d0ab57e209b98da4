"""The base of every config section, and how an error names a model option.

Kept apart so the section modules (:mod:`nmt.config.sections`, :mod:`nmt.config.model_sections`)
share it without importing each other.
"""

from __future__ import annotations

from collections.abc import Callable

from pydantic import BaseModel, ConfigDict


def _model_option(subsection: str) -> Callable[[str], str]:
    """How an error names an option of ``model.<subsection>``: by its full YAML path."""
    return lambda key: f"model.{subsection}.{key}"


class Section(BaseModel):
    """Base of every config section: unknown keys are errors, values are immutable."""

    model_config = ConfigDict(extra="forbid", frozen=True, validate_default=True)
