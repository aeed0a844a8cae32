"""Overhead, thirty-second round: the ``confirmed`` checks of each change no longer read every
answer and every tool output shown before it.

Round 30 made the walk of the trace linear, but each change still tested every answer given
before it (:func:`_dialogue._naming`: which questions name all the change's values, each
value searched for in each question), rebuilt every path the tools showed to find the
strings shown beside one of its values (:func:`_dialogue._siblings`), and looked the answers
after its yes up by scanning them all (:func:`_dialogue._objection`, ``_agreed_otherwise``,
``_resumed``): quadratic in a long trace's length. Now the answers :func:`_dialogue._changes`
grows remember which of them name each list of values (each answer tested once per list of
values; an answer set anew, as a later message goes on with it, tested again), the strings
the tools showed are indexed by where they show (only the paths showing a value are read),
and the answers after a step are found by bisection.

These tests hold that no verdict changes, by a second route kept here (the code as it was:
every answer tested for every change, every output walked for every prefix, every answer
scanned), on long traces built from the retail oracles and on many generated ones, and that
the work grows linearly: a trace four times as long costs about four times the Python lines
(counted, not timed), where the old route's cost grew about sixteen-fold.
"""

from __future__ import annotations

import random
import sys
from collections.abc import Iterator
from functools import lru_cache
from types import FrameType
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from groundstate.grading.constraints import _dialogue
from groundstate.grading.constraints._dialogue import _Answers, _Confirmation, confirmed
from groundstate.grading.constraints._index import TraceIndex
from groundstate.spec.suite import Suite, load_suite
from groundstate.trace import AgentEvent, MessageEvent, ToolCallEvent

from .test_overhead_round30 import (
    RETAIL,
    _confirmed_constraints,
    _long_trace,
    _near_misses,
    _oracle_traces,
    _questions,
    _restepped,
    _shown_as_before,
    _verdicts,
)

# --- the second route: the code as it was ------------------------------------------------------


class _PlainAnswers(list[_Confirmation]):
    """The answers as a plain list: every answer tested for every change (``_naming`` as it
    was), and the answers after a step found by scanning them all."""

    ordered = False

    def naming(self, values: list[str]) -> list[_Confirmation]:
        return [a for a in self if not a.unnamed(values) and (values or a.yes)]


def _siblings_as_before(known: set[str], earlier: Any, *, records: bool = False) -> set[str]:
    """``_siblings`` as it was: every path of every output of the prefix walked."""
    found = _shown_as_before(earlier, records=True if records else None)
    return {leaf for leaves in found.values() if leaves & known for leaf in leaves - known if leaf}


def _siblings_named_as_before(
    known: set[str], earlier: Any, texts: Any, *, records: bool = False
) -> set[str]:
    return _siblings_as_before(known, earlier, records=records)


def _old_route(patch: pytest.MonkeyPatch) -> None:
    patch.setattr(_dialogue, "_Answers", _PlainAnswers)
    patch.setattr(_dialogue, "_siblings", _siblings_as_before)
    # round 33 looks up the strings a text may name among them: every one tested, as it was
    patch.setattr(_dialogue, "_siblings_named", _siblings_named_as_before)


def _both_routes(suite: Suite, events: list[AgentEvent]) -> tuple[Any, Any]:
    now = (_verdicts(suite, events), _questions(suite, events))
    with pytest.MonkeyPatch.context() as patch:
        _old_route(patch)
        before = (_verdicts(suite, events), _questions(suite, events))
    return now, before


@lru_cache(maxsize=1)
def _retail() -> Suite:
    return load_suite(RETAIL)


@lru_cache(maxsize=1)
def _oracles() -> dict[str, list[AgentEvent]]:
    return _oracle_traces(_retail())


@pytest.fixture(scope="module")
def retail() -> Suite:
    return _retail()


@pytest.fixture(scope="module")
def oracle_traces() -> dict[str, list[AgentEvent]]:
    return _oracles()


# --- generated traces ---------------------------------------------------------------------------

# Replies that change what an answer says, or go on with it: yes, no, a no after a yes, a part
# left out, a counter-offer, a retraction, a question left open, a reply in two messages.
_REPLIES = [
    "Yes.",
    "No.",
    "Yes, go ahead.",
    "Hmm, let me think.",
    "OK, go ahead.",
    "Wait, stop.",
    "Oops, I meant no.",
    "Only half of it.",
    "Actually to the gift card.",
    "Yes, but not the socks.",
    "Yes to both.",
    "Sure, to the gift card.",
    "Hold that.",
    "No receipt, go ahead.",
]


def _generated(
    traces: dict[str, list[AgentEvent]], picks: list[tuple[int, int, int]], seed: int
) -> list[AgentEvent]:
    """Oracle traces one after another (*picks*: which, and how each is changed), with user
    replies replaced, doubled (a reply in two messages) or near misses, and steps dropped."""
    rng = random.Random(seed)
    ids = sorted(traces)
    events: list[AgentEvent] = []
    for task, change, drop in picks:
        for event in traces[ids[task % len(ids)]]:
            if drop and rng.random() < 0.1:
                continue
            if isinstance(event, MessageEvent) and event.role == "user":
                roll = rng.random()
                if change == 1 and roll < 0.5:
                    event = event.model_copy(update={"text": rng.choice(_REPLIES)})
                elif change == 2 and roll < 0.4:
                    events.append(event)
                    event = event.model_copy(update={"text": rng.choice(_REPLIES)})
            events.append(event)
    events = _restepped(events)
    return _near_misses(events, seed) if seed % 3 == 0 else events


_PICKS = st.lists(
    st.tuples(st.integers(0, 17), st.integers(0, 2), st.integers(0, 1)), min_size=1, max_size=10
)


@given(picks=_PICKS, seed=st.integers(0, 10**6))
@settings(
    max_examples=40,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
def test_generated_traces_get_the_verdicts_the_old_route_gives(
    picks: list[tuple[int, int, int]], seed: int
) -> None:
    events = _generated(_oracles(), picks, seed)
    now, before = _both_routes(_retail(), events)
    assert now == before


def test_the_generated_traces_are_not_all_alike(retail: Suite) -> None:
    """The property above sees passes and failures of several kinds, and the second route
    agrees on each of them."""
    kinds: set[str] = set()
    verdicts: set[bool] = set()
    for seed in range(12):
        rng = random.Random(seed)
        picks = [(rng.randrange(18), rng.randrange(3), rng.randrange(2)) for _ in range(6)]
        events = _generated(_oracles(), picks, seed)
        now, before = _both_routes(retail, events)
        assert now == before, seed
        for checked in (confirmed(c, TraceIndex(events)) for c in _confirmed_constraints(retail)):
            verdicts.add(checked.passed)
            kinds |= set(checked.evidence) if not checked.passed else set()
    assert verdicts == {True, False}
    assert len(kinds) >= 4, kinds


@pytest.mark.parametrize("seed", [21, 22])
def test_long_traces_get_the_verdicts_the_old_route_gives(
    retail: Suite, oracle_traces: dict[str, list[AgentEvent]], seed: int
) -> None:
    plain = _long_trace(oracle_traces, rounds=2, seed=seed)
    for events in (plain, _near_misses(plain, seed), _generated(oracle_traces, [(0, 2, 0)], seed)):
        now, before = _both_routes(retail, events)
        assert now == before
    assert all('"passed":true' in v for v in _verdicts(retail, plain))


# --- the answers, tested once per list of values ------------------------------------------------


def _message(role: str, text: str, step: int) -> MessageEvent:
    return MessageEvent(step=step, role=role, text=text, at=0.0)  # type: ignore[arg-type]


_QUESTIONS = [
    "Shall I refund the socks to your Visa?",
    "Shall I refund the socks, $22.00, to your gift card?",
    "Shall I cancel order O-1002?",
    "Refund the hoodie and the socks to your Visa?",
    "Anything else?",
]
_ANSWERS = ["Yes.", "No.", "Yes to both.", "Yes, but not the socks.", "Sure."]
_VALUES = [[], ["socks"], ["socks", "visa"], ["O-1002"], ["$22.00", "gift card"], ["hoodie"]]

_STEPS = st.lists(
    st.one_of(
        st.tuples(st.just("append"), st.integers(0, 4), st.integers(0, 4), st.booleans()),
        st.tuples(st.just("set"), st.integers(0, 30), st.integers(0, 4), st.booleans()),
        st.tuples(st.just("ask"), st.integers(0, len(_VALUES) - 1), st.just(0), st.just(False)),
    ),
    max_size=40,
)


@given(steps=_STEPS)
@settings(max_examples=150, deadline=None)
def test_the_answers_naming_values_are_those_a_scan_finds(
    steps: list[tuple[str, int, int, bool]],
) -> None:
    """However answers are appended and set anew (as :func:`_changes` does) and asked about
    in between, the answers naming each list of values are those testing every one finds;
    the answers after a step, those a scan finds."""
    answers = _Answers()
    at = 0
    for at, (kind, first, second, yes) in enumerate(steps, start=1):
        question = _message("agent", _QUESTIONS[first % len(_QUESTIONS)], at)
        answer = _message("user", _ANSWERS[second], at)
        if kind == "append":
            answers.append(_Confirmation(question, answer, yes, at))
        elif kind == "set" and answers:
            where = first % len(answers)
            answers[where] = _Confirmation(question, answer, yes, answers[where].at)
        for values in _VALUES if kind == "ask" else [_VALUES[first % len(_VALUES)]]:
            want = [a for a in answers if not a.unnamed(values) and (values or a.yes)]
            assert _dialogue._naming(answers, values) == want
            assert all(
                got is a for got, a in zip(_dialogue._naming(answers, values), want, strict=True)
            )
        for step in (0, at // 2, at):
            assert _dialogue._later(answers, step) == [a for a in answers if a.at > step]
    assert answers.ordered


def test_answers_out_of_order_are_scanned() -> None:
    answers = _Answers()
    q = _message("agent", _QUESTIONS[0], 1)
    answers.append(_Confirmation(q, _message("user", "Yes.", 5), at=5))
    answers.append(_Confirmation(q, _message("user", "No.", 3), yes=False, at=3))
    assert not answers.ordered
    assert _dialogue._later(answers, 4) == [answers[0]]
    answers = _Answers()
    answers.append(_Confirmation(q, _message("user", "Yes.", 5), at=5))
    answers[0] = _Confirmation(q, _message("user", "Yes.", 9), at=9)
    assert not answers.ordered  # set anew at another step: no bisection assumed
    answers[0:1] = []
    assert _dialogue._naming(answers, ["socks"]) == []


def test_an_answer_set_anew_is_tested_anew() -> None:
    """ "Shall I refund the socks to your Visa?" "Yes." names the socks; the same answer set
    anew for another question no longer does (and the reverse)."""
    answers = _Answers()
    socks = _message("agent", _QUESTIONS[0], 1)
    order = _message("agent", _QUESTIONS[2], 1)
    answers.append(_Confirmation(socks, _message("user", "Yes.", 2), at=2))
    assert _dialogue._naming(answers, ["socks"]) == [answers[0]]
    answers[-1] = _Confirmation(order, answers[0].answer, at=2)
    assert _dialogue._naming(answers, ["socks"]) == []
    assert _dialogue._naming(answers, ["O-1002"]) == [answers[0]]
    answers[0] = _Confirmation(socks, answers[0].answer, at=2)
    assert _dialogue._naming(answers, ["socks"]) == [answers[0]]
    assert _dialogue._naming(answers, ["O-1002"]) == []


# --- the strings shown beside a value, looked up --------------------------------------------------


@pytest.mark.parametrize("order", ["forward", "backward", "shuffled"])
def test_the_siblings_of_every_prefix_are_as_a_walk_finds(
    oracle_traces: dict[str, list[AgentEvent]], order: str
) -> None:
    """Down to the order the set iterates in (a caller returns the first it finds)."""
    events = _long_trace(oracle_traces, rounds=2, seed=4)
    leaves = sorted(
        {
            leaf
            for e in events
            if isinstance(e, ToolCallEvent) and e.ok
            for _, leaf, _ in _dialogue._leaves_of(e.tool, e.output)
        }
    )
    rng = random.Random(order)
    prefixes = list(range(0, len(events) + 1, 3))
    if order == "backward":
        prefixes.reverse()
    elif order == "shuffled":
        rng.shuffle(prefixes)
    index, reference = TraceIndex(events), TraceIndex(events)
    found = 0
    for at in prefixes:
        for records in (False, True):
            for known in ({rng.choice(leaves)}, set(rng.sample(leaves, 3)), {"not shown"}, set()):
                got = _dialogue._siblings(known, index.before(at), records=records)
                want = _siblings_as_before(known, reference.before(at), records=records)
                assert list(got) == list(want), (at, records, known)
                again = _dialogue._siblings(set(known), index.before(at), records=records)
                assert list(again) == list(want)
                found += bool(got)
        # the paths shown are as before too, after the lookups grew the walk
        assert list(_dialogue._shown(index.before(at), records=None).items()) == list(
            _shown_as_before(reference.before(at), records=None).items()
        )
    assert found > len(prefixes)


# --- the work grows linearly --------------------------------------------------------------------


# The functions that find the answers naming a change's values, the strings shown beside them
# and the answers after a yes, as they are and as they were (the second route's).
_LOOKUPS = {
    "_naming",
    "naming",
    "names_all",
    "unnamed",
    "_siblings",
    "siblings",
    "shown",
    "_shown_before",
    "_later",
    "_objection",
    "_agreed_otherwise",
    "_resumed",
    "_siblings_as_before",
    "_shown_as_before",
}


def _lines_run(suite: Suite, events: list[AgentEvent]) -> tuple[int, int]:
    """The Python lines run (a loop's line once per pass) checking every ``confirmed``
    constraint of *suite* on *events*, in :mod:`_dialogue` and the second route's code: in
    all, and in the functions of :data:`_LOOKUPS` (a comprehension's lines counted as its
    function's). The work, counted rather than timed."""
    modules = {_dialogue.__file__, __file__, _shown_as_before.__code__.co_filename}
    lines = [0, 0]

    def local(frame: FrameType, event: str, arg: Any) -> Any:
        if event == "line":
            name = frame.f_code.co_name
            if name.startswith("<") and frame.f_back is not None:
                name = frame.f_back.f_code.co_name
            lines[0] += 1
            lines[1] += name in _LOOKUPS
        return local

    def calls(frame: FrameType, event: str, arg: Any) -> Any:
        return local if frame.f_code.co_filename in modules else None

    index = TraceIndex(events)
    constraints = _confirmed_constraints(suite)
    previous = sys.gettrace()
    sys.settrace(calls)
    try:
        for constraint in constraints:
            confirmed(constraint, index)
    finally:
        sys.settrace(previous)
    return lines[0], lines[1]


@pytest.fixture
def old_route() -> Iterator[None]:
    with pytest.MonkeyPatch.context() as patch:
        _old_route(patch)
        yield


def _growth(suite: Suite, traces: dict[str, list[AgentEvent]]) -> tuple[float, float]:
    """How many times the lines run grow, in all and in the look-ups, from a trace to one
    four times as long (the retail oracles over and over: many changes, each after many
    answers and outputs)."""
    short = _long_trace(traces, rounds=2, seed=3)
    long = _long_trace(traces, rounds=8, seed=3)
    assert len(long) == 4 * len(short)
    (short_all, short_lookups), (long_all, long_lookups) = (
        _lines_run(suite, short),
        _lines_run(suite, long),
    )
    return long_all / short_all, long_lookups / short_lookups


def test_a_trace_four_times_as_long_costs_about_four_times_the_work(
    retail: Suite, oracle_traces: dict[str, list[AgentEvent]]
) -> None:
    """Linear: about 4 (4.1 measured in all, 4.7 in the look-ups, whose answers grow with
    the trace). The code of round 31 grew 7.3-fold in the look-ups (16-fold in ``unnamed``)."""
    in_all, lookups = _growth(retail, oracle_traces)
    assert in_all < 5
    assert lookups < 6


def test_the_old_route_grew_faster_than_that(
    retail: Suite, oracle_traces: dict[str, list[AgentEvent]], old_route: None
) -> None:
    """The bounds above could fail: the second route's look-ups (every answer tested for
    every change, every output walked for each) grow far faster on the same traces."""
    in_all, lookups = _growth(retail, oracle_traces)
    assert lookups > 10
    assert in_all > 5
