"""Bad input from users through the real command, in a subprocess: every user error exits
non-zero with one clear line naming the file (and the field, where there is one), prints no
traceback, and leaves an existing run store byte for byte as it was.

The shipped retail example suite, its system file and its fixtures are mutated one way at a
time (each required field deleted, each field given the wrong type, an unknown field, duplicate
ids, broken YAML, paths out of the suite, link loops, empty files); each mutant goes through
every command that reads it. The store files are damaged the same way (garbage, a foreign
SQLite database, a newer format, truncated, read-only) under every command that reads a store.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import sqlite3
import subprocess
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.conftest import EXAMPLES

TASK = "refund-socks"
"""The retail task each task mutant edits (the suite's canary, a small task)."""

COMMAND_SECONDS = 120


@dataclass(frozen=True)
class Outcome:
    code: int
    out: str
    err: str

    @property
    def text(self) -> str:
        return self.out + self.err


def groundstate(*args: str | Path, cwd: Path) -> Outcome:
    """``groundstate ARGS`` as a user runs it: a new process, its own working directory."""
    done = subprocess.run(
        [sys.executable, "-m", "groundstate", *map(str, args)],
        cwd=cwd,
        capture_output=True,
        text=True,
        errors="replace",
        timeout=COMMAND_SECONDS,
        env={**os.environ, "COLUMNS": "200", "NO_COLOR": "1"},
    )
    return Outcome(done.returncode, done.stdout, done.stderr)


def digest(path: Path) -> str | None:
    """The store's bytes (its database and the journal files beside it), to prove nothing moved."""
    if not path.exists():
        return None
    parts = [path, *sorted(path.parent.glob(path.name + "-*"))]
    return hashlib.sha256(b"".join(p.read_bytes() for p in parts if p.is_file())).hexdigest()


def assert_refused(outcome: Outcome, *names: str) -> None:
    """Non-zero, no traceback, one ``error:`` line naming each of *names*."""
    assert outcome.code != 0, outcome.text
    assert "Traceback" not in outcome.text, outcome.text
    errors = [line for line in outcome.err.splitlines() if line.startswith("error:")]
    assert errors, outcome.text
    for name in names:
        assert any(name in line for line in errors), (name, outcome.text)


# --- a wrong tool argument from an agent: a tool error it sees, never the harness's crash ---


def _nested(depth: int) -> list[object]:
    outer: list[object] = []
    inner = outer
    for _ in range(depth):
        inner.append([])
        inner = inner[0]  # type: ignore[assignment]
    return outer


def _cycle() -> dict[str, object]:
    loop: dict[str, object] = {}
    loop["account"] = loop
    return loop


NOT_JSON: dict[str, tuple[object, str]] = {
    "nested past any stack": ({"account": _nested(100_000), "pin": "1"}, "nested too deeply"),
    "NaN": ({"account": float("nan"), "pin": "1"}, "nan at arguments.account"),
    "a cycle": (_cycle(), "a reference to itself at arguments.account"),
    "a set": ({"account": {1, 2}, "pin": "1"}, "a set at arguments.account"),
    "bytes": ({"account": b"A", "pin": "1"}, "a bytes at arguments.account"),
}
SCHEMA_WRONG: dict[str, tuple[object, str]] = {
    "missing": ({"account": "A"}, "'pin' is a required property"),
    "extra": ({"account": "A", "pin": "1234", "admin": True}, "'admin' was unexpected"),
    "wrong type": ({"account": 5, "pin": "1234"}, "5 is not of type 'string'"),
    "JSON text": ('{"account": "A", "pin": "1234"}', "must be an object, got str"),
    "a list": (["A", "1234"], "must be an object, got list"),
    "huge": ({"account": "A" * 3_000_000, "pin": "1"}, "over the 1,000,000 a tool is given"),
}


def _bad_calls_then_the_task(cases: dict[str, tuple[object, str]]) -> Any:
    from groundstate.agents.base import Session
    from groundstate.spec.suite import load_suite
    from groundstate.testing import FunctionAgent, attempt
    from tests.conftest import BANK

    seen: dict[str, tuple[bool, str | None, str | None]] = {}

    async def agent(session: Session) -> str:
        for name, (args, _) in cases.items():
            result = await session.call("check_pin", args)
            seen[name] = (result.ok, result.error_class, result.error)
        await session.say("What is your PIN?")
        await session.call("check_pin", {"account": "A", "pin": "1234"})
        await session.call("transfer", {"source": "A", "target": "B", "amount": 30})
        return "done"

    run = attempt(load_suite(BANK), "transfer", FunctionAgent(agent)).run
    return run, seen


@pytest.mark.parametrize("cases", [NOT_JSON, SCHEMA_WRONG], ids=["not JSON", "against the schema"])
def test_a_wrong_argument_is_an_invalid_arguments_result_the_agent_recovers_from(
    cases: dict[str, tuple[object, str]],
) -> None:
    """Arguments JSON cannot hold used to be kept as their ``repr`` and refused as "must be an
    object, got str" (the agent sent an object); nested past Python's stack they raised
    RecursionError out of the gateway: the harness's crash, not a result the agent sees."""
    run, seen = _bad_calls_then_the_task(cases)
    for name, (_, said) in cases.items():
        ok, error_class, error = seen[name]
        assert (ok, error_class) == (False, "invalid_arguments"), name
        assert error is not None and said in error, (name, error)
    # the agent's own doing (its refused calls may use up its steps), never an invalid attempt
    assert run.terminal_reason.split("/")[0] in ("success", "agent_failure"), run.terminal_reason
    assert run.initial_state_hash is not None
    assert run.model_dump_json()  # storable


def test_arguments_that_are_not_json_are_kept_bounded_in_the_trace() -> None:
    """Their ``repr`` was kept whole: ten million bytes in a set made a trace of that size."""
    run, seen = _bad_calls_then_the_task({"big": ({"account": {b"x" * 10_000_000}}, "a set")})
    assert seen["big"][1] == "invalid_arguments"
    refused = [e for e in run.observation_action_log if getattr(e, "error_class", None)]
    assert refused and all(len(str(e.args)) < 2_000 for e in refused)
    assert len(run.model_dump_json()) < 1_000_000
