"""Round 47: the gateway reads honest arguments once, and says every too-deep one alike.

The depth check walked every call's arguments again after they were serialised, and
``unrepresentable`` walked them a third time; now the JSON text answers for most calls (no
more opening brackets than the depth limit: not deep; ASCII with no run of 19 digits:
nothing out of int64, no lone surrogate), and only the others are walked. Arguments nested
past Python's stack (a thousand levels) were refused as "arguments are not JSON: 'list'
nested too deeply" while 65 to 999 levels had the newer wording; both now say the limit.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import datetime
from typing import Any

import pytest

from groundstate.environments.sqlite import SqliteEnvironment
from groundstate.gateway import MAX_ARGUMENT_DEPTH, NotJson, ToolGateway
from groundstate.spec.suite import Suite
from groundstate.trace import event_json

from .test_depth_round46 import _lists, _objects, noting_bank  # noqa: F401 (a fixture)

TOO_DEEP = (
    f"arguments: nested too deeply (more than {MAX_ARGUMENT_DEPTH} levels of arrays and "
    "objects within each other, the most a tool is given)"
)
SAID = f"invalid arguments: {TOO_DEEP}"


@pytest.fixture
def gateway(noting_bank: Suite) -> Iterator[tuple[ToolGateway, list[Any]]]:  # noqa: F811
    events: list[Any] = []
    fixture = noting_bank.root / "fixtures" / "bank.sql"
    with SqliteEnvironment(fixture, clock=datetime(2026, 1, 15)) as env:
        env.reset()
        yield ToolGateway(noting_bank.tools, env, events.append, lambda: 0.0), events


def _shared(depth: int) -> Any:
    """A list holding one list twice, *depth* times over: 2**depth paths to walk."""
    value: Any = []
    for _ in range(depth):
        value = [value, value]
    return value


@pytest.mark.parametrize("depth", [MAX_ARGUMENT_DEPTH, 300, 999, 1000, 5000, 100_000])
def test_every_depth_past_the_limit_is_refused_in_the_same_words(
    gateway: tuple[ToolGateway, list[Any]], depth: int
) -> None:
    call, events = gateway
    result = call.call(1, "note", {"payload": _lists(depth)})
    assert (result.ok, result.error_class, result.error) == (False, "invalid_arguments", SAID)
    assert "not JSON" not in result.error
    assert event_json(events[-1])  # kept cut or as a bounded repr: storable


def test_a_value_past_the_stack_from_the_session_says_the_limit_too() -> None:
    """What the session hands the gateway for arguments it could not copy."""
    assert NotJson.of({"payload": _lists(5000)}).refusal == TOO_DEEP
    assert NotJson.of({"payload": _objects(5000)}).refusal == TOO_DEEP


def test_other_values_that_are_not_json_keep_their_own_refusal(
    gateway: tuple[ToolGateway, list[Any]],
) -> None:
    call, _ = gateway
    cycle: dict[str, Any] = {"x": 1}
    cycle["self"] = cycle
    told = call.call(1, "note", {"payload": cycle})
    assert told.error_class == "invalid_arguments"
    assert "a reference to itself" in (told.error or "")
    told = call.call(2, "note", {"payload": [{1, 2}]})
    assert "arguments are not JSON" in (told.error or "") and "set" in (told.error or "")


def test_shared_parts_nested_past_the_stack_are_refused_without_a_walk_of_every_path(
    gateway: tuple[ToolGateway, list[Any]],
) -> None:
    """2**3000 paths: a walk level by level (or of every path) would never end."""
    call, _ = gateway
    told = call.call(1, "note", {"payload": _shared(3000)})
    assert told.error == SAID
    assert NotJson.of(_shared(3000)).refusal == TOO_DEEP


def test_brackets_in_strings_do_not_make_honest_arguments_deep(
    gateway: tuple[ToolGateway, list[Any]],
) -> None:
    """Text with many brackets is walked (the count is only a bound) and passes; the real
    limit holds exactly at its edge whatever the strings hold."""
    call, _ = gateway
    brackets = "[{" * 200
    at_limit = {"payload": {"deep": _lists(MAX_ARGUMENT_DEPTH - 2), "more": brackets}}
    wide = {"payload": [[brackets] for _ in range(100)]}
    for args in (at_limit, wide, {"payload": brackets}):
        result = call.call(1, "note", args)
        assert result.ok, result.error
        assert result.output == args["payload"]
    past = call.call(2, "note", {"payload": {"deep": _lists(MAX_ARGUMENT_DEPTH - 1), "x": "["}})
    assert past.error == SAID


@pytest.mark.parametrize(
    ("payload", "problem"),
    [
        (2**63, "outside the 64-bit range"),
        (-(2**63) - 1, "outside the 64-bit range"),
        ([1, [2, 10**30]], "outside the 64-bit range"),
        ("a\ud800b", "not encodable text"),
        ({"k\udc00": 1}, "not encodable text"),
        ({"9" * 40: 1}, None),  # a key of digits is text: representable
    ],
)
def test_unrepresentable_arguments_are_still_refused(
    gateway: tuple[ToolGateway, list[Any]], payload: Any, problem: str | None
) -> None:
    call, _ = gateway
    result = call.call(1, "note", {"payload": payload})
    if problem is None:
        assert result.ok, result.error
    else:
        assert result.error_class == "invalid_arguments" and problem in (result.error or "")


@pytest.mark.parametrize(
    "payload",
    [2**63 - 1, -(2**63), 10**18, "Renée's café: 1234567890123456789", [1.5e300, -0.0]],
)
def test_representable_edges_reach_the_tool(
    gateway: tuple[ToolGateway, list[Any]], payload: Any
) -> None:
    call, _ = gateway
    result = call.call(1, "note", {"payload": payload})
    assert result.ok, result.error
    assert result.output == payload


def test_a_tool_refusing_what_its_kind_cannot_store_is_still_asked(
    noting_bank: Suite,  # noqa: F811
) -> None:
    """The environment kind's own ``unrepresentable`` runs on plainly representable text."""
    fixture = noting_bank.root / "fixtures" / "bank.sql"
    with SqliteEnvironment(fixture, clock=datetime(2026, 1, 15)) as env:
        env.reset()
        env.unrepresentable = lambda args: "arguments: the kind says no"  # type: ignore[attr-defined]
        call = ToolGateway(noting_bank.tools, env, lambda event: None, lambda: 0.0)
        result = call.call(1, "note", {"payload": "plain"})
    assert result.error == "invalid arguments: arguments: the kind says no"
