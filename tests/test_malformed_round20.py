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

import os
import sqlite3
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.cli_workspace import (
    SYSTEM,
    TASK,
    assert_refused,
    digest,
    groundstate,
)

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
    from tests.conftest import BANK, time_limit

    seen: dict[str, tuple[bool, str | None, str | None]] = {}

    async def agent(session: Session) -> str:
        for name, (args, _) in cases.items():
            result = await session.call("check_pin", args)
            seen[name] = (result.ok, result.error_class, result.error)
        await session.say("What is your PIN?")
        await session.call("check_pin", {"account": "A", "pin": "1234"})
        await session.call("transfer", {"source": "A", "target": "B", "amount": 30})
        return "done"

    # calls of megabytes each: the task's 5 s are not enough on a loaded machine (its time
    # limit cut the calls short in CI)
    with time_limit(load_suite(BANK), "transfer", 120) as suite:
        run = attempt(suite, "transfer", FunctionAgent(agent)).run
    assert run.terminal_reason != "agent_failure/prohibited_action", run.infrastructure_status
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


# --- the shipped suite, system and fixtures, mutated, through every command that reads them ---

SUITE_COMMANDS: dict[str, list[str]] = {
    "check": ["check", "retail", "--system", SYSTEM],
    "validate": ["validate", "retail", "--store", "s.db"],
    "run": ["run", "retail", "--system", SYSTEM, "--store", "s.db", "--task", TASK],
    "lock": ["lock", "retail"],
}


def _task(root: Path) -> Path:
    return root / "retail" / "tasks" / f"{TASK}.yaml"


def _edit_task(root: Path, change: Callable[[dict[str, Any]], None]) -> None:
    data = yaml.safe_load(_task(root).read_text())
    change(data)
    _task(root).write_text(yaml.safe_dump(data, sort_keys=False))


def _replace(path: Path, old: str, new: str) -> None:
    text = path.read_text()
    assert old in text
    path.write_text(text.replace(old, new, 1))


def _alias_bomb() -> str:
    lines = ["a0: &a0 [x, x, x, x, x, x, x, x, x]"]
    lines += [f"a{i}: &a{i} [{', '.join([f'*a{i - 1}'] * 9)}]" for i in range(1, 10)]
    return "\n".join(lines) + "\n"


def _loop(path: Path) -> None:
    path.unlink()
    os.symlink(path.name, path)


TASK_FILE = f"retail/tasks/{TASK}.yaml"
MUTANTS: dict[str, tuple[Callable[[Path], object], tuple[str, ...], tuple[str, ...]]] = {
    # name: (mutation, names each message must hold, commands that read what is mutated)
    "a required field deleted": (
        lambda r: _edit_task(r, lambda t: t.pop("outcome_assertions")),
        (TASK_FILE, "outcome_assertions"),
        ("check", "validate", "run", "lock"),
    ),
    "a field of the wrong type": (
        lambda r: _edit_task(r, lambda t: t.update(step_limit={"x": [1]})),
        (TASK_FILE, "step_limit"),
        ("check", "validate", "run", "lock"),
    ),
    "an unknown field": (
        lambda r: _edit_task(r, lambda t: t.update(bogus_field=1)),
        (TASK_FILE, "bogus_field"),
        ("check", "validate", "run", "lock"),
    ),
    "a duplicate assertion id": (
        lambda r: _edit_task(
            r, lambda t: t["outcome_assertions"].append(t["outcome_assertions"][0])
        ),
        (TASK_FILE, "outcome_assertions"),
        ("check", "validate", "run", "lock"),
    ),
    "tabs": (
        lambda r: _task(r).write_text(_task(r).read_text().replace("\n  ", "\n\t")),
        (TASK_FILE,),
        ("check", "validate", "run", "lock"),
    ),
    "an alias bomb": (lambda r: _task(r).write_text(_alias_bomb()), (TASK_FILE,), ("check", "run")),
    "a duplicate key": (
        lambda r: _task(r).write_text(_task(r).read_text() + "\nstep_limit: 3\n"),
        (TASK_FILE, "step_limit"),
        ("check", "validate", "run", "lock"),
    ),
    "bytes that are not UTF-8": (
        lambda r: _task(r).write_bytes(_task(r).read_bytes().replace(b"socks", b"so\xffcks", 1)),
        (TASK_FILE,),
        ("check", "validate", "run", "lock"),
    ),
    "a huge file": (
        lambda r: _task(r).write_text(_task(r).read_text() + "#" + "x" * (11 * 2**20) + "\n"),
        (TASK_FILE,),
        ("check", "run"),
    ),
    "an empty task file": (
        lambda r: _task(r).write_text(""),
        (TASK_FILE,),
        ("check", "run", "lock"),
    ),
    "a fixture path out of the suite": (
        lambda r: _edit_task(r, lambda t: t.update(initial_state_fixture="../../../etc/passwd")),
        (TASK_FILE, "initial_state_fixture"),
        ("check", "validate", "run"),
    ),
    "a fixture in a loop of links": (
        lambda r: _loop(r / "retail" / "fixtures" / "retail.sql"),
        ("retail.sql",),
        ("check", "validate", "run"),
    ),
    "a fixture that does not build": (
        lambda r: (r / "retail" / "fixtures" / "retail.sql").write_text("CREATE TABLE (;\n"),
        ("retail/fixtures/retail.sql",),
        ("check", "validate", "run"),
    ),
    "an empty suite.yaml": (
        lambda r: (r / "retail" / "suite.yaml").write_text(""),
        ("retail/suite.yaml",),
        ("check", "validate", "run", "lock"),
    ),
    "checks.py raising at import": (
        lambda r: (r / "retail" / "checks.py").write_text("raise ValueError('boom')\n"),
        ("checks.py", "boom"),
        ("check", "validate", "run"),
    ),
    "tools.py with a syntax error": (
        lambda r: (r / "retail" / "tools.py").write_text("def (:\n"),
        ("tools.py",),
        ("check", "validate", "run"),
    ),
    "a system file with an unknown field": (
        lambda r: (r / SYSTEM).write_text((r / SYSTEM).read_text() + "bogus: 1\n"),
        (SYSTEM, "bogus"),
        ("check", "run"),
    ),
    "a system naming an agent file that is missing": (
        lambda r: _replace(r / SYSTEM, "retail_agents.py", "no_such_agent.py"),
        ("no_such_agent.py",),
        ("check", "run"),
    ),
    "an empty system file": (lambda r: (r / SYSTEM).write_text(""), (SYSTEM,), ("check", "run")),
}


@pytest.mark.parametrize("mutant", list(MUTANTS))
def test_a_mutated_suite_or_system_is_refused_by_every_command(copy: Path, mutant: str) -> None:
    mutate, names, commands = MUTANTS[mutant]
    mutate(copy)
    store = digest(copy / "s.db")
    for command in commands:
        outcome = groundstate(*SUITE_COMMANDS[command], cwd=copy)
        if command == "check":  # check lists problems as lines of their own
            assert outcome.code != 0 and "Traceback" not in outcome.text, outcome.text
            assert all(name in outcome.text for name in names), (command, outcome.text)
        else:
            assert_refused(outcome, *names)
        assert digest(copy / "s.db") == store, command


# --- a damaged or foreign store, under every command that reads or writes one ---------------


def _sqlite(path: Path, *statements: str) -> None:
    db = sqlite3.connect(path)
    try:
        for statement in statements:
            db.execute(statement)
        db.commit()
    finally:
        db.close()


STORE_DAMAGE: dict[str, Callable[[Path], object]] = {
    "garbage": lambda p: p.write_bytes(os.urandom(40_000)),
    "a foreign SQLite database": lambda p: (p.unlink(), _sqlite(p, "CREATE TABLE users (id)")),
    "a newer format": lambda p: _sqlite(p, "PRAGMA user_version = 999"),
    "truncated": lambda p: p.write_bytes(p.read_bytes()[: p.stat().st_size // 2]),
    "a folder": lambda p: (p.unlink(), p.mkdir()),
}
STORE_COMMANDS = [
    ["report"],
    ["batches"],
    ["verify"],
    ["export", "--format", "jsonl", "--out", "out.jsonl"],
    ["import-results", "results.jsonl", "--name", "y"],
    ["run", "retail", "--system", SYSTEM, "--task", TASK],
]


@pytest.mark.parametrize("damage", list(STORE_DAMAGE))
def test_a_damaged_store_is_refused_and_left_as_it_was(copy: Path, damage: str) -> None:
    STORE_DAMAGE[damage](copy / "s.db")
    before = digest(copy / "s.db")
    for args in STORE_COMMANDS:
        outcome = groundstate(*args, "--store", "s.db", cwd=copy)
        assert_refused(outcome, "s.db")
        assert digest(copy / "s.db") == before, args
