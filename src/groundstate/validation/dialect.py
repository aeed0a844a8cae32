"""The graders' SQL asked of the initial state on SQLite and on the suite's own SQL kind.

Fixtures and assertions are written once, for SQLite; a suite on another kind (``postgres``)
runs them there. Where that kind answers a grader's query otherwise (``CAST(4e9 AS INTEGER)``
is a number on SQLite and an error on PostgreSQL; a function one has and the other lacks;
a value read back in another form), the same task graded otherwise on the two kinds with no
word of why. ``groundstate check`` asks each query of both at the fixture's initial state and
names the assertion whose answers differ, with both answers.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import ExitStack
from pathlib import Path
from typing import Any

from groundstate.environments.registry import environment_kind
from groundstate.environments.sqlite import SqliteEnvironment
from groundstate.errors import GroundstateError
from groundstate.spec.task import AgentTask, JudgeAssertion, ModelJudge, SqlAssertion

Query = Callable[[str], list[tuple[Any, ...]]]


def grader_queries(task: AgentTask) -> Iterator[tuple[str, str]]:
    """Each SQL a grader of *task* reads the state with, and its field in the task file."""
    for i, assertion in enumerate(task.outcome_assertions):
        if isinstance(assertion, SqlAssertion):
            yield f"outcome_assertions[{i}].sql", assertion.sql
        elif isinstance(assertion, JudgeAssertion) and isinstance(assertion.judge, ModelJudge):
            for name, sql in assertion.judge.state.items():
                yield f"outcome_assertions[{i}].judge.state.{name}", sql


def answered_otherwise(
    kind: str, fixture: Path, tasks: list[AgentTask]
) -> Iterator[tuple[AgentTask, str, str]]:
    """``(task, field, reason)`` for each grader query *kind* answers otherwise than SQLite at
    *fixture*'s initial state (an environment that cannot be built is said elsewhere)."""
    with ExitStack() as stack:
        try:
            build = environment_kind(kind).build
            ours = stack.enter_context(SqliteEnvironment(fixture, clock=tasks[0].clock))
            theirs = stack.enter_context(build(fixture, clock=tasks[0].clock))
            asked = (ours.initial_view().query, theirs.initial_view().query)
        except (GroundstateError, ImportError, AttributeError):
            return
        for task in tasks:
            for field, sql in grader_queries(task):
                reason = _differs(sql, kind, *asked)
                if reason is not None:
                    yield task, field, reason


def _differs(sql: str, kind: str, sqlite: Query, other: Query) -> str | None:
    answers = [_answer(sqlite, sql, refused=None), _answer(other, sql, refused="error")]
    if answers[0] is None or _same(*answers, ordered="ORDER BY" in " ".join(sql.upper().split())):
        return None  # SQLite's refusal is reported by its own check
    return (
        f"is answered otherwise on the {kind} kind than on SQLite at the fixture's initial "
        f"state (SQLite: {_shown(answers[0])}; {kind}: {_shown(answers[1])}), so the task "
        "would grade otherwise on the two kinds; write it in SQL both answer alike"
    )


Answer = list[tuple[Any, ...]] | str | None


def _answer(query: Query, sql: str, *, refused: str | None) -> Answer:
    """The rows, or *refused* and the error's first line (``None`` for *refused* None)."""
    try:
        return query(sql)
    except Exception as exc:  # any refusal is the answer to compare
        if refused is None:
            return None
        said = str(exc).strip()
        return f"{refused}: {said.splitlines()[0] if said else type(exc).__name__}"


def _same(a: Answer, b: Answer, *, ordered: bool) -> bool:
    """Alike as graders compare them: numbers by value (``4`` and ``4.0``), rows in order
    where the query orders them."""
    if isinstance(a, str) or isinstance(b, str) or a is None or b is None:
        return a == b
    rows = [[tuple(map(_cell, row)) for row in answer] for answer in (a, b)]
    if not ordered:
        rows = [sorted(r, key=repr) for r in rows]
    return rows[0] == rows[1]


def _cell(value: Any) -> Any:
    if isinstance(value, int | float) and not isinstance(value, bool):
        return float(value)
    return value


def _shown(answer: list[tuple[Any, ...]] | str | None, limit: int = 160) -> str:
    text = answer if isinstance(answer, str) else repr(answer)
    return text if len(text) <= limit else text[: limit - 3] + "..."
