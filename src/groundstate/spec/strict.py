"""The base of every spec model, and the discriminator their unions use."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict

JsonScalar = str | int | float | bool | None


class Strict(BaseModel):
    """Unknown fields are errors (a misspelt field must not be ignored); models are frozen."""

    model_config = ConfigDict(extra="forbid", frozen=True)


def one_key_of(options: tuple[str, ...]) -> Any:
    """A discriminator: the one key of *options* that a mapping has (None: none or several)."""

    def pick(value: Any) -> str | None:
        if isinstance(value, BaseModel):
            value = value.model_dump()
        if not isinstance(value, dict):
            return None
        found = [key for key in options if key in value]
        return found[0] if len(found) == 1 else None

    return pick
