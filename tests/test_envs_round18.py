"""Eighteenth environments audit: the same tool calls on a SQLite and a PostgreSQL environment
of the same fixture leave the same state and give graders the same answers.

``avg`` of an INTEGER column was PostgreSQL's ``numeric`` (``4``) where SQLite gives the REAL
``4.0``: a grader comparing ``avg(qty)`` with ``4.0`` read otherwise on the two kinds."""

from __future__ import annotations

import random
from datetime import datetime
from pathlib import Path
from typing import Any

from groundstate.environments.sqlite import SqliteEnvironment

from .test_validation_round15 import _postgres

CLOCK = datetime(2026, 1, 15, 9, 30)
FIXTURE = (
    "CREATE TABLE t (id INTEGER PRIMARY KEY, n INTEGER, r REAL, s TEXT);\n"
    "INSERT INTO t VALUES (1, 4, 1.5, 'a'), (2, 4, 2.0, NULL), (3, NULL, NULL, '');\n"
)
_INTS = [0, -1, 1, 7, 2**31, -(2**31) - 1, 2**53 + 1, 2**63 - 1, -(2**63), None]
_REALS = [0.0, -0.5, 1e-300, 1.5, 2.25, 1e15, None]
_TEXTS = ["", "x", "O'Brien", "naïve ✓", "a%b_c", "  pad  ", None]
_QUERIES = [
    "SELECT avg(n), count(n), min(n), max(n) FROM t",
    "SELECT avg(r), sum(r), min(r), max(r) FROM t",
    "SELECT s, count(*) FROM t GROUP BY s ORDER BY s",
    "SELECT id, n, r, s FROM t ORDER BY n, id",
    "SELECT id FROM t WHERE n > 5 ORDER BY id",
    "SELECT avg(n) OVER (ORDER BY id) FROM t ORDER BY id",
]


def _calls(seed: int) -> list[tuple[str, tuple[Any, ...]]]:
    rng = random.Random(seed)
    calls: list[tuple[str, tuple[Any, ...]]] = []
    for _ in range(12):
        row = (rng.choice(_INTS), rng.choice(_REALS), rng.choice(_TEXTS))
        if rng.random() < 0.6:
            calls.append(("INSERT INTO t (n, r, s) VALUES (?, ?, ?)", row))
        else:
            calls.append(
                ("UPDATE t SET n = ?, r = ?, s = ? WHERE id = ?", (*row, rng.randint(1, 3)))
            )
    return calls


def test_avg_of_an_integer_column_is_real_on_both_kinds(tmp_path: Path) -> None:
    postgres = _postgres()
    fixture = tmp_path / "t.sql"
    fixture.write_text(FIXTURE)
    with SqliteEnvironment(fixture, clock=CLOCK) as ours, postgres(fixture, clock=CLOCK) as theirs:
        for env in (ours, theirs):
            (value,) = env.evaluator_view().query("SELECT avg(n) FROM t")[0]
            assert value == 4.0 and isinstance(value, float)
            assert env.evaluator_view().query("SELECT avg(n) FROM t WHERE n > 9") == [(None,)]


def test_the_same_generated_writes_leave_the_same_state_and_answers(tmp_path: Path) -> None:
    postgres = _postgres()
    fixture = tmp_path / "t.sql"
    fixture.write_text(FIXTURE)
    for seed in (1, 2, 3):
        with (
            SqliteEnvironment(fixture, clock=CLOCK) as ours,
            postgres(fixture, clock=CLOCK) as theirs,
        ):
            for sql, params in _calls(seed):
                for env in (ours, theirs):
                    with env.tool_transaction():
                        env.agent_db.execute(sql, params)
            assert ours.state_hash() == theirs.state_hash(), seed
            for sql in _QUERIES:
                expected = ours.evaluator_view().query(sql)
                assert theirs.evaluator_view().query(sql) == expected, (seed, sql)
