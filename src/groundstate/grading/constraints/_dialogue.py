"""Constraints that bind actions to the conversation: ``confirmed`` and ``provenance``."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from groundstate.grading.constraints._index import TraceIndex
from groundstate.grading.constraints._paths import resolve
from groundstate.grading.constraints._result import failed, label, passed
from groundstate.grading.constraints._text import mentions, normalise, rendered
from groundstate.records import CheckResult
from groundstate.spec.constraints import ConfirmedConstraint, ConfirmedRule, ProvenanceConstraint
from groundstate.trace import AgentEvent, MessageEvent, ToolCallEvent

# --- confirmed --------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Confirmation:
    """An agent question and the user's yes that answered it."""

    question: MessageEvent
    answer: MessageEvent

    def unnamed(self, values: list[str]) -> list[str]:
        text = normalise(self.question.text or "")
        return [value for value in values if not mentions(text, value)]


def confirmed(constraint: ConfirmedConstraint, index: TraceIndex) -> CheckResult:
    """Every change follows a yes that answered a question naming all the change's values."""
    rule = constraint.confirmed
    changes = index.hit_set(rule.change)
    if not changes:
        return passed(constraint.id, "confirmed")
    yes = _yes_steps(rule, index)
    confirmations: list[_Confirmation] = []
    question: MessageEvent | None = None
    # The dialogue after the last change cannot confirm anything: the walk stops there.
    for i, event in enumerate(index.events[: max(changes) + 1]):
        if i in changes:
            verdict = _check_change(constraint, event, confirmations)
            if verdict is not None:
                return verdict
        question = _track(event, i in yes, question, confirmations)
    return passed(constraint.id, "confirmed")


def _track(
    event: AgentEvent,
    says_yes: bool,
    question: MessageEvent | None,
    confirmations: list[_Confirmation],
) -> MessageEvent | None:
    """Follow the dialogue; return the agent message still waiting for the user's reply."""
    if isinstance(event, ToolCallEvent) or event.text is None:
        return None
    if event.role == "agent":
        return None if event.final else event
    if question is not None and says_yes:
        confirmations.append(_Confirmation(question, event))
    return None  # only the next user message answers a question


def _yes_steps(rule: ConfirmedRule, index: TraceIndex) -> frozenset[int]:
    """The user's replies that say yes (and not no)."""
    yes = index.hit_set(rule.yes)
    return yes if rule.no is None else yes - index.hit_set(rule.no)


def _check_change(
    constraint: ConfirmedConstraint, change: AgentEvent, confirmations: list[_Confirmation]
) -> CheckResult | None:
    """None when a confirmation covers *change*; else the failure."""
    rule = constraint.confirmed
    named = {path: resolve(change, path) for path in rule.names}
    missing = [path for path, values in named.items() if values is None]
    if missing:
        problem = f"{label(change)} has no value at {', '.join(missing)} to confirm"
        return failed(constraint.id, "confirmed", change, problem, missing_paths=missing)
    values = list(dict.fromkeys(text for found in named.values() for text in rendered(found)))
    if any(not c.unnamed(values) for c in confirmations):
        return None
    not_named = [v for v in values if all(v in c.unnamed(values) for c in confirmations)]
    problem = (
        f"{label(change)} was not confirmed: no user yes answers a question naming all of "
        f"{', '.join(values)}" + (f"; never named: {', '.join(not_named)}" if not_named else "")
    )
    return failed(
        constraint.id,
        "confirmed",
        change,
        problem,
        values={path: found for path, found in named.items()},
        not_named=not_named,
        confirmations=[_describe(c, values) for c in confirmations],
    )


def _describe(confirmation: _Confirmation, values: list[str]) -> dict[str, Any]:
    return {
        "question_step": confirmation.question.step,
        "answer_step": confirmation.answer.step,
        "not_named": confirmation.unnamed(values),
    }


# --- provenance -------------------------------------------------------------------------------


def provenance(constraint: ProvenanceConstraint, index: TraceIndex) -> CheckResult:
    """Listed arguments of matching calls were said by the user before the call."""
    rule = constraint.provenance
    calls = index.hit_set(rule.match)
    if not calls:
        return passed(constraint.id, "provenance")
    events = index.events
    said: list[str] = []
    # What the user says after the last matching call sources nothing: the walk stops there.
    for i, event in enumerate(events[: max(calls) + 1]):
        if isinstance(event, MessageEvent):
            if event.role == "user" and event.text is not None:
                said.append(normalise(event.text))
            continue
        if i not in calls or not isinstance(event.args, dict):
            continue
        for name in rule.args:
            for value in rendered(event.args.get(name)):
                if not any(mentions(text, value) for text in said):
                    return _unsourced(constraint, event, name, value, events[:i])
    return passed(constraint.id, "provenance")


def _unsourced(
    constraint: ProvenanceConstraint,
    call: ToolCallEvent,
    name: str,
    value: str,
    earlier: list[AgentEvent],
) -> CheckResult:
    outputs = [
        e.step
        for e in earlier
        if isinstance(e, ToolCallEvent)
        and mentions(normalise(json.dumps(e.output, ensure_ascii=False, default=str)), value)
    ]
    seen = f"; it appeared earlier in tool output at step(s) {outputs}" if outputs else ""
    problem = f"{label(call)}: argument {name} = {value!r} was not said by the user before{seen}"
    return failed(
        constraint.id,
        "provenance",
        call,
        problem,
        argument=name,
        value=value,
        seen_in_tool_output=outputs,
    )
