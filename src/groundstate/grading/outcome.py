"""Outcome assertions on ``(s0, sT)``, read through evaluator views: ``G(s0, sT)``.

Each assertion returns a :class:`CheckResult` with its evidence. An assertion that cannot be
evaluated (a bad query, a crashing check function) is returned with ``error`` set, which makes
the attempt a grader failure rather than an agent failure.
"""

from __future__ import annotations

import dataclasses
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from types import MappingProxyType
from typing import Any, TypeVar, cast

from pydantic_core import to_jsonable_python

from groundstate.alarms import CLOCK
from groundstate.capture import held
from groundstate.copies import Copies, Loan
from groundstate.deadline import DeadlineExceeded, PendingCalls, Returned, TimedCall
from groundstate.environments.base import (
    Row,
    RowChange,
    Snapshot,
    StateDiff,
    StateView,
    TableDiff,
    TableState,
    json_cells,
    row_content,
)
from groundstate.errors import GraderError, JudgeFailure
from groundstate.grading import model_judge
from groundstate.grading.matching import (
    pair_rows,
    row_matches,
    same_row_multisets,
    same_rows,
    same_value,
)
from groundstate.grading.workspace import GRACE_S, evaluate_changed_paths, evaluate_tests
from groundstate.records import CheckResult
from groundstate.returned import shown
from groundstate.rounding import counted
from groundstate.spec.canonical import SettledFileCache, canonical_json
from groundstate.spec.task import (
    ChangedPathsAssertion,
    DiffAssertion,
    JudgeAssertion,
    ModelJudge,
    OutcomeAssertion,
    PythonAssertion,
    SqlAssertion,
    TableChange,
    TestsAssertion,
)
from groundstate.tools import load_module
from groundstate.trace import MessageEvent, TraceCopies, TraceEvent, recordable

GRADER_TIME_LIMIT = 10.0
"""Seconds one outcome assertion or Python constraint may take; past it, ``grader_failure``.
(Diff and changed-paths assertions run none of the suite's code or SQL: they have no limit.)

Checks run in a thread apart, so a check that blocks or spins is abandoned at the limit
(see :mod:`groundstate.deadline`); a query it is running on s0 or sT is then interrupted, and
any later query of the abandoned check is refused."""

INTERRUPT_GRACE = 1.0
"""Seconds an abandoned check's running query is interrupted again until it returns."""

T = TypeVar("T")
Evaluated = tuple[bool, dict[str, Any]]
"""A check's verdict and evidence."""


@dataclass(frozen=True)
class States:
    """What the grader sees: both states through read-only views, and their diff."""

    s0: StateView
    sT: StateView
    initial: Snapshot
    diff: StateDiff
    suite_root: Path
    trace: Sequence[TraceEvent] = field(default=(), repr=False)
    """The attempt's trace, for judges (which also read the final reply from it)."""
    checks: Mapping[str, Any] = field(default_factory=dict, compare=False, repr=False)
    """The suite's check files as loaded with it, by file name (:attr:`Suite.checks`): used
    instead of the file on disk, which may have changed since."""
    functions: dict[str, Any] = field(default_factory=dict, compare=False, repr=False)
    """The suite's check functions looked up so far, by reference (``checks.py:f``): one
    grading pass looks each up once, however many of the file's checks it runs."""
    pending: PendingCalls = field(default_factory=PendingCalls, compare=False, repr=False)
    """The grading pass's checks not run yet (see :func:`within_limits`)."""


def evaluate_assertions(assertions: list[OutcomeAssertion], states: States) -> list[CheckResult]:
    return assertions_later(assertions, states)()


def assertions_later(
    assertions: list[OutcomeAssertion], states: States
) -> Callable[[], list[CheckResult]]:
    """The assertions' results, to be read later: their checks join the grading pass's
    pending ones (see :func:`within_limits`), so that the Python constraints' checks added
    next go to the same thread with them.

    A diff or changed-paths assertion runs no code but ours, on the diff computed already: it
    is evaluated here, without a thread or a time limit. The thread bears the harness's
    prefix while it runs a check (``groundstate-grader-<id>``): a pool worker takes any other
    thread alive when one of its attempts ends for one that attempt left behind, and retires
    (see :func:`groundstate.executors._job.leftovers`)."""
    timed = [a for a in assertions if type(a) not in _UNTIMED]
    calls = [
        (partial(_EVALUATE[type(a)], a), _time_limit(a), f"groundstate-grader-{a.id}")
        for a in timed
    ]
    later = iter(within_limits(calls, states))
    returned = [
        next(later) if type(a) not in _UNTIMED else _evaluated_now(a, states) for a in assertions
    ]
    return lambda: [_verdict(a, r) for a, r in zip(assertions, returned, strict=True)]


def _evaluated_now(assertion: OutcomeAssertion, states: States) -> Returned[Evaluated]:
    returned: Returned[Evaluated] = Returned()
    try:
        returned.value = _EVALUATE[type(assertion)](assertion, states)
    except Exception as exc:  # as a check's error in a thread would be
        returned.error = exc
    return returned


def _verdict(assertion: OutcomeAssertion, returned: Returned[Evaluated]) -> CheckResult:
    kind = _KIND[type(assertion)]
    try:
        passed, evidence = returned.result()
    except DeadlineExceeded as exc:
        return _grader_error(assertion.id, kind, f"timed out: {exc}")
    except JudgeFailure as exc:  # a model judge's failure keeps its status and request id
        return _grader_error(assertion.id, kind, f"{type(exc).__name__}: {exc}", exc.evidence)
    except Exception as exc:  # the grader is software too: record, don't crash the batch
        return _grader_error(assertion.id, kind, f"{type(exc).__name__}: {exc}")
    return CheckResult(id=assertion.id, kind=kind, passed=passed, evidence=evidence)


def _time_limit(assertion: OutcomeAssertion) -> float:
    """A model judge waits for its model too, under its own request timeout and retries;
    hidden tests run a command of their own, with its own declared limit."""
    if isinstance(assertion, JudgeAssertion) and isinstance(assertion.judge, ModelJudge):
        return GRADER_TIME_LIMIT + model_judge.time_limit(assertion.judge.model)
    if isinstance(assertion, TestsAssertion):
        return max(GRADER_TIME_LIMIT, assertion.tests.timeout_s + GRACE_S)
    return GRADER_TIME_LIMIT


def _grader_error(
    check_id: str, kind: str, error: str, evidence: dict[str, Any] | None = None
) -> CheckResult:
    return CheckResult(id=check_id, kind=kind, passed=False, error=error, evidence=evidence or {})


def within_limit(fn: Callable[[States], T], states: States, limit: float, name: str) -> T:
    """``fn(states)`` in a thread apart, or :class:`DeadlineExceeded` after *limit* seconds;
    then both views are closed to the abandoned call and its running query stopped.

    Without this, a check spinning in SQL on s0 (say an unbounded ``WITH RECURSIVE``) would
    keep the initial-state connection busy after the attempt gave up on it.
    """
    return within_limits([(fn, limit, name)], states)[0].result()


def within_limits(
    calls: Sequence[tuple[Callable[[States], T], float, str]], states: States
) -> list[Returned[T]]:
    """Each ``fn(states)`` of *calls* (with its limit and thread name) in turn, as
    :func:`within_limit` runs one. Each call gets views of its own: closing an abandoned
    call's views leaves the next call's open.

    The calls join the grading pass's pending ones (``states.pending``): reading any result
    runs them all, handed to one thread together
    (:class:`~groundstate.deadline.PendingCalls`), so that the pass's assertions and Python
    constraints cost one hand-off between threads, not one each."""
    timed: list[TimedCall[T]] = []
    changes = Copies(states.diff)  # one image of the diff for the calls' copies
    for fn, limit, name in calls:
        s0, sT = _BoundedView(states.s0), _FinalView(states.sT, changes)
        bounded = _with_views(states, s0, sT)
        call = partial(_settling, fn, bounded, (s0, sT))
        timed.append(TimedCall(call, limit, name, partial(_expire, s0, sT)))
    return states.pending.add(timed)


def _with_views(states: States, s0: StateView, sT: StateView) -> States:
    """*states* with the views *s0* and *sT*, the rest shared: ``dataclasses.replace``'s
    result, without its walk of the fields and its ``__init__`` (about 5 µs a call, one per
    check of a grading pass). :class:`States` has no ``__post_init__`` and no slots; an
    object of another class goes through ``replace``."""
    if type(states) is not States:
        return dataclasses.replace(states, s0=s0, sT=sT)
    made = object.__new__(States)
    fields = dict(vars(states))
    fields["s0"], fields["sT"] = s0, sT
    object.__setattr__(made, "__dict__", fields)
    return made


def _settling(fn: Callable[[States], T], states: States, views: tuple[_BoundedView, ...]) -> T:
    """``fn(states)``; once it has returned (its result still held), the snapshot copies its
    views lent go back to their lenders where nothing it left holds them."""
    result = fn(states)
    for view in views:
        view.settle()
    return result


def _expire(*views: _BoundedView) -> None:
    for view in views:
        view.expire()


class _BoundedView:
    """A grader's view of one state that stops serving queries once its check's time is up."""

    def __init__(self, view: StateView) -> None:
        self._view = view
        self._lock = threading.Lock()
        self._expired = False
        self._running = 0
        self._borrowed = False
        self._loan: Loan[Snapshot] | None = None

    def query(self, sql: str, params: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
        return self._bounded(self._view.query, sql, params)

    def snapshot(self) -> Snapshot:
        return self._bounded(self._snapshot)

    def _snapshot(self) -> Snapshot:
        """The check's first snapshot is lent where the view lends (``lend_snapshot``: the
        copy the last check gave back untouched, see :class:`~groundstate.copies.Lender`);
        its others, and those of whatever it left running, are copies of their own."""
        lend = getattr(self._view, "lend_snapshot", None)
        with self._lock:
            first, self._borrowed = not self._borrowed, True
        if lend is None or not first:
            return self._view.snapshot()
        snapshot, self._loan = lend()
        return cast(Snapshot, snapshot)

    def settle(self) -> None:
        """Give back the copy lent to the check, which has returned (not one abandoned at
        its time limit, whose copy is never given back)."""
        with self._lock:
            loan, self._loan, self._borrowed = self._loan, None, True
            expired = self._expired
        if loan is not None and not expired:
            loan.settle()

    def __getattr__(self, name: str) -> Any:
        """A kind's other capabilities (a workspace's ``read``, ``files``, ``diff``...), under
        the same time limit; plain attributes as they are."""
        if name.startswith("_"):
            raise AttributeError(name)
        found = getattr(self._view, name)
        if not callable(found):
            return found

        return partial(self._bounded, found)

    def expire(self) -> None:
        """Refuse further queries, then abort the one running, where the view can.

        An interrupt landing just before the query's first step is lost (SQLite ignores it
        when nothing runs), so it is repeated until the query returns, for a moment at most.
        """
        with self._lock:
            self._expired = True
        interrupt = getattr(self._view, "interrupt", None)
        if not callable(interrupt):
            return
        end = CLOCK() + INTERRUPT_GRACE
        while self._running and CLOCK() < end:
            interrupt()
            time.sleep(0.01)

    def _bounded(self, call: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        """``call(*args, **kwargs)``, unless the time is up; counted as running meanwhile
        (a plain call, not a context manager: a check may query often, and each layer is paid
        on every query)."""
        with self._lock:
            if self._expired:
                raise DeadlineExceeded("the grader's time limit has passed")
            self._running += 1
        try:
            return call(*args, **kwargs)
        finally:
            with self._lock:
                self._running -= 1


class _FinalView(_BoundedView):
    """The view of sT a check gets (a :class:`~groundstate.environments.base.FinalStateView`):
    also the attempt's diff from s0, which the harness has computed already (for the record),
    so a check need not read both states to find it."""

    def __init__(self, view: StateView, diff: Copies[StateDiff]) -> None:
        super().__init__(view)
        self._diff = diff

    def changes(self) -> StateDiff:
        """The rows added, removed and changed since s0, per table: the diff a
        ``diff_snapshots(s0.snapshot(), sT.snapshot())`` gives, as a copy of the check's own."""
        return self._bounded(self._diff.fresh)


def _sql(assertion: Any, states: States) -> tuple[bool, dict[str, Any]]:
    assert isinstance(assertion, SqlAssertion)
    found = [list(row) for row in states.sT.query(assertion.sql)]
    expected = [list(row) for row in assertion.expect_rows]
    if found and expected and len(found[0]) != len(expected[0]):  # whatever the state is
        raise GraderError(
            f"the query selects {counted(len(found[0]), 'column')}, expect_rows has "
            f"{counted(len(expected[0]), 'value')} a row: no final state can match"
        )
    passed = (same_rows if assertion.ordered else same_row_multisets)(found, expected)
    # The evidence is JSON: a BLOB the agent wrote must not break it, and an infinite REAL,
    # found or expected (``.inf`` in YAML), is not written null (as pydantic writes it).
    rows, wanted = json_cells(found), json_cells(expected)
    if not assertion.ordered:
        rows, wanted = sorted(rows, key=canonical_json), sorted(wanted, key=canonical_json)
    return passed, {"rows": rows, "expected": wanted}


def _python(assertion: Any, states: States) -> tuple[bool, dict[str, Any]]:
    assert isinstance(assertion, PythonAssertion)
    passed, evidence = call_check(assertion.check, states, states.s0, states.sT)
    # Evidence goes into the run record, which is JSON: make it so here, where a failure is
    # this check's grader failure, not when the record is built or stored, which would stop
    # the batch. Pydantic's own conversion, so that what stored before stores the same
    # (a date as ISO text, a set as a list sorted by its items' text, not in the hash seed's
    # order); keys become text, other values their address-free repr (``stable_repr``), so a
    # record is the same in every process and run.
    # A BLOB is written as in diffs (``{"blob": hex}``): as UTF-8 text, one that is not failed.
    if not evidence:
        return passed, {}
    return passed, to_jsonable_python(recordable(json_cells(evidence)), fallback=shown)


def call_check(ref: str, states: States, *args: Any) -> tuple[bool, dict[str, Any]]:
    """Call the suite's Python check ``file.py:function`` (an assertion or a constraint) and
    read its verdict, ``bool`` or ``(bool, evidence)``; anything else is a grader bug."""
    check = states.functions.get(ref)
    if check is None:  # a lookup that fails is not kept: each check using it fails alike
        check = states.functions[ref] = suite_function(ref, states.suite_root, states.checks)
    with held():  # what the check prints stays with the attempt, off our output
        verdict = check(*args)
    expected = "expected bool or (bool, evidence), evidence a dict"
    if isinstance(verdict, tuple) and len(verdict) != 2:
        raise TypeError(f"{ref} returned a tuple of {len(verdict)}, {expected}")
    passed, evidence = verdict if isinstance(verdict, tuple) else (verdict, {})
    if not isinstance(passed, bool):
        raise TypeError(f"{ref} returned {type(passed).__name__}, {expected}")
    try:
        return passed, dict(evidence)
    except (TypeError, ValueError):  # the bare error ("dictionary update sequence...") says
        kind = type(evidence).__name__  # nothing about the check that returned it
        raise TypeError(f"{ref} returned {kind} evidence, {expected}") from None


_MODULES = SettledFileCache(lambda path: load_module(path, "checks"))
"""Each check file's module, imported again only when the file's stat changed."""


def suite_function(ref: str, suite_root: Path, checks: Mapping[str, Any] | None = None) -> Any:
    """The function ``file.py:function`` of the suite's Python checks: from the module
    *checks* holds for the file (imported when the suite was loaded), else from the file.

    Importing is keyed by the file's content (:func:`groundstate.tools.load_module`), but
    hashing the file for each call of each attempt is most of a small check's cost: while the
    file's stat stays the same, the module imported last is used
    (:class:`~groundstate.spec.canonical.SettledFileCache`).
    """
    file_name, _, function = ref.partition(":")
    module = checks.get(file_name) if checks else None
    if not module:  # the path made only here: joining it was most of a lookup's cost
        path = suite_root / file_name
        try:
            module = _MODULES.get(path)
        except OSError:
            module = load_module(path, "checks")  # which says what is wrong
    found = getattr(module, function, None)
    if not callable(found):  # loading refuses it; the file may have changed since
        raise GraderError(f"{file_name} has no function {function!r}")
    return found


def _judge(assertion: Any, states: States) -> tuple[bool, dict[str, Any]]:
    assert isinstance(assertion, JudgeAssertion)
    return judge_verdict(
        assertion, states.suite_root, states.s0, states.sT, states.trace, checks=states.checks
    )


def judge_verdict(
    assertion: JudgeAssertion,
    suite_root: Path,
    s0: StateView,
    sT: StateView,
    trace: Sequence[TraceEvent],
    excerpts: dict[str, list[list[Any]]] | None = None,
    checks: Mapping[str, Any] | None = None,
) -> tuple[bool, dict[str, Any]]:
    """The judged assertion's verdict and evidence, from its Python judge or its model (which
    reads its state excerpts on *sT*, unless given their rows as *excerpts*)."""
    judge = assertion.judge
    if isinstance(judge, str):
        return call_judge(judge, suite_root, s0, sT, trace, checks)
    rows = excerpts if excerpts is not None else model_judge.state_rows(judge, sT)
    return model_judge.call_model_judge(judge, suite_root, final_message(trace), trace, rows)


def call_judge(
    ref: str,
    suite_root: Path,
    s0: StateView,
    sT: StateView,
    trace: Sequence[TraceEvent],
    checks: Mapping[str, Any] | None = None,
) -> tuple[bool, dict[str, Any]]:
    """Call the suite's judge ``file.py:function`` as ``judge(s0, sT, final_message, trace)``
    and read its verdict, ``(bool, reason)``; anything else is a grader bug. A trace with an
    agent message too long for a check to read fails unjudged (as every Python constraint
    does, :data:`~groundstate.grading.constraints.MAX_READ_CHARS`)."""
    from groundstate.grading.constraints._text import unreadable

    too_long = unreadable(trace)
    if too_long is not None:
        return False, {"reason": str(too_long), "unreadable": too_long.evidence()}
    judge = suite_function(ref, suite_root, checks)
    copy = TraceCopies(trace).fresh()  # the record's trace stays as is
    with held():
        verdict = judge(s0, sT, final_message(trace), copy)
    if not (
        isinstance(verdict, tuple)
        and len(verdict) == 2
        and isinstance(verdict[0], bool)
        and isinstance(verdict[1], str)
    ):
        raise TypeError(f"{ref} returned {verdict!r:.80}, expected (bool, reason)")
    return verdict[0], {"reason": verdict[1]}


def final_message(trace: Sequence[TraceEvent]) -> str | None:
    """The agent's final reply in *trace*, or None when it gave none."""
    finals = [e.text for e in trace if isinstance(e, MessageEvent) and e.final]
    return finals[-1] if finals else None


def _diff(assertion: Any, states: States) -> tuple[bool, dict[str, Any]]:
    assert isinstance(assertion, DiffAssertion)
    _names_what_s0_has(assertion, states.initial)
    problems: list[str] = []
    for table, expected in assertion.state_diff.items():
        actual = states.diff.tables.get(table, TableDiff())
        key_columns = states.initial.tables[table].key
        if key_columns == [ROWID]:
            actual = _twins_as_named(expected, actual, states.initial.tables[table])
        problems += _missing(table, expected.added, actual, expected, key_columns)
        if assertion.nothing_else_changed:
            problems += _unexpected(table, expected, actual, key_columns)
    if assertion.nothing_else_changed:
        problems += [
            f"{table}: unexpected change"
            for table, change in states.diff.tables.items()
            if table not in assertion.state_diff and _changes_values(change)
        ]
    evidence = {"problems": problems, "diff": states.diff.model_dump(mode="json")}
    return not problems, evidence


ROWID = "rowid"
"""The key snapshots give a table without a primary key."""


def _twins_as_named(expected: TableChange, actual: TableDiff, s0: TableState) -> TableDiff:
    """*actual* with the removed and changed rows of a table without a primary key named by
    the expected ``rowid``s where rows holding the same values in s0 can stand for them.

    Such rows are one state (the hash leaves ``rowid`` out): of two identical log lines,
    deleting the first or the second leaves the same final state, but ``removed: [3]`` held
    for one agent and failed the other. Each expected row takes, among the touched rows with
    its values, one that fits (a removal; a change to the expected values), else itself; the
    row that bore its ``rowid`` takes the other's, so every label stays on a twin."""
    removed = [row.get(ROWID) for row in actual.removed]
    changed = [change.key for change in actual.changed]
    befores = [change.before for change in actual.changed]
    fixed: set[Any] = set()
    wants: list[tuple[Any, list[Any], list[Row], dict[str, Any] | None]]
    wants = [(key, removed, actual.removed, None) for key in expected.removed]
    wants += [(c.key, changed, befores, c.set) for c in expected.changed]
    for key, labels, rows, values in wants:
        same = row_content(s0.rows[canonical_json(key)])
        twins = [
            i for i, row in enumerate(rows) if labels[i] not in fixed and row_content(row) == same
        ]
        fits = [i for i in twins if values is None or row_matches(actual.changed[i].after, values)]
        pick = next(iter(fits or [i for i in twins if labels[i] == key] or twins), None)
        fixed.add(key)
        if pick is None or labels[pick] == key:
            continue
        for bearers in (removed, changed):  # the twin that bore *key* takes the other label
            bearers[:] = [labels[pick] if label == key else label for label in bearers]
        labels[pick] = key
    return TableDiff(
        added=actual.added,
        removed=[{**row, ROWID: label} for row, label in zip(actual.removed, removed, strict=True)],
        changed=[_renamed(c, label) for c, label in zip(actual.changed, changed, strict=True)],
    )


def _renamed(change: RowChange, key: Any) -> RowChange:
    before, after = {**change.before, ROWID: key}, {**change.after, ROWID: key}
    return RowChange(key=key, before=before, after=after)


def _names_what_s0_has(assertion: DiffAssertion, initial: Snapshot) -> None:
    """Refuse, as the grader's mistake, an expectation naming a table, column or row the
    initial state lacks: whatever the agent does, it never holds (or, for a table or column
    under ``nothing_else_changed: false``, always holds). ``check`` says so before a run; this
    holds where it was not run (the Python API, a fixture edited since)."""
    for table, expected in assertion.state_diff.items():
        state = initial.tables.get(table)
        if state is None:
            have = ", ".join(sorted(initial.tables))
            raise GraderError(f"{table}: the initial state has no such table (it has: {have})")
        named = [c for row in expected.added for c in row]
        named += [c for change in expected.changed for c in change.set]
        unknown = sorted(set(named) - set(state.columns))
        if unknown:
            raise GraderError(f"{table}: no column {', '.join(map(repr, unknown))} to match")
        # Keys as JSON values, as snapshots and ``check`` key rows: ``true`` or ``1.0`` named
        # the row ``1`` in ``removed`` (Python's ==) but not in ``changed``.
        keys = [canonical_json(key) for key in expected.removed]
        keys += [canonical_json(change.key) for change in expected.changed]
        absent = [key for key in keys if key not in state.rows]
        if absent:
            raise GraderError(f"{table}: no row of the initial state has key {absent[0]}")


def _missing(
    table: str,
    added: list[dict[str, Any]],
    actual: TableDiff,
    expected: Any,
    key_columns: list[str],
) -> list[str]:
    problems = [f"{table}: no added row matches {row}" for row in pair_rows(added, actual.added)[0]]
    removed_keys = [_key(row, key_columns) for row in actual.removed]
    problems += [
        f"{table}: row {key} was not removed" for key in expected.removed if key not in removed_keys
    ]
    changes = {canonical_json(c.key): c for c in actual.changed}
    for want in expected.changed:
        change = changes.get(canonical_json(want.key))
        wrong = {
            c: v
            for c, v in want.set.items()
            if change is None or not row_matches(change.after, {c: v})
        }
        if wrong:
            problems.append(f"{table}: row {want.key} should have {wrong}")
    return problems


def _unexpected(table: str, expected: Any, actual: TableDiff, key_columns: list[str]) -> list[str]:
    problems = [
        f"{table}: unexpected added row {row}" for row in pair_rows(expected.added, actual.added)[1]
    ]
    problems += [
        f"{table}: unexpected removed row {_key(row, key_columns)}"
        for row in actual.removed
        if _key(row, key_columns) not in expected.removed
    ]
    allowed = {canonical_json(c.key): set(c.set) for c in expected.changed}
    for change in actual.changed:
        extra = set(_changed_values(change)) - allowed.get(canonical_json(change.key), set())
        if extra:
            problems.append(f"{table}: row {change.key} unexpectedly changed {sorted(extra)}")
    return problems


def _changed_values(change: RowChange) -> list[str]:
    """The columns whose value *change* changed as values are compared: a float written back
    within 15 significant digits (a balance credited and debited again, ``2`` to
    ``2.0000000000000004``) or a JSON document rewritten in another key order is no change."""
    return [c for c in change.columns if not same_value(change.before.get(c), change.after[c])]


def _changes_values(table: TableDiff) -> bool:
    return bool(table.added or table.removed) or any(map(_changed_values, table.changed))


def _key(row: dict[str, Any], key_columns: list[str]) -> Any:
    values = [row.get(c) for c in key_columns]
    return values[0] if len(values) == 1 else values


_EVALUATE = MappingProxyType(
    {
        SqlAssertion: _sql,
        PythonAssertion: _python,
        DiffAssertion: _diff,
        JudgeAssertion: _judge,
        TestsAssertion: evaluate_tests,
        ChangedPathsAssertion: evaluate_changed_paths,
    }
)
_UNTIMED = frozenset({DiffAssertion, ChangedPathsAssertion})
"""Assertions evaluated by our code alone, on the diff: they need no thread."""
_KIND = MappingProxyType(
    {
        SqlAssertion: "sql",
        PythonAssertion: "check",
        DiffAssertion: "state_diff",
        JudgeAssertion: "judge",
        TestsAssertion: "tests",
        ChangedPathsAssertion: "changed_paths",
    }
)
