"""Reading YAML files into models, with errors that name the file, the field and the reason."""

from __future__ import annotations

from pathlib import Path
from typing import Any, TypeVar

import yaml
from pydantic import BaseModel, ValidationError

from groundstate.errors import SpecError
from groundstate.spec.constraints import CONSTRAINT_KINDS

M = TypeVar("M", bound=BaseModel)


def read_yaml(path: Path) -> Any:
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise SpecError(path, None, "file not found") from None
    except OSError as exc:
        raise SpecError(path, None, f"cannot read: {exc.strerror}") from exc
    try:
        return yaml.safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" at line {mark.line + 1}" if mark is not None else ""
        problem = getattr(exc, "problem", None) or "not valid YAML"
        raise SpecError(path, None, f"invalid YAML{where}: {problem}") from None


def load_model(path: Path, model: type[M], *, data: Any = None) -> M:
    """Validate YAML (read from *path* unless *data* is given) as *model*."""
    if data is None:
        data = read_yaml(path)
    if not isinstance(data, dict):
        raise SpecError(path, None, f"expected a mapping of fields, found {type(data).__name__}")
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        raise _spec_error(path, exc) from None


def _spec_error(path: Path, exc: ValidationError) -> SpecError:
    first = exc.errors()[0]
    field = _field_path(first["loc"])
    reason = first["msg"]
    if first["type"] == "extra_forbidden":
        reason = "unknown field"
    elif first["type"] == "missing":
        reason = "required field is missing"
    more = exc.error_count() - 1
    if more:
        reason += f" (and {more} more problem{'s' if more > 1 else ''})"
    return SpecError(path, field or None, reason)


_TAGS = frozenset({*CONSTRAINT_KINDS, "sql", "state_diff", "check"})


def _field_path(loc: tuple[int | str, ...]) -> str:
    text = ""
    for i, part in enumerate(loc):
        if isinstance(part, int):
            text += f"[{part}]"
        elif part in _TAGS and i > 0 and isinstance(loc[i - 1], int) and i + 1 < len(loc):
            continue  # a union tag repeats the field that follows; keep the path readable
        else:
            text += f".{part}" if text else str(part)
    return text
