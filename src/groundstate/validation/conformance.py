"""An environment conformance checker, like Gymnasium's ``check_env``.

Every score rests on a few promises an environment makes: the same seed builds the same state,
reset restores it after anything an attempt could do, graders cannot write, the agent's view
enforces its permissions and records what it refused, and two attempts side by side never
see each other's writes. :func:`check_environment` tests each promise on fresh instances and
returns what it found broken, so a new kind (or a new fixture) can be checked before any task
relies on it. The checks act through the kind's
:class:`~groundstate.environments.base.ConformanceProbes` (its builder's ``conformance``), or
portable SQL for a kind without them (a relational kind); what changes state like an agent is
the kind's own :class:`~groundstate.environments.base.ResetProbes`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import closing, contextmanager
from datetime import datetime
from functools import partial
from pathlib import Path
from typing import Any, Protocol, cast

from groundstate.environments.base import CallEffects, ConformanceProbes, Environment, StateView
from groundstate.environments.registry import build_environment, environment_kind
from groundstate.errors import GroundstateError
from groundstate.spec.task import Permissions
from groundstate.validation.probes import (
    in_tool_call,
    mutate_like_an_agent,
    observe,
    quote,
    unrestored_after_reset,
)
from groundstate.workdirs import scratch_dir

SEED = 0


class EnvironmentMaker(Protocol):
    """Builds a fresh environment; *permissions* restrict its agent view.

    ``functools.partial(SqliteEnvironment, fixture, clock=...)`` is one.
    """

    def __call__(self, *, permissions: Permissions | None = None) -> Environment: ...


CONFORMANCE_FIXTURE = """
CREATE TABLE accounts (
  account_id TEXT PRIMARY KEY,
  owner      TEXT NOT NULL,
  balance    INTEGER NOT NULL
);
CREATE TABLE transfers (
  transfer_id INTEGER PRIMARY KEY AUTOINCREMENT,
  source      TEXT NOT NULL REFERENCES accounts(account_id),
  target      TEXT NOT NULL REFERENCES accounts(account_id),
  amount      REAL NOT NULL
);
INSERT INTO accounts VALUES ('A', 'Ada', 100), ('B', 'Ben', 50);
INSERT INTO transfers (source, target, amount) VALUES ('A', 'B', 12.5);
"""
"""The fixture :func:`check_environment` builds a kind from when given only its name: keyed
rows, a counter (AUTOINCREMENT) with history and a foreign key."""
CONFORMANCE_CLOCK = datetime(2026, 1, 15, 9, 30)


def check_environment(target: EnvironmentMaker | str, *, fixture: Path | None = None) -> list[str]:
    """The promises an environment breaks, one line each; empty when it conforms.

    *target* is a maker (``functools.partial(SqliteEnvironment, fixture, clock=...)``) or the
    name of a registered kind, built from *fixture* or else :data:`CONFORMANCE_FIXTURE`.
    """
    if not isinstance(target, str):
        return _run_checks(target)
    with scratch_dir("groundstate-conformance-") as folder:
        if fixture is None:
            probes = getattr(environment_kind(target).build, "conformance", SQL)
            fixture = cast(ConformanceProbes, probes).fixture(Path(folder))
        return _run_checks(_kind_maker(target, fixture))


class SqlConformance:
    """The conformance actions of a relational kind: portable SQL on the agent's connection."""

    def fixture(self, folder: Path) -> Path:
        path = folder / "conformance.sql"
        path.write_text(CONFORMANCE_FIXTURE, encoding="utf-8")
        return path

    def read(self, handle: Any, collection: str) -> object:
        return handle.execute(f"SELECT * FROM {quote(collection)}").fetchall()

    def delete_all(self, handle: Any, collection: str) -> object:
        return handle.execute(f"DELETE FROM {quote(collection)}").fetchall()

    def create(self, handle: Any) -> object:
        return handle.execute("CREATE TABLE _probe(x INTEGER)").fetchall()

    def view_writes(self, collection: str) -> list[tuple[str, Callable[[StateView], object]]]:
        return [
            (sql, partial(_query, sql=sql))
            for sql in (
                f"DELETE FROM {quote(collection)}",
                f"INSERT INTO {quote(collection)} DEFAULT VALUES",
                "CREATE TABLE _probe(x INTEGER)",
            )
        ]


def _query(view: StateView, sql: str) -> object:
    return view.query(sql)


SQL = SqlConformance()


def _probes(env: Environment) -> ConformanceProbes:
    return cast(ConformanceProbes, getattr(env, "conformance", SQL))


def _kind_maker(kind: str, fixture: Path) -> EnvironmentMaker:
    def make(*, permissions: Permissions | None = None) -> Environment:
        return build_environment(kind, fixture, clock=CONFORMANCE_CLOCK, permissions=permissions)

    return make


def _run_checks(make_env: EnvironmentMaker) -> list[str]:
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
        unrestored = unrestored_after_reset(env, initial, before, seed=SEED)
        if unrestored is None:
            return []
        return [f"after an attempt-like change ({', '.join(changes)}) {unrestored}"]


def _evaluator_cannot_write(make_env: EnvironmentMaker) -> list[str]:
    with _fresh(make_env) as env:
        table = _a_table(env)
        initial = env.reset(seed=SEED)
        problems = []
        for label, view in (
            ("evaluator view", env.evaluator_view()),
            ("initial view", env.initial_view()),
        ):
            for attempt, write in _probes(env).view_writes(table):
                if _succeeds(partial(write, view)):
                    problems.append(f"the {label} ran {attempt!r}")
        if env.state_hash() != initial:
            problems.append("the state changed through a read-only view")
        return problems


def _agent_view_enforces_permissions(make_env: EnvironmentMaker) -> list[str]:
    with _fresh(make_env) as env:
        table = _a_table(env)
        probes = _probes(env)
    select = partial(probes.read, collection=table)
    delete = partial(probes.delete_all, collection=table)
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
        if _in_call_succeeds(read_only, probes.create):
            problems.append("the agent created a table")
    return problems


def _denials_are_recorded(make_env: EnvironmentMaker) -> list[str]:
    with _fresh(make_env) as env:
        table = _a_table(env)
        probes = _probes(env)
    with _fresh(make_env, Permissions(tables={table: "none"})) as hidden:
        effects = _effects_of(hidden, partial(probes.read, collection=table))
    problems = []
    if not any(table in action for action in effects.denied):
        problems.append(f"a refused read of {table} recorded {effects.denied}, not the table")
    return problems


def _attempts_are_isolated(make_env: EnvironmentMaker) -> list[str]:
    with _fresh(make_env) as one, _fresh(make_env) as two:
        initial = two.reset(seed=SEED)
        one.reset(seed=SEED)
        s0 = one.initial_view().snapshot()
        changes = mutate_like_an_agent(one)
        if one.state_hash() == initial:
            return [f"the state hash did not move after: {', '.join(changes)}"]
        if two.state_hash() != initial or two.evaluator_view().snapshot() != s0:
            return [f"changing one environment ({', '.join(changes)}) changed another"]
        if one.initial_view().snapshot() != s0:
            return ["the initial view moved with the live state"]
    return []


def _tool_calls_are_atomic(make_env: EnvironmentMaker) -> list[str]:
    with _fresh(make_env) as env:
        table = _a_table(env)
        initial = env.reset(seed=SEED)

        probes = _probes(env)

        def write_then_fail(db: Any) -> None:
            probes.delete_all(db, table)
            raise RuntimeError("the tool failed after writing")

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


def _effects_of(env: Environment, action: Callable[[Any], object]) -> CallEffects:
    """What one tool call doing *action* on the agent's handle did, succeeded or not."""
    effects = CallEffects()
    try:
        with env.tool_transaction() as effects:
            action(env.agent_db)
    except Exception:  # a refusal is expected here; the effects tell the rest
        pass
    return effects


def _in_call_succeeds(env: Environment, action: Callable[[Any], object]) -> bool:
    def run() -> None:
        with env.tool_transaction():
            action(env.agent_db)

    return _succeeds(run)


def _succeeds(action: Callable[[], object]) -> bool:
    try:
        action()
    except Exception:  # any refusal (a database error of any kind, a denial) is a failure
        return False
    return True


_CHECKS: tuple[tuple[str, Callable[[EnvironmentMaker], list[str]]], ...] = (
    ("determinism", _same_seed_same_state),
    ("reset", _reset_restores),
    ("evaluator view", _evaluator_cannot_write),
    ("agent view", _agent_view_enforces_permissions),
    ("denials recorded", _denials_are_recorded),
    ("atomic tool calls", _tool_calls_are_atomic),
    ("isolation", _attempts_are_isolated),
    ("health", _healthy),
)
CHECK_NAMES = tuple(name for name, _ in _CHECKS)
"""The promises :func:`check_environment` tests, in order (each problem line starts with one)."""
