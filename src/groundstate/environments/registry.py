"""Environment kinds by name: what ``environment:`` in ``suite.yaml`` selects.

Three kinds are built in: ``sqlite`` (the default), ``postgres`` (needs the ``postgres`` extra,
``psycopg``) and ``workspace`` (a repository folder with file tools and sandboxed commands).
Third parties add kinds either by calling :func:`register_environment` or by declaring an entry
point in the ``groundstate.environments`` group whose object is a builder (or an
:class:`EnvironmentKind`)::

    [project.entry-points."groundstate.environments"]
    mykind = "mypackage.envs:MyEnvironment"

A builder takes the fixture path, the clock and the task's permissions and returns an object
implementing :class:`~groundstate.environments.base.Environment`. A builder that declares an
``options_model`` (a pydantic model) also takes ``options=``: suite.yaml's
``environment_options``, checked against that model when the suite loads.
"""

from __future__ import annotations

import importlib
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from importlib import metadata
from pathlib import Path
from typing import Any, Protocol, cast

from pydantic import BaseModel, ValidationError

from groundstate.environments.base import Environment
from groundstate.errors import EnvironmentFailure
from groundstate.spec.task import Permissions

ENTRY_POINT_GROUP = "groundstate.environments"
DEFAULT_KIND = "sqlite"


class EnvironmentBuilder(Protocol):
    """Builds one fresh environment from a fixture (e.g. the class ``SqliteEnvironment``)."""

    def __call__(
        self, fixture: Path, *, clock: datetime, permissions: Permissions | None = None
    ) -> Environment: ...


@dataclass(frozen=True)
class EnvironmentKind:
    """A registered kind: its name and how to build one."""

    name: str
    build: EnvironmentBuilder
    description: str = ""


class UnknownEnvironmentKind(LookupError):
    """No kind of that name is registered (nor declared by an entry point)."""


_BUILT_IN = {
    "sqlite": ("groundstate.environments.sqlite:SqliteEnvironment", "SQLite file per attempt"),
    "postgres": (
        "groundstate.environments.postgres:PostgresEnvironment",
        "PostgreSQL database per attempt (extra: postgres)",
    ),
    "workspace": (
        "groundstate.environments.workspace:WorkspaceEnvironment",
        "repository work tree per attempt, sandboxed commands (needs git, bubblewrap)",
    ),
}
_KINDS: dict[str, EnvironmentKind] = {}


def register_environment(
    kind: str, build: EnvironmentBuilder, *, description: str = "", replace: bool = False
) -> EnvironmentKind:
    """Make *kind* available to ``environment: <kind>`` in suite.yaml; returns the entry.

    Registering a name twice is refused unless *replace* is true, so a plugin cannot shadow
    a built-in kind by accident.
    """
    if not kind or not kind.replace("-", "_").isidentifier():
        raise ValueError(f"an environment kind is a name like 'my_db', got {kind!r}")
    if not replace and kind in environment_kinds():
        raise ValueError(f"environment kind {kind!r} is already registered")
    entry = EnvironmentKind(kind, build, description)
    _KINDS[kind] = entry
    return entry


def unregister_environment(kind: str) -> None:
    """Forget a kind registered with :func:`register_environment` (tests, plugins' teardown)."""
    _KINDS.pop(kind, None)


def environment_kinds() -> list[str]:
    """Every kind that can be named: built in, registered, or declared by an entry point."""
    declared = {ep.name for ep in metadata.entry_points(group=ENTRY_POINT_GROUP)}
    return sorted(set(_BUILT_IN) | set(_KINDS) | declared)


def environment_kind(kind: str) -> EnvironmentKind:
    """The registered kind called *kind*; raises :class:`UnknownEnvironmentKind`.

    Built-in kinds and entry points are imported on first use, so the ``postgres`` kind costs
    nothing (and needs no ``psycopg``) until a suite names it.
    """
    if kind in _KINDS:
        return _KINDS[kind]
    if kind in _BUILT_IN:
        target, description = _BUILT_IN[kind]
        entry = EnvironmentKind(kind, cast(EnvironmentBuilder, _load(target, kind)), description)
    else:
        entry = _from_entry_point(kind)
    _KINDS[kind] = entry
    return entry


def build_environment(
    kind: str,
    fixture: Path,
    *,
    clock: datetime,
    permissions: Permissions | None = None,
    options: Mapping[str, Any] | None = None,
) -> Environment:
    """A fresh environment of *kind* built from *fixture*, with the suite's *options* for a
    kind that takes them (see :func:`options_problem`)."""
    build = environment_kind(kind).build
    if options and getattr(build, "options_model", None) is not None:
        made = cast(Any, build)(fixture, clock=clock, permissions=permissions, options=options)
        return cast(Environment, made)
    return build(fixture, clock=clock, permissions=permissions)


def options_problem(kind: str, options: Mapping[str, Any]) -> str | None:
    """Why *options* do not suit *kind* (one line), or None when they do."""
    model = getattr(environment_kind(kind).build, "options_model", None)
    if model is None:
        return f"environment kind {kind!r} takes no options" if options else None
    try:
        cast(type[BaseModel], model).model_validate(dict(options))
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(part) for part in first["loc"])
        return f"{where}: {first['msg']}" if where else str(first["msg"])
    return None


def environment_capabilities(kind: str) -> frozenset[str]:
    """What a kind's views and handles offer: ``sql`` (relational kinds, the default for a
    kind that does not say), ``files`` and ``commands`` (repository workspaces)."""
    declared = getattr(environment_kind(kind).build, "capabilities", None)
    return frozenset(declared) if declared is not None else frozenset({"sql"})


def _from_entry_point(kind: str) -> EnvironmentKind:
    for point in metadata.entry_points(group=ENTRY_POINT_GROUP):
        if point.name == kind:
            loaded = point.load()
            if isinstance(loaded, EnvironmentKind):
                return loaded
            return EnvironmentKind(kind, cast(EnvironmentBuilder, loaded), point.value)
    known = ", ".join(environment_kinds())
    raise UnknownEnvironmentKind(f"no environment kind {kind!r} (known: {known})")


def _load(target: str, kind: str) -> object:
    module_name, _, attribute = target.partition(":")
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:  # an optional extra that is not installed
        raise EnvironmentFailure(
            f"environment kind {kind!r} needs a package that is not installed ({exc.name}); "
            f"install groundstate[{kind}]"
        ) from exc
    return cast(object, getattr(module, attribute))
