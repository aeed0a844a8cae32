"""One imported attempt, whatever file it came from, and the verdict rules every reader shares.

Readers turn their format into :class:`ImportedRow` values; :mod:`groundstate.importers.batch`
turns rows into a stored batch. A row keeps the attempt label exactly as the file gave it
(``0``, ``"trial-a"``); the attempt number it is stored under is decided for the whole file.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, Protocol, TypeVar

from groundstate.errors import SpecError
from groundstate.spec.files import parse_json

T = TypeVar("T")

TERMINAL_PREFIXES = (
    "success",
    "agent_failure",
    "harness_compatibility_failure",
    "environment_failure",
    "grader_failure",
)
REWARD_TOLERANCE = 1e-6
"""A reward within this of 1 is a success (τ²-bench's own tolerance)."""

ErrorPolicy = Literal["agent", "environment"]
"""Whose fault an attempt is that ended in an exception the file does not attribute
(τ-bench's ``info.error``, an Inspect sample's ``error``): ``agent`` (the default, as those
harnesses score it: a failure of the system) or ``environment`` (invalid, rerun)."""
ERROR_REASONS: dict[str, str] = {
    "agent": "agent_failure/crashed",
    "environment": "environment_failure/harness_error",
}


@dataclass(frozen=True, slots=True)
class ImportedRow:
    """One attempt read from another harness's results."""

    line: int
    """Where it was read: the file line (CSV, JSONL) or the 1-based position in the file's
    list of results (τ-bench, τ²-bench, Inspect samples)."""
    task_id: str
    label: int | str
    """The attempt label as the file gave it (τ-bench trials are 0-based, Inspect epochs
    1-based; text labels are kept as text)."""
    success: bool
    terminal_reason: str
    cost: float = 0.0
    latency: float = 0.0
    partial_score: float | None = None
    """A partial reward in [0, 1], kept beside ``success``, never instead of it."""
    retry: int = 0
    task_revision: int | None = None
    weight: float | None = None
    horizon: int | None = None
    slice_labels: tuple[str, ...] | None = None
    origin: dict[str, Any] | None = None
    """What the file said that has no field of ours (the original terminal value, an error
    message); stored in the run's ``infrastructure_status``."""
    mapped: str | None = None
    """How a foreign verdict or end was mapped, e.g. ``"max_steps -> agent_failure/step_limit"``
    (counted in the import report)."""
    unmapped: str | None = None
    """A value that could not be mapped (counted and printed as a warning)."""
    ignored: tuple[str, ...] = ()
    """Columns of this row that no field reads (named once in a warning)."""


class ResultSource(Protocol):
    """A results file in one format, read row by row."""

    @property
    def path(self) -> Path: ...

    @property
    def format(self) -> str:
        """The format's name (``csv``, ``tau2-bench`` ...), kept with the batch."""
        ...

    def rows(self) -> Iterator[ImportedRow]: ...

    def system(self) -> dict[str, Any]:
        """What the file says about the system that produced it (model, agent, harness)."""
        ...


@dataclass(frozen=True, slots=True)
class Verdict:
    """Success, terminal reason and partial score decided from a reward."""

    success: bool
    terminal_reason: str
    partial_score: float | None = field(default=None)


def reward_verdict(reward: float, failure: str = "agent_failure/incorrect_state") -> Verdict:
    """reward == 1 (within :data:`REWARD_TOLERANCE`) is a success; anything else a failure
    whose reward, when strictly between 0 and 1, is kept as the partial score."""
    if abs(reward - 1.0) <= REWARD_TOLERANCE:
        return Verdict(True, "success")
    partial = reward if 0.0 < reward < 1.0 else None
    return Verdict(False, failure, partial)


def reward_kind(reward: float) -> str:
    """``1``, ``0`` or ``partial``: a reward as the import report counts it."""
    if reward_verdict(reward).success:
        return "1"
    return "0" if reward == 0 else "partial"


def check_reason(where: str, reason: str, success: bool) -> str:
    """*reason* if it is in the taxonomy and agrees with *success*; else a named error."""
    if reason.split("/")[0] not in TERMINAL_PREFIXES:
        raise SpecError(where, "terminal_reason", f"unknown terminal reason {reason!r}")
    if (reason == "success") != success:
        raise SpecError(
            where, "terminal_reason", f"success={success} contradicts terminal_reason {reason!r}"
        )
    return reason


def as_number(value: Any) -> float:
    """A finite number (JSON number or its text); ``ValueError`` says why not."""
    if isinstance(value, bool):
        raise ValueError(f"must be a number, got {value!r}")
    try:
        result = float(value)
    except (TypeError, ValueError):
        raise ValueError(f"must be a number, got {value!r}") from None
    if not math.isfinite(result):
        raise ValueError(f"must be a finite number, got {value!r}")
    return result


def as_integer(value: Any) -> int:
    """An integer (JSON integer or its text); ``ValueError`` says why not."""
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    if isinstance(value, str):
        try:
            return int(value)
        except ValueError:
            pass
    raise ValueError(f"must be an integer, got {value!r}")


def as_label(value: Any) -> int | str:
    """An attempt label as given: an integer (``0``, ``"3"``) or a non-empty text label."""
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    if isinstance(value, str) and value.strip():
        text = value.strip()
        try:
            return int(text)
        except ValueError:
            return text
    raise ValueError(f"must be an integer or a text label, got {value!r}")


def checked(where: str, name: str, parse: Callable[[Any], T], value: Any) -> T:
    """``parse(value)``, its ``ValueError`` turned into an error naming *where* and *name*."""
    try:
        return parse(value)
    except ValueError as exc:
        raise SpecError(where, name, str(exc)) from None


def number(where: str, name: str, value: Any) -> float:
    return checked(where, name, as_number, value)


def integer(where: str, name: str, value: Any) -> int:
    return checked(where, name, as_integer, value)


def read_json(path: Path) -> Any:
    """A whole JSON file, or one named error (unreadable, not UTF-8, not JSON)."""
    try:
        text = path.read_text(encoding="utf-8-sig")  # a byte-order mark is not JSON
    except OSError as exc:
        raise SpecError(path, None, f"cannot read: {exc.strerror}") from None
    except UnicodeDecodeError:
        raise SpecError(path, None, "not UTF-8 text") from None
    return parse_json(path, text, finite=False)  # numbers are checked field by field


def mapping(where: str, name: str, value: Any) -> dict[str, Any]:
    """*value* if it is a JSON object (``None`` as empty), else a named error."""
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise SpecError(where, name, f"must be an object, got {type(value).__name__}")
    return value


def task_key(where: str, name: str, value: Any) -> str:
    """A task id from a foreign file: text or an integer, kept as text."""
    if isinstance(value, bool) or not isinstance(value, str | int) or str(value) == "":
        raise SpecError(where, name, f"required: a task id (text or integer), got {value!r}")
    return str(value)
