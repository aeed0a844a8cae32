"""The task contract (`AgentTask`), with the reference chapter's field names."""

from __future__ import annotations

import os
import re
from datetime import date, datetime
from pathlib import PurePosixPath
from typing import Annotated, Any, Literal

from pydantic import (
    AfterValidator,
    Discriminator,
    Field,
    Tag,
    ValidationInfo,
    field_validator,
    model_validator,
)

# The constraint language lives in spec.constraints; the names defined here before stay
# importable from here (re-exported).
from groundstate.rounding import counted
from groundstate.spec.canonical import canonical_json
from groundstate.spec.constraints import AtMostConstraint as AtMostConstraint
from groundstate.spec.constraints import AtMostRule as AtMostRule
from groundstate.spec.constraints import BeforeConstraint as BeforeConstraint
from groundstate.spec.constraints import BeforeRule as BeforeRule
from groundstate.spec.constraints import HardConstraint as HardConstraint
from groundstate.spec.constraints import Match as Match
from groundstate.spec.constraints import NeverConstraint as NeverConstraint
from groundstate.spec.files import yaml_timestamp
from groundstate.spec.strict import (
    MAX_INTEGER,
    Count,
    Id,
    Seconds,
    Steps,
    StrictBool,
    SuiteName,
    SuiteRef,
    Weight,
    ids_defined_once,
    is_number,
    known_decoding,
    one_key_of,
    own_default,
)
from groundstate.spec.strict import JsonScalar as JsonScalar
from groundstate.spec.strict import Strict as Strict
from groundstate.spec.system import RetryPolicy

# --- outcome assertions -------------------------------------------------------------------


class SqlAssertion(Strict):
    """A query on the final state through the evaluator view, with the rows it must return."""

    id: Id
    description: str = ""
    sql: str
    expect_rows: list[list[JsonScalar]]
    ordered: StrictBool = False

    @field_validator("expect_rows")
    @classmethod
    def _rows_one_width(cls, rows: list[list[JsonScalar]]) -> list[list[JsonScalar]]:
        """A query's rows all have its number of columns: rows of two widths never match."""
        widths = sorted({len(row) for row in rows})
        if len(widths) > 1:
            raise ValueError(
                f"rows of {' and '.join(map(str, widths))} values: a query's rows "
                "all have as many values as it selects columns"
            )
        return rows


class AddedRow(Strict):
    """An added row, matched on the listed columns."""

    match: dict[str, JsonScalar]


class ChangedRow(Strict):
    key: JsonScalar | list[JsonScalar]
    """Primary key of the row (a list for a composite key)."""
    set: dict[str, JsonScalar]
    """Columns and their new values."""


class TableChange(Strict):
    added: list[dict[str, JsonScalar]] = Field(default_factory=list)
    """Rows that must have been added, each matched on the columns given."""
    removed: list[JsonScalar | list[JsonScalar]] = Field(default_factory=list)
    """Primary keys of rows that must have been removed."""
    changed: list[ChangedRow] = Field(default_factory=list)

    @model_validator(mode="after")
    def _each_row_once(self) -> TableChange:
        """A row is removed or changed, once: an expectation that removes and changes it, or
        sets it twice, can never hold (keys compared as JSON values, as the grader does)."""
        seen: dict[str, str] = {}
        named = [(key, "removed") for key in self.removed]
        named += [(change.key, "changed") for change in self.changed]
        for key, part in named:
            text = canonical_json(key)
            if text in seen:
                raise ValueError(f"row {text} is listed in {seen[text]} and again in {part}")
            seen[text] = part
        return self


class DiffAssertion(Strict):
    """The expected change from s0 to sT, per table."""

    id: Id
    description: str = ""
    state_diff: dict[str, TableChange]
    nothing_else_changed: StrictBool = True
    """Fail on any change not listed (collateral damage)."""

    @model_validator(mode="after")
    def _asks_something(self) -> DiffAssertion:
        """Expecting no change and allowing any, it held for every final state."""
        expects = any(c.added or c.removed or c.changed for c in self.state_diff.values())
        if not expects and not self.nothing_else_changed:
            raise ValueError(
                "expects no change and, with nothing_else_changed: false, allows any: it holds "
                "for every final state (for a request whose correct outcome is no change, keep "
                "nothing_else_changed: true)"
            )
        return self


class PythonAssertion(Strict):
    """A Python function ``check(s0, sT) -> bool | (bool, evidence)`` from the suite."""

    id: Id
    description: str = ""
    check: SuiteRef
    """``file.py:function``, relative to the suite folder."""


class JudgeModel(Strict):
    """The model behind a model judge, called through a built-in adapter's SDK client. Its
    fields are named as in ``system.yaml``'s ``model`` section (docs/models.md)."""

    adapter: Literal["openai-chat", "anthropic-messages"]
    """The API to call: an OpenAI-compatible Chat Completions endpoint or the Messages API."""
    revision: str = Field(min_length=1)
    """The pinned model identifier sent to the API (e.g. ``gpt-4.1-2025-04-14``)."""
    base_url: str | None = None
    """The API's base URL (the SDK's default when unset)."""
    base_url_env: str | None = None
    """An environment variable whose value, when set, replaces ``base_url``. Only its name is
    part of the grader revision: the route to the model, not the model."""
    api_key_env: str | None = None
    """The environment variable holding the API key; only its name is stored or hashed."""
    decoding: Annotated[
        dict[str, JsonScalar | list[JsonScalar]], AfterValidator(known_decoding)
    ] = Field(default_factory=dict)
    """``temperature``, ``seed``, ``max_tokens``, ``stop``..., sent as the adapters send a
    system's (pin ``temperature: 0`` and, where the API takes one, a ``seed``)."""
    request_timeout: Seconds = 60
    """Seconds one request may take before it counts as timed out."""
    retries: RetryPolicy = Field(default_factory=RetryPolicy)
    """Retries after a rate limit, a 5xx answer, a timeout or a lost connection; past them
    the judged assertion is a grader failure."""

    def effective_base_url(self) -> str | None:
        """The base URL to call: ``base_url_env``'s value when set, else ``base_url``."""
        if self.base_url_env and os.environ.get(self.base_url_env):
            return os.environ[self.base_url_env]
        return self.base_url


JudgeRead = Literal["final_message", "trace"]
DEFAULT_READS: tuple[JudgeRead, ...] = ("final_message",)


class ModelJudge(Strict):
    """A model asked, through a prompt template of the suite, whether the assertion holds.

    The template is filled with what the assertion declares it reads (``{final_message}``,
    ``{trace}``, and ``{state[name]}`` for each query in ``state``); the library appends the
    fixed answer format (:data:`groundstate.grading.model_judge.VERDICT_FORMAT`)."""

    model: JudgeModel
    prompt: SuiteName
    """The prompt template, a file relative to the suite folder (``judges/<id>.md``). Its
    digest is part of the grader revision."""
    revision: str = Field(min_length=1)
    """The judge's own revision, bumped by the author when its meaning changes."""
    reads: list[JudgeRead] = Field(default_factory=lambda: list(DEFAULT_READS))
    """What of the attempt the template may show the model."""
    state: dict[str, str] = Field(default_factory=dict)
    """State excerpts: name -> a read-only SQL query on the final state, shown as JSON rows
    in ``{state[name]}`` (during validation, on the task's initial state)."""

    @field_validator("reads")
    @classmethod
    def _reads_the_attempt(cls, reads: list[JudgeRead]) -> list[JudgeRead]:
        """A judge of state alone would judge what state shows: that is an assertion's job."""
        if not reads:
            raise ValueError(
                "a model judge must read the final_message or the trace; what the state alone"
                " shows is asserted with sql, state_diff or check"
            )
        return reads


def _judge_kind(value: object) -> str | None:
    if isinstance(value, str):
        return "python-judge"
    return "model-judge" if isinstance(value, dict | ModelJudge) else None


JudgeSpec = Annotated[
    Annotated[SuiteRef, Tag("python-judge")] | Annotated[ModelJudge, Tag("model-judge")],
    Discriminator(
        _judge_kind,
        custom_error_type="judge_kind",
        custom_error_message="expected 'file.py:function' or a model judge ({model: ..., prompt:"
        " ..., revision: ...})",
    ),
]
"""A judge: a Python function of the suite or a model (tags ``python-judge``, ``model-judge``
keep error paths short, see :mod:`groundstate.spec.files`)."""


class JudgeAssertion(Strict):
    """A judge of what state cannot show (the wording of the final reply, say): a Python
    function ``judge(s0, sT, final_message, trace) -> (bool, reason)`` from the suite, or a
    model (:class:`ModelJudge`).

    The judge must earn its place: ``validate`` runs it on the human-labelled set in
    ``labels`` and the task is invalid while its Cohen's kappa with the human labels is below
    ``min_agreement``. Its verdict is reported beside ``success``, never part of it.
    """

    id: Id
    description: str = ""
    judge: JudgeSpec
    """``file.py:function``, relative to the suite folder, or a model judge."""
    labels: SuiteName
    """The human-labelled set, a JSONL file relative to the suite folder (``judges/<id>.jsonl``):
    one ``{"id": ..., "final_message": ..., "label": true|false}`` per line."""
    min_agreement: float = Field(ge=-1.0, le=1.0)
    """The lowest Cohen's kappa, judge against the human labels, at which the task is valid."""


class HiddenTests(Strict):
    """Tests run on the evaluator side against the agent's change: the suite's hidden tests,
    or (without ``path``) the repository's own.

    Two modes. ``runner: unittest`` (for Python suites): groundstate's own runner loads the
    ``files`` and counts every outcome itself; the tests pass only when at least one ran, all
    that were collected ran, and none failed, errored, was skipped or succeeded unexpectedly.
    ``command`` (for anything else): a shell command whose exit 0 passes; the exit code comes
    from a process that runs the agent's code, which can forge it (``os._exit(0)``)."""

    path: SuiteName | None = None
    """A folder of the suite (outside the fixture), e.g. ``hidden/<task_id>``. With
    ``runner``, its files are copied to a grader folder beside the clean checkout (never into
    it); with ``command``, into the checkout (``into``). Unset: only the checkout's own files
    (the visible tests, as the agent left them)."""
    runner: Literal["unittest"] | None = None
    """Run ``files`` with groundstate's unittest runner (the checkout is the working
    directory) instead of a ``command``."""
    files: list[str] = Field(default_factory=list)
    """With ``runner``: glob patterns (``test_*.py``, ``tests/test_*.py``) of the test files,
    relative to ``path`` when it is set, else to the checkout's root. Matching no file fails."""
    pythonpath: list[str] = Field(default_factory=list)
    """With ``runner``: folders of the checkout appended to ``sys.path`` (``src``); appended,
    so the standard library always wins over a module of the same name."""
    expect_tests: Count | None = Field(default=None, ge=1, le=MAX_INTEGER)
    """With ``runner``: the number of tests that must be collected (and run), if known."""
    command: str | None = Field(default=None, min_length=1)
    """The shell command that runs them in the checkout's root (sandboxed); exit 0 passes."""
    into: str = "."
    """With ``command``: where in the checkout the hidden files go; they replace files of the
    same name."""
    timeout_s: Seconds = 120.0
    """Wall time for the tests; past it they fail (the agent's code hung)."""

    @model_validator(mode="after")
    def _one_mode(self) -> HiddenTests:
        if (self.runner is None) == (self.command is None):
            raise ValueError("give exactly one of `runner: unittest` (with `files`) or `command`")
        if self.runner is not None and not self.files:
            raise ValueError("`runner: unittest` needs `files`: the test files to run")
        if self.runner is None and (self.files or self.pythonpath or self.expect_tests):
            raise ValueError("`files`, `pythonpath` and `expect_tests` need `runner: unittest`")
        if self.runner is not None and self.into != ".":
            raise ValueError("`into` is for `command`: the runner never copies into the checkout")
        for name in (*self.files, *self.pythonpath):
            if not name or name.startswith("/") or ".." in PurePosixPath(name).parts:
                raise ValueError(f"{name!r} must be a relative path without '..'")
        return self


class TestsAssertion(Strict):
    """A repository workspace's hidden tests pass on the agent's diff (kind ``workspace``)."""

    __test__ = False  # not a pytest class, whatever its name

    id: Id
    description: str = ""
    tests: HiddenTests


class ChangedPaths(Strict):
    allowed: list[str] = Field(min_length=1)
    """Glob patterns of the paths the agent may add, change or delete (``src/**``,
    ``docs/*.md``); ``**`` spans folders, ``*`` does not."""

    @field_validator("allowed")
    @classmethod
    def _patterns_paths_can_match(cls, allowed: list[str]) -> list[str]:
        """Changed paths are relative, ``/``-separated, without ``.`` or ``..``: a pattern
        written otherwise (``./src/**``, ``/src/**``, ``src/``, ``src\\**``) matches none, and
        every change the task allows would fail as the agent's collateral damage."""
        for pattern in allowed:
            parts = pattern.split("/")
            if not pattern or pattern.startswith("/") or "\\" in pattern:
                why = "a relative path with / between folders"
            elif pattern.endswith("/"):
                why = f"a path or glob without the last '/' (a folder and all in it: '{pattern}**')"
            elif any(part in ("", ".", "..") for part in parts):
                why = "a path without '.', '..' or '//' parts"
            else:
                continue
            raise ValueError(f"{pattern!r} can match no changed path: write {why}")
        return allowed


class ChangedPathsAssertion(Strict):
    """No collateral damage in a workspace: every changed path matches an allowed pattern (so
    deleting or editing the tests, or the build files, fails)."""

    id: Id
    description: str = ""
    changed_paths: ChangedPaths


OutcomeAssertion = Annotated[
    Annotated[SqlAssertion, Tag("sql")]
    | Annotated[DiffAssertion, Tag("state_diff")]
    | Annotated[PythonAssertion, Tag("check")]
    | Annotated[JudgeAssertion, Tag("judge")]
    | Annotated[TestsAssertion, Tag("tests")]
    | Annotated[ChangedPathsAssertion, Tag("changed_paths")],
    Discriminator(
        one_key_of(("sql", "state_diff", "check", "judge", "tests", "changed_paths")),
        custom_error_type="assertion_kind",
        custom_error_message=(
            "an outcome assertion needs exactly one of: sql, state_diff, check, judge, tests, "
            "changed_paths"
        ),
    ),
]


# --- rubric, user, permissions, termination -----------------------------------------------


class RubricNode(Strict):
    """A weighted node of the partial-credit tree.

    A leaf names one outcome assertion or one constraint by id; an inner node has children.
    """

    id: Id
    weight: Weight = 1.0
    assertion: str | None = None
    constraint: str | None = None
    children: list[RubricNode] = Field(default_factory=list)

    @model_validator(mode="after")
    def _one_kind(self) -> RubricNode:
        kinds = [self.assertion is not None, self.constraint is not None, bool(self.children)]
        if sum(kinds) != 1:
            raise ValueError("a rubric node needs exactly one of: assertion, constraint, children")
        return self


LAST_CLOCK_YEAR = 9000
"""A task's clock is before this year: it leaves the clock centuries to move forward in."""
TASK_ID_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9_.\-]*$"
"""What a task id may be: it also names the task's files and folders."""


class UserScenario(Strict):
    """What the simulated user knows and wants in this task (the persona is in the system)."""

    knowledge: dict[str, str] = Field(default_factory=dict)
    """Private facts, revealed only when the agent asks for them by name."""
    confirms: StrictBool = True
    """Answer yes when the agent asks for confirmation."""
    instructions: str | None = None
    """The user's situation and goal in their own words, for a model-driven user (the
    scripted user ignores it; without it the model user is told only the request)."""

    @field_validator("knowledge")
    @classmethod
    def _facts_have_names(cls, knowledge: dict[str, str]) -> dict[str, str]:
        """A fact is revealed when asked for by its name: a name without a letter or digit
        (``""``, ``"_"``) is found in every message, and the fact would be told unasked."""
        for name in knowledge:
            if not any(ch.isalnum() for ch in name):
                raise ValueError(f"fact name {name!r} has no letter or digit to be asked by")
        return knowledge


class Permissions(Strict):
    tables: dict[str, Literal["none", "read", "write"]] = Field(default_factory=dict)
    """Access per table; tables not listed are writable."""


class TerminalConditions(Strict):
    on_prohibited_action: Literal["end", "continue"] = "end"
    """A denied action ends the attempt (``agent_failure/prohibited_action``) or is recorded."""
    on_user_stop: Literal["end", "continue"] = "end"
    """When the simulated user leaves, the attempt ends."""


STATE_HASH_DIGITS = 64
"""A state hash is a sha256: 64 hexadecimal digits, written in lower case."""


class ResetCheck(Strict):
    initial_state_hash: str | None = None
    """The state hash every reset must reproduce; unset means 'the hash of the first build'."""

    @field_validator("initial_state_hash")
    @classmethod
    def _a_whole_hash(cls, declared: str | None) -> str | None:
        """A hash that no state has (the 12 digits a report prints, one in capitals) passed
        ``check`` and failed every attempt's reset, as ``validate``'s reset check said."""
        if declared is None or re.fullmatch(f"[0-9a-f]{{{STATE_HASH_DIGITS}}}", declared):
            return declared
        if re.fullmatch(f"[0-9a-fA-F]{{{STATE_HASH_DIGITS}}}", declared):
            raise ValueError("has capital letters: a state hash is written in lower case")
        given = repr(declared) if len(declared) <= 16 else f"{len(declared)} characters"
        raise ValueError(
            f"{given} is not a state hash ({STATE_HASH_DIGITS} hexadecimal digits, 0-9 and "
            "a-f): copy the whole hash `groundstate validate` prints (a report shows only its "
            "first 12), or leave the field out to take the first build's"
        )


class EquivalentMutant(Strict):
    """A generated near-miss that the task author declares correct behaviour after all."""

    mutant: str
    """The mutant's id, as ``validate`` lists it among the survivors."""
    reason: str = Field(min_length=1)
    """Why the mutant is not a mistake (e.g. "the tool refuses the repeated refund")."""


class AgentTask(Strict):
    """One task: the executable contract of the reference chapter."""

    task_id: str = Field(pattern=TASK_ID_PATTERN)
    task_revision: Annotated[Count, Field(ge=1, le=MAX_INTEGER)]
    source: str
    slice_labels: list[Id] = Field(default_factory=list)
    weight: Weight = 1.0
    initial_state_fixture: SuiteName
    """Fixture file, relative to the suite's ``fixtures/`` folder."""
    clock: datetime
    """The environment's "now" at reset."""
    reset_check: ResetCheck = own_default(ResetCheck())
    user_request: str
    user: UserScenario = own_default(UserScenario())
    available_tools: list[str]
    permissions: Permissions = own_default(Permissions())
    constraint_sets: list[str] = Field(default_factory=list)
    """The suite's constraint sets this task includes, by name (provenance): the loader puts
    their constraints, in this order, before the task's own in ``hard_process_constraints``."""
    hard_process_constraints: list[HardConstraint] = Field(default_factory=list)
    """Every constraint of the task: its sets' first, then its own (as loaded from a suite)."""
    terminal_conditions: TerminalConditions = own_default(TerminalConditions())
    step_limit: Steps = 30
    time_limit: Seconds = 60.0
    """Seconds of wall time."""
    outcome_assertions: list[OutcomeAssertion] = Field(min_length=1)
    expect_no_change: StrictBool = False
    """The correct outcome is no change (e.g. a request the policy refuses). A do-nothing agent
    passes such a task, so validation asks instead for a known-bad solution that changes the
    state and fails."""
    partial_credit_rubric: list[RubricNode] = Field(default_factory=list)
    equivalent_mutants: list[EquivalentMutant] = Field(default_factory=list)
    """Mutants that validation's grader mutation testing may let survive, each with a reason."""
    grader_revision: str = ""
    """Derived when the suite loads: hash of assertions, constraints, rubric and grader code."""
    grader_test_manifest: dict[str, str] = Field(default_factory=dict)
    """Derived when the suite loads: solution name -> solution hash."""

    @field_validator("clock", mode="before")
    @classmethod
    def _clock_is_a_timestamp(cls, value: object) -> object:
        """pydantic reads a number (or text that is one) as seconds since 1970: ``clock: 2026``
        would be a moment of 1970 without a word."""
        if isinstance(value, int | float) or (isinstance(value, str) and is_number(value)):
            raise ValueError(
                f'{value} is a number: write a timestamp, such as "2026-01-15T10:00:00+00:00"'
            )
        # The loader keeps a bare timestamp as text; read it as YAML would have.
        moment = yaml_timestamp(value) if isinstance(value, str) else value
        if isinstance(moment, date) and not isinstance(moment, datetime):
            raise ValueError(
                f"{value} is a day, not a moment: write its time and time zone, such as "
                f'"{moment.isoformat()}T00:00:00Z" (UTC)'
            )
        return moment

    @field_validator("clock")
    @classmethod
    def _clock_has_a_zone(cls, clock: datetime) -> datetime:
        """A moment without a time zone names no moment: SQL read it as UTC, and a tool's
        ``ctx.now().timestamp()`` as the machine's local time (another machine, another
        verdict), and comparing it with a moment that has one raised ``TypeError``."""
        if clock.utcoffset() is None:
            raise ValueError(
                f"{clock.isoformat()} has no time zone: write one, such as "
                f'"{clock.isoformat()}Z" (UTC) or "{clock.isoformat()}+02:00"'
            )
        return clock

    @field_validator("clock")
    @classmethod
    def _clock_leaves_room(cls, clock: datetime) -> datetime:
        """The clock moves forward in an attempt (the reset check moves it, as a tool may):
        within reach of the year 9999, the last Python's dates hold, it failed with
        "OverflowError: date value out of range" once a task ran, after ``check`` passed it."""
        if clock.year >= LAST_CLOCK_YEAR:
            raise ValueError(
                f"{clock.isoformat()} is too late: the environment's clock moves forward "
                f"during an attempt and cannot pass the year 9999; give a moment before "
                f"{LAST_CLOCK_YEAR}"
            )
        return clock

    @field_validator("user_request")
    @classmethod
    def _request_says_something(cls, request: str) -> str:
        """The request is the agent's only statement of the task (step 0 of the trace): a
        blank one is a file written wrong (an importer's missing field, say), not a task."""
        if not request.strip():
            raise ValueError("is empty: write the user's opening message (what they ask for)")
        return request

    @field_validator("available_tools", "slice_labels")
    @classmethod
    def _listed_once(cls, names: list[str]) -> list[str]:
        """A slice label twice counted the task twice in its slice (its weight doubled)."""
        twice = sorted({name for i, name in enumerate(names) if name in names[:i]})
        if twice:
            raise ValueError(f"listed twice: {', '.join(twice)}")
        return names

    @field_validator("outcome_assertions", "hard_process_constraints")
    @classmethod
    def _ids_once(cls, items: list[OutcomeAssertion] | list[HardConstraint]) -> list[Any]:
        ids_defined_once(items)
        return items

    @field_validator("outcome_assertions")
    @classmethod
    def _state_decides(cls, assertions: list[OutcomeAssertion]) -> list[OutcomeAssertion]:
        """A judged verdict never decides ``success``: with judges alone, G held whatever the
        final state was, and an agent that only claimed to act succeeded."""
        if assertions and all(isinstance(a, JudgeAssertion) for a in assertions):
            raise ValueError(
                "every outcome assertion is a judge, which never decides success: the attempt "
                "would succeed whatever the final state; add one that reads the state (sql, "
                "state_diff, check, tests or changed_paths; `state_diff: {}` when the correct "
                "outcome is no change)"
            )
        return assertions

    @field_validator("outcome_assertions")
    @classmethod
    def _diffs_agree(cls, assertions: list[OutcomeAssertion]) -> list[OutcomeAssertion]:
        """Two ``state_diff`` assertions where one requires a change the other, under
        ``nothing_else_changed``, calls collateral damage: no final state passes both, so
        every attempt failed as the agent's (splitting one expected change into two
        assertions, each keeping the default ``nothing_else_changed: true``)."""
        diffs = [(i, a) for i, a in enumerate(assertions) if isinstance(a, DiffAssertion)]
        for i, wants in diffs:
            for j, strict in diffs:
                if i == j or not strict.nothing_else_changed:
                    continue
                for table, change in wants.state_diff.items():
                    refused = _refused_by(change, strict.state_diff.get(table))
                    if refused:
                        raise ValueError(
                            f"{wants.id!r} expects {table}: {refused}, which {strict.id!r} "
                            "(nothing_else_changed: true) fails as an unexpected change: no "
                            "final state passes both (list the change in both, or set "
                            f"nothing_else_changed: false on {strict.id!r})"
                        )
        return assertions

    @field_validator("partial_credit_rubric")
    @classmethod
    def _rubric_ids_known(cls, nodes: list[RubricNode], info: ValidationInfo) -> list[RubricNode]:
        """Node ids are unique in the tree; a leaf names an assertion or constraint of the
        task (checked when those fields are valid: otherwise their own errors say why)."""
        every = _walk(nodes)
        ids_defined_once(every, "rubric node id")
        for kind, field_name in (
            ("assertion", "outcome_assertions"),
            ("constraint", "hard_process_constraints"),
        ):
            if field_name not in info.data:
                continue
            known = {item.id for item in info.data[field_name]}
            for node in every:
                named = getattr(node, kind)
                if named is not None and named not in known:
                    raise ValueError(f"rubric node {node.id!r} names unknown {kind} {named!r}")
        return nodes


def _refused_by(wanted: TableChange, allowed: TableChange | None) -> str:
    """A change *wanted* requires that *allowed* (a table's expectation under
    ``nothing_else_changed``; None: the table is not listed) counts as unexpected ("": none)."""
    allowed = allowed or TableChange()
    if len(wanted.added) > len(allowed.added):
        return counted(len(wanted.added), "added row")
    removable = {canonical_json(key) for key in allowed.removed}
    for key in wanted.removed:
        if canonical_json(key) not in removable:
            return f"row {canonical_json(key)} removed"
    settable = {canonical_json(c.key): set(c.set) for c in allowed.changed}
    for change in wanted.changed:
        extra = set(change.set) - settable.get(canonical_json(change.key), set())
        if extra:
            return f"row {canonical_json(change.key)} changed in {', '.join(sorted(extra))}"
    return ""


def _walk(nodes: list[RubricNode]) -> list[RubricNode]:
    found: list[RubricNode] = []
    for node in nodes:
        found.append(node)
        found.extend(_walk(node.children))
    return found
