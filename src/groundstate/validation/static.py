"""Static checks of a whole suite: every mistake that can be found without running an agent.

:func:`check_suite` reads every file of a suite and reports each problem once, as
``file:line: field: reason``, collecting all of them rather than stopping at the first:

- the loader's own checks (:func:`groundstate.spec.suite.scan_suite`): each file's fields,
  tool names in tasks, constraints and solutions, Python checks that resolve to a function;
- tool declarations: a ``ctx`` first parameter, type hints, a docstring;
- solution arguments valid under the tool's JSON Schema (the gateway would refuse them);
- fixtures that build (with the failing statement's line) and, against the schema they
  build, ``state_diff`` tables, columns and key types, and SQL assertions that compile;
- the decision the suite serves (``decision:`` and ``population:``): warnings when missing.

``validate`` and ``run`` call :func:`require_checked` first, so a suite with a problem is
refused once, with exit code 2, before any task is replayed.
"""

from __future__ import annotations

import itertools
import json
import os
import re
import sqlite3
from collections.abc import Callable, Iterable, Iterator
from contextlib import closing, suppress
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any, Literal

import jsonschema
from pydantic import BaseModel, ConfigDict

from groundstate.agents.model_loop import TALK_TO_USER
from groundstate.agents.python import load_agent
from groundstate.environments.base import TableState
from groundstate.environments.base import sqlite_affinity as _affinity
from groundstate.environments.registry import environment_capabilities, environment_kind
from groundstate.environments.sqlite import (
    FixtureTooLarge,
    FixtureTooSlow,
    SqliteEnvironment,
    build_failure,
    guard_build,
    read_data_fixture,
    read_fixture_text,
)
from groundstate.environments.sqlite_determinism import FixtureNotDeterministic
from groundstate.environments.sqlite_live import plain_read
from groundstate.errors import (
    EnvironmentFailure,
    FixtureNotCarried,
    GroundstateError,
    SpecError,
    one_line,
)
from groundstate.grading.constraints import normalise
from groundstate.grading.terminal import AGENT_FAILURES
from groundstate.rounding import counted
from groundstate.spec.canonical import canonical_json
from groundstate.spec.constraint_sets import SUITE_FILE, own_constraints
from groundstate.spec.constraints import (
    NO_PATTERN,
    YES_PATTERN,
    BeforeConstraint,
    ConfirmedRule,
    HardConstraint,
    Match,
    literal,
    named_tables,
    tool_matches,
    variable,
)
from groundstate.spec.files import line_of, read_yaml, with_line
from groundstate.spec.strict import JsonScalar, did_you_mean, is_number
from groundstate.spec.suite import Suite, scan_suite
from groundstate.spec.system import SystemSpec, load_system
from groundstate.spec.task import (
    AgentTask,
    ChangedRow,
    DiffAssertion,
    JudgeAssertion,
    ModelJudge,
    SqlAssertion,
    TableChange,
)
from groundstate.tools import declaration_problems, source_line
from groundstate.validation.dialect import answered_otherwise
from groundstate.validation.pattern_spacing import spacing_problem, verbose

Severity = Literal["error", "warning"]
Query = Callable[[str], list[tuple[Any, ...]]]
"""A read-only view's ``query``: SQL on the fixture's initial state."""


class SuiteProblem(BaseModel):
    """One problem of a suite, located as precisely as the file allows."""

    model_config = ConfigDict(frozen=True)

    file: str
    line: int | None = None
    """1-based line in ``file``; None when the problem has no one place (a missing file)."""
    field: str | None = None
    """Dotted path of the field (``steps[2].args.amount``), or the tool's name in tools.py."""
    reason: str
    severity: Severity = "error"

    def __str__(self) -> str:
        where = one_line(f"{self.file}:{self.line}" if self.line is not None else self.file)
        reason = one_line(self.reason)  # SQLite quotes the SQL it refuses, line breaks too
        text = f"{where}: {one_line(self.field)}: {reason}" if self.field else f"{where}: {reason}"
        return f"warning: {text}" if self.severity == "warning" else text


@dataclass
class SuiteCheck:
    """What :func:`check_suite` found, and the loaded suite when nothing is in error."""

    path: str
    problems: list[SuiteProblem] = field(default_factory=list)
    suite: Suite | None = None

    @property
    def errors(self) -> list[SuiteProblem]:
        return [p for p in self.problems if p.severity == "error"]

    @property
    def warnings(self) -> list[SuiteProblem]:
        return [p for p in self.problems if p.severity == "warning"]

    @property
    def ok(self) -> bool:
        return not self.errors

    def to_dict(self) -> dict[str, Any]:
        return {
            "suite": self.path,
            "ok": self.ok,
            "problems": [p.model_dump() | {"text": str(p)} for p in self.problems],
        }


class SuiteCheckFailed(GroundstateError):
    """The suite has problems a run would only have found as failing attempts."""

    def __init__(self, check: SuiteCheck) -> None:
        self.check = check
        super().__init__("\n".join(map(str, check.errors)))  # each problem is one line

    several = True  # the command line prints each problem as an error of its own


def require_checked(path: Path) -> SuiteCheck:
    """The check of the suite at *path*, with its loaded suite; raise if any problem is an error."""
    check = check_suite(path)
    if not check.ok:
        raise SuiteCheckFailed(check)
    return check


def require_sound(suite: Suite) -> None:
    """Raise :class:`SuiteCheckFailed` when the loaded *suite* has a problem ``groundstate
    check`` calls an error (what ``run`` refuses before any proof, for a suite loaded in
    Python)."""
    check = SuiteCheck(path=suite.shown())
    _add(check, _named_problems(suite))
    if not check.ok:
        raise SuiteCheckFailed(check)


def _named_problems(suite: Suite) -> Iterator[SuiteProblem]:
    """:func:`_suite_problems`, each file named as the user named the suite (it is loaded from
    its absolute folder), as the problems found while loading it are."""
    for problem in _suite_problems(suite):
        yield problem.model_copy(update={"file": suite.shown(problem.file)})


def check_suite(path: Path) -> SuiteCheck:
    """Every problem of the suite at *path* that can be found without running an agent."""
    suite, errors = scan_suite(Path(path))
    check = SuiteCheck(path=str(path))
    _add(check, map(_from_spec_error, [e for error in errors for e in error.every or [error]]))
    if suite is not None:
        _add(check, _named_problems(suite))
    if check.ok:
        check.suite = suite
    return check


def check_system(path: Path, suite: Suite | None = None) -> list[SuiteProblem]:
    """The problems of a system file: its fields, building the agent it names, and (given
    the *suite* it is to run) the tools it names."""
    try:
        system = load_system(Path(path))
        load_agent(system)
    except SpecError as exc:
        return [_from_spec_error(each) for each in exc.every or [exc]]  # a factory's raise too
    return system_tool_problems(system, suite) if suite is not None else []


def system_tool_problems(system: SystemSpec, suite: Suite) -> list[SuiteProblem]:
    """A ``harness.tool_descriptions`` entry naming no tool of *suite*: its description is
    never shown, and the agent sees the suite's own. An error when the name is close to a
    tool's (a typo); a warning otherwise, since one system may serve several suites."""
    known = [*suite.tools, TALK_TO_USER]
    problems = []
    for name in system.harness.tool_descriptions:
        if name in known:
            continue
        hint = did_you_mean(name, known)
        field_name = f"harness.tool_descriptions.{name}"
        problems.append(
            SuiteProblem(
                file=str(system.source),
                line=line_of(system.source, field_name),
                field=field_name,
                reason=f"{name!r} is no tool of suite {suite.config.name!r}{hint}: this"
                " description is never shown",
                severity="error" if hint else "warning",
            )
        )
    return problems


def refuse_system_tool_errors(system: SystemSpec, suite: Suite) -> None:
    """Raise the first error of :func:`system_tool_problems` (``run`` leaves warnings to
    ``check``)."""
    for problem in system_tool_problems(system, suite):
        if problem.severity == "error":
            raise SpecError(problem.file, problem.field, problem.reason, line=problem.line)


def _add(check: SuiteCheck, problems: Iterable[SuiteProblem]) -> None:
    """Add each problem once: a file's error met through several references is one problem,
    however its path was spelt (a check file that does not import, named by suite.yaml's
    constraint sets from the folder as given and by a task's from the absolute root, was
    reported twice)."""
    seen = {_key(problem) for problem in check.problems}
    for problem in problems:
        if _key(problem) not in seen:
            seen.add(_key(problem))
            check.problems.append(problem)


def _key(problem: SuiteProblem) -> SuiteProblem:
    """*problem* with its file's path made absolute: what :func:`_add` tells apart."""
    return problem.model_copy(update={"file": os.path.abspath(problem.file)})


def _from_spec_error(error: SpecError) -> SuiteProblem:
    error = with_line(error)
    return SuiteProblem(file=error.path, line=error.line, field=error.field, reason=error.reason)


def _suite_problems(suite: Suite) -> Iterator[SuiteProblem]:
    yield from _decision_warnings(suite)
    yield from _unread_policy(suite)
    yield from _tool_problems(suite)
    yield from _solution_problems(suite)
    yield from _constraint_arg_problems(suite)
    yield from _pattern_problems(suite)
    if "sql" not in environment_capabilities(suite.config.environment):
        return  # the static checks of fixtures and assertions read SQL tables
    by_fixture: dict[Path, list[AgentTask]] = {}
    for task_id in sorted(suite.tasks):
        task = suite.tasks[task_id]
        by_fixture.setdefault(suite.fixture_path(task), []).append(task)
    for fixture, tasks in by_fixture.items():
        yield from _fixture_problems(suite, fixture, tasks)
        yield from _carry_over_problems(suite, fixture, tasks)


# --- the decision the suite serves ------------------------------------------------------------


def _unread_policy(suite: Suite) -> Iterator[SuiteProblem]:
    """A ``policy.md`` that ``suite.yaml`` does not name is never given to the agent."""
    if suite.config.policy is None and "policy.md" in suite.files:
        yield SuiteProblem(
            file=str(suite.root / SUITE_FILE),
            field="policy",
            reason="not declared, so policy.md is never given to the agent: add"
            " `policy: policy.md`",
            severity="warning",
        )


def _decision_warnings(suite: Suite) -> Iterator[SuiteProblem]:
    file = str(suite.root / SUITE_FILE)
    if suite.config.decision is None:
        yield SuiteProblem(
            file=file,
            field="decision",
            reason="not declared: name the deployment decision this suite's numbers inform",
            severity="warning",
        )
    if suite.config.population is None:
        yield SuiteProblem(
            file=file,
            field="population",
            reason="not declared: describe the target task population and how the tasks "
            "were sampled from it ({description, sampling})",
            severity="warning",
        )


# --- tools -----------------------------------------------------------------------------------


def _tool_problems(suite: Suite) -> Iterator[SuiteProblem]:
    file = str(suite.root / suite.config.tools)
    for name, declared in sorted(suite.tools.items()):
        for reason in declaration_problems(declared):
            yield SuiteProblem(file=file, line=source_line(declared), field=name, reason=reason)


def _solution_problems(suite: Suite) -> Iterator[SuiteProblem]:
    """Arguments the gateway would refuse, or a ``fails_by`` naming no constraint, make a
    solution prove nothing: name them now."""
    for task_id, solutions in sorted(suite.solutions.items()):
        for name, solution in solutions.items():
            path = suite.root / "solutions" / task_id / f"{name}.yaml"
            yield from _fails_by_problems(suite, task_id, solution.fails_by, path)
            for i, step in enumerate(solution.steps):
                declared = suite.tools.get(step.call or "")
                if declared is None:
                    continue
                validator = jsonschema.Draft202012Validator(declared.parameters)
                for error in sorted(validator.iter_errors(step.args), key=str):
                    where = "".join(f".{part}" for part in error.absolute_path)
                    field_name = f"steps[{i}].args{where}"
                    yield SuiteProblem(
                        file=str(path),
                        line=line_of(path, field_name),
                        field=field_name,
                        reason=f"{error.message} (schema of tool {step.call!r})"
                        + (REPLAYS_REFUSED if solution.kind == "known_bad" else ""),
                        # An agent's refused call, which regress copies with the rest of its
                        # trajectory, is one a known-bad may replay; no route that passes can.
                        severity="warning" if solution.kind == "known_bad" else "error",
                    )


REPLAYS_REFUSED = (
    ": the gateway refuses this call, so the known-bad replays a refused call (as an agent may "
    "make one); if it is a slip, its failure may not show what it was written to show"
)


def _written_at(suite: Suite, task: AgentTask) -> Iterator[tuple[Path, str, HardConstraint]]:
    """Each of the task's constraints with the file and field it is written at: an included
    set's in ``suite.yaml``, the task's own in its file (the loaded list has the sets first)."""
    for name in task.constraint_sets:
        for j, constraint in enumerate(suite.config.constraint_sets[name]):
            yield suite.root / SUITE_FILE, f"constraint_sets.{name}[{j}]", constraint
    task_file = suite.root / "tasks" / f"{task.task_id}.yaml"
    for i, constraint in enumerate(own_constraints(task, suite.config.constraint_sets)):
        yield task_file, f"hard_process_constraints[{i}]", constraint


def _each_constraint(suite: Suite) -> Iterator[tuple[Path, str, HardConstraint]]:
    """Each constraint the suite's tasks hold, with where it is written: a set's once, not
    once per task including it."""
    seen: set[str] = set()
    for _, task in sorted(suite.tasks.items()):
        for path, at, constraint in _written_at(suite, task):
            if f"{path}:{at}" not in seen:
                seen.add(f"{path}:{at}")
                yield path, at, constraint


def _pattern_problems(suite: Suite) -> Iterator[SuiteProblem]:
    """A ``matches`` or ``asks`` pattern with a character normalised text never holds (a
    typographic apostrophe, ``ß``, a non-breaking space, a tab, a fullwidth or look-alike
    letter): it searches normalised text, so ``never: {message: agent, matches: "I\u2019m
    sorry"}`` holds on every attempt, and an ``at_least`` on it fails on every one. So is
    one asking for spacing it never has (two spaces in a row, a ``\\n``: see
    :mod:`groundstate.validation.pattern_spacing`)."""
    for path, at, constraint in _each_constraint(suite):
        for where, pattern in _patterns(constraint):
            layout = verbose(pattern)  # (?x): its line breaks and tabs are layout
            dead = [
                c
                for c in sorted(set(pattern))
                if normalise(f"a{c}a") != f"a{c.lower()}a" and not (layout and c.isspace())
            ]
            shown = ", ".join(f"{c!r} (read as {normalise(f'a{c}a')[1:-1]!r})" for c in dead)
            spacing = None if dead else spacing_problem(pattern)
            if dead or spacing:
                field_name = f"{at}{where}"
                yield SuiteProblem(
                    file=str(path),
                    line=line_of(path, field_name),
                    field=field_name,
                    reason=f"constraint {constraint.id!r}: the pattern searches normalised text, "
                    + (f"which never holds {shown}" if dead else f"where {spacing}")
                    + ": write it as normalised text reads",
                )


def _patterns(model: BaseModel, field: str = "") -> Iterator[tuple[str, str]]:
    """``(field, pattern)`` of each pattern written in *model* (not the default yes and no)."""
    if isinstance(model, Match) and model.matches not in (None, YES_PATTERN, NO_PATTERN):
        yield f"{field}.matches", str(model.matches)
    if isinstance(model, ConfirmedRule) and model.asks is not None:
        yield f"{field}.asks", model.asks
    for name in type(model).model_fields:
        value = getattr(model, name)
        if isinstance(value, BaseModel):
            yield from _patterns(value, f"{field}.{name}")


def _constraint_arg_problems(suite: Suite) -> Iterator[SuiteProblem]:
    """A match's ``args`` value, or a ``where`` value at a path into ``args``, that the tool's
    schema refuses (``amount: "30"`` for an integer) selects only calls the gateway refused:
    a ``never`` on it holds vacuously."""
    for path, at, constraint in _each_constraint(suite):
        for where, tool, shapes in _argument_values(constraint):
            declared = suite.tools.get(tool)
            if declared is None:
                continue
            # Only the members given: a match names a few, never all that are required.
            validator = jsonschema.Draft202012Validator(_loosened(declared.parameters))
            found = [sorted(validator.iter_errors(shape), key=str) for shape in shapes]
            # refused when no shape the value may stand in is accepted
            for error in found[0] if all(found) else []:
                inside = "".join(f".{part}" for part in error.absolute_path)
                field_name = f"{at}{where}" + (inside if where.endswith(".args") else "")
                reason = f"constraint {constraint.id!r}: {error.message} "
                yield SuiteProblem(
                    file=str(path),
                    line=line_of(path, field_name),
                    field=field_name,
                    reason=reason + f"(schema of tool {tool!r}): no accepted call has it",
                )


def _argument_values(constraint: HardConstraint) -> Iterator[tuple[str, str, list[Any]]]:
    """``(field, tool, shapes)``: each ``args`` of a match naming a tool, and each literal
    ``where`` value at a path into the arguments of such a match (or of a ``before``'s
    ``then``), as the arguments that would hold it (a number in a path may index a list or
    name a key: one shape each)."""
    conditions = []
    for where, match in tool_matches(constraint):
        conditions.append((where, match.tool, match.where))
        if match.args:
            yield f"{where}.args", str(match.tool), _as_text(match.args, top=True)
    if isinstance(constraint, BeforeConstraint):
        conditions.append((".before", constraint.before.then.tool, constraint.before.where))
    for where, tool, condition in conditions:
        for at, value in condition.items():
            segments = at.split(".")
            if segments[0] == "args" and tool not in (None, "*") and variable(value) is None:
                yield f"{where}.where.{at}", str(tool), _shapes(segments[1:], literal(value))


def _shapes(segments: list[str], value: Any, top: bool = True) -> list[Any]:
    """The arguments holding *value* at *segments* below them: ``*`` a list's element, a
    number a list's element or a key, any other segment a key; below the arguments, an
    object or a list may also be JSON text holding it (a path reads through a string)."""
    if not segments:
        return [value]
    head, inner = segments[0], _shapes(segments[1:], value, top=False)
    shapes: list[Any] = [{head: v} for v in inner] if head != "*" else []
    if head == "*" or head.removeprefix("-").isdecimal():
        shapes += [[v] for v in inner]
    return shapes if top else shapes + [json.dumps(v) for v in shapes]


SHAPES_TRIED = 64
"""The most shapes of a match's ``args`` validated: each object or list in it may be JSON
text instead, which doubles them at each one."""


def _as_text(value: Any, top: bool = False) -> list[Any]:
    """*value* (a match's ``args``, or a value in them) and, below the arguments, each way
    of writing its objects and lists as JSON text instead (at most :data:`SHAPES_TRIED`)."""
    if isinstance(value, dict):
        members = [_as_text(v) for v in value.values()]
        tried = itertools.islice(itertools.product(*members), SHAPES_TRIED)
        made: list[Any] = [dict(zip(value, c, strict=True)) for c in tried]
    elif isinstance(value, list):
        tried = itertools.islice(itertools.product(*[_as_text(v) for v in value]), SHAPES_TRIED)
        made = [list(c) for c in tried]
    else:
        return [value]
    return made if top else (made + [json.dumps(v) for v in made])[:SHAPES_TRIED]


_WHOLE_ONLY = frozenset(
    {"required", "minItems", "minProperties", "dependentRequired", "dependencies", "contains"}
)
"""Schema keywords about what else an object or list holds, which a match does not give."""
_VALUES = frozenset({"enum", "const", "default", "examples"})
"""Schema keywords whose values are data, not schemas."""
_NAMED = frozenset({"properties", "patternProperties", "$defs", "definitions", "dependentSchemas"})
"""Schema keywords mapping names to schemas (a property may be called ``required``)."""


def _loosened(schema: Any) -> Any:
    """*schema* without the keywords of :data:`_WHOLE_ONLY`, at any depth."""
    if isinstance(schema, list):
        return [_loosened(item) for item in schema]
    if not isinstance(schema, dict):
        return schema
    loose: dict[str, Any] = {}
    for key, value in schema.items():
        if key in _NAMED and isinstance(value, dict):
            loose[key] = {name: _loosened(item) for name, item in value.items()}
        elif key not in _WHOLE_ONLY:
            loose[key] = value if key in _VALUES else _loosened(value)
    return loose


def _fails_by_problems(
    suite: Suite, task_id: str, fails_by: str | None, path: Path
) -> Iterator[SuiteProblem]:
    """``fails_by`` is ``outcome``, ``outcome:<id>`` or ``constraint:<id>`` naming an outcome
    assertion or constraint of the task, or an agent failure's terminal reason; anything else
    (a typo) would only surface as "fails for another reason" in ``validate``."""
    if fails_by is None or fails_by == "outcome":
        return
    prefix, colon, wanted = fails_by.partition(":")
    reason = None
    if not colon and fails_by not in AGENT_FAILURES:  # a typo would surface as a failed validate
        known = ", ".join(sorted(AGENT_FAILURES))
        reason = f"{fails_by!r} is not outcome, outcome:<id>, constraint:<id> or one of {known}"
        reason += did_you_mean(fails_by, ["outcome", *AGENT_FAILURES])
    elif colon and (prefix not in ("constraint", "outcome") or not wanted):
        reason = f"{fails_by!r} is not outcome:<id> or constraint:<id>"
    if reason is not None:
        yield SuiteProblem(
            file=str(path), line=line_of(path, "fails_by"), field="fails_by", reason=reason
        )
    task = suite.tasks.get(task_id)
    if task is None or not colon or reason is not None:
        return
    checks = task.hard_process_constraints if prefix == "constraint" else task.outcome_assertions
    what = "constraint" if prefix == "constraint" else "outcome assertion"
    if wanted not in [c.id for c in checks]:
        yield SuiteProblem(
            file=str(path),
            line=line_of(path, "fails_by"),
            field="fails_by",
            reason=f"tasks/{task_id}.yaml has no {what} {wanted!r}"
            + did_you_mean(wanted, [c.id for c in checks]),
        )
    elif any(isinstance(c, JudgeAssertion) and c.id == wanted for c in checks):
        yield SuiteProblem(
            file=str(path),
            line=line_of(path, "fails_by"),
            field="fails_by",
            reason=f"{wanted!r} of tasks/{task_id}.yaml is a judged assertion, which never "
            "decides success: a known-bad failing by it alone passes (name an assertion that "
            "reads the state, or outcome)",
        )


# --- fixtures --------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Table:
    """What assertions may name in one table of a fixture."""

    state: TableState
    types: dict[str, str]
    """Declared type of each column (``""`` when none; ``INTEGER`` for the implicit rowid)."""


def _fixture_problems(suite: Suite, fixture: Path, tasks: list[AgentTask]) -> list[SuiteProblem]:
    """Build the fixture as a run would, then check the tasks' assertions against it."""
    try:
        with SqliteEnvironment(fixture, clock=tasks[0].clock) as env:
            view = env.initial_view()
            tables = {
                name: _Table(state, _declared_types(view.query, name))
                for name, state in env.snapshot().tables.items()
            }
            problems = list(_cell_problems(fixture, tables))
            problems += _sql_cell_problems(fixture, tables)
            for task in tasks:
                task_file = suite.root / "tasks" / f"{task.task_id}.yaml"
                problems += _assertion_problems(task, task_file, tables, view.query)
                problems += _write_problems(suite, task, tables)
                problems += _permission_problems(task, task_file, tables)
            return list(dict.fromkeys(problems))  # a set's constraint, once per fixture
    except EnvironmentFailure as exc:
        cause = exc.__cause__  # a data fixture's several problems: each one, as a task's are
        if isinstance(cause, SpecError) and cause.every:
            return [_from_spec_error(each) for each in cause.every]
        return [_fixture_problem(fixture, exc)]


def _carry_over_problems(suite: Suite, fixture: Path, tasks: list[AgentTask]) -> list[SuiteProblem]:
    """A fixture the suite's kind cannot build as SQLite does (SQLite-only SQL on the postgres
    kind: a ``DEFAULT (datetime('now'))``, a ``CHECK (v GLOB ...)``), at each task using it.
    Every proof and attempt failed on it with the server's raw error, naming no task, table
    or column. A kind offers the check as its ``check_fixture(fixture, clock)``; then the
    graders' queries are asked of it and of SQLite (:mod:`~groundstate.validation.dialect`)."""
    kind = suite.config.environment
    try:
        check = getattr(environment_kind(kind).build, "check_fixture", None)
        if check is None:
            return []
        check(fixture, tasks[0].clock)
    except FixtureNotCarried as exc:
        return [
            SuiteProblem(
                file=str(task_file),
                line=line_of(task_file, "initial_state_fixture"),
                field="initial_state_fixture",
                reason=f"cannot be built on the {kind} kind: {exc}",
            )
            for task_file in (suite.root / "tasks" / f"{t.task_id}.yaml" for t in tasks)
        ]
    except EnvironmentFailure:  # the server or a missing extra, not the suite: runs report it
        return []
    return [
        _at(suite.root / "tasks" / f"{task.task_id}.yaml", field_name, reason)
        for task, field_name, reason in answered_otherwise(kind, fixture, tasks)
    ]


def _sql_cell_problems(fixture: Path, tables: dict[str, _Table]) -> Iterator[SuiteProblem]:
    """A SQL fixture's text in a numeric column (``'1,000'`` or ``'ten'`` in an INTEGER one),
    as a data fixture's cells are checked: SQLite keeps it as text, which compares above every
    number, so ``balance >= 30`` holds for it and a grader's threshold passes a broken row."""
    if fixture.suffix != ".sql":
        return
    lines = fixture.read_text(encoding="utf-8", errors="replace").splitlines()
    for name, table in tables.items():
        for column in table.state.columns:
            declared = table.types.get(column, "")
            if _affinity(declared) not in _NUMERIC or "DATE" in declared or "TIME" in declared:
                continue
            texts = [
                (key, row[column])
                for key, row in table.state.rows.items()
                if isinstance(row.get(column), str)
            ]
            if not texts:
                continue
            key, value = texts[0]
            more = f" (and in {len(texts) - 1} more rows)" if len(texts) > 1 else ""
            quoted = "'" + value.replace("'", "''") + "'"
            yield SuiteProblem(
                file=str(fixture),
                line=next((i for i, line in enumerate(lines, 1) if quoted in line), None),
                field=f"{name}.{column}",
                reason=(
                    f"holds the text {value!r} in the row with key {key}{more}, but {name}."
                    f"{column} is {declared}: SQLite keeps it as text, which compares above "
                    f"every number ({column} >= 0 holds for it); write it as a number"
                ),
            )


def _cell_problems(fixture: Path, tables: dict[str, _Table]) -> Iterator[SuiteProblem]:
    """A data fixture's cell that SQLite stores otherwise than written (``true`` or ``4411``
    in a TEXT column is the text '1' or '4411', ``"010"`` in an INTEGER one the number 10),
    or text in a numeric column (``capacity: ten``, which compares above every number)."""
    if fixture.suffix not in (".yaml", ".yml", ".json"):
        return
    for table, rows in read_data_fixture(fixture).rows.items():
        types = {c.casefold(): t for c, t in tables[table].types.items()} if table in tables else {}
        for i, row in enumerate(rows):
            for column, value in row.items():
                declared, name = types.get(column.casefold(), ""), f"{table}.{column}"
                reason = _stored_otherwise(value, declared, name)
                if reason is None and isinstance(value, str) and _affinity(declared) in _NUMERIC:
                    reason = f"{value!r} is text but {name} is {declared}"
                if reason is not None:
                    yield _at(fixture, f"rows.{table}[{i}].{column}", reason)


def fixture_build_problem(fixture: Path, clock: datetime) -> SuiteProblem | None:
    """Why *fixture* (a relational fixture file: other kinds build from its SQLite image)
    does not build into an environment with a table, located as ``check`` locates it; None
    when it does. ``check-env --fixture`` asks this first: a broken fixture is the user's
    mistake (exit 2), not a broken promise of the environment kind."""
    try:
        with SqliteEnvironment(fixture, clock=clock) as env:
            if not env.snapshot().tables:
                return SuiteProblem(file=str(fixture), reason="defines no table to probe")
    except EnvironmentFailure as exc:
        return _fixture_problem(fixture, exc)
    return None


def _declared_types(query: Query, table: str) -> dict[str, str]:
    quoted = '"' + table.replace('"', '""') + '"'
    types = {row[1]: str(row[2]).upper() for row in query(f"PRAGMA table_info({quoted})")}
    return {"rowid": "INTEGER", **types}


def _fixture_problem(fixture: Path, exc: EnvironmentFailure) -> SuiteProblem:
    cause = exc.__cause__
    if isinstance(cause, SpecError):  # the YAML itself: the loader says where
        return _from_spec_error(cause)
    if isinstance(cause, OSError):  # writing the harness's own files: no statement is at fault
        return SuiteProblem(file=str(fixture), reason=str(exc).removeprefix(f"fixture {fixture}: "))
    if isinstance(cause, FixtureTooSlow | FixtureTooLarge | FixtureNotDeterministic):
        # no one statement fails
        return SuiteProblem(file=str(fixture), reason=f"does not build: {cause}")
    line, reason = _locate_fixture_error(fixture) or (None, str(cause or exc))
    return SuiteProblem(file=str(fixture), line=line, reason=f"does not build: {reason}")


def _locate_fixture_error(fixture: Path) -> tuple[int | None, str] | None:
    """The line and message of the first statement or row of *fixture* SQLite refuses."""
    try:
        if fixture.suffix == ".sql":
            return _first_failing_statement(read_fixture_text(fixture), 1)
        data = read_yaml(fixture)
    except (OSError, UnicodeDecodeError, SpecError):
        return None
    if not isinstance(data, dict) or not isinstance(data.get("schema"), str):
        return None
    schema_line = line_of(fixture, "schema") or 1
    block = re.search(r"schema:\s*[|>]", _line_text(fixture, schema_line)) is not None
    return _first_failing_statement(data["schema"], schema_line + int(block))


def _line_text(path: Path, line: int) -> str:
    lines = path.read_text(encoding="utf-8").splitlines()
    return lines[line - 1] if 0 < line <= len(lines) else ""


def _first_failing_statement(script: str, first_line: int) -> tuple[int, str] | None:
    """Run *script* one complete statement at a time; the first that fails, with its line."""
    if "\0" in script:  # SQLite's API refuses the whole script, naming no statement
        nul = script.index("\0")
        return first_line + script.count("\n", 0, nul), "a NUL character, which SQL cannot hold"
    with closing(sqlite3.connect(":memory:", isolation_level=None)) as db:
        refused = guard_build(db)  # as the build is guarded: ATTACH is refused here too
        for start, statement in _statements(script):
            try:
                db.executescript(statement)
            except sqlite3.Error as exc:
                reason = build_failure(exc, refused) or exc
                return first_line + script.count("\n", 0, start), str(reason)
    return None


def _statements(script: str) -> Iterator[tuple[int, str]]:
    """Each statement of *script* with the offset where its text starts: statements end at a
    ``;`` that completes one (not one inside a string, a comment or a trigger's body), and a
    line may hold several (``INSERT ...; INSERT ...;``)."""
    start = 0
    for end in (match.end() for match in re.finditer(";", script)):
        if sqlite3.complete_statement(script[start:end]):
            yield _text_start(script, start, end), script[start:end]
            start = end
    if script[start:].strip():
        yield _text_start(script, start, len(script)), script[start:]


def _text_start(script: str, start: int, end: int) -> int:
    """Where the text between *start* and *end* begins, past blanks and whole comment lines."""
    for match in re.finditer(r"[^\n]*\n?", script[start:end]):
        text = match.group().strip()
        if text and not text.startswith("--"):
            return start + match.start() + len(match.group()) - len(match.group().lstrip())
    return start


# --- assertions against the fixture ----------------------------------------------------------


def _assertion_problems(
    task: AgentTask, task_file: Path, tables: dict[str, _Table], query: Query
) -> Iterator[SuiteProblem]:
    fixture = task.initial_state_fixture
    for i, assertion in enumerate(task.outcome_assertions):
        base = f"outcome_assertions[{i}]"
        if isinstance(assertion, DiffAssertion):
            for table, change in assertion.state_diff.items():
                where = f"{base}.state_diff.{table}"
                if table not in tables:
                    known = ", ".join(sorted(tables))
                    yield _at(
                        task_file,
                        where,
                        f"fixture {fixture} has no table {table!r} (it has: {known})",
                    )
                    continue
                for field_name, reason in _change_problems(change, tables[table], table, fixture):
                    yield _at(task_file, f"{where}.{field_name}", reason)
        elif isinstance(assertion, SqlAssertion):
            refused = _sql_problem(assertion.sql, query, fixture) or _not_a_read(
                assertion.sql, query
            )
            if refused is not None:
                yield _at(task_file, f"{base}.sql", refused)
            if _order_left_to_storage(assertion):
                yield _at(task_file, f"{base}.ordered", ORDER_LEFT_TO_STORAGE)
            unordered = order_sensitive(assertion.sql)
            if unordered is not None:
                yield _at(task_file, f"{base}.sql", unordered).model_copy(
                    update={"severity": "warning"}
                )
        elif isinstance(assertion, JudgeAssertion) and isinstance(assertion.judge, ModelJudge):
            for name, sql in assertion.judge.state.items():  # a model judge's state excerpts
                refused = _sql_problem(sql, query, fixture) or _not_a_read(sql, query)
                if refused is not None:
                    yield _at(task_file, f"{base}.judge.state.{name}", refused)


NOT_A_READ = (
    "is not a read-only query: a grader reads the final state, and this would write, attach "
    "a database, open a transaction, create a TEMP object or set a pragma (the evaluator "
    "view refuses a write; the rest would change what the attempt's later checks read)"
)


CHANCE = frozenset({"random", "randomblob"})
"""SQL functions whose every call differs: a verdict computed with one is left to chance."""


def draws_chance(called: list[str]) -> str:
    return (
        f"calls {', '.join(f'{name}()' for name in dict.fromkeys(called))}: the verdict would "
        "be left to chance (two gradings of one final state may disagree); compare with fixed "
        "values"
    )


def _not_a_read(sql: str, query: Query) -> str | None:
    """Why *sql* is not a plain, repeatable read (None: it is): compiled on an empty copy of
    the fixture's schema under an authorizer that allows reads only, and notes the functions
    that draw random values (on any branch, run or not: a ``CASE`` that draws only on some
    states is as much a draw). A schema the copy cannot build (a virtual table's module) is
    not judged here."""
    schema = query(
        "SELECT sql FROM sqlite_master WHERE sql IS NOT NULL AND name NOT LIKE 'sqlite_%' "
        "ORDER BY rowid"
    )
    denied: list[int] = []
    called: list[str] = []

    def reads_only(action: int, arg1: str | None, arg2: str | None, *_: str | None) -> int:
        if action == sqlite3.SQLITE_FUNCTION and (arg2 or "").lower() in CHANCE:
            called.append((arg2 or "").lower())
        if plain_read(action, arg1, arg2):
            return sqlite3.SQLITE_OK
        denied.append(action)
        return sqlite3.SQLITE_DENY

    with closing(sqlite3.connect(":memory:", isolation_level=None)) as db:
        try:
            for (statement,) in schema:
                db.execute(statement)
        except sqlite3.Error:
            return None
        db.set_authorizer(reads_only)
        with suppress(sqlite3.Error):  # another reason is _sql_problem's (say our functions)
            db.execute(f"EXPLAIN {sql}").fetchall()  # compiled, never run: no runaway query
    if denied:
        return NOT_A_READ
    return draws_chance(called) if called else None


ORDER_LEFT_TO_STORAGE = (
    "ordered: true, but the query has no ORDER BY: SQLite returns rows in storage order, which "
    "a row deleted and inserted again changes while the state (and its hash) stays the same; "
    "add ORDER BY or drop ordered"
)


_SQL_TEXT = re.compile(r"'(?:[^']|'')*'|\"(?:[^\"]|\"\")*\"|--[^\n]*|/\*.*?\*/", re.DOTALL)
_ORDER_SENSITIVE = re.compile(
    r"(?i)\b(limit|offset|group_concat|string_agg|json_group_array|json_group_object)\b"
)


def order_sensitive(sql: str) -> str | None:
    """Why *sql*'s result may rest on the order SQLite happens to read rows in (None: no
    sign of it): a LIMIT, an OFFSET or a concatenating aggregate in a query with no ORDER BY
    anywhere. A textual look, hence a warning: ``grader_determinism`` reads unordered rows
    reversed once and finds the cases the oracle's state shows."""
    text = _without_exists(_SQL_TEXT.sub(" ", sql))  # literals, comments; EXISTS is one row
    found = _ORDER_SENSITIVE.search(text)
    if found is None or re.search(r"(?i)\border\s+by\b", text):
        return None
    return (
        f"{found.group(1).upper()} without ORDER BY: which rows it keeps, or the order it "
        "joins them in, is the order SQLite happens to read them (storage order, which a row "
        "deleted and inserted again changes); add ORDER BY, unless one row can match"
    )


def _without_exists(text: str) -> str:
    """*text* with each ``EXISTS (...)`` left out: whether a row exists is no row's order."""
    while (found := re.search(r"(?i)\bexists\s*\(", text)) is not None:
        depth, end = 0, len(text)
        for i in range(found.end() - 1, len(text)):
            depth += {"(": 1, ")": -1}.get(text[i], 0)
            if depth == 0:
                end = i + 1
                break
        text = text[: found.start()] + " 1 " + text[end:]
    return text


def _order_left_to_storage(assertion: SqlAssertion) -> bool:
    """Whether an ordered query's order of several rows is not the query's own (a textual
    look: an ORDER BY in a subquery satisfies it, ties of an ORDER BY are not seen)."""
    several = len(assertion.expect_rows) > 1
    return assertion.ordered and several and not re.search(r"(?i)\border\s+by\b", assertion.sql)


def _write_problems(
    suite: Suite, task: AgentTask, tables: dict[str, _Table]
) -> Iterator[SuiteProblem]:
    """A ``writes`` match or ``no_undo`` naming a table or column the fixture lacks would hold
    vacuously on every attempt. SQL names ignore case, as the grader compares them."""
    known = {name.casefold(): table for name, table in tables.items()}
    for task_file, at, constraint in _written_at(suite, task):
        for where, name, key, columns in named_tables(constraint):
            field_name = f"{at}{where}"
            table = known.get(name.casefold())
            if table is None:
                have = ", ".join(sorted(tables))
                reason = f"constraint {constraint.id!r}: fixture {task.initial_state_fixture} "
                yield _at(task_file, field_name, reason + f"has no table {name!r} (it has: {have})")
                continue
            # A key may name a row the attempt inserts: only its shape is checked.
            wrong_key = "" if key is None else _key_shape_problem(key, table, name)
            if wrong_key:
                yield _at(
                    task_file, f"{field_name}.key", f"constraint {constraint.id!r}: {wrong_key}"
                )
            have_columns = {c.casefold() for c in table.state.columns}
            for j, column in enumerate(columns):
                if column.casefold() not in have_columns:
                    reason = f"constraint {constraint.id!r}: {name} has no column {column!r}"
                    yield _at(task_file, f"{field_name}.columns[{j}]", reason)


def _permission_problems(
    task: AgentTask, task_file: Path, tables: dict[str, _Table]
) -> Iterator[SuiteProblem]:
    """A permission on a table the fixture lacks restricts nothing, and the table meant stays
    writable. SQLite hands the authorizer the name the schema declares, so a permission must
    spell it exactly, case included."""
    for name in task.permissions.tables:
        if name in tables:
            continue
        same = [table for table in tables if table.casefold() == name.casefold()]
        hint = (
            f" (the fixture spells it {same[0]!r}; permissions name tables exactly)"
            if same
            else did_you_mean(name, tables)
        )
        reason = (
            f"fixture {task.initial_state_fixture} has no table {name!r}, so this permission "
            f"restricts nothing{hint} (it has: {', '.join(sorted(tables))})"
        )
        yield _at(task_file, f"permissions.tables.{name}", reason)


def _at(file: Path, field_name: str, reason: str) -> SuiteProblem:
    return SuiteProblem(
        file=str(file), line=line_of(file, field_name), field=field_name, reason=reason
    )


def _change_problems(
    change: TableChange, table: _Table, name: str, fixture: str
) -> Iterator[tuple[str, str]]:
    columns = set(table.state.columns)
    values = [(f"added[{i}]", row) for i, row in enumerate(change.added)]
    values += [(f"changed[{i}].set", c.set) for i, c in enumerate(change.changed)]
    keyless = table.state.key == ["rowid"]
    for where, row in values:
        for column, value in row.items():
            if column not in columns:
                yield f"{where}.{column}", f"{name} has no column {column!r}"
            elif keyless and column == "rowid" and where.startswith("added"):
                yield f"{where}.{column}", ROWID_IS_NOT_STATE.format(name=name)
            elif wrong := _stored_otherwise(value, table.types.get(column, ""), f"{name}.{column}"):
                yield f"{where}.{column}", wrong
    for i, key in enumerate(change.removed):
        yield from _key_problems(f"removed[{i}]", key, table, name, fixture)
    for i, changed in enumerate(change.changed):
        yield from _key_problems(f"changed[{i}].key", changed.key, table, name, fixture)
        yield from _key_set_problems(f"changed[{i}].set", changed, table, name)


ROWID_IS_NOT_STATE = (
    "{name} has no primary key: its rowid is not state (the hash leaves it out, and a row "
    "deleted and inserted again takes another): match the row on its values"
)


def _key_set_problems(
    where: str, changed: ChangedRow, table: _Table, name: str
) -> Iterator[tuple[str, str]]:
    """A ``set`` giving a key column another value can never hold: a row whose key changes
    is another row, which the diff shows removed and added."""
    key = changed.key if isinstance(changed.key, list) else [changed.key]
    named = dict(zip(table.state.key, key, strict=False))  # ``rowid`` too
    for column, value in changed.set.items():
        if column in named and canonical_json(value) != canonical_json(named[column]):
            yield (
                f"{where}.{column}",
                f"{column} is the key of {name}: a row whose key changes is another row (the "
                "diff shows it removed and one added: expect removed and added)",
            )


def _key_problems(
    where: str, key: JsonScalar | list[JsonScalar], table: _Table, name: str, fixture: str
) -> Iterator[tuple[str, str]]:
    """A key that cannot name a row of s0 makes the expected change impossible to see."""
    if canonical_json(key) in table.state.rows:
        return  # names a row, whatever the declared type says
    wrong = _key_shape_problem(key, table, name)
    if wrong:  # the likeliest reason it names no row: say that, not only "no row"
        yield where, wrong
    else:
        yield where, f"no row of {name} in fixture {fixture} has key {canonical_json(key)}"


def _key_shape_problem(key: JsonScalar | list[JsonScalar], table: _Table, name: str) -> str:
    """Why *key* cannot be a key of *table* at all: the number or the types of its values
    ("" when it can be)."""
    columns = table.state.key
    values = key if isinstance(key, list) else [key]
    if isinstance(key, list) != (len(columns) > 1) or len(values) != len(columns):
        given = counted(len(columns), "value")
        return f"{name}'s primary key is ({', '.join(columns)}): give {given}"
    return "; ".join(
        reason
        for column, value in zip(columns, values, strict=True)
        if (reason := _type_mismatch(value, table.types.get(column, ""), f"{name}.{column}"))
    )


def _type_mismatch(value: JsonScalar, declared: str, column: str) -> str | None:
    """Why *value* is unlikely to equal a key stored in a column of type *declared*."""
    affinity = _affinity(declared)
    if isinstance(value, bool) or value is None:
        return f"{value!r} is not a key value of {column}"
    if isinstance(value, str) and affinity in {"INTEGER", "REAL", "NUMERIC"}:
        unquoted = f" (write {value} without quotes)" if is_number(value) else ""
        return f"{value!r} is text but {column} is {declared}{unquoted}"
    if isinstance(value, int | float) and affinity == "TEXT":
        return f"{value} is a number but {column} is {declared} (write '{value}' in quotes)"
    return None


_NUMERIC = frozenset({"INTEGER", "REAL", "NUMERIC"})
"""The affinities of columns that store numbers."""
_NUMERIC_LITERAL = re.compile(r"[+-]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?")


def _stored_otherwise(value: JsonScalar, declared: str, column: str) -> str | None:
    """Why an expected *value* can never be read back from a column of type *declared*
    (SQLite converts what is written: a TEXT column stores a number as text, a numeric one
    stores a number written as text as a number), so no state matches it; None when it can."""
    affinity = _affinity(declared)
    if isinstance(value, bool) and affinity == "TEXT":
        return (
            f"{value} is a boolean but {column} is {declared} (YAML reads yes, no, on and off "
            "as booleans: quote the text)"
        )
    if isinstance(value, int | float) and not isinstance(value, bool) and affinity == "TEXT":
        return f"{value} is a number but {column} is {declared} (write '{value}' in quotes)"
    if isinstance(value, str) and affinity in _NUMERIC and _NUMERIC_LITERAL.fullmatch(value):
        return f"{value!r} is text but {column} is {declared} (write {value} without quotes)"
    return None


def _sql_problem(sql: str, query: Query, fixture: str) -> str | None:
    """Whether SQLite can prepare *sql* on the fixture's initial state (None: it can)."""
    try:
        query(f"EXPLAIN {sql}")
    except sqlite3.Error as exc:
        return f"does not run on fixture {fixture}: {exc}"
    return None
