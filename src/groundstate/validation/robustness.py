"""Tool robustness: property-based calls that must not crash a tool.

An agent may send any arguments its tools' JSON Schemas allow. A tool that raises anything but
:class:`~groundstate.errors.ToolError` or :class:`~groundstate.errors.PermissionDenied` on such
a call is an ``environment_failure/tool_crash``: an invalid attempt the agent caused at will.
So ``validate`` makes Hypothesis-generated calls from each tool's schema, through the real
gateway (which refuses what no tool can represent: integers outside int64, unencodable text),
each against a freshly reset environment, and reports a crash with the minimal failing call
Hypothesis shrinks it to.

The generator covers the schema subset :func:`groundstate.tools.tool` derives from type hints:
``type`` (string, integer, number, boolean, null, array, object), ``enum``, ``const``,
``anyOf``/``oneOf``, ``items``, ``properties``/``required``/``additionalProperties`` and
``$ref`` into ``$defs``. Runs are seeded (Hypothesis's ``derandomize``) and bounded: at most
:data:`CALLS_PER_TOOL` calls per tool, whose SQL is stopped at :data:`CALL_TIME_LIMIT` seconds
(Python code in a tool that never returns cannot be stopped from here).
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from contextlib import closing
from dataclasses import dataclass
from typing import Any

from groundstate.environments.base import Environment
from groundstate.errors import EnvironmentFailure, TimeLimitReached
from groundstate.gateway import INT64, ToolGateway
from groundstate.spec.canonical import canonical_json
from groundstate.tools import Tool
from groundstate.trace import ToolCallEvent

CALLS_PER_TOOL = 50
"""Generated calls per tool (before shrinking a crash)."""
TRICKY_TEXT = ("", " ", "'", '"', "\\", "%", "_", "\x00", "-1", "1e999", "null", "\u00e9" * 3)
"""Strings drawn more often than chance would: quoting, wildcards, NUL, numbers as text."""
CALL_TIME_LIMIT = 2.0
"""Seconds one generated call may run before it counts as a hang."""
_HANG = "still running after"


@dataclass(frozen=True)
class ToolCrash:
    """A tool that crashed on a schema-valid call, with the minimal call found."""

    tool: str
    args: dict[str, Any]
    error: str

    def describe(self) -> str:
        return f"{self.tool}({canonical_json(self.args)}) -> {self.error}"


def find_crash(tool: Tool, make_env: Callable[[], Environment]) -> ToolCrash | None:
    """The minimal schema-valid call that crashes *tool*, or None if none was found."""
    from hypothesis import HealthCheck, find, settings
    from hypothesis.errors import Flaky, NoSuchExample

    crashes: dict[str, str] = {}
    with closing(make_env()) as env:
        fresh = _Fresh(env)

        def crashes_the_tool(args: dict[str, Any]) -> bool:
            error = fresh.call(tool, args)
            if error is not None:
                crashes[canonical_json(args)] = error
            return error is not None

        limits = settings(
            max_examples=CALLS_PER_TOOL,
            derandomize=True,
            database=None,
            deadline=None,
            suppress_health_check=list(HealthCheck),
        )
        try:
            args = find(arguments(tool.parameters), crashes_the_tool, settings=limits)
        except NoSuchExample:
            return None
        except Flaky:  # a call crashed once and not when Hypothesis replayed it
            return _repeated(tool, fresh, crashes)
    return ToolCrash(tool.name, args, crashes.get(canonical_json(args), "crashed"))


def _repeated(tool: Tool, fresh: _Fresh, crashes: dict[str, str]) -> ToolCrash | None:
    """The crash to report when one did not happen again: an error the tool raised is its
    own even if it comes and goes (the smallest call that raised one); a call past the time
    limit counts only if it is past it again, since one slow call on a machine busy
    elsewhere says nothing of the tool, and the check must not depend on the load."""
    for key in sorted(crashes, key=len):
        args = json.loads(key)
        if not crashes[key].startswith(_HANG) or fresh.call(tool, args) is not None:
            return ToolCrash(tool.name, args, crashes[key])
    return None


class _Fresh:
    """Calls on an environment in its initial state: reset after any call that wrote.

    A call that wrote nothing (most generated calls are refused) leaves the state as reset
    left it, so resetting after it would only cost time.
    """

    def __init__(self, env: Environment) -> None:
        self._env = env
        self._dirty = True

    def call(self, tool: Tool, args: dict[str, Any]) -> str | None:
        """Call *tool* with *args*; return the crash, or None if the tool held."""
        if self._dirty:
            self._env.reset()
        self._dirty = False
        gateway = ToolGateway({tool.name: tool}, self._env, self._record, lambda: 0.0)
        self._set_deadline(time.monotonic() + CALL_TIME_LIMIT)
        try:
            gateway.call(1, tool.name, args)
        except EnvironmentFailure as exc:
            self._dirty = True
            cause = exc.__cause__
            return f"{type(cause).__name__}: {cause}" if cause else str(exc)
        except TimeLimitReached:
            self._dirty = True
            return f"{_HANG} {CALL_TIME_LIMIT:g}s"
        finally:
            self._set_deadline(None)
        return None

    def _set_deadline(self, deadline: float | None) -> None:
        """Bound the call's queries where the kind can (``set_deadline`` is optional)."""
        set_deadline = getattr(self._env, "set_deadline", None)
        if set_deadline is not None:
            set_deadline(deadline)

    def _record(self, event: ToolCallEvent) -> None:
        self._dirty = self._dirty or bool(event.changed_tables or event.writes)


# --- JSON Schema -> Hypothesis strategy ---------------------------------------------------------


def arguments(schema: dict[str, Any]) -> Any:
    """A Hypothesis strategy for the argument objects *schema* accepts."""
    return _strategy(schema, schema.get("$defs", {}))


def _strategy(schema: dict[str, Any], defs: dict[str, Any]) -> Any:
    from hypothesis import strategies as st

    if "$ref" in schema:
        return _strategy(defs[schema["$ref"].rpartition("/")[2]], defs)
    if "const" in schema:
        return st.just(schema["const"])
    if "enum" in schema:
        return st.sampled_from(schema["enum"])
    for key in ("anyOf", "oneOf"):
        if key in schema:
            return st.one_of(*(_strategy(option, defs) for option in schema[key]))
    kind = schema.get("type")
    if isinstance(kind, list):
        return st.one_of(*(_strategy({**schema, "type": k}, defs) for k in kind))
    if kind == "object" or "properties" in schema:
        return _object(schema, defs)
    if kind == "array":
        return st.lists(_strategy(schema.get("items", {}), defs), max_size=5)
    return _scalar(kind)


def _scalar(kind: str | None) -> Any:
    from hypothesis import strategies as st

    low, high = INT64
    scalars = {
        # unbounded integers too: the gateway must refuse those a tool cannot store
        "integer": st.one_of(st.integers(low, high), st.integers()),
        "number": st.floats(allow_nan=False, allow_infinity=False),
        "string": st.one_of(st.sampled_from(TRICKY_TEXT), st.text(max_size=20)),
        "boolean": st.booleans(),
        "null": st.none(),
    }
    if kind in scalars:
        return scalars[kind]
    json_leaf = st.one_of(st.none(), st.booleans(), st.integers(low, high), st.text(max_size=10))
    return json_leaf  # an untyped schema ({} or Any): any JSON scalar


def _object(schema: dict[str, Any], defs: dict[str, Any]) -> Any:
    from hypothesis import strategies as st

    properties = schema.get("properties", {})
    required = set(schema.get("required", []))
    return st.fixed_dictionaries(
        {name: _strategy(sub, defs) for name, sub in properties.items() if name in required},
        optional={
            name: _strategy(sub, defs) for name, sub in properties.items() if name not in required
        },
    )
