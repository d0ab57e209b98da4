"""The base of every config section, and how an error names a model option.

Kept apart so the section modules (:mod:`nmt.config.sections`, :mod:`nmt.config.model_sections`,
:mod:`nmt.config.train_section`) share it without importing each other.
"""

from __future__ import annotations

import typing
from collections.abc import Callable
from typing import Any

from pydantic import BaseModel, ConfigDict, ValidationInfo, field_validator
from pydantic_core import PydanticCustomError


def _model_option(subsection: str) -> Callable[[str], str]:
    """How an error names an option of ``model.<subsection>``: by its full YAML path."""
    return lambda key: f"model.{subsection}.{key}"


def admits_bool(annotation: Any) -> bool:
    """Whether a field of this type may hold ``true``/``false`` (a bool, or a type that says Any)."""
    if annotation is bool or annotation is Any:
        return True
    return any(admits_bool(arg) for arg in typing.get_args(annotation) if not isinstance(arg, (str, int)))


class Section(BaseModel):
    """Base of every config section: unknown keys are errors, values are immutable, numbers are
    finite (``1e999`` and ``.nan`` are refused) and a ``true`` is never read as the number 1."""

    model_config = ConfigDict(extra="forbid", frozen=True, validate_default=True, allow_inf_nan=False)

    @field_validator("*", mode="before")
    @classmethod
    def _no_bool_for_a_number(cls, value: Any, info: ValidationInfo) -> Any:
        """pydantic reads ``max_steps: true`` as 1; a yes/no where a number belongs is a mistake."""
        field = cls.model_fields.get(info.field_name or "")
        if isinstance(value, bool) and field is not None and not admits_bool(field.annotation):
            raise PydanticCustomError("bool_for_number", "a yes/no value where a number or a name belongs")
        return value
