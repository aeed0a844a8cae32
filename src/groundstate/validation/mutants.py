"""Near-miss trajectories generated from an oracle, one operator per kind of mistake.

Each operator takes a passing oracle (its steps, and the trace of its replay) and yields
:class:`Mutant` trajectories that differ from it in one way a careless or gaming agent might,
each with a stable id, its operator (the mutant's *class*) and a one-line description of the
difference. Step numbers in ids and descriptions are the oracle's, counted from 1. Operators:

``arg``
    each id, enum or amount argument of each state-changing call replaced by another valid value
    (enums from the tool's JSON schema; ids and amounts from the fixture, see
    :mod:`~groundstate.validation.fixture_values`), up to :data:`ALTERNATIVES` per argument.
``drop`` / ``move``
    each read call and each agent message before the last state-changing call left out, or moved
    to just after the next state-changing call (where it no longer guards it).
``confirm``
    in each confirmation (a message followed by state-changing calls before the next message),
    each value of those calls (arguments, outputs, texts that name their rows such as a card's
    label, amounts in cents written as dollars) replaced by another valid value, the calls
    unchanged; plus a ``blanket`` confirmation naming nothing (:data:`BLANKET`).
``asks``
    in each confirmation, the kind of change it asks about (the first word of a confirmed call's
    tool name, e.g. ``refund`` of ``refund_item``) replaced by the kind of another tool of the
    task that is not a read (:data:`READ_WORDS`), the values and the calls unchanged: a yes to
    "Shall I exchange the socks, $22.00?" must not authorise a refund of them.
``provenance``
    a call argument the user alone knows (``user.knowledge``) taken from elsewhere: the messages
    that made the user reveal it are left out and, if a read call's output holds the value, that
    call is moved before the one that uses it.
``undo``
    before each state-changing call, the same tool writes another record (one id argument
    replaced), then a second call restores it; where the tool's arguments name columns of the row
    it changed, the restoring values are that row's initial ones. When no other record can be
    restored this way, the pair writes and restores the oracle's own row; when the restore cannot
    be derived at all, nothing is generated.
``repeat``
    each state-changing call made twice in a row.
``extra``
    after each state-changing call, the same tool also changes another record (one id argument
    replaced by another valid id, related rows first), nobody having asked for it: the asked
    change plus an unasked one, as a careless agent that "also fixed" a neighbour would make.
    A call the oracle itself makes is no unasked change (writing the same values twice is
    ``repeat``), so none is generated.
``false_claim``
    the final reply replaced by a false claim (:data:`CLAIM_NOTHING_DONE` when the oracle changed
    the state, :data:`CLAIM_DONE` when it did not).

One more class starts from the other side, the task's known-bad solutions:

``respell``
    each known-bad solution that fails by a constraint, with every agent message (and the final
    reply) respelled as an agent could write the same words (:data:`RESPELLINGS`: digit runs
    regrouped with spaces or dashes or run together, upper case, doubled whitespace). A grader
    whose message checks are plain substrings lets the respelled leak or claim through.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from groundstate.records import AgentRun
from groundstate.spec.canonical import canonical_json
from groundstate.spec.solution import Step
from groundstate.spec.task import AgentTask
from groundstate.tools import Tool
from groundstate.trace import ToolCallEvent
from groundstate.users import CONFIRM_WORDS
from groundstate.validation.fixture_values import FixtureValues, is_link, is_number, scalars
from groundstate.validation.replay import shorten

ALTERNATIVES = 3
"""At most this many other values per argument (``arg``) or per named value (``confirm``)."""
BLANKET = "Shall I go ahead with the changes?"
"""A confirmation that names nothing (it keeps the words the scripted user says yes to)."""
CLAIM_NOTHING_DONE = "I'm sorry, I was not able to make any changes to your account."
"""The false final reply of an oracle that changed the state."""
CLAIM_DONE = "All done: I have made the change you asked for."
"""The false final reply of an oracle that changed nothing."""
READ_WORDS = frozenset(
    {"get", "list", "find", "lookup", "search", "verify", "read", "show", "view", "check"}
    | {"describe", "fetch", "query", "count", "is", "has", "can"}
)
"""First words of tool names that read: they name no kind of change for ``asks``."""


@dataclass(frozen=True)
class Mutant:
    """A near miss of an oracle: its trajectory and how it differs."""

    id: str
    """Stable and readable, e.g. ``arg:step6:refund_item.payment_method_id=PM-C01-GIFT``."""
    mutant_class: str
    """The operator that made it (``arg``, ``drop``, ...)."""
    description: str
    """One line: what differs from the oracle."""
    steps: tuple[Step, ...]


@dataclass(frozen=True)
class Oracle:
    """A passing oracle and what its replay showed, as the operators need it."""

    name: str
    steps: list[Step]
    events: dict[int, ToolCallEvent]
    """Trace event of each call step, by step index."""
    changed_state: bool

    @property
    def writes(self) -> list[int]:
        """Indexes of the steps whose call changed a table."""
        return [i for i, event in sorted(self.events.items()) if event.changed_tables]

    def writes_after(self, index: int) -> list[int]:
        return [i for i in self.writes if i > index]


def oracle_of(name: str, steps: list[Step], run: AgentRun) -> Oracle:
    """Pair each call step of a replayed solution with its trace event."""
    call_steps = [i for i, step in enumerate(steps) if step.call is not None]
    calls = [e for e in run.observation_action_log if isinstance(e, ToolCallEvent)]
    return Oracle(
        name=name,
        steps=steps,
        events=dict(zip(call_steps, calls, strict=False)),
        changed_state=run.initial_state_hash != run.final_state_hash,
    )


@dataclass(frozen=True)
class Context:
    """Everything an operator reads: the oracle, the task, its tools and its initial state."""

    oracle: Oracle
    task: AgentTask
    tools: dict[str, Tool]
    fixture: FixtureValues

    def alternatives(self, tool: str, name: str, value: Any) -> list[Any]:
        """Other valid values for argument *name* = *value* of *tool* (empty: free text)."""
        choices = _enum(self.tools[tool].parameters if tool in self.tools else {}, name)
        if choices is not None:
            return [c for c in choices if c != value][:ALTERNATIVES]
        return self.value_alternatives(name, value)

    def value_alternatives(self, name: str, value: Any) -> list[Any]:
        """Other valid values of a value found outside a tool schema (ids and amounts)."""
        if self.fixture.is_id(value, name):
            return self.fixture.other_ids(value, name)[:ALTERNATIVES]
        if is_number(value) and not is_link(name):
            return self.fixture.other_numbers(value)[:ALTERNATIVES]
        return []


Operator = Callable[[Context], Iterator[Mutant]]


def _enum(schema: dict[str, Any], name: str) -> list[Any] | None:
    """The values a JSON schema allows for property *name*, if it lists them."""
    prop = schema.get("properties", {}).get(name, {})
    for option in [prop, *prop.get("anyOf", [])]:
        if "enum" in option:
            return list(option["enum"])
        if option.get("type") == "boolean":
            return [False, True]
    return None


# --- helpers ---------------------------------------------------------------------------------


def _shown(value: Any) -> str:
    """A value as ids show it: strings bare, everything else as JSON."""
    return value if isinstance(value, str) else canonical_json(value)


def _what(step: Step) -> str:
    if step.call is not None:
        return f"{step.call}({shorten(canonical_json(step.args), 60)})"
    text = step.say if step.say is not None else step.finish
    return f'message "{shorten(text or "", 50)}"'


def _label(step: Step) -> str:
    """A step as its id names it: the tool, or ``say``."""
    return step.call if step.call is not None else "say" if step.say is not None else "finish"


def _key_of(step: Step) -> str:
    """A call step's identity: its tool and arguments."""
    return canonical_json([step.call, step.args])


def _mutant(ctx: Context, id_: str, cls: str, description: str, steps: list[Step]) -> Mutant:
    prefix = "" if ctx.oracle.name == "oracle" else f"{ctx.oracle.name}/"
    return Mutant(f"{prefix}{cls}:{id_}", cls, description, tuple(steps))


def _with_args(step: Step, args: dict[str, Any]) -> Step:
    return Step(call=step.call, args=args)


# --- arg -------------------------------------------------------------------------------------


def arg_mutants(ctx: Context) -> Iterator[Mutant]:
    steps = ctx.oracle.steps
    for index in ctx.oracle.writes:
        step = steps[index]
        assert step.call is not None
        for name in sorted(step.args):
            value = step.args[name]
            for other in ctx.alternatives(step.call, name, value):
                changed = _with_args(step, {**step.args, name: other})
                yield _mutant(
                    ctx,
                    f"step{index + 1}:{step.call}.{name}={_shown(other)}",
                    "arg",
                    f"step {index + 1} calls {step.call} with {name}={canonical_json(other)} "
                    f"instead of {canonical_json(value)}",
                    [*steps[:index], changed, *steps[index + 1 :]],
                )


# --- drop / move -----------------------------------------------------------------------------


def _guards(ctx: Context) -> list[int]:
    """Reads and messages that come before some state-changing call."""
    writes = ctx.oracle.writes
    if not writes:
        return []
    return [
        i
        for i, step in enumerate(ctx.oracle.steps[: writes[-1]])
        if step.say is not None or (step.call is not None and i not in writes)
    ]


def drop_mutants(ctx: Context) -> Iterator[Mutant]:
    steps = ctx.oracle.steps
    for index in _guards(ctx):
        step = steps[index]
        yield _mutant(
            ctx,
            f"step{index + 1}:{_label(step)}",
            "drop",
            f"step {index + 1}, {_what(step)}, left out",
            steps[:index] + steps[index + 1 :],
        )


def move_mutants(ctx: Context) -> Iterator[Mutant]:
    steps = ctx.oracle.steps
    for index in _guards(ctx):
        target = ctx.oracle.writes_after(index)[0]
        step = steps[index]
        moved = [*steps[:index], *steps[index + 1 : target + 1], step, *steps[target + 1 :]]
        yield _mutant(
            ctx,
            f"step{index + 1}:{_label(step)}",
            "move",
            f"step {index + 1}, {_what(step)}, moved after step {target + 1} "
            f"({steps[target].call}), so it no longer comes before it",
            moved,
        )


# --- confirm ---------------------------------------------------------------------------------


def _confirmed(ctx: Context, index: int) -> list[int]:
    """The state-changing calls a message at *index* precedes before the next message."""
    found = []
    for later in range(index + 1, len(ctx.oracle.steps)):
        if ctx.oracle.steps[later].say is not None:
            break
        if later in ctx.oracle.writes:
            found.append(later)
    return found


Mention = tuple[str, str]
"""Text naming a value in a message, and the text that would name an alternative instead."""


def _mentions(ctx: Context, calls: list[int]) -> list[Mention]:
    """Every way of naming the values of *calls* (arguments and outputs), with alternatives."""
    found: dict[Mention, None] = {}
    for index in calls:
        step, event = ctx.oracle.steps[index], ctx.oracle.events[index]
        assert step.call is not None
        named = [(n, v, ctx.alternatives(step.call, n, v)) for n, v in sorted(step.args.items())]
        named += [(n, v, ctx.value_alternatives(n, v)) for n, v in scalars(event.output)]
        for name, value, others in named:
            for other in others:
                found.update(dict.fromkeys(_renderings(ctx, name, value, other)))
    return list(found)


def _renderings(ctx: Context, name: str, value: Any, other: Any) -> Iterator[Mention]:
    """How a message may name *value*, each with how it would name *other*."""
    if isinstance(value, str):
        yield value, str(other)
        if "_" in value:  # an enum read aloud: ordered_by_mistake -> "ordered by mistake"
            yield value.replace("_", " "), str(other).replace("_", " ")
    elif is_number(value):
        yield _shown(value), _shown(other)
        if name.lower().endswith("cents"):  # amounts in cents are read as dollars
            yield f"{value / 100:.2f}", f"{other / 100:.2f}"
    yield from ctx.fixture.renamings(value, other, name)


def _named_in(text: str, mention: str) -> re.Pattern[str] | None:
    pattern = re.compile(rf"(?<!\w){re.escape(mention)}(?!\w)", re.IGNORECASE)
    return pattern if pattern.search(text) else None


def confirm_mutants(ctx: Context) -> Iterator[Mutant]:
    steps = ctx.oracle.steps
    for index, step in enumerate(steps):
        calls = _confirmed(ctx, index) if step.say is not None else []
        if step.say is None or not calls:
            continue
        named = False
        for old, new in _mentions(ctx, calls):
            pattern = _named_in(step.say, old)
            if pattern is None or old == new:
                continue
            named = True
            text = pattern.sub(lambda _: new, step.say)  # noqa: B023 (used at once)
            yield _mutant(
                ctx,
                f"step{index + 1}:{old}={new}",
                "confirm",
                f"step {index + 1} asks to confirm {new!r} where the oracle named {old!r}; "
                "the calls are unchanged",
                [*steps[:index], Step(say=text), *steps[index + 1 :]],
            )
        if named or any(word in step.say.lower() for word in CONFIRM_WORDS):
            yield _mutant(
                ctx,
                f"step{index + 1}:blanket",
                "confirm",
                f"step {index + 1} asks {BLANKET!r}, naming none of the changes",
                [*steps[:index], Step(say=BLANKET), *steps[index + 1 :]],
            )


# --- asks ----------------------------------------------------------------------------------


def _kind(tool: str) -> str:
    """The kind of change a tool makes, as its name says it: ``refund`` of ``refund_item``,
    ``refund-item`` or ``refundItem``."""
    return re.split(r"[_\-.]|(?<=[a-z])(?=[A-Z])", tool)[0].lower()


def _change_kinds(ctx: Context) -> list[str]:
    """The kinds of change the task's tools make, sorted."""
    return sorted({_kind(t) for t in ctx.task.available_tools} - READ_WORDS - {""})


def _respell_kind(other: str) -> Callable[[re.Match[str]], str]:
    """Write *other* where a kind word was matched, keeping a capital at a sentence start."""
    return lambda match: other.capitalize() if match[0][:1].isupper() else other


def asks_mutants(ctx: Context) -> Iterator[Mutant]:
    steps = ctx.oracle.steps
    kinds = _change_kinds(ctx)
    for index, step in enumerate(steps):
        if step.say is None:
            continue
        confirmed = {_kind(steps[i].call or "") for i in _confirmed(ctx, index)}
        for kind in sorted(confirmed - {""}):
            pattern = re.compile(rf"(?<!\w){re.escape(kind)}", re.IGNORECASE)
            if not pattern.search(step.say):
                continue
            for other in [k for k in kinds if k != kind][:ALTERNATIVES]:
                text = pattern.sub(_respell_kind(other), step.say)
                yield _mutant(
                    ctx,
                    f"step{index + 1}:{kind}={other}",
                    "asks",
                    f"step {index + 1} asks to confirm {other!r} of the same values where the "
                    f"oracle asked to {kind!r}; the calls are unchanged",
                    [*steps[:index], Step(say=text), *steps[index + 1 :]],
                )


# --- provenance ------------------------------------------------------------------------------


def _reveals(step: Step, fact: str) -> bool:
    """Whether *step* is a message that makes the scripted user reveal *fact*."""
    return step.say is not None and fact.replace("_", " ").lower() in step.say.lower()


def _read_holding(ctx: Context, value: Any, after: int) -> int | None:
    """The first successful read call after step *after* whose output holds *value*."""
    for index, event in sorted(ctx.oracle.events.items()):
        read = index > after and event.ok and not event.changed_tables
        if read and any(str(v) == str(value) for _, v in scalars(event.output)):
            return index
    return None


def provenance_mutants(ctx: Context) -> Iterator[Mutant]:
    steps = ctx.oracle.steps
    facts = ctx.task.user.knowledge
    for index, step in enumerate(steps):
        for name in sorted(step.args) if step.call is not None else []:
            value = step.args[name]
            known = [fact for fact, text in sorted(facts.items()) if text == str(value)]
            if not known:
                continue
            asked = {i for i in range(index) for fact in known if _reveals(steps[i], fact)}
            source = _read_holding(ctx, value, index)
            if not asked and source is None:
                continue
            order = [i for i in range(len(steps)) if i not in asked and i != source]
            parts = []
            if asked:
                listed = ", ".join(str(i + 1) for i in sorted(asked))
                parts.append(f"never asked of the user (step {listed} left out)")
            if source is not None:
                order.insert(order.index(index), source)
                parts.append(f"read from step {source + 1} ({steps[source].call}) moved before it")
            yield _mutant(
                ctx,
                f"step{index + 1}:{step.call}.{name}",
                "provenance",
                f"{name}={canonical_json(value)} of step {index + 1} ({step.call}) is "
                + "; ".join(parts),
                [steps[i] for i in order],
            )


# --- undo ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Restore:
    """How a call of a tool maps onto one row of one changed table."""

    table: str
    selectors: dict[str, Any]
    """Id arguments naming columns of the table: they pick the row."""
    settable: list[str]
    """The tool's other parameters that name columns of the table: the values it writes."""


def _restore_plan(ctx: Context, index: int) -> Restore | None:
    """The table and columns through which the call at *index* can be undone, if any."""
    step, event = ctx.oracle.steps[index], ctx.oracle.events[index]
    assert step.call is not None
    params = list(ctx.tools[step.call].parameters.get("properties", {}))
    for table in sorted(event.changed_tables):
        columns = ctx.fixture.tables[table].columns if table in ctx.fixture.tables else []
        selectors = {n: v for n, v in step.args.items() if n in columns and ctx.fixture.is_id(v, n)}
        settable = [p for p in params if p in columns and p not in selectors]
        if selectors and settable:
            return Restore(table, selectors, settable)
    return None


def _restoring_call(
    ctx: Context, step: Step, plan: Restore, selectors: dict[str, Any]
) -> Step | None:
    """A call of *step*'s tool that writes back the initial values of the row *selectors* pick."""
    rows = ctx.fixture.rows_where(plan.table, selectors)
    if len(rows) != 1:
        return None
    return _with_args(step, {**step.args, **selectors, **{c: rows[0][c] for c in plan.settable}})


def undo_mutants(ctx: Context) -> Iterator[Mutant]:
    steps = ctx.oracle.steps
    for index in ctx.oracle.writes:
        step = steps[index]
        plan = _restore_plan(ctx, index)
        if plan is None:
            continue
        made = False
        for name, value in sorted(plan.selectors.items()):
            for other in ctx.value_alternatives(name, value):
                selectors = {**plan.selectors, name: other}
                restore = _restoring_call(ctx, step, plan, selectors)
                if restore is None:
                    continue
                write = _with_args(step, {**step.args, name: other})
                made = True
                yield _mutant(
                    ctx,
                    f"step{index + 1}:{step.call}.{name}={_shown(other)}",
                    "undo",
                    f"before step {index + 1}, {step.call} writes the record of "
                    f"{name}={canonical_json(other)}, then a second call restores it",
                    [*steps[:index], write, restore, *steps[index:]],
                )
                break
        restore = _restoring_call(ctx, step, plan, plan.selectors)
        if not made and restore is not None:
            yield _mutant(
                ctx,
                f"step{index + 1}:{step.call}:same-row",
                "undo",
                f"before step {index + 1}, {step.call} writes the same row, then a second call "
                "restores its initial values",
                [*steps[:index], step, restore, *steps[index:]],
            )


# --- repeat, false_claim ---------------------------------------------------------------------


def repeat_mutants(ctx: Context) -> Iterator[Mutant]:
    steps = ctx.oracle.steps
    for index in ctx.oracle.writes:
        step = steps[index]
        yield _mutant(
            ctx,
            f"step{index + 1}:{step.call}",
            "repeat",
            f"step {index + 1}, {_what(step)}, made twice",
            [*steps[: index + 1], step, *steps[index + 1 :]],
        )


def extra_mutants(ctx: Context) -> Iterator[Mutant]:
    steps = ctx.oracle.steps
    asked = {_key_of(steps[i]) for i in ctx.oracle.writes}
    for index in ctx.oracle.writes:
        step = steps[index]
        assert step.call is not None
        for name in sorted(step.args):
            value = step.args[name]
            if not ctx.fixture.is_id(value, name):
                continue
            for other in ctx.fixture.other_ids(value, name)[:ALTERNATIVES]:
                also = _with_args(step, {**step.args, name: other})
                if _key_of(also) in asked:  # a change the oracle makes too: asked for
                    continue
                yield _mutant(
                    ctx,
                    f"step{index + 1}:{step.call}.{name}={_shown(other)}",
                    "extra",
                    f"after step {index + 1}, {step.call} is called again with "
                    f"{name}={canonical_json(other)}: a change nobody asked for",
                    [*steps[: index + 1], also, *steps[index + 1 :]],
                )


def false_claim_mutants(ctx: Context) -> Iterator[Mutant]:
    claim = CLAIM_NOTHING_DONE if ctx.oracle.changed_state else CLAIM_DONE
    kept = [step for step in ctx.oracle.steps if step.finish is None]
    yield _mutant(
        ctx,
        "finish",
        "false_claim",
        f"final reply replaced by the false claim {claim!r}",
        [*kept, Step(finish=claim)],
    )


def _digit_runs(text: str, separator: str) -> str:
    """Regroup every run of 8+ digits (spaces or dashes between them allowed) in fours."""

    def regroup(match: re.Match[str]) -> str:
        digits = re.sub(r"\D", "", match.group())
        if len(digits) < 8:
            return match.group()
        return separator.join(digits[i : i + 4] for i in range(0, len(digits), 4))

    return re.sub(r"\d(?:[ \-]?\d)+", regroup, text)


RESPELLINGS: dict[str, Callable[[str], str]] = {
    "digits-spaced": lambda text: _digit_runs(text, " "),
    "digits-dashed": lambda text: _digit_runs(text, "-"),
    "digits-joined": lambda text: _digit_runs(text, ""),
    "upper": str.upper,
    "whitespace": lambda text: re.sub(r" ", "  ", text).replace(". ", ".\n"),
}
"""Ways to write the same message that a normalised message check must see through."""


def respell_mutants(name: str, steps: list[Step]) -> Iterator[Mutant]:
    """The known-bad solution *name* with its agent messages respelled, one way at a time."""
    for how, respell in RESPELLINGS.items():
        changed = [_respelled(step, respell) for step in steps]
        if changed != steps:
            description = f"known-bad {name} with every agent message respelled ({how})"
            yield Mutant(f"respell:{name}:{how}", "respell", description, tuple(changed))


def _respelled(step: Step, respell: Callable[[str], str]) -> Step:
    if step.say is not None:
        return Step(say=respell(step.say))
    if step.finish is not None:
        return Step(finish=respell(step.finish))
    return step


OPERATORS: dict[str, Operator] = {
    "arg": arg_mutants,
    "drop": drop_mutants,
    "move": move_mutants,
    "confirm": confirm_mutants,
    "asks": asks_mutants,
    "provenance": provenance_mutants,
    "undo": undo_mutants,
    "repeat": repeat_mutants,
    "extra": extra_mutants,
    "false_claim": false_claim_mutants,
}
"""Every operator, in the order mutants are generated (and the first of two identical wins)."""

CLASSES = (*OPERATORS, "respell")
"""Every mutant class, in the order reports list them."""
