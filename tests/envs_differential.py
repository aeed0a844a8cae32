"""The differential tests' scaffolding (environments audits, rounds twenty on): the same tool
calls on the SQLite and PostgreSQL kinds, built from the same fixture on the same clock, must
answer alike and leave the same state (the parity promise).

A test file names its fixture's text (``fixture = fixture_of(FIXTURE)``) and its calls, each
an SQL statement and the values its parameters are drawn from, and asserts with
:func:`assert_answered_alike` (one statement) or :func:`assert_generated_alike` (a seeded
sequence of calls). ``shown`` is how an answer is compared: ``repr`` tells ``3`` from
``3.0``, the default compares values (``3 == 3.0``).
"""

from __future__ import annotations

import math
import random
from collections.abc import Callable, Sequence
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest

from groundstate.environments.base import diff_snapshots
from groundstate.environments.sqlite import SqliteEnvironment

from .test_validation_round15 import _postgres

CLOCK = datetime(2026, 1, 15, 9, 30)

Call = tuple[str, tuple[Any, ...]]
Shown = Callable[[Any], Any]


def as_is(answer: Any) -> Any:
    """An answer compared by value (``3 == 3.0``)."""
    return answer


def fixture_of(text: str) -> Any:
    """A pytest fixture writing *text* to ``t.sql`` under the test's ``tmp_path``: assign it
    to a module-level name (pytest names a fixture by the name it is found under)."""

    @pytest.fixture
    def fixture(tmp_path: Path) -> Path:
        path = tmp_path / "t.sql"
        path.write_text(text)
        return path

    return fixture


def both(fixture: Path) -> tuple[Any, Any]:
    """The SQLite and the PostgreSQL kind of *fixture*, on :data:`CLOCK` (PostgreSQL skipped
    where there is none)."""
    postgres = _postgres()
    return SqliteEnvironment(fixture, clock=CLOCK), postgres(fixture, clock=CLOCK)


def ask(env: Any, sql: str, params: tuple[Any, ...] = ()) -> Any:
    """A tool call's rows, or ``error`` (the call rolled back)."""
    try:
        with env.tool_transaction():
            return same_nan(env.agent_db.execute(sql, params).fetchall())
    except Exception:
        return "error"


def same_nan(rows: list[tuple[Any, ...]]) -> list[tuple[Any, ...]]:
    """NaN equal to NaN, so that two rows holding it compare equal."""
    return [tuple("NaN" if isinstance(v, float) and math.isnan(v) else v for v in r) for r in rows]


def assert_answered_alike(
    fixture: Path, sql: str, params: tuple[Any, ...] = (), *, shown: Shown = as_is
) -> None:
    """*sql* is an answer on SQLite, and the same answer on PostgreSQL, in a tool call and in
    the evaluator's view."""
    ours, theirs = both(fixture)
    with ours, theirs:
        expected = ask(ours, sql, params)
        assert expected != "error", sql  # each is an answer on SQLite
        assert shown(ask(theirs, sql, params)) == shown(expected), sql
        view = [env.evaluator_view().query(sql, params) for env in (theirs, ours)]
        assert shown(view[0]) == shown(view[1]), sql


def generated(calls: Sequence[tuple[str, Sequence[Any]]], seed: int, count: int = 30) -> list[Call]:
    """*count* calls drawn from *calls* by *seed*. Each call's values are one pool for every
    parameter, or a list of pools, one per parameter."""
    rng = random.Random(seed)
    drawn = []
    for _ in range(count):
        sql, pool = rng.choice(calls)
        marks = sql.count("?")
        pools = pool if pool and isinstance(pool[0], list) else [pool] * marks
        drawn.append((sql, tuple(rng.choice(pools[i]) for i in range(marks))))
    return drawn


def differences(ours: Any, theirs: Any, calls: list[Call], *, shown: Shown = as_is) -> list[str]:
    """Each call answered otherwise by the two kinds, until the first after which their
    states differ (named too)."""
    found = []
    for sql, params in calls:
        answers = [ask(env, sql, params) for env in (ours, theirs)]
        if shown(answers[0]) != shown(answers[1]):
            found.append(f"{sql} {params!r}: sqlite {answers[0]!r}, postgres {answers[1]!r}")
        if ours.state_hash() != theirs.state_hash():
            found.append(f"{sql} {params!r}: the states differ")
            break
    return found


def assert_generated_alike(
    fixture: Path,
    calls: Sequence[tuple[str, Sequence[Any]]],
    seed: int,
    *,
    count: int = 30,
    shown: Shown = as_is,
) -> None:
    """The calls :func:`generated` draws, made on both kinds from the same reset: each is
    answered alike and leaves the same state, and the final snapshots, their differences from
    the start and their hashes are the same."""
    ours, theirs = both(fixture)
    with ours, theirs:
        initial = ours.reset()
        assert theirs.reset() == initial
        start = ours.snapshot()
        found = differences(ours, theirs, generated(calls, seed, count), shown=shown)
        assert found == [], "\n".join(found)
        assert ours.snapshot() == theirs.snapshot()
        assert diff_snapshots(start, ours.snapshot()) == diff_snapshots(start, theirs.snapshot())
        assert ours.diff_from_initial() == diff_snapshots(start, theirs.snapshot())
        assert ours.state_hash() == theirs.state_hash()


def assert_written_alike(fixture: Path, sql: str, params: tuple[Any, ...]) -> None:
    """A write by *sql* answers nothing on both kinds and leaves the same state and the same
    changes."""
    ours, theirs = both(fixture)
    with ours, theirs:
        start = ours.snapshot()
        assert ask(ours, sql, params) == [] and ask(theirs, sql, params) == []
        assert ours.state_hash() == theirs.state_hash()
        assert diff_snapshots(start, ours.snapshot()) == diff_snapshots(start, theirs.snapshot())
