"""Catching a SQLite fixture whose build is not the same every time, and SQL's ``'now'``.

A fixture is built into a template once per process, so a fixture that calls ``random()`` or
reads the wall clock (``datetime('now')``, a ``DEFAULT CURRENT_TIMESTAMP`` column) gives every
attempt of one process the same initial state, and the next process (a resumed batch, a lock
check, another machine) a different one: two fresh builds within a second even agree, so the
reset check cannot be relied on to see it. The build therefore watches for those calls and
refuses the fixture, naming them.

After the build, :func:`controlled` makes ``'now'`` in the SQL of the agent's and the graders'
connections the task's clock, as the tools' ``ctx.now()`` (and PostgreSQL's ``now()``).
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from typing import Any

ALWAYS = ("random", "randomblob", "current_timestamp", "current_date", "current_time")
"""Functions whose every call differs between builds."""
DATES = ("date", "time", "datetime", "julianday", "unixepoch", "strftime")
"""Date functions: they read the wall clock given ``'now'``, or no time value at all."""
_FORMATTED = {"strftime": 1}
"""Arguments before the first time value (``strftime``'s format)."""


class FixtureNotDeterministic(ValueError):
    """The fixture's SQL drew random numbers or read the wall clock while it was built."""


def watch(connection: sqlite3.Connection) -> list[str]:
    """Install the watchers on *connection*; the returned list fills with the calls seen.

    Date functions given fixed values still work (answered by an unwatched connection).
    """
    seen: list[str] = []
    plain = sqlite3.connect(":memory:")
    for name in ALWAYS:
        connection.create_function(name, -1, _noted(name, seen, plain, always=True))
    for name in DATES:
        connection.create_function(
            name, -1, _noted(name, seen, plain, always=False), deterministic=True
        )
    return seen


def refuse(seen: list[str]) -> None:
    """Raise :class:`FixtureNotDeterministic` naming each kind of call seen, if any."""
    if seen:
        calls = ", ".join(dict.fromkeys(seen))
        raise FixtureNotDeterministic(
            f"calls {calls}, so two fresh builds differ (random values, the wall clock): write "
            "the values out (the task's clock is its `clock:`, which tools read as ctx.now())"
        )


def _noted(
    name: str, seen: list[str], plain: sqlite3.Connection, *, always: bool
) -> Callable[..., Any]:
    def call(*args: Any) -> Any:
        # CURRENT_DATE and its kin are keywords: written, and answered, without parentheses
        keyword = name.startswith("current_")
        call = name.upper() if keyword else f"{name}({', '.join(map(repr, args))})"
        times = args[_FORMATTED.get(name, 0) :]
        if always or not times or any(_is_now(value) for value in times):
            seen.append(call)
        marks = "" if keyword else f"({', '.join('?' for _ in args)})"
        return plain.execute(f"SELECT {name}{marks}", args).fetchone()[0]

    return call


def _is_now(value: object) -> bool:
    return isinstance(value, str) and value.strip().lower() == "now"


_KEYWORDS = {"current_date": "date", "current_time": "time", "current_timestamp": "datetime"}


def controlled(connection: sqlite3.Connection, clock: Callable[[], str]) -> None:
    """Make ``'now'`` in *connection*'s SQL the controlled clock (*clock* gives its ISO text):
    the date functions given ``'now'`` or no time value, and ``CURRENT_DATE``, ``_TIME`` and
    ``_TIMESTAMP``. They read the wall clock: the agent's ``datetime('now')`` wrote the day the
    batch ran, and a fixture view over ``date('now')`` showed the agent and the graders
    another state each day, while the tools saw the task's clock. Set as the harness's own
    (not noted as Python code's changes to a pooled connection)."""
    plain = sqlite3.connect(":memory:", check_same_thread=False)
    for name in DATES:
        sqlite3.Connection.create_function(
            connection, name, -1, _at_clock(name, clock, plain), deterministic=True
        )
    for keyword, name in _KEYWORDS.items():
        sqlite3.Connection.create_function(
            connection, keyword, 0, lambda name=name: _ask(plain, name, (clock(),))
        )


def _at_clock(name: str, clock: Callable[[], str], plain: sqlite3.Connection) -> Callable[..., Any]:
    at = _FORMATTED.get(name, 0)  # where the time value is

    def call(*args: Any) -> Any:
        if len(args) == at:
            args = (*args, clock())
        elif _is_now(args[at]):
            args = (*args[:at], clock(), *args[at + 1 :])
        return _ask(plain, name, args)

    return call


def _ask(plain: sqlite3.Connection, name: str, args: tuple[Any, ...]) -> Any:
    marks = ", ".join("?" for _ in args)
    return plain.execute(f"SELECT {name}({marks})", args).fetchone()[0]
