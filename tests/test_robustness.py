"""Tool robustness in ``validate``: schema-valid calls must not crash a tool."""

from __future__ import annotations

import shutil
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import given, settings

from groundstate.gateway import INT64, unrepresentable
from groundstate.spec.suite import Suite, load_suite
from groundstate.validation.checks import check_tool_robustness
from groundstate.validation.replay import Proof
from groundstate.validation.robustness import arguments

from .conftest import BANK, EXAMPLES

FRAGILE_TOOLS = '''
import time

@tool
def find_by_name(ctx: ToolContext, name: str) -> list[Any]:
    """Quotes the name into SQL by hand: a quote in it breaks the statement."""
    return ctx.db.execute(f"SELECT id FROM accounts WHERE id = '{name}'").fetchall()


@tool
def nth_transfer(ctx: ToolContext, n: int, note: str | None = None) -> int:
    """Fine for small n; a bug above 1000."""
    if n > 1000:
        raise ValueError("n too large for the cache")
    return n


_SLOW_CALLS: list[str] = []
_FAILING_CALLS: list[str] = []


@tool
def slow_once(ctx: ToolContext, note: str) -> str:
    """Stalls past the time limit on its first call only, as on a machine busy elsewhere."""
    _SLOW_CALLS.append(note)
    if len(_SLOW_CALLS) == 1:
        time.sleep(0.6)
    return note


@tool
def always_slow(ctx: ToolContext, note: str) -> str:
    """Stalls past the time limit on every call with text: a real hang."""
    if note:
        time.sleep(0.6)
    return note


@tool
def fails_once(ctx: ToolContext, note: str) -> str:
    """Raises on its first call only: a crash of its own, even if it comes and goes."""
    _FAILING_CALLS.append(note)
    if len(_FAILING_CALLS) == 1:
        raise RuntimeError("lost a race")
    return note
'''


def _suite(tmp_path: Path, mode: str | None, tools: list[str]) -> Suite:
    root = tmp_path / "bank"
    shutil.copytree(BANK, root)
    with (root / "tools.py").open("a") as handle:
        handle.write(FRAGILE_TOOLS)
    config = yaml.safe_load((root / "suite.yaml").read_text())
    config.pop("tool_robustness")
    if mode is not None:
        config["tool_robustness"] = mode
    (root / "suite.yaml").write_text(yaml.safe_dump(config))
    task_file = root / "tasks" / "transfer.yaml"
    task = yaml.safe_load(task_file.read_text())
    task["available_tools"] = ["check_pin", "balance", "transfer", *tools]
    task_file.write_text(yaml.safe_dump(task))
    return load_suite(root)


def _check(suite: Suite) -> tuple[bool, str]:
    return check_tool_robustness(Proof(suite, suite.tasks["transfer"]))


def test_sound_tools_pass(tmp_path: Path) -> None:
    passed, detail = _check(_suite(tmp_path, None, []))
    assert passed, detail
    assert "no crash in 3 tools" in detail


def test_a_crash_is_reported_with_the_minimal_call(tmp_path: Path) -> None:
    passed, detail = _check(_suite(tmp_path, None, ["find_by_name", "nth_transfer"]))
    assert not passed
    assert "2 tools crash" in detail
    assert """find_by_name({"name":"'"}) -> OperationalError""" in detail  # shrunk to one quote
    assert 'nth_transfer({"n":1001}) -> ValueError: n too large' in detail  # the boundary


def test_report_mode_lists_crashes_without_failing(tmp_path: Path) -> None:
    passed, detail = _check(_suite(tmp_path, "report", ["nth_transfer"]))
    assert passed
    assert "crashes reported, not failed" in detail and "nth_transfer" in detail


def test_off_mode_calls_nothing(tmp_path: Path) -> None:
    assert _check(_suite(tmp_path, "off", ["nth_transfer"])) == (
        True,
        "off (the suite sets tool_robustness: off)",
    )


def test_the_check_is_deterministic(tmp_path: Path) -> None:
    suite = _suite(tmp_path, None, ["find_by_name", "nth_transfer"])
    first = _check(suite)
    from groundstate.validation import checks

    checks._ROBUSTNESS.clear()  # no cached verdict: generate again
    assert _check(suite) == first


def test_retail_tools_hold_and_the_check_is_fast(monkeypatch: pytest.MonkeyPatch) -> None:
    """Fast as in bounded work: at most CALLS_PER_TOOL generated calls per tool (speed on a
    loaded machine is bench/'s to measure)."""
    retail = load_suite(EXAMPLES / "retail")
    task = sorted(retail.tasks)[0]
    from groundstate.validation import checks, robustness

    calls: Counter[str] = Counter()
    call = robustness._Fresh.call

    def counted(fresh: Any, tool: Any, args: dict[str, Any]) -> str | None:
        calls[tool.name] += 1
        return call(fresh, tool, args)

    monkeypatch.setattr(robustness._Fresh, "call", counted)
    checks._ROBUSTNESS.clear()
    passed, detail = check_tool_robustness(Proof(retail, retail.tasks[task]))
    assert passed, detail
    assert calls and max(calls.values()) <= robustness.CALLS_PER_TOOL, calls


# --- the generator covers the schemas our tools declare ------------------------------------------

SCHEMA = {
    "type": "object",
    "additionalProperties": False,
    "required": ["a", "b", "c"],
    "properties": {
        "a": {"type": "integer"},
        "b": {"enum": ["x", "y"], "type": "string"},
        "c": {"type": "array", "items": {"$ref": "#/$defs/Item"}},
        "d": {"anyOf": [{"type": "number"}, {"type": "null"}], "default": None},
    },
    "$defs": {
        "Item": {
            "type": "object",
            "properties": {"flag": {"type": "boolean"}},
            "required": ["flag"],
        }
    },
}


@settings(max_examples=60, derandomize=True, database=None)
@given(arguments(SCHEMA))
def test_generated_arguments_are_schema_valid(args: dict[str, object]) -> None:
    import jsonschema

    jsonschema.Draft202012Validator(SCHEMA).validate(args)


@pytest.mark.parametrize(
    ("value", "problem"),
    [
        ({"n": INT64[1]}, None),
        ({"n": INT64[0]}, None),
        ({"n": INT64[1] + 1}, "arguments/n: 9223372036854775808 is outside the 64-bit range"),
        ({"n": INT64[0] - 1}, "outside the 64-bit range"),
        ({"s": "ok \u00e9 \U0001f600"}, None),
        ({"s": "bad \ud800"}, "arguments/s: not encodable text"),
        ({"deep": [{"x": [1, "\udfff"]}]}, "arguments/deep/0/x/1: not encodable text"),
        ({"\ud800": 1}, "arguments (a key): not encodable text"),
        ({"flag": True, "f": 1e308, "none": None}, None),
    ],
)
def test_the_gateway_refuses_what_tools_cannot_represent(
    value: dict[str, object], problem: str | None
) -> None:
    found = unrepresentable(value)
    if problem is None:
        assert found is None
    else:
        assert found is not None and problem in found


# --- a crash that does not happen again (Hypothesis reports it as flaky) ----------------------


@pytest.fixture
def short_limit(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("groundstate.validation.robustness.CALL_TIME_LIMIT", 0.3)


@pytest.mark.usefixtures("short_limit")
def test_one_slow_call_that_does_not_repeat_is_not_a_crash(tmp_path: Path) -> None:
    """The check must not depend on the machine's load: a call past the limit once (the
    replay is quick) is not the tool's hang."""
    passed, detail = _check(_suite(tmp_path, None, ["slow_once"]))
    assert passed, detail


@pytest.mark.usefixtures("short_limit")
def test_a_hang_that_repeats_is_still_reported(tmp_path: Path) -> None:
    passed, detail = _check(_suite(tmp_path, None, ["always_slow"]))
    assert not passed and "always_slow(" in detail and "still running after 0.3s" in detail


@pytest.mark.usefixtures("short_limit")
def test_an_error_that_comes_and_goes_is_still_reported(tmp_path: Path) -> None:
    passed, detail = _check(_suite(tmp_path, None, ["fails_once"]))
    assert not passed and "fails_once(" in detail and "RuntimeError: lost a race" in detail
