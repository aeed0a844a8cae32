"""Near misses of the generic constraint kinds, forty-fifth round.

- An echo of the agent's own argument was read as the tool showing the expected value where
  the echo stood at another depth (``{request: {from: ACC-1, to: acc-1}}``), in a list, or in
  a column written from a nested argument; and an agent passing the expected value in an
  argument at the path the tool shows its record under made the record an echo, so adding
  an argument evaded a ``never``. What is an echo is now judged by whether the call repeats
  the agent's spelling, at any depth, and each echo accounts for one value only.
- ``check`` passed a pattern of three digit groups joined by dots or commas (``4,111,1111``),
  which normalised text writes without them; the separators it removes between digits are
  one list, which normalisation and ``check`` share.
- The one-element choice for names captured through one ``*`` is looked up by element, with
  the verdicts of the pairwise search it replaces.

Each near miss stands beside an honest trajectory that must keep passing.
"""

from __future__ import annotations

import random
import re
from typing import Any

import pytest

from groundstate.grading.constraints import _paths, _text, normalise
from groundstate.spec.constraints import HardConstraint
from groundstate.trace import ToolCallEvent
from groundstate.validation import pattern_spacing
from groundstate.validation.pattern_spacing import spacing_problem

from .trace_builder import Trace, constraint, write


def passes(rule: HardConstraint, trace: Trace) -> bool:
    result = trace.check(rule)
    assert result.error is None
    assert result.passed or result.evidence["problems"]
    return result.passed


NEVER_TO = constraint(id="n", never={"tool": "transfer", "where": {"args.to": "ACC-1"}})
NEVER_ID = constraint(id="n", never={"tool": "get_account", "where": {"args.id": "ACC-1"}})
MUST_ID = constraint(
    id="m", at_least={"n": 1, "match": {"tool": "get_account", "where": {"args.id": "ACC-1"}}}
)
NEVER_ITEMS = constraint(id="n", never={"tool": "transfer", "where": {"args.to.*": "ACC-1"}})


# --- 1. an echo at any depth, in a list, in a write is no evidence ------------------------------

HONEST = {"from": "ACC-1", "to": "acc-1"}  # two accounts a case-sensitive bank tells apart


@pytest.mark.parametrize(
    "answer",
    [
        {"request": dict(HONEST), "status": "ok"},
        [dict(HONEST)],
        {"echo": {"args": dict(HONEST)}},
        {"to": "acc-1", "from": "ACC-1"},
        {"requests": [{"from": "ACC-1"}, {"to": "acc-1"}]},
    ],
)
def test_an_echo_of_another_argument_at_any_depth_names_nothing_for_this_one(answer: Any) -> None:
    assert passes(NEVER_TO, Trace("hi").call("transfer", dict(HONEST), answer))


def test_an_echo_of_a_list_argument_reordered_names_nothing() -> None:
    args = {"from": ["ACC-1", "ACC-2"], "to": ["acc-1"]}
    answer = {"accepted": {"to": ["acc-1"], "from": ["ACC-2", "ACC-1"]}}
    assert passes(NEVER_ITEMS, Trace("hi").call("transfer", args, answer))


def test_a_column_written_from_a_nested_argument_is_its_echo() -> None:
    rule = constraint(id="n", never={"tool": "add_note", "where": {"args.order_id": "O-1020"}})
    args = {"order_id": "o-1020", "meta": {"note": "O-1020"}}
    stored = write("notes", "N-1", None, {"order_id": "o-1020", "note": "O-1020"})
    assert passes(rule, Trace("hi").call("add_note", args, {"ok": True}, writes=[stored]))


def test_a_search_echoing_the_request_nested_is_judged_by_the_spelling() -> None:
    rule = constraint(id="n", never={"tool": "search", "where": {"args.query": "refund policy"}})
    args = {"query": "REFUND POLICY", "filters": {"topic": "refund policy"}}
    trace = Trace("hi").call("search", args, {"request": dict(args), "results": []})
    assert passes(rule, trace)


def test_an_echoed_argument_cannot_satisfy_a_must() -> None:
    args = {"id": "acc-1", "note": "ACC-1"}
    trace = Trace("hi").call("get_account", args, {"request": dict(args), "found": False})
    assert not passes(MUST_ID, trace)


# --- 2. an argument added beside the one judged flips nothing ----------------------------------


def _record_tool(args: dict[str, Any], folds: bool) -> Any:
    """Serves the account under another key than its argument's, echoing nothing."""
    return {"account_id": args["id"].upper() if folds else args["id"], "balance": 5}


def _echo_tool(args: dict[str, Any], folds: bool) -> Any:
    return {"request": args, "found": folds}


def _echo_and_record_tool(args: dict[str, Any], folds: bool) -> Any:
    return {"request": args, "account": {"account_id": args["id"].upper() if folds else "none"}}


def _echo_top_tool(args: dict[str, Any], folds: bool) -> Any:
    # The record under a name no added argument takes: an argument of the record's own path
    # and value, beside the judged one echoed, leaves a trace that is an echo's.
    return {**args, "served": args["id"].upper() if folds else args["id"]}


TOOLS = [_record_tool, _echo_tool, _echo_and_record_tool, _echo_top_tool]
EXTRAS = [
    {"account_id": "ACC-1"},
    {"account": {"account_id": "ACC-1"}},
    {"request": {"account": {"account_id": "ACC-1"}}},
    {"note": "ACC-1"},
    {"tags": ["ACC-1", "x"]},
    {"account_id": "ACC-1", "alias": "acc-1"},
]


@pytest.mark.parametrize("tool", TOOLS)
@pytest.mark.parametrize("folds", [True, False])
@pytest.mark.parametrize("extra", EXTRAS)
def test_an_argument_holding_the_value_beside_the_one_judged_flips_nothing(
    tool: Any, folds: bool, extra: dict[str, Any]
) -> None:
    def verdicts(args: dict[str, Any]) -> tuple[bool, bool]:
        trace = Trace("hi").call("get_account", args, tool(args, folds))
        return passes(NEVER_ID, trace), passes(MUST_ID, trace)

    plain = {"id": "acc-1"}
    assert verdicts({**plain, **extra}) == verdicts(plain)


def test_the_record_under_the_path_of_an_added_argument_is_still_the_record() -> None:
    args = {"id": "acc-1", "account_id": "ACC-1"}
    assert not passes(NEVER_ID, Trace("hi").call("get_account", args, {"account_id": "ACC-1"}))
    nested = {"id": " acc-1", "account": {"account_id": "ACC-1"}}
    answer = {"account": {"account_id": "ACC-1", "balance": 5}}
    assert not passes(NEVER_ID, Trace("hi").call("get_account", nested, answer))


def test_the_record_beside_an_echo_of_the_same_path_is_still_the_record() -> None:
    args = {"id": "acc-1", "account": {"account_id": "ACC-1"}}
    answer = {"request": dict(args), "account": {"account_id": "ACC-1"}}
    assert not passes(NEVER_ID, Trace("hi").call("get_account", args, answer))


def test_an_echo_repeated_is_still_an_echo_and_a_value_more_is_the_record() -> None:
    args = {"id": "acc-1", "note": "ACC-1"}
    twice = {"request": dict(args), "log": [dict(args)]}
    assert passes(NEVER_ID, Trace("hi").call("get_account", args, twice))
    assert not passes(NEVER_ID, Trace("hi").call("get_account", args, {**twice, "note": "ACC-1"}))


def test_many_deep_arguments_holding_the_value_echoed_are_echoes() -> None:
    deep: Any = ["ACC-1"] * 500
    for _ in range(50):
        deep = {"a": deep}
    args = {"id": "acc-1", "x": deep}
    assert passes(NEVER_ID, Trace("hi").call("get_account", args, {"request": args}))
    served = {"request": args, "account_id": "ACC-1"}
    assert not passes(NEVER_ID, Trace("hi").call("get_account", args, served))


@pytest.mark.parametrize(
    ("args", "answer"),
    [
        ({"id": " o-1020"}, {"id": "O-1020"}),
        ({"id": "o-1020", "note": "O-1020"}, {"id": "O-1020", "note": "O-1020"}),
        ({"id": "o-1020"}, {"request": {"id": "o-1020"}, "order": {"order_id": "O-1020"}}),
    ],
)
def test_controls_the_tool_serving_the_record_for_a_respelling_is_seen(
    args: dict[str, Any], answer: Any
) -> None:
    rule = constraint(id="n", never={"tool": "get_order", "where": {"args.id": "O-1020"}})
    assert not passes(rule, Trace("hi").call("get_order", args, answer))


def test_controls_a_tool_telling_spellings_apart_keeps_distinct_values_apart() -> None:
    rule = constraint(id="n", never={"tool": "get_item", "where": {"args.id": "A1"}})
    assert passes(rule, Trace("hi").call("get_item", {"id": "a1"}, {"id": "a1", "name": "x"}))
    args = {"id": "a1", "compare_with": "A1"}
    answer = {"id": "a1", "compare_with": "A1", "same": False}
    assert passes(rule, Trace("hi").call("get_item", args, answer))


def test_controls_a_row_the_call_changed_is_the_environments_not_an_echo() -> None:
    rule = constraint(id="n", never={"tool": "update", "where": {"args.email": "maya@x.com"}})
    args = {"email": "MAYA@x.com", "old": {"email": "maya@x.com"}}
    row = write("users", "u1", {"email": "maya@x.com", "n": 1}, {"email": "maya@x.com", "n": 2})
    assert not passes(rule, Trace("hi").call("update", args, {"email": "MAYA@x.com"}, writes=[row]))


# --- 3. digit groups joined by dots or commas; one list of separators ---------------------------

GROUPED = [
    "4,111,1111",
    r"4111\.1111\.1111\.1111",
    r"\d{4}\.\d{4}\.\d{4}\.\d{4}",
    r"card (4,111,1111)",
    r"\d{4}(\.\d{4}){3}",
    "1,000,000",
    r"[0-9]{3},[0-9]{3},[0-9]{3}",
    r"(?:4111\.){3}4111",
]
KEPT = [
    r"4111\.1111",
    r"1,000\.50",
    r"35\.00",
    r"\$1,000\.00",
    "4111.1111.1111",  # any character between: "4111 1111 1111" reads 411111111111
    # "1,000,000|refund" was kept here: its first alternative never matches normalised text,
    # and since round 46 such a pattern is refused (see test_constraints_round46.py).
    r"\d{1,3}(,\d{3})*",
    r"1,000,0",
]


@pytest.mark.parametrize("pattern", GROUPED)
def test_digit_groups_joined_by_dots_or_commas_never_match_and_are_refused(pattern: str) -> None:
    texts = ["card 4,111,1111 ok", "4111.1111.1111.1111", "pay 1,000,000 now", "123,456,789"]
    assert not any(re.search(pattern, normalise(t), re.I) for t in texts)
    problem = spacing_problem(pattern)
    assert problem is not None and "between two digits" in problem and "comma" in problem


@pytest.mark.parametrize("pattern", KEPT)
def test_controls_amounts_and_two_groups_keep_their_dots_and_commas(pattern: str) -> None:
    assert spacing_problem(pattern) is None


@pytest.mark.parametrize(
    ("text", "normalised"),
    [("$1,000.50", "$1,000.50"), ("35.00", "35.00"), ("4111.1111", "4111.1111"),
     ("1,000,000.50", "1000000.50"), ("4,111,1111", "41111111")],
)  # fmt: skip
def test_controls_normalised_amounts_keep_their_meaning(text: str, normalised: str) -> None:
    assert normalise(text) == normalised


def test_check_and_normalisation_share_one_list_of_separators() -> None:
    assert frozenset(_text.DIGIT_SEPARATORS) == pattern_spacing._SEPARATORS
    assert pattern_spacing.DIGIT_GROUPS is _text.DIGIT_GROUPS


@pytest.mark.parametrize("char", [chr(c) for c in range(0x20, 0x7F)] + ["\u2013", "\u2014"])
def test_a_character_between_two_digits_is_refused_exactly_where_normalisation_removes_it(
    char: str,
) -> None:
    removed = normalise(f"1{char}2") == "12"
    assert (spacing_problem(f"1{re.escape(char)}2") is not None) == removed


# --- 4. the one-element choice, looked up by element -------------------------------------------


def _old_rows(reached: list[Any]) -> list[Any]:
    """The pairwise search of round 44, as the reference."""
    rows: list[list[Any]] = [[]]
    for i, (path, found) in enumerate(reached):
        rows = [
            [*row, (at, value)]
            for row in rows
            for at, value in found
            if all(
                at[: _paths._shared(path, reached[j][0])]
                == row[j][0][: _paths._shared(path, reached[j][0])]
                for j in range(i)
            )
        ]
    return rows


def _old_met(event: Any, uses: list[Any], row: list[Any], bindings: Any) -> bool:
    names = sorted({name for _, name in uses})
    candidates = []
    for name in names:
        bound = bindings[name]
        wanted = [value for (_, n), (_, value) in zip(uses, row, strict=True) if n == name]
        candidates.append(
            [i for i, v in enumerate(bound.values) if all(_paths.same(w, v) for w in wanted)]
        )

    def one(a: Any, i: int, b: Any, j: int) -> bool:
        shared = _paths._shared(a.path, b.path)
        return bool(a.at[i][:shared] == b.at[j][:shared])

    def choose(k: int, chosen: list[int]) -> bool:
        if k == len(names):
            return True
        bound = bindings[names[k]]
        return any(
            all(one(bound, i, bindings[n], j) for n, j in zip(names, chosen, strict=False))
            and choose(k + 1, [*chosen, i])
            for i in candidates[k]
        )

    return choose(0, [])


def _random_case(rng: random.Random) -> tuple[ToolCallEvent, ToolCallEvent]:
    def items(n: int) -> list[dict[str, Any]]:
        return [
            {"id": rng.choice("abc"), "qty": rng.randint(1, 2), "tag": rng.choice("xy")}
            for _ in range(n)
        ]

    orders = [{"id": f"O{i}", "items": items(rng.randint(0, 3))} for i in range(rng.randint(1, 3))]
    read = Trace("hi").call("get", {}, {"orders": orders}).events[-1]
    lines = items(rng.randint(1, 3))
    call = Trace("hi").call("refund", {"order": rng.choice(["O0", "O1"]), "lines": lines})
    return read, call.events[-1]  # type: ignore[return-value]


CAPTURE = {
    "order": "output.orders.*.id",
    "item": "output.orders.*.items.*.id",
    "qty": "output.orders.*.items.*.qty",
    "tag": "output.orders.*.items.*.tag",
}
WHERES = [
    {"args.lines.*.id": "$item", "args.lines.*.qty": "$qty"},
    {"args.order": "$order", "args.lines.*.id": "$item", "args.lines.*.tag": "$tag"},
    {"args.lines.*.id": "$item", "args.lines.*.qty": "$qty", "args.lines.*.tag": "$tag"},
    {"args.order": "$order", "args.lines.0.id": "$item"},
]


def test_the_one_element_choice_gives_the_pairwise_searchs_verdicts() -> None:
    rng = random.Random(45)
    met = 0
    for _ in range(400):
        read, call = _random_case(rng)
        bindings = _paths.capture(read, CAPTURE)
        assert bindings is not None
        for where in WHERES:
            uses = [(p, v[1:]) for p, v in where.items()]
            for names in _paths._tied({n for _, n in uses}, bindings):
                for part in _paths._apart([u for u in uses if u[1] in names]):
                    reached = [(_paths._segments(p), _paths._reach(call, p) or []) for p, _ in part]
                    rows = _paths._rows(reached)
                    assert sorted(map(repr, rows)) == sorted(map(repr, _old_rows(reached)))
                    for row in rows:
                        new = _paths._met_together(call, part, row, bindings)
                        assert new == _old_met(call, part, row, bindings)
                        met += new
    assert met  # the cases reach both verdicts
