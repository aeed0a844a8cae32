"""Overhead, thirtieth round: the ``confirmed`` constraints read each tool output once per
attempt.

What the strings shown by the tools before a change are (:func:`_dialogue._shown`) is grown
over the trace (each step's output read once, for every prefix asked about) instead of worked
out anew for each prefix (once per change: quadratic in a long trace's length), and each
output is marshalled once per trace for both of its readers (its records and its strings),
not once per reader. ``confirming_questions`` (the Python checks') shares the memo too.

These tests hold that nothing graded changes, by a second route: the old computation kept
here as a reference (:func:`_shown_as_before`, each output keyed anew per reader). Every
prefix of long traces, asked for in any order, gets the same paths and the same sets, down
to the order they iterate in; every ``confirmed`` verdict of long traces built from the
retail oracles (and of near-miss replies naming another record) is the same; every retail
oracle's graded results are the same.
"""

from __future__ import annotations

import asyncio
import random
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest

from groundstate.agents.scripted import ScriptedAgent
from groundstate.episode import EpisodeSession, default_environment, grade
from groundstate.grading.constraints import _dialogue, _text, confirming_questions
from groundstate.grading.constraints._dialogue import confirmed
from groundstate.grading.constraints._index import TraceIndex
from groundstate.spec.constraints import ConfirmedConstraint
from groundstate.spec.suite import Suite, load_suite
from groundstate.testing import scripted_system
from groundstate.trace import AgentEvent, MessageEvent, ToolCallEvent

RETAIL = Path(__file__).resolve().parent.parent / "examples" / "retail"


# --- the second route: the code as it was ------------------------------------------------------


def _shown_as_before(earlier: Sequence[AgentEvent], *, records: bool | None) -> Any:
    """``_shown`` as it was: every output of the prefix walked for each prefix."""
    memo = getattr(earlier, "worked_out", None)
    key = ("old shown", len(earlier), records)
    if memo is not None and key in memo:
        return memo[key]
    found: dict[tuple[str, ...], set[str]] = {}
    for at, event in enumerate(earlier):
        for path, leaf, of_record in _dialogue._output_leaves(at, event, memo):
            if records is None or records == of_record:
                found.setdefault(path, set()).add(leaf)
    if memo is not None:
        memo[key] = found
    return found


def _content_as_before(at: int, event: ToolCallEvent, memo: Any) -> bytes | None:
    """Each reader marshals the output anew, as it did."""
    return _dialogue._kept(event)


def _recorded_words_as_before(question: str, earlier: Sequence[AgentEvent]) -> frozenset[str]:
    """``_recorded_words`` as it was: every record of every output of the prefix read."""
    words: set[str] = set()
    memo = getattr(earlier, "worked_out", None)
    for at, event in enumerate(earlier):
        for names, values in _dialogue._output_records(at, event, memo):
            if any(len(name) >= 3 and _dialogue.mentions(question, name) for name in names):
                words.update(_dialogue._value_words(values))
    return frozenset(words)


@pytest.fixture
def as_before(monkeypatch: pytest.MonkeyPatch) -> Iterator[pytest.MonkeyPatch]:
    with monkeypatch.context() as patch:
        yield patch


def _old_route(patch: pytest.MonkeyPatch) -> None:
    patch.setattr(_dialogue, "_shown", _shown_as_before)
    patch.setattr(_dialogue, "_content", _content_as_before)
    patch.setattr(_dialogue, "_recorded_words", _recorded_words_as_before)
    patch.setattr(_dialogue, "_recorded", _recorded_words_as_before)  # round 33's look-up
    patch.setattr(_text, "_reply_words", _text._read_reply)  # every reply read anew
    patch.setattr(_dialogue, "_offers_kept", _dialogue._choices_offered)  # every question too


# --- traces -------------------------------------------------------------------------------------


def _oracle_traces(suite: Suite) -> dict[str, list[AgentEvent]]:
    found: dict[str, list[AgentEvent]] = {}
    loop = asyncio.new_event_loop()
    try:
        for task_id, solutions in sorted(suite.solutions.items()):
            task = suite.tasks[task_id]
            with default_environment(task, suite) as env:
                env.reset()
                session = EpisodeSession(task, suite, scripted_system(), env, seed=0)
                loop.run_until_complete(ScriptedAgent(solutions["oracle"].steps).run(session))
            found[task_id] = [
                e for e in session.events if isinstance(e, MessageEvent | ToolCallEvent)
            ]
    finally:
        loop.close()
    return found


@pytest.fixture(scope="module")
def retail() -> Suite:
    return load_suite(RETAIL)


@pytest.fixture(scope="module")
def oracle_traces(retail: Suite) -> dict[str, list[AgentEvent]]:
    return _oracle_traces(retail)


def _restepped(events: Sequence[AgentEvent]) -> list[AgentEvent]:
    return [e.model_copy(update={"step": n + 1}) for n, e in enumerate(events)]


def _long_trace(traces: dict[str, list[AgentEvent]], rounds: int, seed: int) -> list[AgentEvent]:
    """The oracle traces one after another, in a shuffled order, *rounds* times over: many
    changes, each after many tool outputs (the same records shown again and again)."""
    rng = random.Random(seed)
    events: list[AgentEvent] = []
    for _ in range(rounds):
        ids = sorted(traces)
        rng.shuffle(ids)
        for task_id in ids:
            events += traces[task_id]
    return _restepped(events)


def _near_misses(events: list[AgentEvent], seed: int) -> list[AgentEvent]:
    """*events* with some user replies turned into near misses naming another record the
    tools showed ("Yes, the <other> instead", "Just the <other>", "Yes, but not the
    <other>"): the replies whose verdicts read the tools' outputs by path."""
    rng = random.Random(seed)
    shown = sorted(
        {
            leaf
            for e in events
            if isinstance(e, ToolCallEvent) and e.ok
            for _, leaf, _ in _dialogue._leaves_of(e.tool, e.output)
            if 3 <= len(leaf) <= 40
        }
    )
    forms = ["Yes, the {} instead.", "Just the {} please.", "Yes, but not the {}.", "Yes, {}."]
    out: list[AgentEvent] = []
    for event in events:
        # no record shown (every tool step dropped, or none ok): nothing to name instead
        if (
            shown
            and isinstance(event, MessageEvent)
            and event.role == "user"
            and rng.random() < 0.4
        ):
            text = rng.choice(forms).format(rng.choice(shown))
            event = event.model_copy(update={"text": text})
        out.append(event)
    return out


def _confirmed_constraints(suite: Suite) -> list[ConfirmedConstraint]:
    found = {
        c.id: c
        for task in suite.tasks.values()
        for c in task.hard_process_constraints
        if isinstance(c, ConfirmedConstraint)
    }
    assert len(found) >= 6
    return [found[key] for key in sorted(found)]


def _verdicts(suite: Suite, events: list[AgentEvent]) -> list[str]:
    index = TraceIndex(events)
    return [confirmed(c, index).model_dump_json() for c in _confirmed_constraints(suite)]


def _questions(suite: Suite, events: list[AgentEvent]) -> list[dict[int, Any]]:
    return [
        {i: q.model_dump_json() for i, q in confirming_questions(c.confirmed, events).items()}
        for c in _confirmed_constraints(suite)
    ]


# --- _shown over every prefix -------------------------------------------------------------------


def _as_lists(shown: Any) -> list[tuple[tuple[str, ...], list[str]]]:
    """The paths and their strings in the order they iterate in (not only equal sets)."""
    return [(path, list(leaves)) for path, leaves in shown.items()]


@pytest.mark.parametrize("order", ["forward", "backward", "shuffled"])
def test_every_prefix_of_a_long_trace_shows_what_a_walk_of_it_shows(
    oracle_traces: dict[str, list[AgentEvent]], order: str
) -> None:
    events = _long_trace(oracle_traces, rounds=4, seed=3)
    assert len(events) > 250
    index, reference = TraceIndex(events), TraceIndex(events)
    prefixes = list(range(len(events) + 1))
    if order == "backward":
        prefixes.reverse()
    elif order == "shuffled":
        random.Random(7).shuffle(prefixes)
    for at in prefixes:
        for records in (None, True, False):
            got = _dialogue._shown(index.before(at), records=records)
            want = _shown_as_before(reference.before(at), records=records)
            assert _as_lists(got) == _as_lists(want), (at, records)


def test_each_output_is_read_once_per_trace_however_many_prefixes(
    oracle_traces: dict[str, list[AgentEvent]], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Linear in the trace's length: each step's output is read once for all the prefixes
    (the old walk read step 0 once per prefix: n(n+1)/2 reads)."""
    events = _long_trace(oracle_traces, rounds=3, seed=5)
    reads: list[int] = []
    real = _dialogue._output_leaves

    def counted(at: int, event: AgentEvent, memo: Any) -> Any:
        reads.append(at)
        return real(at, event, memo)

    monkeypatch.setattr(_dialogue, "_output_leaves", counted)
    index = TraceIndex(events)
    for at in range(len(events) + 1):
        for records in (None, True, False):
            _dialogue._shown(index.before(at), records=records)
    assert sorted(reads) == list(range(len(events)))


def test_each_output_is_marshalled_once_per_trace(
    oracle_traces: dict[str, list[AgentEvent]], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Its records and its strings are looked up under the same bytes."""
    events = _long_trace(oracle_traces, rounds=1, seed=1)
    marshalled: list[int] = []
    real = _dialogue._kept

    def counted(event: ToolCallEvent) -> bytes | None:
        marshalled.append(id(event))
        return real(event)

    monkeypatch.setattr(_dialogue, "_kept", counted)
    index = TraceIndex(events)
    memo = index.before(len(events)).worked_out
    for at, event in enumerate(events):
        _dialogue._output_records(at, event, memo)
        _dialogue._output_leaves(at, event, memo)
        _dialogue._output_records(at, event, memo)
    ok_calls = [e for e in events if isinstance(e, ToolCallEvent) and e.ok]
    assert sorted(marshalled) == sorted(id(e) for e in ok_calls)


def test_a_plain_list_of_steps_is_walked_as_before(
    oracle_traces: dict[str, list[AgentEvent]],
) -> None:
    events = _long_trace(oracle_traces, rounds=1, seed=2)
    for at in (0, 1, len(events) // 2, len(events)):
        for records in (None, True, False):
            got = _dialogue._shown(events[:at], records=records)
            assert _as_lists(got) == _as_lists(_shown_as_before(events[:at], records=records))


def test_the_words_of_the_records_a_question_names_are_as_before(
    oracle_traces: dict[str, list[AgentEvent]],
) -> None:
    """Over every prefix of a long trace, for every question the agent asked in it (each
    record read once however often the tools showed it), in any order of prefixes."""
    events = _long_trace(oracle_traces, rounds=3, seed=9)
    questions = sorted(
        {_text.message_text(e) for e in events if isinstance(e, MessageEvent) and e.role == "agent"}
    )
    index, reference = TraceIndex(events), TraceIndex(events)
    prefixes = list(range(0, len(events) + 1, 7))
    random.Random(4).shuffle(prefixes)
    named = 0
    for at in prefixes:
        for question in questions[:: max(1, len(questions) // 12)]:
            got = _dialogue._recorded_words(question, index.before(at))
            want = _recorded_words_as_before(question, reference.before(at))
            # equal sets (callers only ask whether a word is one of them)
            assert got == want, (at, question)
            named += bool(got)
        plain = _dialogue._recorded_words(questions[0], events[:at])  # no memo: walked
        assert plain == _recorded_words_as_before(questions[0], events[:at])
    assert named  # some questions name records the tools showed


def test_a_reply_read_from_the_cache_reads_as_read_anew(
    oracle_traces: dict[str, list[AgentEvent]],
) -> None:
    events = _near_misses(_long_trace(oracle_traces, rounds=1, seed=6), seed=6)
    replies = [e.text for e in events if isinstance(e, MessageEvent) and e.role == "user"]
    replies += ["Yes. Sorry, I meant the Visa", "Refund yes, receipt no.", "I'd rather the Visa"]
    for text in replies:
        assert text is not None
        assert _text.reply_words(text) == _text._read_reply(text)
        assert _text.reply_words(text) == _text._read_reply(text)  # again, from the cache


class _Spoken(str):
    """A str subclass (an agent's object): read every time, never kept."""


def test_a_str_subclass_reply_is_read_every_time_and_not_kept() -> None:
    _text._reply_words.cache_clear()
    text = _Spoken("Yes, refund the socks")
    assert _text.reply_words(text) == _text._read_reply(str(text))
    assert _text._reply_words.cache_info().currsize == 0
    assert _text._reply_words.cache_info().maxsize == 4096


def test_the_choices_a_question_offers_read_from_the_cache_are_as_read_anew(
    oracle_traces: dict[str, list[AgentEvent]],
) -> None:
    events = _long_trace(oracle_traces, rounds=1, seed=8)
    questions = [_text.message_text(e) for e in events if isinstance(e, MessageEvent)]
    questions += [
        "shall i refund $25.00 or $40.00? which would you like?",
        "i can refund it to your visa or as store credit. please tell me which.",
    ]
    offered = 0
    for question in questions:
        assert _dialogue._offers_choice(question) == _dialogue._choices_offered(question)
        assert _dialogue._offers_choice(question) == _dialogue._choices_offered(question)
        offered += bool(_dialogue._offers_choice(question))
    assert offered >= 2
    assert isinstance(_dialogue._offers_choice(questions[-1]), tuple)  # no caller edits it


def test_a_str_subclass_question_is_read_every_time_and_not_kept() -> None:
    _dialogue._offers_kept.cache_clear()
    question = _Spoken("shall i refund it to your visa or your gift card?")
    assert _dialogue._offers_choice(question) == _dialogue._choices_offered(str(question))
    assert _dialogue._offers_kept.cache_info().currsize == 0


# --- verdicts -----------------------------------------------------------------------------------


@pytest.mark.parametrize("seed", [11, 12, 13])
def test_confirmed_verdicts_of_long_traces_are_as_before(
    retail: Suite,
    oracle_traces: dict[str, list[AgentEvent]],
    as_before: pytest.MonkeyPatch,
    seed: int,
) -> None:
    plain = _long_trace(oracle_traces, rounds=3, seed=seed)
    missed = _near_misses(plain, seed)
    now = [_verdicts(retail, plain), _verdicts(retail, missed)]
    questions_now = [_questions(retail, plain), _questions(retail, missed)]
    _old_route(as_before)
    before = [_verdicts(retail, plain), _verdicts(retail, missed)]
    questions_before = [_questions(retail, plain), _questions(retail, missed)]
    assert now == before
    assert questions_now == questions_before
    # the cases are not all alike: the near misses fail changes the plain traces confirm
    assert any('"passed":false' in v for v in now[1])
    assert now[0] != now[1]


def test_every_retail_oracle_graded_result_is_as_before(
    retail: Suite, as_before: pytest.MonkeyPatch
) -> None:
    def graded() -> dict[str, str]:
        found: dict[str, str] = {}
        loop = asyncio.new_event_loop()
        try:
            for task_id, solutions in sorted(retail.solutions.items()):
                task = retail.tasks[task_id]
                with default_environment(task, retail) as env:
                    env.reset()
                    session = EpisodeSession(task, retail, scripted_system(), env, seed=0)
                    s0 = env.snapshot()
                    loop.run_until_complete(ScriptedAgent(solutions["oracle"].steps).run(session))
                    verdict = grade(task, retail, env, s0, session.events)
                results = [*verdict.constraints, *verdict.assertions]
                found[task_id] = "\n".join(r.model_dump_json() for r in results)
        finally:
            loop.close()
        return found

    now = graded()
    _old_route(as_before)
    before = graded()
    assert now == before
    assert len(now) == 18 and all(now.values())
