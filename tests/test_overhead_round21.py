"""The declarative constraints' shortcuts of the twenty-first round give the results of the
straightforward evaluation, never others.

- a match's pattern search is remembered by the pattern's source, flags and the text
  (``_match.found_in``): compared with ``pattern.search`` on generated patterns and texts,
  equal sources with other flags, texts past the length remembered, and a memo that fills up;
- the strings tool outputs show are worked out once per trace (``TraceIndex.before``, the
  steps before a change carrying a memo shared by every prefix): ``_shown`` and ``_siblings``
  on a memoed prefix compared with a plain list, over generated tool outputs and every prefix;
- :func:`mentions` remembered by its arguments, compared with the uncached reading;
- the words of the records a question names (``_recorded_words``), worked out per step once;
- the whole evaluation, every shortcut on (cold, then warm), against every one off, on the
  golden retail corpus (every declarative constraint of every case, compared as JSON).
"""

from __future__ import annotations

import re
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from groundstate.grading.constraints import (
    _dialogue,
    _index,
    _match,
    _text,
    evaluate_constraints,
)
from groundstate.grading.constraints._index import Before, TraceIndex
from groundstate.spec.constraints import PythonConstraint
from groundstate.spec.suite import load_suite
from groundstate.trace import AgentEvent

from .grading_corpus import EXAMPLES, load_cases
from .trace_builder import Trace, constraint

# --- the pattern search remembered --------------------------------------------------------

_PATTERNS = [
    r"\b(no|nope|not (yet|now))\b",
    r"\d{3,4}",
    r"^[\W_]*(yes|ok)\b",
    r"(?<!why )\bnot\W*$",
    r"wait(?=\W*$)",
    r"Ab",
]
_texts = st.text(alphabet="abnoyesNOtwi 0123456789.,?!'_", max_size=40)


@settings(max_examples=300, deadline=None)
@given(st.sampled_from(_PATTERNS), st.booleans(), _texts)
def test_a_remembered_search_is_the_search(source: str, ignore_case: bool, text: str) -> None:
    pattern = re.compile(source, re.IGNORECASE if ignore_case else 0)
    expected = pattern.search(text) is not None
    assert _match.found_in(pattern, text) is expected
    assert _match.found_in(pattern, text) is expected  # again, from the memo


def test_equal_sources_with_other_flags_do_not_share_an_answer() -> None:
    sensitive, folded = re.compile("Ab"), re.compile("Ab", re.IGNORECASE)
    assert _match.found_in(sensitive, "ab") is False
    assert _match.found_in(folded, "ab") is True
    assert _match.found_in(sensitive, "ab") is False


def test_long_texts_are_searched_every_time(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_match, "SEARCHED_CHARS", 10)
    before = _match._searched.cache_info().currsize
    pattern = re.compile(r"x$")
    assert _match.found_in(pattern, "a" * 20 + "x") is True
    assert _match.found_in(pattern, "a" * 21) is False
    assert _match._searched.cache_info().currsize == before


def test_the_memos_are_bounded_and_keep_answering_past_the_bound() -> None:
    pattern = re.compile(r"7")
    for n in range(5000):
        assert _match.found_in(pattern, str(n)) is ("7" in str(n))
    assert _match._searched.cache_info().currsize <= 4096
    for n in range(5000):
        assert _text.mentions(str(n), "7") is (str(n) == "7")
    assert _text._mentioned.cache_info().currsize <= 4096


def test_no_answer_can_be_written_into_the_memos() -> None:
    """An in-process agent's code reaches the harness's modules by name: a memo it could
    write ("this card number matches nothing") would flip a verdict. The memos are
    lru_caches, filled only by searching and reading; a card number is still found."""
    for module in (_match, _text):
        assert not [
            name
            for name, value in vars(module).items()
            if isinstance(value, dict) and ("search" in name.lower() or "mention" in name.lower())
        ]
    rule = constraint(id="no-pan", never={"message": "agent", "matches": r"\d{13,19}"})
    trace = Trace().agent("your card 4111111111111111")
    assert not evaluate_constraints([rule], trace.events)[0].passed
    assert _match._searched.cache_info().currsize > 0


def test_a_message_match_reads_the_memo_only_for_equal_texts() -> None:
    """A ``never`` on agent messages: one text that matches, one near miss, each twice."""
    rule_trace = Trace().agent("your card 4111 1111 1111 1111").agent("your card ending 1111")
    rule = constraint(id="no-pan", never={"message": "agent", "matches": r"\d{13,19}"})
    for _ in range(2):
        [result] = evaluate_constraints([rule], rule_trace.events)
        assert not result.passed
        [clean] = evaluate_constraints([rule], rule_trace.events[1:])
        assert clean.passed


# --- the strings tool outputs show, once per trace ----------------------------------------

_leaf = st.sampled_from(
    ["O-1", "O-2", "navy", "forest", "Wool Socks", "M", "L", "", "2025-05-28", "x" * 201]
)
_key = st.sampled_from(["order_id", "name", "colour", "size", "label", "items", "id", "placed"])
_output = st.recursive(
    _leaf | st.integers(-2, 2) | st.none(),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(_key, inner, max_size=3),
    max_leaves=12,
)
_calls = st.lists(
    st.tuples(st.sampled_from(["get_order", "list_orders"]), st.booleans(), _output),
    max_size=5,
)


def _trace(calls: list[tuple[str, bool, Any]]) -> list[AgentEvent]:
    trace = Trace("hi")
    for tool, ok, output in calls:
        trace.call(tool, {}, output, ok=ok)  # a failed call's output is read by no check
    return list(trace.events)  # type: ignore[arg-type]


@settings(max_examples=150, deadline=None)
@given(_calls, st.sets(st.sampled_from(["o-1", "navy", "m", "wool socks", "forest"])))
def test_shown_on_a_memoed_prefix_is_shown_on_the_list(
    calls: list[tuple[str, bool, Any]], known: set[str]
) -> None:
    events = _trace(calls)
    index = TraceIndex(events)
    for _ in range(2):  # cold, then from the memo
        for at in range(len(events) + 1):
            plain, memoed = events[:at], index.before(at)
            assert isinstance(memoed, Before) and list(memoed) == plain
            for records in (None, True, False):
                expected = _dialogue._shown(plain, records=records)
                assert _dialogue._shown(memoed, records=records) == expected
            for records in (False, True):
                expected_siblings = _dialogue._siblings(known, plain, records=records)
                assert _dialogue._siblings(known, memoed, records=records) == expected_siblings


def _item(name: str, colour: str) -> dict[str, str]:
    return {"name": name, "colour": colour}


def test_shown_without_the_memo_reads_every_output_as_before() -> None:
    """The straightforward walk, written out: a record's key and a detail's, a failed call."""
    events = _trace(
        [
            ("get_order", True, {"order_id": "O-1", "items": [_item("Socks", "navy")]}),
            ("get_order", True, {"order_id": "O-2", "items": [_item("Hat", "forest")]}),
            ("get_order", False, {"order_id": "O-3"}),
        ]
    )
    shown = _dialogue._shown(events, records=None)
    assert shown == {
        ("get_order", "order_id"): {"o-1", "o-2"},
        ("get_order", "items", "*", "name"): {"socks", "hat"},
        ("get_order", "items", "*", "colour"): {"navy", "forest"},
    }
    assert set(_dialogue._shown(events, records=False)) == {("get_order", "items", "*", "colour")}
    assert _dialogue._siblings({"o-1"}, events) == {"o-2"}
    assert _dialogue._siblings({"navy"}, TraceIndex(events).before(3)) == {"forest"}


# --- the whole evaluation, on the golden corpus -------------------------------------------


def _straightforward(monkeypatch: pytest.MonkeyPatch) -> None:
    # every text past the lengths remembered: searched, normalised and read each time
    monkeypatch.setattr(_match, "SEARCHED_CHARS", -1)
    monkeypatch.setattr(_text, "_CACHED_CHARS", -1)
    monkeypatch.setattr(_index.TraceIndex, "before", lambda self, at: self.events[:at])


def test_the_corpus_grades_alike_with_and_without_the_shortcuts(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    retail = load_suite(EXAMPLES / "retail")
    cases = load_cases()

    def results() -> list[list[str]]:
        out = []
        for case in cases:
            rules = [
                r
                for r in retail.tasks[case.task_id].hard_process_constraints
                if not isinstance(r, PythonConstraint)
            ]
            graded = evaluate_constraints(rules, list(case.events))
            out.append([r.model_dump_json() for r in graded])
        return out

    fast_cold, fast_warm = results(), results()
    with monkeypatch.context() as patched:
        _straightforward(patched)
        slow = results()
    assert fast_cold == slow
    assert fast_warm == slow
    failed = sum('"passed":false' in r for rows in slow for r in rows)
    assert failed > 50  # the corpus's near misses are in it, not only passes


# --- mentions remembered, and the words of the records a question names -------------------

_said = st.text(alphabet="abo-1 02.$,", max_size=30)
_named = st.sampled_from(["o-1", "O-10", "$22.00", "22", "size 9", "a b", "no", "1.0", "x" * 501])


@settings(max_examples=300, deadline=None)
@given(_said, _named, st.booleans())
def test_a_remembered_mention_is_the_mention(text: str, value: str, chosen: bool) -> None:
    said = _text.normalise(text)
    expected = _text._mentions(said, value, chosen)
    assert _text.mentions(said, value, chosen=chosen) is expected
    assert _text.mentions(said, value, chosen=chosen) is expected  # from the memo


def test_mentions_tells_turned_down_from_chosen_from_the_memo_too() -> None:
    text = _text.normalise("To your Visa, not your gift card")
    for _ in range(2):
        assert _text.mentions(text, "gift card") is True
        assert _text.mentions(text, "gift card", chosen=True) is False
        assert _text.mentions(text, "visa", chosen=True) is True


@settings(max_examples=150, deadline=None)
@given(_calls, st.sampled_from(["Refund o-1?", "the navy socks from o-2?", "wool socks?", "m"]))
def test_recorded_words_on_a_memoed_prefix_are_those_on_the_list(
    calls: list[tuple[str, bool, Any]], question: str
) -> None:
    events = _trace(calls)
    index = TraceIndex(events)
    for _ in range(2):
        for at in range(len(events) + 1):
            expected = _dialogue._recorded_words(question, events[:at])
            assert _dialogue._recorded_words(question, index.before(at)) == expected
