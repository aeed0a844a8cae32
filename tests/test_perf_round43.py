"""Round 43: costs of a grading pass cut without changing a verdict (issue 10).

Counted, never timed: the calls a pass no longer makes (``dataclasses.replace`` per check,
pydantic's raising ``__getattr__`` per tool call, an encoder per scalar, the pairing walk of
a trace no model response asked anything of) and the memo reads that replace readings; and,
beside each, the same results as the code they replace, on ordinary and odd input (str
subclasses, events carrying extra values, texts past the memos' bounds). The verdicts of the
whole golden corpus are pinned by tests/test_grading_equivalence.py.
"""

from __future__ import annotations

import dataclasses
import json
from decimal import Decimal
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pydantic
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from groundstate.grading import outcome
from groundstate.grading.constraints import _index, _text, evaluate_constraints
from groundstate.grading.constraints._text import (
    MAX_READ_CHARS,
    Unreadable,
    amounts_in_words,
    amounts_in_words_at,
    message_text,
    normalise,
    reply_words,
    unreadable,
    within_bound,
)
from groundstate.grading.outcome import States
from groundstate.spec import canonical
from groundstate.spec.canonical import canonical_json
from groundstate.spec.constraints import PythonConstraint
from groundstate.spec.suite import load_suite
from groundstate.trace import MessageEvent, ModelCallEvent, ToolCallEvent

from .grading_corpus import EXAMPLES, load_cases

# --- each check's States, made without dataclasses.replace ---------------------------------


def _states(**extra: Any) -> States:
    return States(
        s0=SimpleNamespace(name="s0"),
        sT=SimpleNamespace(name="sT"),
        initial=SimpleNamespace(name="initial"),
        diff=SimpleNamespace(name="diff"),
        suite_root=Path("suite"),
        **extra,
    )


def _run_pass(states: States, count: int) -> list[States]:
    """The States each of *count* checks of one pass is given."""
    seen: list[States] = []

    def check(given: States) -> bool:
        seen.append(given)
        return True

    calls = [(check, 5.0, f"groundstate-check-{i}") for i in range(count)]
    returned = outcome.within_limits(calls, states)
    assert [r.result() for r in returned] == [True] * count
    return seen


def test_a_pass_makes_no_replace_per_check(monkeypatch: pytest.MonkeyPatch) -> None:
    replaced: list[Any] = []
    real = dataclasses.replace
    monkeypatch.setattr(
        outcome.dataclasses, "replace", lambda *a, **k: replaced.append(a) or real(*a, **k)
    )
    states = _states(trace=(1, 2))
    seen = _run_pass(states, 4)
    assert replaced == []
    assert len(seen) == 4
    for each in seen:
        assert type(each) is States
        # its own views, of the pass's states
        assert isinstance(each.s0, outcome._BoundedView) and each.s0._view is states.s0
        assert isinstance(each.sT, outcome._FinalView) and each.sT._view is states.sT
        # everything else shared with the pass, as replace shares it
        for name in ("initial", "diff", "suite_root", "trace", "checks", "functions", "pending"):
            assert getattr(each, name) is getattr(states, name), name
        # what replace would have made, field by field
        made = real(states, s0=each.s0, sT=each.sT)
        assert vars(made) == vars(each)
        assert made == each
    # each check its own views, and the pass's states untouched
    assert len({id(g.s0) for g in seen}) == 4 and len({id(g.sT) for g in seen}) == 4
    assert states.s0.name == "s0" and states.sT.name == "sT"


def test_states_of_another_class_still_go_through_replace(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    @dataclasses.dataclass(frozen=True)
    class Checked(States):
        made: list[str] = dataclasses.field(default_factory=list)

        def __post_init__(self) -> None:
            self.made.append("init")

    replaced: list[Any] = []
    real = dataclasses.replace
    monkeypatch.setattr(
        outcome.dataclasses, "replace", lambda *a, **k: replaced.append(a) or real(*a, **k)
    )
    states = Checked(
        s0=SimpleNamespace(), sT=SimpleNamespace(), initial=None, diff=None, suite_root=Path(".")
    )
    seen = _run_pass(states, 2)
    assert len(replaced) == 2
    assert all(type(g) is Checked for g in seen)
    assert states.made == ["init", "init", "init"]  # its __post_init__ ran for each copy


def test_states_keeps_what_the_shortcut_assumes() -> None:
    """The copy through ``__dict__`` is replace's result only while States has no
    ``__post_init__``, no slots and only init fields."""
    assert not hasattr(States, "__post_init__")
    assert "__slots__" not in vars(States)
    assert all(f.init for f in dataclasses.fields(States))
    assert set(vars(_states())) == {f.name for f in dataclasses.fields(States)}


# --- a message's text read straight from the memos -----------------------------------------


class Text(str):
    """A str subclass: read every time, never through a memo."""


def _old_message_text(message: Any) -> str:
    text = message.text or ""
    if len(text) > MAX_READ_CHARS and message.role == "agent":
        raise Unreadable(message)
    if message.role == "user":
        return reply_words(within_bound(text))
    return normalise(within_bound(text))


_SAID = [
    "Yes, go ahead.",
    "Refund yes, receipt no.",
    "The gift card, sorry, I meant the Visa",
    "I'd rather have the Visa than the gift card",
    "Card 4111 1111-1111 1111, O\u20111001",
    "\uff39\uff25\uff33\u3000\uff50\uff4c\uff45\uff41\uff53\uff45",  # full-width
    "",
    "x" * 4096,
    "no " * 1400,
    "y" * (MAX_READ_CHARS + 7),
]


@pytest.mark.parametrize("role", ["user", "agent", "system"])
@pytest.mark.parametrize("text", [*_SAID, Text("Yes, the Visa."), Text("z" * 5000)])
def test_a_message_reads_as_before(role: str, text: str) -> None:
    message = SimpleNamespace(role=role, text=text, step=3)
    try:
        expected: Any = _old_message_text(message)
    except Unreadable as exc:
        expected = exc
    try:
        found: Any = message_text(message)
    except Unreadable as exc:
        found = exc
    if isinstance(expected, Unreadable):
        assert isinstance(found, Unreadable) and found.step == 3
    else:
        assert found == expected
        assert type(found) is str


def test_a_plain_message_is_one_memo_read() -> None:
    message = MessageEvent(step=1, role="user", text="Yes please, the Visa.", at=0.0)
    message_text(message)
    hits = _text._reply_words.cache_info().hits
    assert [message_text(message) for _ in range(5)] == [message_text(message)] * 5
    assert _text._reply_words.cache_info().hits == hits + 6
    agent = MessageEvent(step=2, role="agent", text="Shall I refund $12.00?", at=0.0)
    message_text(agent)
    hits = _text._normalised.cache_info().hits
    message_text(agent)
    assert _text._normalised.cache_info().hits == hits + 1


def test_a_str_subclass_reply_never_reaches_the_reply_memo() -> None:
    """A user's reply of a str subclass is read by reply_words as before: every time."""
    before = _text._reply_words.cache_info()
    found = message_text(SimpleNamespace(role="user", text=Text("Yes, go ahead."), step=1))
    after = _text._reply_words.cache_info()
    assert (after.hits, after.misses) == (before.hits, before.misses)
    assert found == _text._read_reply("Yes, go ahead.")


# --- amounts said in words, remembered by text ---------------------------------------------

_AMOUNTS = [
    "i can refund twenty-two dollars and fifty cents to your visa.",
    "un reembolso de veintidós dólares con cincuenta centavos",
    "vingt-deux dollars, pas quarante dollars",
    "zweiundzwanzig dollar und fünfzig cent",
    "vinte e dois dólares",
    "forty dollars instead of twenty-two dollars",
    "no amount here",
    "one hundred and ten dollars " * 150,  # past the memo's bound
]


def _unremembered(text: str) -> list[tuple[int, Decimal]]:
    """The amounts read afresh: a str subclass is never read through the memo."""
    return amounts_in_words_at(Text(text))


@pytest.mark.parametrize("text", _AMOUNTS)
def test_worded_amounts_are_read_as_before(text: str) -> None:
    text = normalise(text)
    expected = _unremembered(text)
    first, second = amounts_in_words_at(text), amounts_in_words_at(text)
    assert first == second == expected
    assert amounts_in_words(text) == {amount for _, amount in expected}
    assert first is not second  # each caller's own list
    first.append((0, Decimal(999)))
    first.clear()
    assert amounts_in_words_at(text) == expected  # what a caller does to it is its own


def test_worded_amounts_are_read_once_per_text() -> None:
    text = normalise("I can refund twenty-two dollars to your Visa, or forty dollars.")
    amounts_in_words_at(text)
    info = _text._amounts_kept.cache_info()
    for _ in range(4):
        amounts_in_words(text)
    assert _text._amounts_kept.cache_info().hits == info.hits + 4
    assert _text._amounts_kept.cache_info().misses == info.misses
    assert _text._amounts_kept.cache_info().maxsize == 4096


def test_worded_amounts_of_long_texts_and_subclasses_are_read_every_time() -> None:
    info = _text._amounts_kept.cache_info()
    long_text = normalise("twenty dollars " * 400)
    assert len(long_text) > 4096
    subclass = Text(normalise("twenty-two dollars"))
    assert amounts_in_words_at(long_text) == _unremembered(long_text)
    assert amounts_in_words_at(subclass) == [(0, Decimal(22))]
    after = _text._amounts_kept.cache_info()
    assert (after.hits, after.misses) == (info.hits, info.misses)


@settings(max_examples=200, deadline=None)
@given(
    st.lists(
        st.sampled_from(
            ["twenty", "two", "dollars", "and", "fifty", "cents", "veintidós", "dólares", "con",
             "centavos", "not", "instead", "of", "forty", "-", "one", "hundred", "$12.00", "y"]
        ),
        max_size=12,
    )
)  # fmt: skip
def test_generated_amounts_read_as_before(words: list[str]) -> None:
    text = normalise(" ".join(words))
    assert amounts_in_words_at(text) == _unremembered(text)
    assert amounts_in_words_at(text) == _unremembered(text)


# --- unreadable without pydantic's raising getattr -----------------------------------------


def _call(step: int) -> ToolCallEvent:
    return ToolCallEvent(step=step, tool="get_order", args={}, ok=True, duration_ms=1.0, at=0.0)


def _old_unreadable(events: list[Any]) -> Any:
    for event in events:
        text = getattr(event, "text", None)
        if getattr(event, "role", None) == "agent" and len(text or "") > MAX_READ_CHARS:
            return event
    return None


def test_tool_calls_are_passed_over_without_a_raising_lookup(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    missed: list[str] = []
    real = pydantic.BaseModel.__getattr__

    def counted(self: Any, name: str) -> Any:
        missed.append(name)
        return real(self, name)

    monkeypatch.setattr(pydantic.BaseModel, "__getattr__", counted)
    events = [
        MessageEvent(step=0, role="user", text="Cancel O-1001", at=0.0),
        *[_call(i) for i in range(1, 6)],
        MessageEvent(step=6, role="agent", text="Done.", at=0.0, final=True),
    ]
    assert unreadable(events) is None
    assert missed == []
    assert _old_unreadable(events) is None
    assert missed.count("text") == 5  # what the old reading raised and caught, per call


def test_values_set_on_an_event_are_read_as_lookup_reads_them() -> None:
    """An event written past its model (``object.__setattr__``): its instance dict or its
    extra values answer as ``getattr`` would have."""
    long = "x" * (MAX_READ_CHARS + 1)
    in_dict = _call(1)
    object.__setattr__(in_dict, "text", long)
    object.__setattr__(in_dict, "role", "agent")
    in_extra = _call(2)
    object.__setattr__(in_extra, "__pydantic_extra__", {"text": long, "role": "agent"})
    user_role = _call(3)
    object.__setattr__(user_role, "__pydantic_extra__", {"text": long, "role": "user"})
    long_agent = MessageEvent(step=4, role="agent", text=long, at=0.0)

    class Odd(ToolCallEvent):
        @property
        def role(self) -> str:
            return "agent"

        @property
        def text(self) -> str:
            return long

    odd = Odd(step=5, tool="x", args={}, ok=True, duration_ms=1.0, at=0.0)
    for events in ([in_dict], [in_extra], [user_role], [_call(6), long_agent], [odd], [_call(7)]):
        expected = _old_unreadable(events)
        found = unreadable(events)
        assert (found.message if found else None) is expected, events


def test_every_corpus_trace_is_read_alike() -> None:
    for case in load_cases():
        found = unreadable(case.events)
        assert found is None and _old_unreadable(case.events) is None


# --- requested_at: nothing to pair, no pairing walk -----------------------------------------


def _model_call(response: dict[str, Any]) -> ModelCallEvent:
    return ModelCallEvent.model_validate(
        {
            "provider": "openai-chat",
            "model": "m",
            "request_digest": "0" * 64,
            "latency_ms": 1.0,
            "response": response,
            "step": 0,
            "at": 0.0,
        }
    )


def test_a_trace_without_model_requests_is_not_walked(monkeypatch: pytest.MonkeyPatch) -> None:
    made: list[Any] = []
    real = _index._made
    monkeypatch.setattr(_index, "_made", lambda event: made.append(event) or real(event))
    events = [
        MessageEvent(step=0, role="user", text="hi", at=0.0),
        _call(1),
        MessageEvent(step=2, role="agent", text="Done.", at=0.0),
    ]
    assert _index.requested_at(events) == {}
    assert made == []
    empty = _model_call({"text": "ok"})
    assert _index.requested_at([empty, *events]) == {}
    assert made == []


def test_requests_still_pair_with_the_calls_they_asked_for() -> None:
    asked = _model_call({"tool_calls": [{"id": "1", "name": "get_order", "arguments": "{}"}]})
    events = [MessageEvent(step=0, role="user", text="hi", at=0.0), asked, _call(1)]
    assert _index.requested_at(events) == {1: 1}


def test_the_corpus_grades_as_pinned() -> None:
    """Every corpus case's declarative constraints, graded twice (memos cold, then warm),
    give the results the corpus pins."""
    retail = load_suite(EXAMPLES / "retail")
    for memo in list(vars(_text).values()):  # every reading of the text module cold
        if callable(getattr(memo, "cache_clear", None)):
            memo.cache_clear()
    cases = load_cases()
    for _ in range(2):
        for case in cases:
            rules = retail.tasks[case.task_id].hard_process_constraints
            graded = evaluate_constraints(
                [r for r in rules if not isinstance(r, PythonConstraint)], list(case.events)
            )
            expected = [
                row
                for row, rule in zip(case.expected, rules, strict=True)
                if not isinstance(rule, PythonConstraint)
            ]
            assert [r.model_dump(mode="json") for r in graded] == expected, case.label


# --- canonical JSON of a scalar, without an encoder -----------------------------------------


def _old_canonical(value: Any) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str)


class Number(int):
    def __repr__(self) -> str:
        return "Number!"


class Word(str):
    def __str__(self) -> str:
        return "word!"


_SCALARS: list[Any] = [
    "", "plain", "é ü 中文", "quote \" backslash \\ newline \n tab \t nul \x00 \x1f",
    "\u2028\u2029", "\ud800 lone", "😀", 0, -1, 10**40, True, False, None, 1.5, float("nan"),
    float("inf"), -0.0, Number(3), Word("w"), b"bytes", [1, "a"], {"b": 1, "a": [None]},
]  # fmt: skip


@pytest.mark.parametrize("value", _SCALARS, ids=repr)
def test_canonical_json_is_as_before(value: Any) -> None:
    assert canonical_json(value) == _old_canonical(value)


@settings(max_examples=300, deadline=None)
@given(st.one_of(st.text(), st.integers(), st.booleans(), st.none()))
def test_generated_scalars_are_written_as_before(value: Any) -> None:
    assert canonical_json(value) == _old_canonical(value)


def test_plain_scalars_make_no_encoder(monkeypatch: pytest.MonkeyPatch) -> None:
    dumped: list[Any] = []
    real = json.dumps
    monkeypatch.setattr(canonical.json, "dumps", lambda *a, **k: dumped.append(a) or real(*a, **k))
    for value in ("text", 7, True, None):
        canonical_json(value)
    assert dumped == []
    for value in (1.5, Number(2), Word("x"), [1], {"a": 1}):
        canonical_json(value)
    assert len(dumped) == 5


def test_a_huge_integer_is_refused_alike() -> None:
    huge = 10**5000
    with pytest.raises(ValueError):
        _old_canonical(huge)
    with pytest.raises(ValueError):
        canonical_json(huge)
