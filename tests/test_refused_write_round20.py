"""A write the harness's type checks refuse (a non-whole number in an INTEGER column, a value
of another storage class in a typed column: the parity rules of the nineteenth and twentieth
environments rounds) is the agent's error, undone: the tool call fails with the reason and the
attempt goes on, on SQLite and PostgreSQL alike. Before, the refusal crashed a tool that did
not catch it: ``environment_failure/tool_crash``, an invalid attempt (run again, out of every
denominator) that the agent's own arguments caused."""

from __future__ import annotations

import shutil
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest
import yaml

from groundstate.agents.base import Session
from groundstate.environments.sqlite import SqliteEnvironment
from groundstate.errors import ToolError
from groundstate.spec.suite import Suite, load_suite
from groundstate.testing import FunctionAgent, attempt

from .test_validation_round15 import _postgres

BANK = Path(__file__).parent / "suites" / "bank"
CLOCK = datetime(2026, 1, 15, 9, 30)
PIN = {"account": "A", "pin": "1234"}
FIXTURE = (
    "CREATE TABLE t (id INTEGER PRIMARY KEY, n INTEGER, s TEXT);\n"
    "INSERT INTO t VALUES (1, 4, 'a');\n"
)


@pytest.fixture
def tipping_bank(tmp_path: Path) -> Suite:
    """The bank with a tool that records a tip, in whole cents, as the agent gives it."""
    root = tmp_path / "bank"
    shutil.copytree(BANK, root)
    with (root / "tools.py").open("a", encoding="utf-8") as tools:
        tools.write(
            "\n\n@tool\ndef tip(ctx: ToolContext, cents: float) -> str:\n"
            '    """Record a tip in whole cents."""\n'
            '    ctx.db.execute("INSERT INTO transfers (source, target, amount, at) '
            "VALUES ('A', 'B', ?, '2026')\", (cents,))\n"
            '    return "tipped"\n'
        )
    task_file = root / "tasks" / "transfer.yaml"
    task = yaml.safe_load(task_file.read_text(encoding="utf-8"))
    task["available_tools"].append("tip")
    task_file.write_text(yaml.safe_dump(task), encoding="utf-8")
    return load_suite(root)


def _tip_then(cents: float) -> Any:
    async def run(session: Session) -> str:
        seen: list[str] = []
        await session.call("check_pin", PIN)
        try:
            await session.call("tip", {"cents": cents})
        except Exception as exc:  # the agent sees the refusal and goes on
            seen.append(str(exc))
        await session.call("transfer", {"source": "A", "target": "B", "amount": 30})
        return "Moved 30. " + " ".join(seen)

    return run


def test_an_agents_non_whole_number_the_tool_stores_is_the_agents_error(
    tipping_bank: Suite,
) -> None:
    output = attempt(tipping_bank, "transfer", FunctionAgent(_tip_then(2.5)))
    run = output.run
    assert not run.terminal_reason.startswith("environment_failure"), run.terminal_reason
    (tip,) = [e for e in run.observation_action_log if getattr(e, "tool", None) == "tip"]
    assert not tip.ok and tip.error_class != "tool_crash"
    assert "refused and undone" in str(tip.error) and "transfers.amount" in str(tip.error)
    # the refused write left nothing: the transfer alone is in the state, as the check wants
    assert run.terminal_reason == "success"


def test_control_a_whole_number_is_stored_and_judged(tipping_bank: Suite) -> None:
    output = attempt(tipping_bank, "transfer", FunctionAgent(_tip_then(3.0)))
    assert output.run.terminal_reason == "agent_failure/incorrect_state"  # one transfer too many


@pytest.mark.parametrize(
    ("sql", "params"),
    [
        ("INSERT INTO t (n) VALUES (?)", (2.5,)),
        ("UPDATE t SET s = ? WHERE id = 1", (b"\x00\x01",)),
    ],
)
def test_the_refusal_is_a_tool_error_on_both_kinds(
    tmp_path: Path, sql: str, params: tuple[Any, ...]
) -> None:
    fixture = tmp_path / "t.sql"
    fixture.write_text(FIXTURE, encoding="utf-8")
    postgres = _postgres()
    with SqliteEnvironment(fixture, clock=CLOCK) as ours, postgres(fixture, clock=CLOCK) as theirs:
        before = ours.state_hash()
        for env in (ours, theirs):
            with pytest.raises(ToolError, match="refused and undone"), env.tool_transaction():
                env.agent_db.execute(sql, params)
            assert env.state_hash() == before
            with env.tool_transaction():  # the environment takes the next call as usual
                env.agent_db.execute("UPDATE t SET n = 5 WHERE id = 1")
        assert ours.state_hash() == theirs.state_hash()
