"""The rebinding check of the twenty-third round finds what the attribute reads found, and
reads no audited attribute.

Each look of the rebinding check (three per attempt) read every watched function's
``__code__``, and the ``__defaults__``/``__kwdefaults__`` of those that had some: some 3,000
reads, each an audit event (``object.__getattr__``), each a call of the audit hook of
Python's this process keeps (:func:`groundstate.bindings.refuse_audit_hooks`): about 9,200
calls of it per retail attempt, 1.2 ms of CPU. The row now reads the three words of each
function object that hold them (:func:`groundstate.bindings._state_words`) and compares
them with those of the state first seen. Compared here, over the changes an agent can make
to a function in place (code, a value-equal copy of the code, defaults and keyword defaults
swapped for equal or for lying ones, defaults given to a function without), the row's
answer with the words against the same row reading the attributes, and what
:meth:`Bindings.put_back` names and puts back; in a fresh process, that a look with nothing
changed raises no audit event for a function's attributes; and in attempts, an agent that
sets a harness function's keyword defaults, or its code to a value-equal copy, is stopped at
stage ``harness_code``.

And :func:`groundstate.loopthreads._put_back`'s pass in C over the builtins puts back what
the loop did (a name deleted, rebound, or whose first value was None).
"""

from __future__ import annotations

import sys
import types
import uuid
from collections.abc import Callable, Iterator
from typing import Any

import pytest

import groundstate.episode
from groundstate.bindings import Bindings, _Flat
from groundstate.loopthreads import _put_back
from groundstate.spec.suite import Suite

from .conftest import in_a_fresh_process
from .test_agents_round22 import _prohibited_and_put_back

SOURCE = """
def plain(a, b):
    return a + b

def with_defaults(a, b=1, c="x"):
    return a, b, c

def with_kwdefaults(a, *, k=2):
    return a, k

def both(a=0, *, k=3):
    return a, k
"""


class _Equal:
    """A default that says it equals anything (``==`` would let it pass)."""

    def __eq__(self, other: object) -> bool:
        return True

    __hash__ = object.__hash__


@pytest.fixture
def checks() -> Iterator[types.ModuleType]:
    """A suite's check module (watched for its functions' code and defaults), in
    ``sys.modules`` while the test runs."""
    name = f"groundstate_user.checks_round23_{uuid.uuid4().hex}"
    module = types.ModuleType(name)
    exec(compile(SOURCE, f"<{name}>", "exec"), vars(module))
    sys.modules[name] = module
    try:
        yield module
    finally:
        del sys.modules[name]


def _answers(flat: _Flat) -> tuple[bool, bool]:
    """The row's answer read through the function objects' words, then through the
    attributes (as before this round)."""
    assert flat.states is not None, "this interpreter's function layout is the one assumed"
    words = flat.unchanged()
    states, flat.states = flat.states, None
    try:
        return words, flat.unchanged()
    finally:
        flat.states = states


CHANGES: dict[str, Callable[[types.ModuleType], None]] = {
    "code of another function": lambda m: setattr(m.plain, "__code__", m.both.__code__),
    "a value-equal copy of its code": lambda m: setattr(
        m.plain, "__code__", m.plain.__code__.replace()
    ),
    "equal defaults, another tuple": lambda m: setattr(
        m.with_defaults, "__defaults__", tuple([1, "x"])
    ),
    "defaults equal to anything": lambda m: setattr(
        m.with_defaults, "__defaults__", (_Equal(), _Equal())
    ),
    "defaults taken away": lambda m: setattr(m.with_defaults, "__defaults__", None),
    "equal keyword defaults, another dict": lambda m: setattr(
        m.with_kwdefaults, "__kwdefaults__", {"k": 2}
    ),
    "keyword defaults taken away": lambda m: setattr(m.both, "__kwdefaults__", None),
    "keyword defaults of the other": lambda m: setattr(
        m.both, "__kwdefaults__", m.with_kwdefaults.__kwdefaults__
    ),
}


@pytest.mark.parametrize("change", sorted(CHANGES))
def test_a_function_changed_in_place_is_found_and_put_back(
    checks: types.ModuleType, change: str
) -> None:
    bindings = Bindings()
    first = {
        name: (fn.__code__, fn.__defaults__, fn.__kwdefaults__)
        for name, fn in vars(checks).items()
        if isinstance(fn, types.FunctionType)
    }
    assert _answers(bindings._row()) == (True, True)
    if "value-equal" in change:
        assert checks.plain.__code__.replace() == checks.plain.__code__
    CHANGES[change](checks)
    assert _answers(bindings._row()) == (False, False)
    found = bindings.put_back()
    assert len(found) == 1 and found[0].endswith(".__code__"), found
    assert found[0].startswith(checks.__name__)
    now = {
        name: (fn.__code__, fn.__defaults__, fn.__kwdefaults__)
        for name, fn in vars(checks).items()
        if isinstance(fn, types.FunctionType)
    }
    assert all(all(map(lambda a, b: a is b, now[name], first[name])) for name in first), (
        "put back as first seen"
    )
    assert _answers(bindings._row()) == (True, True)
    assert bindings.put_back() == []


def test_defaults_given_to_a_function_without_are_not_named_as_before(
    checks: types.ModuleType,
) -> None:
    """A function first seen without defaults given some changes no call the harness makes
    (as before: not named); the row, built again, then takes its fast path again."""
    bindings = Bindings()
    checks.plain.__defaults__ = (1, 2)
    checks.plain.__kwdefaults__ = {"z": 1}
    assert bindings.put_back() == []
    assert _answers(bindings._row()) == (True, True)
    assert bindings.put_back() == []


def test_a_function_written_with_what_it_held_is_unchanged(checks: types.ModuleType) -> None:
    """Setting a function's code or defaults to the objects it holds is no change (the same
    objects), as before."""
    bindings = Bindings()
    fn = checks.both
    held = fn.__code__, fn.__defaults__, fn.__kwdefaults__
    fn.__code__, fn.__defaults__, fn.__kwdefaults__ = held
    assert _answers(bindings._row()) == (True, True)
    assert bindings.put_back() == []


def test_the_harness_row_reads_words_for_every_function() -> None:
    """On this interpreter the harness's row reads the words (three 8-byte words per function
    held, gathered at once since the twenty-fourth round), and agrees with the attribute
    reads."""
    bindings = Bindings()
    flat = bindings._row()
    assert flat.states is not None
    (_, _, _, index, _), first = flat.states
    functions = len(flat.rows[0][1])
    assert len(first) == len(index) == 3 * 8 * functions and functions > 1000
    assert _answers(flat) == (True, True)


def _audited_function_reads() -> tuple[int, int, list[str]]:
    """In a fresh process (no agent has run: a hook may be added): the audit events for a
    function's attributes raised by a look with nothing changed, the functions watched, and
    what the look found."""
    events: list[str] = []
    sys.addaudithook(lambda event, args: events.append(event))
    import groundstate.episode
    import groundstate.runner  # noqa: F401
    from groundstate.bindings import HARNESS

    HARNESS.refresh()
    HARNESS.put_back()  # the row built (and again, if a namespace grew lawfully meanwhile)
    HARNESS.put_back()
    events.clear()
    found = HARNESS.put_back()
    reads = events.count("object.__getattr__")
    return reads, len(HARNESS._row().rows[0][1]), found


def test_a_look_raises_no_audit_event_per_function() -> None:
    """Before: one ``object.__getattr__`` audit event per attribute read, some 3,000 a look."""
    reads, functions, found = in_a_fresh_process(_audited_function_reads)
    assert functions > 1000
    assert found == []
    assert reads == 0


# --- in attempts -------------------------------------------------------------------------------


def test_a_harness_function_given_other_keyword_defaults_is_found(bank: Suite) -> None:
    fn = groundstate.episode.run_attempt
    assert fn.__kwdefaults__

    def change() -> Callable[[], None]:
        kwdefaults = fn.__kwdefaults__
        fn.__kwdefaults__ = {name: _Equal() for name in kwdefaults or {}}
        return lambda: setattr(fn, "__kwdefaults__", kwdefaults)

    _prohibited_and_put_back(bank, change, "groundstate.episode.run_attempt.__code__")
    assert all(type(v) is not _Equal for v in (fn.__kwdefaults__ or {}).values())


def test_a_harness_function_given_a_value_equal_copy_of_its_code_is_found(bank: Suite) -> None:
    """Identity, not equality: a copy of the code (equal, another object) is a change (an
    agent holding the copy could not change it, but the check does not reason about that)."""
    fn = groundstate.episode.classify

    def change() -> Callable[[], None]:
        code = fn.__code__
        fn.__code__ = code.replace()
        return lambda: setattr(fn, "__code__", code)

    _prohibited_and_put_back(bank, change, ".classify.__code__")


# --- the loop's put-back of the builtins -------------------------------------------------------


def test_put_back_binds_what_was_deleted_rebound_or_none() -> None:
    bound: dict[str, Any] = {"none": None, "one": 1, "fn": len, "gone": max}
    first = tuple(bound.items())
    current: dict[str, Any] = {**bound, "added": 3}
    _put_back(current, first)
    assert current == {**bound, "added": 3}
    del current["none"]
    current["fn"] = lambda value: 0
    del current["gone"]
    _put_back(current, first)
    assert current == {**bound, "added": 3}
    _put_back(current, ())  # nothing to put back
    assert current == {**bound, "added": 3}
    assert current["fn"] is len and current["gone"] is max and "none" in current
