"""The tool gateway: the one seam every agent tool call passes through.

``call`` runs a small pipeline: look the tool up, validate the arguments against its JSON
schema, execute it atomically in the environment, and append the call to the trace, with the
rows it changed (before and after) as the environment reports them. The
error class of a failed call says whose doing it was: invalid arguments, unknown tools,
permission denials and tool refusals are the agent's; an exception inside a tool
implementation (``SystemExit`` and ``KeyboardInterrupt`` included: tools run in the agent's
thread, where no signal arrives) is the environment's, and is raised as
:class:`EnvironmentFailure` after it is recorded.

Schema-valid arguments the tools cannot represent are refused as ``invalid_arguments`` before
the tool runs, so an agent cannot turn its own odd input into an environment failure (an
invalid attempt): integers outside SQLite's int64 and strings that are not encodable text
(a lone surrogate such as ``"\\ud800"``), and whatever the environment's kind says it cannot
store (its optional ``unrepresentable(args)``: a NUL character on PostgreSQL), and arguments
longer than :data:`MAX_ARGUMENT_CHARS` (a tool given more could run out of memory: a crash
the agent chose), and arguments nested deeper than :data:`MAX_ARGUMENT_DEPTH` (a trace holding
them could not be stored: the attempt's record lost, an invalid attempt of the agent's
making). A call that
runs past the attempt's time limit is interrupted by the environment and raises
:class:`TimeLimitReached` (the agent's doing).
"""

from __future__ import annotations

import hashlib
import json
import math
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from types import MappingProxyType
from typing import Any

import jsonschema

from groundstate.agents.base import ToolResult
from groundstate.alarms import CLOCK
from groundstate.capture import held
from groundstate.environments.base import CallEffects, Environment
from groundstate.errors import EnvironmentFailure, PermissionDenied, TimeLimitReached, ToolError
from groundstate.returned import stable_repr
from groundstate.tools import Tool, ToolContext
from groundstate.trace import ToolCallEvent

INT64 = (-(2**63), 2**63 - 1)
"""The integers a tool can store (SQLite's INTEGER); others are refused as invalid arguments."""
MAX_ARGUMENT_CHARS = 1_000_000
"""The most characters of JSON a call's arguments may have; more are refused as invalid
arguments before the tool runs. Within it, a tool that runs out of memory or stack (the
session leaves it ``episode.HEADROOM`` frames) is broken, as on any other exception: the
suite's ``environment_failure/tool_crash``. Past it the agent asked for more than any tool is
given: its own mistake, not an invalid attempt of its choosing."""

MAX_ARGUMENT_DEPTH = 64
"""The most levels of arrays and objects within each other a call's arguments may have
(``{"a": [1]}`` has two); deeper ones are refused as invalid arguments before the tool runs,
and the trace keeps them :func:`cut`. JSON and Python read far deeper (hundreds of levels),
but pydantic serialises a record only to about 250 levels, counted from the record's root:
a trace holding the agent's value as it came could not be stored, its evidence read, or
its attempt judged. Honest arguments are a few levels deep."""

SHOWN_CHARS = 1000
"""The most characters of arguments that are not JSON a trace keeps (their ``repr``), and
about the most of arguments over :data:`MAX_ARGUMENT_CHARS` (:func:`cut`)."""
CUT_DEPTH = 8
"""How deep :func:`cut` keeps containers of oversized arguments; deeper ones are a marker."""


@dataclass(frozen=True)
class NotJson:
    """Arguments an agent gave that JSON cannot hold (a set, NaN, bytes, a cycle, lists
    nested past Python's stack): refused as ``invalid_arguments`` naming what is not JSON and
    where, and kept in the trace as a bounded ``repr``, so an agent's odd value is a result it
    reads, never a crash of the harness nor a trace too large to store."""

    shown: str
    problem: str
    refusal: str
    """What the agent is told: nested past :data:`MAX_ARGUMENT_DEPTH` (however deep: a
    thousand levels, past what JSON's encoder reads, are said as 65 are), else not JSON."""

    @classmethod
    def of(cls, args: Any) -> NotJson:
        try:
            problem = _json_problem(args) or "not JSON"
            # a cycle is said as one; arrays nested past the stack are counted
            deep = _too_deep(args) if problem.endswith((NESTED, "not JSON")) else None
        except Exception:  # an agent's subclass whose own methods raise
            problem, deep = f"a {type(args).__name__!r} that cannot be read as JSON", None
        refusal = deep or f"arguments are not JSON: {problem}"
        return cls(cut(stable_repr(args)), problem, refusal)  # a bounded repr


@dataclass(frozen=True)
class Oversized:
    """JSON arguments over :data:`MAX_ARGUMENT_CHARS`, which are always refused (by the
    schema, the size check or as an unknown tool's): the trace keeps them :func:`cut`, and the
    refusal says their true size and SHA-256, so a record of a few kilobytes still tells what
    the agent sent without holding the megabytes it was refused for."""

    shown: Any
    size: int
    sha256: str

    @classmethod
    def of(cls, args: Any, tool: Tool | None, text: str | None = None) -> Oversized | None:
        """None unless JSON *args* are oversized; *text*: their JSON (:func:`_json_text`),
        when the caller has it already."""
        if text is None:
            try:
                text = json.dumps(args, ensure_ascii=False)
            except RecursionError:  # refused as nested too deeply to check
                return None
        if len(text) <= MAX_ARGUMENT_CHARS:
            return None
        digest = hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()
        declared = (tool.parameters.get("properties") if tool is not None else None) or {}
        return cls(cut(args, first=frozenset(declared)), len(text), digest)

    @property
    def problem(self) -> str:
        size, most = f"{self.size:,}", f"{MAX_ARGUMENT_CHARS:,}"
        return f"arguments: {size} characters of JSON, over the {most} a tool is given"

    def said(self, result: ToolResult) -> ToolResult:
        note = (
            f" (arguments of {self.size:,} characters of JSON, sha256 {self.sha256}; "
            f"the trace keeps them cut to about {SHOWN_CHARS:,})"
        )
        return replace(result, error=(result.error or "refused") + note)


def cut(
    value: Any,
    room: int = SHOWN_CHARS,
    depth: int = CUT_DEPTH,
    first: frozenset[str] = frozenset(),
) -> Any:
    """*value* (JSON) in about *room* characters, its shape kept: an object keeps its keys
    (the tool's declared parameters, *first*, then the others), smallest values first, while
    there is room, so a parameter beside a huge blob or many padding keys is kept whole and a
    constraint matching ``args`` still sees the attempt; a long string keeps its start and
    says its length, an array its first items and how many more."""
    if isinstance(value, str):
        return value if len(value) <= room else f"{value[:room]}... ({len(value):,} characters)"
    if not isinstance(value, dict | list):
        return value
    if depth == 0:
        return f"... ({_size(value):,} characters of JSON)"
    items = list(value.items()) if isinstance(value, dict) else list(enumerate(value))
    sizes = {key: _size(item) for key, item in items}
    if isinstance(value, dict):
        order = sorted(items, key=lambda pair: (pair[0] not in first, sizes[pair[0]]))
    else:
        order = items
    kept: dict[Any, Any] = {}
    left = room
    for key, item in order:
        if left <= 0:
            break
        kept[key] = cut(item, left, depth - 1)
        left -= min(sizes[key], _size(kept[key])) + len(str(key)) + 4
    more = f"... ({len(items) - len(kept):,} more)" if len(kept) < len(items) else None
    if isinstance(value, dict):
        shown = {key: kept[key] for key in value if key in kept}
        return shown if more is None else {**shown, more: None}
    return list(kept.values()) + ([] if more is None else [more])


NESTED = "nested too deeply"
"""How :func:`_json_problem` ends when a value is nested past what Python reads."""
TOO_DEEP = (
    f"arguments: nested too deeply (more than {MAX_ARGUMENT_DEPTH} levels of arrays and "
    "objects within each other, the most a tool is given)"
)
"""The refusal of arguments nested past :data:`MAX_ARGUMENT_DEPTH`, JSON or not."""


def _too_deep(args: Any, text: str | None = None) -> str | None:
    """:data:`TOO_DEEP` when *args* are nested past :data:`MAX_ARGUMENT_DEPTH`, else None.

    *text*: their JSON, when the caller has it. Each level opens a bracket, so JSON with no
    more opening brackets than the limit (those inside strings counted too: an upper bound)
    cannot be deeper, and is not walked again: what honest arguments are."""
    if text is not None and text.count("[") + text.count("{") <= MAX_ARGUMENT_DEPTH:
        return None
    return TOO_DEEP if _deeper_than(args, MAX_ARGUMENT_DEPTH) else None


_END = object()


def _deeper_than(value: Any, most: int) -> bool:
    """Whether *value* has arrays and objects (lists, tuples, dicts, as JSON's encoder reads
    them) nested more than *most* levels within each other: read depth first without
    recursion, so any depth is measured with *most* iterators held, and it stops at the first
    level past *most*. It reads at most :data:`MAX_ARGUMENT_CHARS` parts: a value of more
    (parts shared, a list holding one list twice, level after level) is refused anyway,
    as over that many characters of JSON or as not JSON."""
    stack, budget = [iter((value,))], MAX_ARGUMENT_CHARS
    while stack and budget:
        item = next(stack[-1], _END)
        if item is _END:
            stack.pop()
            continue
        budget -= 1  # each part is at least one character of JSON
        if isinstance(item, dict):
            parts: Any = dict.values(item)  # a subclass's own methods are not called
        elif isinstance(item, list):
            parts = list.__iter__(item)
        elif isinstance(item, tuple):
            parts = tuple.__iter__(item)
        else:
            continue
        if len(stack) > most:  # *item* is a container at level len(stack)
            return True
        stack.append(iter(parts))
    return False


_LONG_NUMBER = re.compile(r"[0-9]{19}")


def _plainly_representable(text: str | None) -> bool:
    """Whether JSON *text* (``ensure_ascii=False``) surely holds nothing
    :func:`unrepresentable` refuses, so the arguments need no walk: ASCII (a lone surrogate
    is written as is) and no run of 19 digits (an integer outside int64 has at least 19).
    False says only: walk them."""
    return text is not None and text.isascii() and _LONG_NUMBER.search(text) is None


def _bounded(text: str) -> str:
    """*text* in about :data:`SHOWN_CHARS`, its start and end kept: a schema's message quotes
    the value it refuses (the megabytes the agent sent) and ends with why."""
    if len(text) <= SHOWN_CHARS:
        return text
    half = SHOWN_CHARS // 2
    return f"{text[:half]}... ({len(text):,} characters) ...{text[-half:]}"


def _size(value: Any) -> int:
    return len(json.dumps(value, ensure_ascii=False))


class ToolGateway:
    def __init__(
        self,
        tools: dict[str, Tool],
        env: Environment,
        record: Callable[[ToolCallEvent], None],
        clock: Callable[[], float],
    ) -> None:
        self._tools = tools
        self._env = env
        self._record = record
        self._clock = clock

    def call(self, step: int, name: str, args: Any) -> ToolResult:
        started = CLOCK()
        effects = CallEffects()
        crash: BaseException | None = None
        text, refused = None, None
        shown: Any = None
        if not isinstance(args, NotJson):  # what a session passes is checked already
            text = _json_text(args)  # once: the JSON check and the size check's text
            args = NotJson.of(args) if text is None else args
        if isinstance(args, NotJson):
            refused, shown = args.refusal, args.shown  # bounded: storable
        elif (refused := _too_deep(args, text)) is not None:
            shown = cut(args)  # to CUT_DEPTH levels: storable
        else:
            shown = args
        tool = self._tools.get(name)
        oversized = None if refused is not None else Oversized.of(args, tool, text)
        try:
            result = self._lookup_and_validate(
                name, args, refused, oversized, text
            ) or self._execute(name, args, effects)
            if oversized is not None:  # refused (by the schema, if not by size): cut, said
                shown, result = oversized.shown, oversized.said(result)
        except _ToolCrashed as exc:
            crash = exc.cause
            result = ToolResult(ok=False, error=_describe(crash), error_class="environment_error")
        except TimeLimitReached as exc:  # interrupted at the attempt's deadline
            crash = exc
            result = ToolResult(ok=False, error=str(exc), error_class="tool_error")
        self._record(
            ToolCallEvent(
                step=step,
                tool=name,
                args=shown,
                ok=result.ok,
                output=result.output,
                error=result.error,
                error_class=result.error_class,
                duration_ms=(CLOCK() - started) * 1000,
                changed_tables=effects.changed_tables,
                denied=effects.denied,
                writes=effects.writes,
                at=self._clock(),
            )
        )
        if isinstance(crash, TimeLimitReached):
            raise crash
        if crash is not None:
            raise EnvironmentFailure(f"tool {name!r} crashed: {_describe(crash)}") from crash
        return result

    def _lookup_and_validate(
        self,
        name: str,
        args: Any,
        refused: str | None,
        oversized: Oversized | None,
        text: str | None,
    ) -> ToolResult | None:
        """The refusal of the call, or None when the tool may run; *refused*: why its
        arguments are refused before any check reads them (not JSON, nested too deeply);
        *text*: their JSON, when known."""
        tool = self._tools.get(name)
        if tool is None:
            return ToolResult(ok=False, error=f"unknown tool {name!r}", error_class="unknown_tool")
        if refused is not None:
            return _invalid(refused)
        try:
            return self._validate(tool, args, oversized, text)
        except RecursionError:  # JSON, yet deeper than the checks (Python) can walk
            return _invalid("arguments: nested too deeply to check")

    def _validate(
        self, tool: Tool, args: Any, oversized: Oversized | None, text: str | None
    ) -> ToolResult | None:
        if not isinstance(args, dict):
            return _invalid(f"arguments must be an object, got {type(args).__name__}")
        check = _argument_check(tool.parameters)
        errors = [] if check.plainly_valid(args) else check.errors(args)
        if errors:
            where = "/".join(str(p) for p in errors[0].absolute_path) or "arguments"
            return _invalid(f"{where}: {_bounded(errors[0].message)}")
        too_large = None if oversized is None else oversized.problem
        plain = _plainly_representable(text)  # most arguments: no walk
        problem = (None if plain else unrepresentable(args)) or too_large
        problem = problem or self._kind_refuses(args)
        return None if problem is None else _invalid(problem)

    def _kind_refuses(self, args: dict[str, Any]) -> str | None:
        """What the environment's kind cannot store (its optional ``unrepresentable``, e.g.
        PostgreSQL's text holds no NUL character), refused like the int64 range."""
        check = getattr(self._env, "unrepresentable", None)
        return None if check is None else check(args)

    def _execute(self, name: str, args: dict[str, Any], effects: CallEffects) -> ToolResult:
        """Run the tool in one transaction; fill *effects* with what it changed or was denied."""
        tx = CallEffects()
        try:
            with self._env.tool_transaction() as tx, held():  # prints stay with the attempt
                output = self._tools[name].fn(ToolContext(self._env), **args)
                if not _is_json(output):  # a broken tool: its writes are rolled back
                    raise TypeError(f"{name} returned {_not_json(output)}, which is not JSON")
        except PermissionDenied as exc:
            return _denied(str(exc))
        except TimeLimitReached:
            raise
        except BaseException as exc:
            # Something was denied, and the tool made the denial an error of its own (``except
            # sqlite3.Error: raise ToolError(...)``, or a crash on the rows it did not get):
            # still the agent's denied call. As a tool_error, ``on_prohibited_action: end``
            # did not stop it; as a crash, it was an invalid attempt of the agent's making.
            if tx.denied:
                return _denied(f"agent denied: {', '.join(tx.denied)}")
            if isinstance(exc, ToolError):
                return ToolResult(ok=False, error=str(exc), error_class="tool_error")
            # SystemExit, KeyboardInterrupt too: the tool's crash, not an exception the agent
            # may swallow
            raise _ToolCrashed(exc) from exc
        finally:  # the environment fills in the effects when the transaction ends
            effects.denied, effects.changed_tables = tx.denied, tx.changed_tables
            effects.writes = tx.writes
        return ToolResult(ok=True, output=output)


Predicate = Callable[[Any], bool]

_TYPES: Mapping[str, Predicate] = MappingProxyType(
    {
        "string": lambda v: isinstance(v, str),
        "integer": lambda v: isinstance(v, int) and not isinstance(v, bool),
        "number": lambda v: isinstance(v, int | float) and not isinstance(v, bool),
        "boolean": lambda v: isinstance(v, bool),
        "null": lambda v: v is None,
        "array": lambda v: isinstance(v, list),
        "object": lambda v: isinstance(v, dict),
    }
)
"""JSON Schema types, each accepting only values ``jsonschema`` accepts too (an integral
float such as ``3.0`` is left to it)."""

_ANNOTATIONS = frozenset({"title", "description", "default", "examples"})
"""Keywords that validate nothing."""


class _ArgumentCheck:
    """A tool's argument schema, checked two ways. ``jsonschema`` walks even a small schema
    in tens of microseconds per call; most tool schemas (what ``@tool`` derives from type
    hints: an object of typed, optional or listed properties) are checked directly instead,
    conservatively: :meth:`plainly_valid` says True only for arguments ``jsonschema`` accepts,
    and anything else (a schema beyond that subset, arguments it doubts) goes to
    ``jsonschema``, whose errors are the ones reported."""

    def __init__(self, schema: dict[str, Any]) -> None:
        self._schema = schema
        self._validator: jsonschema.Draft202012Validator | None = None
        self._direct = _object_check(schema)

    def plainly_valid(self, args: dict[str, Any]) -> bool:
        return self._direct is not None and self._direct(args)

    def errors(self, args: Any) -> list[jsonschema.ValidationError]:
        if self._validator is None:
            self._validator = jsonschema.Draft202012Validator(self._schema)
        return sorted(self._validator.iter_errors(args), key=str)


def _object_check(schema: dict[str, Any]) -> Predicate | None:
    """A direct check of *schema* (a tool's arguments), or None when it is not one we know."""
    known = {"type", "properties", "required", "additionalProperties"} | _ANNOTATIONS
    properties = schema.get("properties", {})
    required = schema.get("required", [])
    extra = schema.get("additionalProperties", True)
    if set(schema) - known or schema.get("type") != "object" or extra not in (True, False):
        return None
    if not isinstance(properties, dict) or not isinstance(required, list):
        return None
    checks = _all_checks(properties.values())
    if checks is None:
        return None
    by_name = dict(zip(properties, checks, strict=True))
    names = frozenset(properties)
    needed = tuple(required)

    def check(args: Any) -> bool:
        return (
            isinstance(args, dict)
            and all(name in args for name in needed)
            and (extra or names.issuperset(args))
            and all(by_name[k](v) for k, v in args.items() if k in by_name)
        )

    return check


def _value_check(schema: Any) -> Predicate | None:
    """A direct check of a property's *schema*: ``type``, ``items`` and ``anyOf`` of such, and
    ``enum`` of strings (a ``Literal``)."""
    if (
        not isinstance(schema, dict)
        or set(schema) - {"type", "items", "anyOf", "enum"} - _ANNOTATIONS
    ):
        return None
    parts: list[Predicate] = []
    if "enum" in schema:
        values = schema["enum"]
        if not isinstance(values, list) or not all(isinstance(v, str) for v in values):
            return None
        allowed = frozenset(values)
        parts.append(lambda v: isinstance(v, str) and v in allowed)
    if "type" in schema:
        kind = _TYPES.get(schema["type"]) if isinstance(schema["type"], str) else None
        if kind is None:
            return None
        parts.append(kind)
    if "items" in schema:
        item = _value_check(schema["items"])
        if item is None:
            return None
        parts.append(lambda v: not isinstance(v, list) or all(item(x) for x in v))
    if "anyOf" in schema:
        options = _all_checks(schema["anyOf"]) if schema["anyOf"] else None
        if options is None:
            return None
        parts.append(lambda v: any(option(v) for option in options))
    return lambda v: all(part(v) for part in parts)


def _all_checks(schemas: Any) -> list[Predicate] | None:
    """A direct check of each of *schemas*, or None when one has none."""
    checks = []
    for schema in schemas:
        check = _value_check(schema)
        if check is None:
            return None
        checks.append(check)
    return checks


_CHECKS: dict[int, tuple[dict[str, Any], _ArgumentCheck]] = {}
"""Argument checks by schema (its identity: a suite's tools keep theirs), built once."""


def _argument_check(schema: dict[str, Any]) -> _ArgumentCheck:
    known = _CHECKS.get(id(schema))
    if known is not None and known[0] is schema:
        return known[1]
    if len(_CHECKS) > 4096:  # suites loaded again and again: forget the old ones
        _CHECKS.clear()
    check = _ArgumentCheck(schema)
    _CHECKS[id(schema)] = (schema, check)
    return check


class _ToolCrashed(Exception):
    """Internal: a tool implementation raised something other than a ToolError."""

    def __init__(self, cause: BaseException) -> None:
        super().__init__(str(cause))
        self.cause = cause


def _invalid(message: str) -> ToolResult:
    return ToolResult(
        ok=False, error=f"invalid arguments: {message}", error_class="invalid_arguments"
    )


def _denied(what: str) -> ToolResult:
    return ToolResult(ok=False, error=f"permission denied: {what}", error_class="permission_denied")


def unrepresentable(value: Any, where: str = "arguments") -> str | None:
    """Why a tool cannot represent *value* (a JSON value), or None when it can."""
    if isinstance(value, bool) or value is None or isinstance(value, float):
        return None
    if isinstance(value, int):
        low, high = INT64
        return None if low <= value <= high else f"{where}: {value} is outside the 64-bit range"
    if isinstance(value, str):
        try:
            value.encode("utf-8")
        except UnicodeEncodeError as exc:
            return f"{where}: not encodable text ({exc.reason} at index {exc.start})"
        return None
    if isinstance(value, dict):
        items: list[tuple[str, Any]] = [(f"{where}/{key}", item) for key, item in value.items()]
        keys = [unrepresentable(key, f"{where} (a key)") for key in value]
        return next((k for k in keys if k), None) or _first(items)
    if isinstance(value, list | tuple):
        return _first([(f"{where}/{i}", item) for i, item in enumerate(value)])
    return None


def _first(items: list[tuple[str, Any]]) -> str | None:
    for path, item in items:
        problem = unrepresentable(item, path)
        if problem is not None:
            return problem
    return None


def _is_json(value: Any) -> bool:
    return _json_problem(value) is None


def _json_text(value: Any) -> str | None:
    """*value* as JSON text (as the size check counts it: ``ensure_ascii=False``), or None
    when it is not JSON (what :func:`_json_problem` says, then): one encoding for both."""
    try:
        return json.dumps(value, ensure_ascii=False, allow_nan=False)
    except (TypeError, ValueError, RecursionError):
        return None


def _json_problem(value: Any, root: str = "arguments") -> str | None:
    """None when *value* is JSON, else what is not (:func:`_not_json`). An agent chooses its
    arguments: whatever they hold (a set, NaN, a cycle, ten thousand nested lists) is said
    here, never raised from the gateway."""
    try:
        json.dumps(value, allow_nan=False)
    except (TypeError, ValueError):
        return _not_json(value, root)
    except RecursionError:
        return f"{type(value).__name__!r} {NESTED}"
    return None


def _not_json(value: Any, root: str = "output") -> str:
    """What in a tool's output (or an agent's arguments, *root*) JSON cannot hold, and where
    (``'dict' with a datetime at output.at``): the author of a tool that returns a row with a
    date in it needs the field."""
    if not isinstance(value, dict | list | tuple):
        return repr(value) if isinstance(value, float) else f"{type(value).__name__!r}"
    try:
        found = _not_json_part(value, root, frozenset())
    except RecursionError:
        found = f"values {NESTED}"
    return f"{type(value).__name__!r}" + (f" with {found}" if found else "")


def _not_json_part(value: Any, path: str, seen: frozenset[int]) -> str:
    if isinstance(value, str | bool | int) or value is None:
        return ""
    if isinstance(value, float):
        return "" if math.isfinite(value) else f"{value} at {path}"
    if not isinstance(value, dict | list | tuple):
        return f"a {type(value).__name__} at {path}"
    if id(value) in seen:
        return f"a reference to itself at {path}"
    seen = seen | {id(value)}
    items = value.items() if isinstance(value, dict) else enumerate(value)
    for key, item in items:
        if isinstance(value, dict) and not isinstance(key, str | int | float | bool | None):
            return f"a {type(key).__name__} key at {path}"
        part = f"{path}.{key}" if isinstance(value, dict) else f"{path}[{key}]"
        found = _not_json_part(item, part, seen)
        if found:
            return found
    return ""


def _describe(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {exc}"
