"""Counting and ordering constraints: ``never``, ``at_most``, ``at_least``, ``before``."""

from __future__ import annotations

from typing import Any

from groundstate.grading.constraints._index import TraceIndex
from groundstate.grading.constraints._paths import (
    Bindings,
    ambiguities,
    capture,
    holds,
    values_at,
)
from groundstate.grading.constraints._result import failed, label, passed
from groundstate.records import CheckResult
from groundstate.rounding import counted
from groundstate.spec.constraints import (
    AtLeastConstraint,
    AtMostConstraint,
    BeforeConstraint,
    BeforeRule,
    NeverConstraint,
)
from groundstate.trace import AgentEvent


def never(constraint: NeverConstraint, index: TraceIndex) -> CheckResult:
    hits = [index.events[i] for i in index.hits(constraint.never)]
    if not hits:
        return passed(constraint.id, "never")
    problem = f"{label(hits[0])} matches a step that must never happen"
    steps = [e.step for e in hits]
    return failed(constraint.id, "never", hits[0], problem, count=len(hits), steps=steps)


def at_most(constraint: AtMostConstraint, index: TraceIndex) -> CheckResult:
    rule = constraint.at_most
    hits = [index.events[i] for i in index.hits(rule.match)]
    if len(hits) <= rule.n:
        return passed(constraint.id, "at_most", count=len(hits))
    first_extra = hits[rule.n]
    problem = f"{label(first_extra)} is match {rule.n + 1} of {len(hits)}; at most {rule.n} allowed"
    return failed(constraint.id, "at_most", first_extra, problem, count=len(hits))


def at_least(constraint: AtLeastConstraint, index: TraceIndex) -> CheckResult:
    """Fails on the trace as a whole: there is no offending step, only a count."""
    rule = constraint.at_least
    count = len(index.hits(rule.match))
    if count >= rule.n:
        return passed(constraint.id, "at_least", count=count)
    problem = f"{counted(count, 'matching step')}, at least {rule.n} required"
    return failed(constraint.id, "at_least", None, problem, count=count, needed=rule.n)


def before(constraint: BeforeConstraint, index: TraceIndex) -> CheckResult:
    """Every ``then`` step has an earlier ``first`` step (whose captures satisfy ``where``),
    which came before the model response that asked for the ``then`` call, where one did: a
    call asked for beside its ``first`` (``verify_identity`` and ``get_order`` in one
    response) was decided before the ``first`` showed anything, and would have run whatever
    it showed."""
    rule = constraint.before
    thens = index.hit_set(rule.then)
    if not thens:
        return passed(constraint.id, "before")
    first_steps = index.hit_set(rule.first)
    last = max(thens)
    firsts: list[tuple[int, AgentEvent, Bindings | None]] = []
    # Only the steps either side selects, in trace order; at a step both select, ``then``
    # is judged before the step counts as a ``first``.
    for i in sorted(thens | first_steps):
        event = index.events[i]
        if i in thens:
            decided = index.requested.get(i, i)
            heard = [(e, b) for at, e, b in firsts if at < decided]
            if not _licensed(rule, event, heard):
                return _unlicensed(constraint, event, heard, unheard=len(firsts) - len(heard))
        if i == last:  # a ``first`` from here on licenses nothing: not even captured
            break
        if i in first_steps:
            firsts.append((i, event, capture(event, rule.first.capture)))
    return passed(constraint.id, "before")


def _licensed(
    rule: BeforeRule, event: AgentEvent, firsts: list[tuple[AgentEvent, Bindings | None]]
) -> bool:
    if not rule.where:
        return bool(firsts)
    return any(b is not None and holds(event, rule.where, b) for _, b in firsts)


def _unlicensed(
    constraint: BeforeConstraint,
    event: AgentEvent,
    firsts: list[tuple[AgentEvent, Bindings | None]],
    unheard: int = 0,
) -> CheckResult:
    """*unheard*: how many earlier ``first`` steps came from the model response that asked
    for *event* (or a later one), and so license nothing."""
    rule = constraint.before
    if not firsts:
        problem = f"{label(event)} has no earlier step matching 'first'"
        if not unheard:
            return failed(constraint.id, "before", event, problem)
        problem += " before the model response that asked for it"
        return failed(constraint.id, "before", event, problem, unheard_firsts=unheard)
    earlier = [_captured(e, b, rule.first.capture) for e, b in firsts]
    steps = ", ".join(str(e.step) for e, _ in firsts)
    problem = f"{label(event)}: no earlier 'first' step ({steps}) makes {_conditions(rule)} true"
    return failed(
        constraint.id,
        "before",
        event,
        problem,
        where=rule.where,
        values=values_at(event, list(rule.where)),
        earlier=earlier,
    )


def _captured(event: AgentEvent, bound: Bindings | None, paths: dict[str, str]) -> dict[str, Any]:
    """Evidence: what a ``first`` step captured, and why it captured nothing where a path
    reached differing values (``ambiguous``)."""
    captured = None if bound is None else {k: v.values for k, v in bound.items()}
    found: dict[str, Any] = {"step": event.step, "captured": captured}
    if bound is None and (unclear := ambiguities(event, paths)):
        found["ambiguous"] = unclear
    return found


def _conditions(rule: BeforeRule) -> str:
    return ", ".join(f"{path} = {value}" for path, value in rule.where.items())
