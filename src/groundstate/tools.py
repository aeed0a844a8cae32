"""Tool declarations: a Python function, its JSON schema and its description.

A suite's ``tools.py`` declares tools with :func:`tool`::

    @tool
    def get_order(ctx: ToolContext, order_id: str) -> dict[str, Any]:
        \"\"\"Look up one order by its id.\"\"\"
        row = ctx.db.execute("SELECT ... WHERE order_id = ?", (order_id,)).fetchone()
        if row is None:
            raise ToolError(f"no order {order_id}")
        ...

The parameters' JSON schema is derived from the type hints; the gateway validates every
call against it before the function runs. Tools act only through ``ctx.db``, the agent's
own connection, whose permissions the environment enforces.
"""

from __future__ import annotations

import hashlib
import importlib.util
import inspect
import json
import os
import re
import sys
import threading
import traceback
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any, get_type_hints

import jsonschema
from pydantic import BaseModel, PydanticUserError, TypeAdapter, create_model

from groundstate.bindings import HARNESS
from groundstate.environments.base import Environment
from groundstate.errors import SpecError, exception_text, one_line
from groundstate.interrupts import Interrupted, from_ctrl_c
from groundstate.paths import os_reason
from groundstate.spec.code import SourceOnly, hash_code, siblings_importable
from groundstate.spec.files import regular_file


@dataclass(frozen=True)
class ToolContext:
    """What a tool implementation may use."""

    env: Environment

    @property
    def db(self) -> Any:
        """The agent's database connection (``sqlite3.Connection``)."""
        return self.env.agent_db

    def now(self) -> datetime:
        return self.env.now()


@dataclass(frozen=True)
class Tool:
    name: str
    description: str
    parameters: dict[str, Any]
    fn: Callable[..., Any]

    def declaration(self, description: str | None = None) -> dict[str, Any]:
        """The declaration an agent sees (OpenAI-style function schema)."""
        return {
            "name": self.name,
            "description": description or self.description,
            "parameters": self.parameters,
        }


def tool(fn: Callable[..., Any]) -> Tool:
    """Declare *fn* (first parameter: :class:`ToolContext`) as a tool."""
    return Tool(
        name=fn.__name__,
        description=inspect.cleandoc(fn.__doc__ or ""),
        parameters=_schema_of(fn),
        fn=fn,
    )


def _schema_of(fn: Callable[..., Any]) -> dict[str, Any]:
    hints = get_type_hints(fn)
    params = list(inspect.signature(fn).parameters.values())[1:]
    fields: dict[str, Any] = {
        p.name: (hints.get(p.name, Any), ... if p.default is p.empty else p.default) for p in params
    }
    try:
        model: type[BaseModel] = create_model(f"{fn.__name__}_args", **fields)
        schema = model.model_json_schema()
    except PydanticUserError:  # pydantic's message runs to a paragraph naming neither
        raise TypeError(_no_schema(fn, fields)) from None
    schema.pop("title", None)
    for prop in schema.get("properties", {}).values():
        prop.pop("title", None)
    schema["additionalProperties"] = False
    return schema


def _no_schema(fn: Callable[..., Any], fields: dict[str, Any]) -> str:
    """Which parameter of the tool *fn* has a type no JSON schema describes."""
    for name, (hint, _) in fields.items():
        try:
            TypeAdapter(hint).json_schema()
        except PydanticUserError:
            return (
                f"tool {fn.__name__!r}: parameter {name!r}: its type {hint!r} has no JSON"
                " schema (use str, int, float, bool, Literal, lists, dicts or pydantic models)"
            )
    return f"tool {fn.__name__!r}: its parameters have no JSON schema"


def declaration_problems(declared: Tool) -> list[str]:
    """What is wrong with a tool's declaration, worded for its author (empty: nothing).

    ``@tool`` accepts any function, but a tool without its ``ctx`` parameter loses its first
    real parameter (every call is then refused), a parameter without a type hint accepts
    anything, and a tool without a docstring is shown to the agent with no description.
    """
    params = list(inspect.signature(declared.fn).parameters.values())
    problems = []
    if params and _is_context(declared.fn, params[0]):
        params = params[1:]
    else:
        got = f"'{_spelled(params[0])}'" if params else "no parameters"
        problems.append(
            f"the first parameter must be 'ctx: ToolContext' (got {got}); without it the "
            "tool's first argument is dropped from its schema and calls are refused"
        )
    for param in params:
        if param.kind in (param.VAR_POSITIONAL, param.VAR_KEYWORD):
            problems.append(
                f"parameter '{_spelled(param)}' cannot be given by name: list each argument"
            )
        elif param.annotation is param.empty:
            problems.append(f"parameter {param.name!r} has no type hint, so its schema is empty")
    if not declared.description:
        problems.append("no docstring: the agent would see the tool with no description")
    return problems


def _spelled(param: inspect.Parameter) -> str:
    """A parameter as written (annotations stay text under ``from __future__ import ...``)."""
    hint = param.annotation
    if hint is param.empty:
        return str(param)
    written = hint if isinstance(hint, str) else getattr(hint, "__name__", str(hint))
    return f"{param.replace(annotation=param.empty)}: {written}"


def _is_context(fn: Callable[..., Any], first: inspect.Parameter) -> bool:
    hint = get_type_hints(fn).get(first.name)
    return hint is ToolContext or (hint is None and first.name == "ctx")


_IMPORTING = threading.RLock()
"""Held while a user file is imported: attempts run in threads, and a module is in
``sys.modules`` before its code has run, so a second thread would get it half-made (a check
or agent function not defined yet). Re-entrant: a user file may import another."""


def load_module(path: Path, name_hint: str, *, expect: str | None = None) -> Any:
    """Import a Python file of a suite or system (tools, checks, agents); thread-safe.
    *expect*: the :func:`~groundstate.spec.code.hash_code` the file had when what names it
    was loaded and hashed (a system file): a file changed since is refused, not imported
    under the hash of another version."""
    HARNESS.refresh()  # the harness's code as it is before any user code runs
    with _IMPORTING:
        return _load_module(path, name_hint, expect)


def _load_module(path: Path, name_hint: str, expect: str | None = None) -> Any:
    if expect is not None and (known := sys.modules.get(_module_name(path, name_hint, expect))):
        return known  # that version, imported already (the file may have changed since)
    regular_file(path)
    try:
        digest = hash_code(path)
    except OSError as exc:
        raise SpecError(path, None, f"cannot read: {os_reason(path, exc)}") from None
    if expect is not None and digest != expect:
        raise SpecError(path, None, changed_since_loaded(digest, expect))
    # Keyed by content too, the sibling modules it imports included: an edited checks.py or
    # helper module (a new grader revision) is imported afresh.
    name = _module_name(path, name_hint, digest)
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(name, path, loader=SourceOnly(name, str(path)))
    if spec is None or spec.loader is None:
        raise SpecError(path, None, "cannot import this file")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    try:
        with siblings_importable(path.parent):
            spec.loader.exec_module(module)
    except BaseException as exc:  # SystemExit too: a file calling exit() must not end the run
        del sys.modules[name]
        if isinstance(exc, Interrupted) or (isinstance(exc, KeyboardInterrupt) and from_ctrl_c()):
            raise  # the user's Ctrl-C; one the file raised itself is its fault, as below
        raise _import_error(path, exc) from exc
    return module


def changed_since_loaded(digest: str | None, expect: str | None) -> str:
    """Why code whose file hashes to *digest* now, not *expect* as when its system or suite
    was loaded, is not run (None: no such file, now or then)."""
    now, then = ("nothing (no file)" if d is None else d[:12] for d in (digest, expect))
    return (
        f"changed since it was loaded and hashed (it hashes to {now} now, {then} then): "
        "records would name code that did not run; put it back as it was, or load it again "
        "and start anew"
    )


def _module_name(path: Path, name_hint: str, digest: str) -> str:
    """The name a version of the file at *path* (its *digest*) is imported under: the same
    in every process (it shows in a record, in the ``repr`` of an object of the file's
    classes). It was ``hash()`` of the path, which ``PYTHONHASHSEED`` picks anew in each
    process: the same attempt's record differed in-process, in a pool worker, on Ray."""
    where = hashlib.sha256(os.fsencode(path.resolve())).hexdigest()[:16]
    return f"groundstate_user.{name_hint}_{digest[:16]}_{where}"


def _import_error(path: Path, exc: BaseException) -> SpecError:
    """One line naming the file and the line of it that failed: a syntax error's own line, or
    the statement that raised (an ``import`` of a broken sibling names the sibling's line too)."""
    kind = type(exc).__name__
    if isinstance(exc, SyntaxError) and _same_file(exc.filename, path):
        return SpecError(path, None, f"{kind}: {one_line(str(exc.msg))}", line=exc.lineno)
    lines = [
        frame.lineno
        for frame in traceback.extract_tb(exc.__traceback__)
        if _same_file(frame.filename, path)
    ]
    said = one_line(exception_text(exc))
    reason = f"importing failed: {kind}: {said}" if said else f"importing failed: {kind}"
    return SpecError(path, None, reason, line=lines[-1] if lines else None)


def _same_file(name: str | None, path: Path) -> bool:
    try:
        return name is not None and Path(name).resolve() == path.resolve()
    except (OSError, ValueError):
        return False


def load_tools(path: Path) -> dict[str, Tool]:
    """All tools declared in the Python file at *path*, by name."""
    return declared_tools(load_module(path, "tools"), path)


def declared_tools(module: Any, path: Path, *, checked: bool = False) -> dict[str, Tool]:
    """The tools *module* (imported from *path*) declares, by name; *checked*: the same file
    loaded before passed the checks of its names and schemas (a costly part), not made again."""
    tools: dict[str, Tool] = {}
    for declared in vars(module).values():
        if not isinstance(declared, Tool):
            continue
        known = tools.get(declared.name, declared)
        if known.fn is not declared.fn:  # an alias of one tool is fine, two functions are not:
            # the agent would be offered one of them, and which would be an accident of order
            raise SpecError(path, declared.name, "two different tools have this name")
        problem = None if checked else _unusable(declared)
        if problem is not None:
            raise SpecError(path, one_line(str(declared.name)), problem, line=source_line(declared))
        tools[declared.name] = declared
    return tools


TOOL_NAME = re.compile(r"[A-Za-z0-9_-]{1,64}")
"""A tool name model APIs accept (OpenAI's and Anthropic's function names)."""


def _unusable(declared: Tool) -> str | None:
    """Why no agent could be offered *declared* (every request naming it would be refused,
    every call checked against a schema that is none), or None."""
    if not isinstance(declared.name, str) or not TOOL_NAME.fullmatch(declared.name):
        return "a tool name is 1 to 64 ASCII letters, digits, '_' and '-' (as model APIs take)"
    schema = declared.parameters
    if not isinstance(schema, dict) or schema.get("type") != "object":
        return "parameters: a JSON Schema of type object, as a call's arguments are a mapping"
    try:
        text = json.dumps(schema, sort_keys=True)
    except (TypeError, ValueError):  # not JSON (a key that is not a string): checked afresh
        return _schema_problem(schema)
    # Only a schema its text says all of is known by it: a tuple reads back as a list, which
    # the check takes differently; NaN reads back unequal.
    if json.loads(text) != schema:
        return _schema_problem(schema)
    if text not in _SCHEMA_PROBLEMS:
        if len(_SCHEMA_PROBLEMS) >= SCHEMA_PROBLEMS_KEPT:
            _SCHEMA_PROBLEMS.clear()
        _SCHEMA_PROBLEMS[text] = _schema_problem(schema)
    return _SCHEMA_PROBLEMS[text]


def _schema_problem(schema: dict[str, Any]) -> str | None:
    try:
        jsonschema.Draft202012Validator.check_schema(schema)
    except jsonschema.SchemaError as exc:
        where = "".join(f"[{part!r}]" for part in exc.absolute_path)
        return f"parameters{where}: not valid JSON Schema: {one_line(exc.message)}"
    return None


SCHEMA_PROBLEMS_KEPT = 4096
_SCHEMA_PROBLEMS: dict[str, str | None] = {}
"""Each tool schema checked in this process, by its JSON text (sorted keys), with what is
wrong with it: checking a schema against JSON Schema's meta-schema cost more than the rest of
loading a tools file, and every load of a suite (each copy, each process) checked them all
again."""


def source_line(declared: Tool) -> int | None:
    """The line of the tool's function in its file, where known."""
    try:
        return inspect.getsourcelines(declared.fn)[1]
    except (OSError, TypeError):
        return None
