"""An environment conformance checker, like Gymnasium's ``check_env``.

Every score rests on a few promises an environment makes: the same seed builds the same state,
reset restores it after anything an attempt could do, graders cannot write, and the agent's
view enforces its permissions. :func:`check_environment` tests each promise on a fresh
instance and returns what it found broken, so a new environment (or a new fixture) can be
checked before any task relies on it.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Iterator
from contextlib import closing, contextmanager
from functools import partial
from typing import Protocol

from groundstate.environments.base import Environment
from groundstate.errors import GroundstateError
from groundstate.spec.task import Permissions
from groundstate.validation.probes import (
    explain,
    in_tool_call,
    mutate_like_an_agent,
    observe,
    quote,
)

SEED = 0


class EnvironmentMaker(Protocol):
    """Builds a fresh environment; *permissions* restrict its agent view.

    ``functools.partial(SqliteEnvironment, fixture, clock=...)`` is one.
    """

    def __call__(self, *, permissions: Permissions | None = None) -> Environment: ...


def check_environment(make_env: EnvironmentMaker) -> list[str]:
    """The promises *make_env*'s environments break, one line each; empty when they conform."""
    problems: list[str] = []
    for name, check in _CHECKS:
        try:
            problems += [f"{name}: {line}" for line in check(make_env)]
        except Exception as exc:  # a crash is itself a broken promise; keep checking the rest
            problems.append(f"{name}: crashed: {type(exc).__name__}: {exc}")
    return problems


@contextmanager
def _fresh(
    make_env: EnvironmentMaker, permissions: Permissions | None = None
) -> Iterator[Environment]:
    with closing(make_env(permissions=permissions)) as env:
        yield env


def _same_seed_same_state(make_env: EnvironmentMaker) -> list[str]:
    with _fresh(make_env) as one, _fresh(make_env) as two:
        first, second, again = one.reset(seed=SEED), two.reset(seed=SEED), one.reset(seed=SEED)
        problems = []
        if first != second:
            problems.append(
                f"two instances reset with one seed differ: {first[:12]} vs {second[:12]}"
            )
        if again != first:
            problems.append(f"resetting twice gives {first[:12]}, then {again[:12]}")
        if one.state_hash() != again:
            problems.append("reset returns a different hash from state_hash()")
        return problems


def _reset_restores(make_env: EnvironmentMaker) -> list[str]:
    with _fresh(make_env) as env:
        initial = env.reset(seed=SEED)
        before = observe(env)
        changes = mutate_like_an_agent(env)
        if env.state_hash() == initial:
            return [f"the state hash did not move after: {', '.join(changes)}"]
        restored = env.reset(seed=SEED)
        if restored == initial:
            return []
        what = explain(before, observe(env))
        return [
            f"after an attempt-like change ({', '.join(changes)}) reset gave {restored[:12]}, "
            f"not {initial[:12]}: {what}"
        ]


def _evaluator_cannot_write(make_env: EnvironmentMaker) -> list[str]:
    with _fresh(make_env) as env:
        table = _a_table(env)
        initial = env.reset(seed=SEED)
        problems = []
        for label, view in (
            ("evaluator view", env.evaluator_view()),
            ("initial view", env.initial_view()),
        ):
            for sql in (
                f"DELETE FROM {quote(table)}",
                f"INSERT INTO {quote(table)} DEFAULT VALUES",
                "CREATE TABLE _probe(x)",
            ):
                if _succeeds(partial(view.query, sql)):
                    problems.append(f"the {label} ran {sql!r}")
        if env.state_hash() != initial:
            problems.append("the state changed through a read-only view")
        return problems


def _agent_view_enforces_permissions(make_env: EnvironmentMaker) -> list[str]:
    with _fresh(make_env) as env:
        table = _a_table(env)
    select, delete = f"SELECT * FROM {quote(table)}", f"DELETE FROM {quote(table)}"
    problems = []
    with _fresh(make_env, Permissions(tables={table: "none"})) as hidden:
        if _in_call_succeeds(hidden, select):
            problems.append(f"with {table}: none, the agent read {table}")
    with _fresh(make_env, Permissions(tables={table: "read"})) as read_only:
        if not _in_call_succeeds(read_only, select):
            problems.append(f"with {table}: read, the agent could not read {table}")
        initial = read_only.state_hash()
        if _in_call_succeeds(read_only, delete) or read_only.state_hash() != initial:
            problems.append(f"with {table}: read, the agent deleted rows of {table}")
    return problems


def _tool_calls_are_atomic(make_env: EnvironmentMaker) -> list[str]:
    with _fresh(make_env) as env:
        table = _a_table(env)
        initial = env.reset(seed=SEED)

        def write_then_fail(db: sqlite3.Connection) -> None:
            db.execute(f"DELETE FROM {quote(table)}")
            raise sqlite3.OperationalError("the tool failed after writing")

        in_tool_call(env, write_then_fail)
        if env.state_hash() != initial:
            return [f"a tool call that failed after deleting rows of {table} left them deleted"]
        return []


def _healthy(make_env: EnvironmentMaker) -> list[str]:
    with _fresh(make_env) as env:
        report = env.health()
        return [] if report.get("ok") is True else [f"health() is not ok: {report}"]


def _a_table(env: Environment) -> str:
    """A table with rows, to probe with (the first table when every one is empty)."""
    tables = env.snapshot().tables
    if not tables:
        raise GroundstateError("the environment has no table to probe")
    return next((name for name, state in tables.items() if state.rows), next(iter(tables)))


def _in_call_succeeds(env: Environment, sql: str) -> bool:
    def run() -> None:
        with env.tool_transaction():
            env.agent_db.execute(sql).fetchall()

    return _succeeds(run)


def _succeeds(action: Callable[[], object]) -> bool:
    try:
        action()
    except (sqlite3.Error, GroundstateError):
        return False
    return True


_CHECKS: tuple[tuple[str, Callable[[EnvironmentMaker], list[str]]], ...] = (
    ("determinism", _same_seed_same_state),
    ("reset", _reset_restores),
    ("evaluator view", _evaluator_cannot_write),
    ("agent view", _agent_view_enforces_permissions),
    ("atomic tool calls", _tool_calls_are_atomic),
    ("health", _healthy),
)
