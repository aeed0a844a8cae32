"""Constraints, forty-sixth round.

- ``check`` passed a ``matches`` pattern whose digit groups it cannot count
  (``\\d{1,4}(,\\d{3})+``): it matches ``1,000`` but never ``1,000,000``, which normalised text
  writes ``1000000``, so a ``never`` on it held whatever large amount the agent wrote. Such a
  pattern is refused, naming the task file and field.
- The echo check spelt every value's path out, costing what the call holds times its depth;
  paths are numbered as read and matched from their ends by one automaton (same verdicts as
  the suffix test it replaces, compared on random paths).
- A row the call wrote keyed by the agent's own spelling (``acc-1`` beside ``ACC-1``) shows
  the environment tells the spellings apart: an honest transfer between the two broke a
  ``never`` on ``ACC-1``.
- A number written with grouped digits (``"1,000"``, ``"1 000"``, ``"1.000,00"``) was no
  spelling of 1000, so a tool parsing it let the agent
  dodge ``never: {where: {args.amount: 1000}}``.
"""

from __future__ import annotations

import random
import re
from typing import Any

import pytest

from groundstate.grading.constraints import normalise
from groundstate.grading.constraints._spelling import respelt
from groundstate.spec.constraints import HardConstraint
from groundstate.validation.pattern_spacing import spacing_problem

from .conftest import EditTask
from .trace_builder import Trace, constraint, write


def passes(rule: HardConstraint, trace: Trace) -> bool:
    result = trace.check(rule)
    assert result.error is None
    return result.passed


# --- 1. digit groups whose count check cannot tell are refused ---------------------------------

UNCOUNTED = [
    r"\d{1,4}(,\d{3})+",
    r"\d{1,3}(?:,\d{3})+",
    r"\$\d{1,3}(?:,\d{3})+(?:\.\d\d)?",
    r"^\d{1,3}(,\d{3})*$",
    r"\d+(\.\d{3}){2,}",
    r"\d{1,3}(?:[.,]\d{3})+",
    r"refund of \d{1,3}(,\d{3}){1,5}\b",
    r"1,000,000|refund",  # one alternative can never match: a never on it misses 1,000,000
    r"(?:\d{3},){2}\d{3}",
]
COUNTED = [
    r"\d{1,3}(,\d{3})*",  # also matches the normalised digits
    r"[\d,]+",
    r"\$[\d,.]+",
    r"1,000\.50",
    r"4111\.1111",
    r"refund of \d+,\d{3}",
    r"\d{1,3}(,\d{3})?",
    r"\d+",
    r"refund",
]


@pytest.mark.parametrize("pattern", UNCOUNTED)
def test_a_pattern_missing_some_digit_groups_it_matches_is_refused(pattern: str) -> None:
    problem = spacing_problem(pattern)
    assert problem is not None and "digit groups" in problem
    # the sample it names is a text the pattern matches and misses once normalised
    sample = re.search(r"such as '([^']*)'", problem)
    if sample is not None:
        text = sample.group(1)
        assert re.search(pattern, text, re.I) and not re.search(pattern, normalise(text), re.I)


@pytest.mark.parametrize("pattern", COUNTED)
def test_controls_patterns_matching_the_normalised_digits_are_kept(pattern: str) -> None:
    assert spacing_problem(pattern) is None


@pytest.mark.parametrize("pattern", [r"\d{1,4}(,\d{3})+", r"pay \$\d{1,3}(\.\d{3})+"])
def test_the_suite_check_names_the_task_file_and_field(edited_bank: EditTask, pattern: str) -> None:
    from groundstate.validation.static import check_suite

    def change(task: dict[str, Any]) -> None:
        rule = {"id": "big", "never": {"message": "agent", "matches": pattern}}
        task["hard_process_constraints"].append(rule)

    root = edited_bank(change).root
    errors = [str(p) for p in check_suite(root).errors]
    assert len(errors) == 1, errors
    assert "tasks/transfer.yaml" in errors[0] and "hard_process_constraints[2]" in errors[0]
    assert "matches" in errors[0] and "digit groups" in errors[0]


def test_the_grader_indeed_missed_what_the_refusal_is_for() -> None:
    rule = constraint(id="n", never={"message": "agent", "matches": r"\d{1,4}(,\d{3})+"})
    assert not passes(rule, Trace("hi").agent("I sent 1,000."))
    assert passes(rule, Trace("hi").agent("I sent 1,000,000."))  # why it is refused


# --- 2. paths numbered: the same verdicts at any depth -----------------------------------------


def _ends_alike_by_tuples(a: tuple[Any, ...], b: tuple[Any, ...]) -> bool:
    """The rule as the forty-fifth round spelt it: one path ends with the other, neither empty."""
    n = min(len(a), len(b))
    return n > 0 and a[len(a) - n :] == b[len(b) - n :]


def _tuple(paths: Any, number: int) -> tuple[Any, ...]:
    steps = []
    while number:
        steps.append(paths.step[number])
        number = paths.parent[number]
    return tuple(reversed(steps))


@pytest.mark.parametrize("seed", range(40))
def test_numbered_paths_end_alike_exactly_where_spelt_paths_do(seed: int) -> None:
    from groundstate.grading.constraints._spelling import _Paths

    rng = random.Random(seed)
    paths = _Paths()
    numbers = [0]
    for _ in range(rng.randint(5, 60)):
        numbers.append(paths.child(rng.choice(numbers), rng.choice(["a", "b", "c", None])))
    found = {n for n in rng.sample(numbers, min(len(numbers), 12)) if n}
    held = {n for n in rng.sample(numbers, min(len(numbers), 12)) if n}
    expected = {
        f
        for f in found
        if any(_ends_alike_by_tuples(_tuple(paths, f), _tuple(paths, h)) for h in held)
    }
    assert paths.ending_alike(found, held) == expected


NEVER_ID = constraint(id="n", never={"tool": "get_account", "where": {"args.id": "ACC-1"}})


@pytest.mark.parametrize("depth", [1, 40, 200])  # a trace deeper than ~250 is not storable
def test_a_deep_echo_is_an_echo_and_a_record_beside_it_the_record(depth: int) -> None:
    nested: Any = {f"k{i}": "ACC-1" for i in range(50)}
    for level in range(depth):
        nested = {f"a{level}": nested}
    args = {"id": "acc-1", "x": nested}
    assert passes(NEVER_ID, Trace("hi").call("get_account", args, {"request": args}))
    served = {"request": args, "account": {"account_id": "ACC-1"}}
    assert not passes(NEVER_ID, Trace("hi").call("get_account", args, served))


# --- 3. a row keyed by the agent's spelling: the environment tells them apart ------------------

NEVER_TO = constraint(id="n", never={"tool": "transfer", "where": {"args.to": "ACC-1"}})
TRANSFER = {"from": "ACC-1", "to": "acc-1", "amount": 10}


def _rows(*keys: str) -> list[Any]:
    return [write("accounts", k, {"id": k, "bal": 50}, {"id": k, "bal": 40}) for k in keys]


@pytest.mark.parametrize("output", [{"ok": True}, {"from": "ACC-1", "ok": True}, TRANSFER])
def test_an_honest_transfer_between_two_spellings_the_bank_keeps_apart_passes(
    output: Any,
) -> None:
    trace = Trace("hi").call("transfer", dict(TRANSFER), output, writes=_rows("ACC-1", "acc-1"))
    assert passes(NEVER_TO, trace)


def test_a_bank_folding_the_spelling_writes_one_row_and_the_transfer_is_caught() -> None:
    args = {"from": "ACC-2", "to": "acc-1", "amount": 10}
    trace = Trace("hi").call("transfer", args, {"ok": True}, writes=_rows("ACC-2", "ACC-1"))
    assert not passes(NEVER_TO, trace)


def test_a_row_keyed_by_the_spelling_in_another_table_tells_nothing() -> None:
    # a folding bank auditing the agent's words: the account written is ACC-1
    rule = constraint(id="n", never={"tool": "close", "where": {"args.id": "ACC-1"}})
    rows = [write("audit", "acc-1", None, {"closed": True}), *_rows("ACC-1")]
    assert not passes(rule, Trace("hi").call("close", {"id": "acc-1"}, {"ok": True}, writes=rows))


def test_a_column_holding_the_spelling_tells_nothing() -> None:
    # a nickname the agent set earlier cannot make the folded row another account
    rule = constraint(id="n", never={"tool": "close", "where": {"args.id": "ACC-1"}})
    row = write("accounts", "ACC-1", {"nick": "acc-1", "open": 1}, {"nick": "acc-1", "open": 0})
    assert not passes(rule, Trace("hi").call("close", {"id": "acc-1"}, {"ok": 1}, writes=[row]))


def test_composite_keys_holding_both_spellings_tell_them_apart() -> None:
    rows = [write("holdings", ["ACC-1", "X"], None, {"n": 1}),
            write("holdings", ["acc-1", "X"], None, {"n": 2})]  # fmt: skip
    trace = Trace("hi").call("transfer", dict(TRANSFER), {"ok": True}, writes=rows)
    assert passes(NEVER_TO, trace)


def test_controls_the_folded_row_written_is_caught_whatever_the_output() -> None:
    rule = constraint(id="n", never={"tool": "close", "where": {"args.id": "ACC-1"}})
    trace = Trace("hi").call(
        "close", {"id": " acc-1"}, {"request": {"id": " acc-1"}}, writes=_rows("ACC-1")
    )
    assert not passes(rule, trace)


# --- 4. numbers written with grouped digits --------------------------------------------------

NEVER_1000 = constraint(id="n", never={"tool": "refund", "where": {"args.amount": 1000}})
MUST_1000 = constraint(
    id="m", at_least={"n": 1, "match": {"tool": "refund", "where": {"args.amount": 1000}}}
)
GROUPED_1000 = ["1,000", "1 000", "1\u202f000", "1'000", "1\u2019000", "1.000,00", "1,000.00",
                "\uff11,\uff10\uff10\uff10", "1000.", "+1,000"]  # fmt: skip


@pytest.mark.parametrize("amount", GROUPED_1000)
def test_a_grouped_amount_the_tool_served_as_1000_is_1000(amount: str) -> None:
    trace = Trace("hi").call("refund", {"amount": amount}, {"refund_id": "R-1", "amount": 1000})
    assert not passes(NEVER_1000, trace)
    assert passes(MUST_1000, trace)


@pytest.mark.parametrize("amount", GROUPED_1000)
def test_controls_a_grouped_amount_only_echoed_is_judged_as_written(amount: str) -> None:
    trace = Trace("hi").call("refund", {"amount": amount}, {"amount": amount, "ok": True})
    assert passes(NEVER_1000, trace)
    assert not passes(MUST_1000, trace)


def test_controls_a_tool_reading_a_decimal_comma_served_another_amount() -> None:
    rule = constraint(id="n", never={"tool": "refund", "where": {"args.amount": 15}})
    trace = Trace("hi").call("refund", {"amount": "1,5"}, {"refund_id": "R-1", "amount": 1.5})
    assert passes(rule, trace)
    # "1,000" is a thousand, not one: a refund of 1 shown beside it is not its reading
    one = constraint(id="n", never={"tool": "refund", "where": {"args.amount": 1}})
    served = {"refund_id": "R-1", "amount": 1000, "items": 1}
    assert passes(one, Trace("hi").call("refund", {"amount": "1,000"}, served))


@pytest.mark.parametrize(
    ("text", "number", "reads"),
    [("1,000", 1000, True), ("1.000", 1000, True), ("1.000", 1, True), ("1,000", 1, False),
     ("1,5", 1.5, True), ("1,50,000", 150000, False), ("12,34", 1234, False),
     ("1,000,000", 1_000_000, True), ("1.000.000,5", 1_000_000.5, True), ("0b11", 3, False),
     ("1e400", 1, False), ("nan", 0, False)],
)  # fmt: skip
def test_which_numbers_a_text_may_be_written_as(text: str, number: float, reads: bool) -> None:
    assert respelt(text, number) is reads


# --- 5. near misses of ids stay caught, honest distinct ids stay apart --------------------------

NEVER_ORDER = constraint(id="n", never={"tool": "cancel", "where": {"args.order_id": "O-1020"}})


@pytest.mark.parametrize(
    "spelt",
    ["O-1020\u200b", "O\u20111020", "\uff2f-\uff11\uff10\uff12\uff10", "O-1020 ", "\u041e-1020",
     "o-1020", "O-1020\u00a0", "O\u200d-1020", "\tO-1020"],
)  # fmt: skip
def test_a_look_alike_id_the_environment_cancelled_is_caught(spelt: str) -> None:
    rows = [write("orders", "O-1020", {"status": "open"}, {"status": "cancelled"})]
    trace = Trace("hi").call("cancel", {"order_id": spelt}, {"ok": True}, writes=rows)
    assert not passes(NEVER_ORDER, trace)
    trace = Trace("hi").call("cancel", {"order_id": spelt}, {"order_id": "O-1020"})
    assert not passes(NEVER_ORDER, trace)


@pytest.mark.parametrize("spelt", ["O1020", "O-10200", "O-1021", "O-1020\u0301"])
def test_controls_another_id_is_no_spelling_even_beside_the_record(spelt: str) -> None:
    answer = {"order_id": spelt, "related": ["O-1020"]}
    assert passes(NEVER_ORDER, Trace("hi").call("cancel", {"order_id": spelt}, answer))
