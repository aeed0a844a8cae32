"""Harness costs cut in the twenty-fifth round, each compared with the code it replaces.

1. Preparing a record for the store parses its JSON text once.

:func:`groundstate.store.prepare_run` parsed the record's text twice: once for its content
hash (:func:`~groundstate.store.record_hash`) and once for the row's identity and verdict
columns (``_Columns.of``), some 0.2 ms of the harness's time per attempt. It now parses it
once and gives both the same data. Compared here with the two parses, as before, over the
retail oracle replays and near misses (a refused call, text no encoder takes, a record whose
object is changed after its text was made): the content hash, the columns and the text are
the same, and the columns are still the text's, not the object's.

2. The ``confirmed`` constraint's words of the records a question names
(``_recorded_words``): the words of every record of every earlier tool output were worked
out (normalised, tokenised, dates made months) before looking at whether the question names
the record at all; most records are named by no question. Now each record keeps its values,
and their words are worked out only for a record a question names (cached by the values).
Compared with the old walk over the retail oracle replays and near misses: every agent
message against every prefix of its trace, with and without the trace's memo, and the
constraint results of whole attempts.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest

from groundstate.agents.scripted import ScriptedAgent
from groundstate.episode import AttemptInfo, run_attempt
from groundstate.grading.constraints import _dialogue
from groundstate.grading.constraints._index import TraceIndex
from groundstate.grading.constraints._text import normalise
from groundstate.spec.solution import Step
from groundstate.spec.suite import Suite, load_suite
from groundstate.store import PreparedRun, RunStore, _Columns, prepare_run, record_hash
from groundstate.testing import scripted_system
from groundstate.trace import MessageEvent, ToolCallEvent, agent_events

from .conftest import without_keys

RETAIL = Path(__file__).resolve().parent.parent / "examples" / "retail"


@pytest.fixture(scope="module")
def retail() -> Suite:
    return load_suite(RETAIL)


def _attempt(suite: Suite, task_id: str, steps: list[Step], run_id: str) -> Any:
    info = AttemptInfo(run_id=run_id, batch_id="round25", attempt=1, seed=0)
    agent = ScriptedAgent(steps)
    return asyncio.run(run_attempt(suite.tasks[task_id], suite, scripted_system(), agent, info))


def _same(prepared: PreparedRun) -> None:
    """The text, content hash and columns as the two parses gave them."""
    text = prepared.run.model_dump_json()
    assert prepared.text == text
    assert prepared.content == record_hash(text)
    assert prepared.columns == _Columns.read(json.loads(text))


def test_the_oracle_replays_prepare_as_with_two_parses(retail: Suite) -> None:
    outcomes = []
    for task_id, solutions in sorted(retail.solutions.items()):
        output = _attempt(retail, task_id, solutions["oracle"].steps, f"oracle-{task_id}")
        prepared = prepare_run(output.run, output.artifacts)
        _same(prepared)
        outcomes.append(prepared.columns.success)
    assert outcomes and all(outcomes)  # every oracle passes: the columns say so


def test_near_misses_prepare_as_with_two_parses(retail: Suite) -> None:
    task_id = "cancel-pending-order"
    oracle = retail.solutions[task_id]["oracle"].steps
    misses = {
        # the change made without the user's yes: a broken constraint, success False
        "unconfirmed": [s for s in oracle if s.say is None or s.call is not None],
        # an unknown tool and a lone surrogate in what the agent says
        "odd": [Step(call="no_such_tool", args={"x": "\ud800"}), Step(say="caf\u00e9 \ud800")],
    }
    for name, steps in misses.items():
        output = _attempt(retail, task_id, steps, f"miss-{name}")
        prepared = prepare_run(output.run, output.artifacts)
        _same(prepared)
        assert prepared.columns.success is False, name


def test_the_columns_are_the_texts_not_the_objects(retail: Suite, tmp_path: Path) -> None:
    task_id = "cancel-pending-order"
    steps = [s for s in retail.solutions[task_id]["oracle"].steps if s.call is None][:1]
    output = _attempt(retail, task_id, steps, "text-not-object")
    prepared = prepare_run(output.run, output.artifacts)
    assert prepared.columns.success is False
    # an agent's thread that finds the record object and sets it a success after the text
    object.__setattr__(prepared.run, "success", True)
    assert prepared.columns.success is False
    assert prepared.content == record_hash(prepared.text)
    with RunStore(tmp_path / "runs.db") as store:
        store.add_prepared([prepared])
        (stored,) = store.runs("round25")
    assert stored.success is False


# --- the words of the records a question names -----------------------------------------------


def _recorded_words_before(question: str, earlier: list[Any]) -> frozenset[str]:
    """``_recorded_words`` as it was: every record's words worked out first."""
    words: set[str] = set()
    for event in earlier:
        if not (isinstance(event, ToolCallEvent) and event.ok):
            continue
        for record in _dialogue._records(event.output):
            own = {k: v for k, v in record.items() if isinstance(v, str | int | float)}
            names = [str(v) for k, v in own.items() if _dialogue._ID_KEY.search(str(k))]
            said: set[str] = set()
            for value in map(str, own.values()):
                if len(value) > _dialogue._SPELLED:
                    continue
                said.update(_dialogue._TOKEN.findall(normalise(value)))
                dated = _dialogue._ISO_DATE.match(value)
                if dated and 1 <= int(dated[1]) <= 12:
                    said.add(_dialogue._MONTHS[int(dated[1]) - 1])
            if any(len(name) >= 3 and _dialogue.mentions(question, name) for name in names):
                words.update(said)
    return frozenset(words)


_NEAR_MISSES = {
    # a question naming a record by its id, one naming none, and one naming a date's month
    "cancel-pending-order": [
        "shall i cancel order o-1002?",
        "shall i cancel it?",
        "the order from may, o-1001 or o-1002?",
    ],
}


def _questions(events: list[Any]) -> list[tuple[str, int]]:
    """Each agent message of *events* (normalised), with where it stands in them."""
    return [
        (normalise(e.text or ""), i)
        for i, e in enumerate(events)
        if isinstance(e, MessageEvent) and e.role == "agent"
    ]


def test_recorded_words_as_before_over_the_oracles_and_near_misses(retail: Suite) -> None:
    compared = named = 0
    for task_id, solutions in sorted(retail.solutions.items()):
        for kind, solution in sorted(solutions.items()):
            output = _attempt(retail, task_id, solution.steps, f"words-{task_id}-{kind}")
            events = agent_events(output.run.observation_action_log)
            index = TraceIndex(events)
            asked = _questions(events) + [(q, len(events)) for q in _NEAR_MISSES.get(task_id, [])]
            for question, at in asked:
                for cut in range(at + 1):
                    expected = _recorded_words_before(question, events[:cut])
                    assert _dialogue._recorded_words(question, events[:cut]) == expected
                    assert _dialogue._recorded_words(question, index.before(cut)) == expected
                    compared += 1
                    named += bool(expected)
    assert compared > 100 and named > 10  # records were named, not only missed


def _results(output: Any) -> Any:
    """The constraint results, without the times the evidence's steps carry."""
    dumped = [r.model_dump(mode="json") for r in output.run.constraint_results]
    return without_keys(dumped, {"duration_ms", "at"})


def test_confirmed_results_as_before(retail: Suite, monkeypatch: pytest.MonkeyPatch) -> None:
    """Whole attempts (oracles, alternatives, known-bad ones) give the same constraint
    results, evidence included, with the old walk put in place of the new."""
    runs = {}
    for task_id, solutions in sorted(retail.solutions.items()):
        for kind, solution in sorted(solutions.items()):
            runs[task_id, kind] = _attempt(retail, task_id, solution.steps, f"new-{task_id}")
    calls = []

    def old_walk(question: str, earlier: list[Any]) -> frozenset[str]:
        calls.append(question)
        return _recorded_words_before(question, earlier)

    with monkeypatch.context() as patched:
        patched.setattr(_dialogue, "_recorded_words", old_walk)
        patched.setattr(_dialogue, "_recorded", old_walk)  # round 33's look-up, walked
        from groundstate.bindings import HARNESS

        HARNESS.rebase()  # a test's patch, not an agent's
        try:
            for (task_id, kind), new in runs.items():
                steps = retail.solutions[task_id][kind].steps
                old = _attempt(retail, task_id, steps, f"new-{task_id}")
                assert _results(old) == _results(new), (task_id, kind)
                assert old.run.terminal_reason == new.run.terminal_reason, (task_id, kind)
        finally:
            patched.undo()
            HARNESS.rebase()
    assert calls  # the old walk ran
    assert any(not r.run.success for r in runs.values())  # known-bad ones among them
