"""The rebinding check's mark of the twenty-second round gives the results of the
straightforward one, never others.

:meth:`Bindings.mark` took, for every attempt, a new reader of the watched namespaces' dict
versions (one ctypes object per namespace, some 460) and a shallow copy of every namespace
(some 14,000 entries): about 1.2 ms of CPU per retail attempt. It now reads the versions
with the reader of the watched row (built when the watched set changes) and takes again the
copy of a namespace whose version has not moved since the last mark. Compared here:

- the copies a mark holds, on generated namespaces and writes between marks (set, delete,
  an entry put back, a write undone), with a fresh copy of each namespace at the mark;
- :meth:`Bindings.written_back` from a reused mark with the same from a mark taken the old
  way (a new version reader, every namespace copied), over the same generated writes;
- the harness's own marks over the 18 retail oracle replays (a fresh process), each copy
  compared with a fresh copy of its namespace, and every replay's record as on the old path;
- controls: a method written and put back between two attempts' marks is named, whether or
  not its namespace was written before the mark; a mark after the watched set changed.

And :func:`groundstate.account.resumed`, run for each of the account's sends, imports its
hook helper only when a hook is set (it did on every send); with one set, the generator
still runs with none and the caller's is put back.
"""

from __future__ import annotations

import threading
from operator import is_
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from groundstate.bindings import Bindings, Mark, _versions, _Watched

from .conftest import in_a_fresh_process

ROOT = Path(__file__).resolve().parent.parent
RETAIL = ROOT / "examples" / "retail"


def _f() -> None: ...


def _g() -> None: ...


def _same(a: Any, b: Any) -> bool:
    """Equal keys, each bound to the same object (a mark's copies are items, as tuples)."""
    a, b = dict(a), dict(b)
    return a.keys() == b.keys() and all(is_(a[k], b[k]) for k in a)


def _old_mark(bindings: Bindings) -> Mark | None:
    """:meth:`Bindings.mark` as it was before this round."""
    wheres = tuple(where for where, _ in bindings._watched.values())
    spaces = tuple(watched.namespace for _, watched in bindings._watched.values())
    versions = _versions(list(spaces))
    if versions is None:
        return None
    seen = versions()
    return Mark(wheres, spaces, tuple(tuple(s.items()) for s in spaces), versions, tuple(seen))


def _bindings(spaces: list[dict[str, object]]) -> Bindings:
    """A :class:`Bindings` watching *spaces* only (as modules), none of the harness's."""
    bindings = Bindings.__new__(Bindings)
    bindings._lock = threading.Lock()
    bindings._watched = {
        i: (f"space{i}", _Watched(space, module=True)) for i, space in enumerate(spaces)
    }
    bindings._modules, bindings._entries, bindings._loaded = set(), {}, 0
    bindings._typed, bindings._flat = [], None
    return bindings


_OBJECTS = [_f, _g, 1, "x", None]
_op = st.tuples(
    st.integers(0, 5),  # which namespace
    st.sampled_from(["set", "del", "same", "undo", "none"]),
    st.sampled_from(["a", "b", "c", "d"]),
    st.integers(0, len(_OBJECTS) - 1),
)


def _apply(spaces: list[dict[str, object]], op: tuple[int, str, str, int]) -> None:
    which, kind, name, value = op
    space = spaces[which]
    if kind == "set":
        space[name] = _OBJECTS[value]
    elif kind == "del":
        space.pop(name, None)
    elif kind == "same" and name in space:
        space[name] = space[name]  # written, holding what it held
    elif kind == "undo":  # written and put back
        was = space.get(name, _f)
        space[name] = _OBJECTS[value]
        space[name] = was


def _spaces() -> list[dict[str, object]]:
    return [{"a": _f, "b": 1, "k": _g} for _ in range(6)]


def _needs_versions() -> None:
    if _versions([{}]) is None:
        pytest.skip("this interpreter keeps no dict versions")


@settings(max_examples=200, deadline=None)
@given(st.lists(st.lists(_op, max_size=6), min_size=1, max_size=6))
def test_a_marks_copies_are_the_namespaces_as_they_were_then(
    rounds: list[list[tuple[int, str, str, int]]],
) -> None:
    _needs_versions()
    spaces = _spaces()
    bindings = _bindings(spaces)
    for ops in rounds:
        mark = bindings.mark()
        assert mark is not None
        fresh = [dict(space) for space in spaces]
        assert len(mark.copies) == len(spaces)
        assert all(map(_same, mark.copies, fresh))
        assert mark.spaces == tuple(spaces)
        assert mark.wheres == tuple(f"space{i}" for i in range(len(spaces)))
        for op in ops:
            _apply(spaces, op)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(st.lists(_op, max_size=5), st.lists(_op, max_size=5)), max_size=6))
def test_written_back_from_a_reused_mark_is_written_back_from_a_fresh_one(
    rounds: list[tuple[list[tuple[int, str, str, int]], list[tuple[int, str, str, int]]]],
) -> None:
    """Each round: writes before the mark (between attempts), the mark, writes after (the
    agent's run); then what each mark says was written and put back."""
    _needs_versions()
    spaces = _spaces()
    bindings = _bindings(spaces)
    for before, during in rounds:
        for op in before:
            _apply(spaces, op)
        new, old = bindings.mark(), _old_mark(bindings)
        for op in during:
            _apply(spaces, op)
        assert bindings.written_back(new) == bindings.written_back(old)


def test_unwritten_namespaces_copies_are_taken_again() -> None:
    """What the round changed: a namespace unwritten since the last mark is not copied
    again (this fails on the old code, which copied every namespace at every mark)."""
    _needs_versions()
    spaces = _spaces()
    bindings = _bindings(spaces)
    first = bindings.mark()
    spaces[2]["a"] = _g
    second = bindings.mark()
    assert first is not None and second is not None
    assert second.copies[0] is first.copies[0]
    assert second.copies[2] is not first.copies[2]
    assert dict(second.copies[2])["a"] is _g and dict(first.copies[2])["a"] is _f


@pytest.mark.parametrize("written_before", [False, True])
def test_code_written_and_put_back_after_a_reused_mark_is_named(written_before: bool) -> None:
    """Control: the check still names a method swapped and put back during the second
    attempt, its namespace's copy taken again from the first mark or made anew."""
    _needs_versions()
    spaces = _spaces()
    bindings = _bindings(spaces)
    assert bindings.written_back(bindings.mark()) == []
    if written_before:
        spaces[3]["b"] = 2  # a lawful write between attempts
    mark = bindings.mark()
    spaces[3]["a"] = _g
    spaces[3]["a"] = _f
    assert bindings.written_back(mark) == ["space3"]
    spaces[4]["b"] = 3  # a lawful change: the entries differ
    assert bindings.written_back(mark) == ["space3"]


def test_a_mark_after_the_watched_set_changed_covers_the_new_namespace() -> None:
    """Control: a module taken in after a mark (a new row) is in the next mark."""
    _needs_versions()
    spaces = _spaces()
    bindings = _bindings(spaces)
    assert bindings.mark() is not None
    extra: dict[str, object] = {"a": _f}
    bindings._watched["extra"] = ("extra", _Watched(extra, module=True))
    bindings._flat = None  # as Bindings._take does
    mark = bindings.mark()
    assert mark is not None and mark.wheres[-1] == "extra"
    extra["a"] = _g
    extra["a"] = _f
    assert bindings.written_back(mark) == ["extra"]


def test_the_harness_marks_the_same_as_before() -> None:
    """The process's own watched set: a mark reused from the last one holds what fresh
    copies hold, and one taken the old way finds the same written back."""
    from groundstate.bindings import HARNESS

    _needs_versions()
    HARNESS.mark()
    new, old = HARNESS.mark(), _old_mark(HARNESS)
    assert new is not None and old is not None
    assert new.wheres == old.wheres and new.spaces == old.spaces
    assert all(map(_same, new.copies, old.copies))
    assert HARNESS.written_back(new) == HARNESS.written_back(old) == []


# --- the 18 retail oracle replays -------------------------------------------------------------


def _replays() -> list[Any]:
    """Replay every retail oracle three times; at each mark, compare the copies with fresh
    ones; return what each record says, timings aside, and how many marks were compared."""
    import asyncio

    from groundstate import bindings
    from groundstate.agents.scripted import ScriptedAgent
    from groundstate.episode import AttemptInfo, run_attempt
    from groundstate.spec.suite import load_suite
    from groundstate.testing import scripted_system

    compared: list[bool] = []
    taken = bindings._Flat.copies

    def copies(self: Any, now: list[int]) -> tuple[tuple[tuple[str, object], ...], ...]:
        made = taken(self, now)
        compared.append(all(map(_same, made, [dict(s) for s in self.spaces])))
        return made

    bindings._Flat.copies = copies  # type: ignore[method-assign]
    bindings.HARNESS.rebase()  # the wrapper is this test's own instrumentation
    suite = load_suite(RETAIL)
    system = scripted_system()
    loop = asyncio.new_event_loop()
    records = []
    try:
        for attempt in (1, 2, 3):
            for task_id, solutions in sorted(suite.solutions.items()):
                info = AttemptInfo(
                    run_id=f"{task_id}-{attempt}", batch_id="b", attempt=attempt, seed=0
                )
                agent = ScriptedAgent(solutions["oracle"].steps)
                output = loop.run_until_complete(
                    run_attempt(suite.tasks[task_id], suite, system, agent, info)
                )
                run = output.run
                records.append(
                    (
                        task_id,
                        run.terminal_reason,
                        run.final_state_hash,
                        [r.passed for r in run.constraint_results],
                        sorted(run.infrastructure_status),
                    )
                )
    finally:
        loop.close()
    return [compared, records]


def test_the_retail_oracle_replays_mark_as_before() -> None:
    compared, records = in_a_fresh_process(_replays)
    if not compared:
        pytest.skip("this interpreter keeps no dict versions")
    assert len(compared) >= 54 and all(compared)
    assert len(records) == 54
    for task_id, reason, final, constraints, evidence in records:
        assert reason == "success", task_id
        assert final and all(constraints), task_id
        assert "harness_rebound" not in evidence and "harness_state_changed" not in evidence


# --- the account's generator resumed ----------------------------------------------------------


def test_resuming_the_account_with_no_hooks_reads_no_module() -> None:
    """What the round changed: :func:`resumed` looked up ``groundstate.loopthreads`` (an
    import statement, some microseconds) on every send, 39 per retail attempt, though it is
    needed only to put a hook back. With none set it is not looked up (this fails on the old
    code: the import statement runs and finds the planted module)."""
    import sys

    from groundstate.account import Account

    if sys.gettrace() is not None or sys.getprofile() is not None:
        pytest.skip("a tracer runs the tests (coverage): the hooks are put back")
    account = Account()
    real = sys.modules["groundstate.loopthreads"]
    sys.modules["groundstate.loopthreads"] = None  # type: ignore[assignment]  # any import raises
    try:
        assert account.take_step() == 1
        assert account.read().steps == 1
    finally:
        sys.modules["groundstate.loopthreads"] = real


def test_a_hook_is_still_off_while_the_account_runs_and_put_back_after() -> None:
    """Control: with a trace function set, the account's generator runs with none (the
    agent's tracer would be handed its frame), and the caller's is put back after."""
    import sys

    from groundstate import account as account_module

    seen: list[object] = []

    def tracer(frame: Any, event: str, arg: Any) -> Any:
        return None

    def inside() -> Any:
        while True:
            seen.append((sys.gettrace(), sys.getprofile()))
            yield

    generator = inside()
    next(generator)
    before = sys.gettrace()
    sys.settrace(tracer)
    try:
        account_module.resumed(generator, None)
        after = sys.gettrace()
    finally:
        sys.settrace(before)
    assert seen[-1] == (None, None)
    assert after is tracer
