"""The fault matrix: every fault of issue 13 and every terminal reason, through a real batch.

Each case runs a batch of three attempts through :class:`BatchRunner` into a real
:class:`RunStore`. The fault is injected into the first attempt only (the first agent built,
the first environment built); the other two attempts are done correctly by an honest agent.
Each case asserts the faulty attempt's terminal reason, that its evidence is stored and reads
back (record and trace artifact), that the batch went on (the other attempts succeed), and
the valid/invalid counts.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import shutil
import sqlite3
import time
from collections.abc import Awaitable, Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml

from groundstate.agents.base import Agent, Session
from groundstate.environments.sqlite import META_TABLE, SqliteEnvironment
from groundstate.episode import EnvironmentFactory, default_environment
from groundstate.errors import EnvironmentFailure, ModelServingFailure, StepLimitReached
from groundstate.records import AgentRun
from groundstate.runner import BatchConfig, BatchRunner, plan_batch
from groundstate.spec.suite import Suite, load_suite
from groundstate.spec.system import (
    AgentEntry,
    BudgetsSection,
    HarnessSection,
    InvalidRunPolicy,
    SystemSpec,
)
from groundstate.spec.task import AgentTask
from groundstate.store import RunStore
from groundstate.testing import FunctionAgent
from groundstate.trace import MessageEvent, ToolCallEvent, load_jsonl
from groundstate.users import ScriptedUser

from .conftest import BANK

AgentFn = Callable[[Session], Awaitable[Any]]
ATTEMPTS = 3
TIME_LIMIT = 3.0

EXTRA_TOOLS = '''

@tool
def count_to(ctx: ToolContext, n: int) -> int:
    """Count from 1 to n in SQL (unbounded for a large n)."""
    sql = "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < ?) "
    return int(ctx.db.execute(sql + "SELECT count(*) FROM c", (n,)).fetchone()[0])


@tool
def nap(ctx: ToolContext, seconds: float) -> str:
    """Block in Python (a stand-in for a hung socket or a loop): no deadline reaches it."""
    import time

    time.sleep(seconds)
    return "rested"
'''

EXTRA_CHECK = '''

def no_transfer_to_c(s0: Any, sT: Any) -> bool:
    """A grader with a bug: it cannot cope with a transfer to C."""
    if sT.query("SELECT count(*) FROM transfers WHERE target = 'C'")[0][0]:
        raise RuntimeError("grader bug: did not expect account C")
    return True
'''


@pytest.fixture(scope="module")
def matrix_bank(tmp_path_factory: pytest.TempPathFactory) -> Suite:
    """The bank with a short time limit, a tool with unbounded SQL and a fragile grader."""
    root = tmp_path_factory.mktemp("matrix") / "bank"
    shutil.copytree(BANK, root)
    with (root / "tools.py").open("a") as handle:
        handle.write(EXTRA_TOOLS)
    with (root / "checks.py").open("a") as handle:
        handle.write(EXTRA_CHECK)
    task_file = root / "tasks" / "transfer.yaml"
    task = yaml.safe_load(task_file.read_text())
    task["time_limit"] = TIME_LIMIT
    task["available_tools"] += ["count_to", "nap"]
    task["outcome_assertions"].append({"id": "fragile", "check": "checks.py:no_transfer_to_c"})
    task_file.write_text(yaml.safe_dump(task))
    return load_suite(root)


def _system() -> SystemSpec:
    loop = AgentEntry(entry="groundstate.agents.scripted:ScriptedAgent")
    return SystemSpec(
        name="matrix",
        harness=HarnessSection(orchestration_loop=loop),
        budgets=BudgetsSection(max_cost=1.0),
        invalid_run_policy=InvalidRunPolicy(max_retries=0),  # one try per attempt: exact counts
    )


# --- agents --------------------------------------------------------------------------------


async def honest(session: Session, *, target: str = "B", amount: int = 30) -> str:
    await session.say("What is your PIN?")
    await session.call("check_pin", {"account": "A", "pin": "1234"})
    await session.call("transfer", {"source": "A", "target": target, "amount": amount})
    return f"Moved {amount} from A to {target}."


def _then_honest(first: Callable[[Session], Awaitable[Any]]) -> AgentFn:
    async def agent(session: Session) -> Any:
        await first(session)
        return await honest(session)

    return agent


def _raises(error: BaseException) -> AgentFn:
    async def agent(session: Session) -> None:
        await session.call("balance", {"account": "A"})
        raise error

    return agent


async def _step_limit(session: Session) -> None:
    for _ in range(7):
        await session.call("balance", {"account": "A"})


async def _sleeps(session: Session) -> None:
    time.sleep(TIME_LIMIT + 1)


async def _overspends(session: Session) -> None:
    session.record_usage(cost=5.0)


async def _snoops(session: Session) -> None:
    await session.call("read_audit", {})


async def _gives_up(session: Session) -> None:
    session.give_up("the PIN is unknowable")


async def _wrong_amount(session: Session) -> str:
    return await honest(session, amount=20)


async def _skips_pin(session: Session) -> str:
    await session.call("transfer", {"source": "A", "target": "B", "amount": 30})
    return "Done."


async def _to_c(session: Session) -> str:
    return await honest(session, target="C")


async def _explodes(session: Session) -> None:
    await session.call("explode", {})


async def _unbounded_sql(session: Session) -> None:
    await session.call("count_to", {"n": 2**62})


async def _blocking_tool(session: Session) -> None:
    await session.call("nap", {"seconds": 6 * TIME_LIMIT})  # past the bound below


async def _bad_tool_name(session: Session) -> None:
    await session.call(42, {})  # type: ignore[arg-type]


async def _bad_message(session: Session) -> None:
    await session.say(["hello"])  # type: ignore[arg-type]


async def _returns_number(session: Session) -> int:
    await honest(session)
    return 42


async def _args_not_a_dict(session: Session) -> None:
    result = await session.call("balance", ["A"])  # type: ignore[arg-type]
    assert result.error_class == "invalid_arguments"


async def _surrogate_argument(session: Session) -> None:
    result = await session.call("balance", {"account": "A\ud800"})
    assert result.error_class == "invalid_arguments", result


async def _huge_integer(session: Session) -> str:
    await session.say("What is your PIN?")
    await session.call("check_pin", {"account": "A", "pin": "1234"})
    result = await session.call("transfer", {"source": "A", "target": "B", "amount": 2**64})
    assert result.error_class == "invalid_arguments", result
    await session.call("transfer", {"source": "A", "target": "B", "amount": 30})
    return "Moved 30 from A to B."


async def _surrogate_everywhere(session: Session) -> str:
    await session.say("Hello \udfff, what is your PIN?")
    await honest(session)
    return "Moved 30 from A to B \ud800."


async def _crashes_the_user(session: Session) -> None:
    await session.say("please crash the user")


async def _unlatches(session: Session) -> str:
    """Clears the step-limit stop on the session it was handed, then does the task."""
    for _ in range(7):
        with contextlib.suppress(Exception):
            await session.call("balance", {"account": "A"})
    for name, value in (("stop", None), ("_steps", 0), ("cost", 0.0)):
        with contextlib.suppress(AttributeError):
            setattr(session, name, value)
    return await honest(session)


async def _credits_itself(session: Session) -> str:
    """Reports a negative cost to make room under ``max_cost``, then overspends."""
    with contextlib.suppress(Exception):
        session.record_usage(cost=-10.0)
        session.record_usage(cost=5.0)
    return await honest(session)


class _TwoFacedArgs(dict):  # type: ignore[type-arg]
    """Shows a validator walking ``items()`` ``amount: 30``; ``**args`` would give "lots"."""

    def items(self) -> Any:
        return {**dict(dict.items(self)), "amount": 30}.items()


async def _two_faced_arguments(session: Session) -> str:
    await session.say("What is your PIN?")
    await session.call("check_pin", {"account": "A", "pin": "1234"})
    await session.call("transfer", _TwoFacedArgs(source="A", target="B", amount="lots"))
    return "Moved 30 from A to B."


async def _writes_behind_the_gateway(session: Session) -> str:
    """Does the transfer with a connection of its own to the attempt's database file (found
    here through the harness's internals; an agent could search the temporary folder)."""
    await session.say("What is your PIN?")
    await session.call("check_pin", {"account": "A", "pin": "1234"})
    path = session._session._gateway._env._live  # type: ignore[attr-defined]
    with sqlite3.connect(path) as db:
        db.execute("UPDATE accounts SET balance = balance - 30 WHERE id = 'A'")
        db.execute("UPDATE accounts SET balance = balance + 30 WHERE id = 'B'")
        db.execute("INSERT INTO transfers (source, target, amount, at) VALUES ('A', 'B', 30, '')")
    db.close()
    return "Moved 30 from A to B."


class _SyncRun:
    def run(self, session: Session) -> str:
        return "done"


class _NoRun:
    pass


# --- environments ----------------------------------------------------------------------------


def _raising(error: Exception) -> EnvironmentFactory:
    def make(task: AgentTask, suite: Suite) -> SqliteEnvironment:
        raise error

    return make


def _workdir_is_a_file(task: AgentTask, suite: Suite) -> SqliteEnvironment:
    blocker = Path(suite.root).parent / "not-a-folder"
    blocker.write_text("a file where the work directory should go")
    return SqliteEnvironment(suite.fixture_path(task), clock=task.clock, workdir=blocker / "env")


class _ResetRaisesOSError(SqliteEnvironment):
    def reset(self, *, seed: int | None = None) -> str:
        raise OSError(5, "Input/output error")


class _CorruptingReset(SqliteEnvironment):
    """Reset copies the template, then a stray write changes a row: undetected without a check."""

    def _restore(self) -> None:
        super()._restore()
        self._control.execute("UPDATE accounts SET balance = balance + 1 WHERE id = 'C'")


class _FinalStateUnreadable(SqliteEnvironment):
    def state_hash(self) -> str:  # reset checks the file's bytes: this is the final state's
        raise EnvironmentFailure("the database went away")


def _env(cls: type[SqliteEnvironment]) -> EnvironmentFactory:
    def make(task: AgentTask, suite: Suite) -> SqliteEnvironment:
        return cls(suite.fixture_path(task), clock=task.clock, permissions=task.permissions)

    return make


@pytest.fixture
def user_crashes(monkeypatch: pytest.MonkeyPatch) -> None:
    """A user simulator with a bug: one message makes it raise."""
    reply = ScriptedUser.reply

    def fragile(self: ScriptedUser, message: str) -> str | None:
        if "crash the user" in message:
            raise KeyError("persona")
        return reply(self, message)

    monkeypatch.setattr(ScriptedUser, "reply", fragile)


# --- the matrix -----------------------------------------------------------------------------


@dataclass(frozen=True)
class Fault:
    reason: str
    """The faulty attempt's terminal reason."""
    evidence: str
    """Text the stored record or trace must contain."""
    agent: AgentFn | Callable[[], Any] | None = None
    env: EnvironmentFactory | None = None
    valid: bool = True

    def first_agent(self) -> Any:
        if isinstance(self.agent, type):
            return self.agent()
        return FunctionAgent(self.agent or honest)  # type: ignore[arg-type]


FAULTS: dict[str, Fault] = {
    # terminal reasons the agent earns
    "success": Fault("success", "Moved 30 from A to B."),
    "step_limit": Fault("agent_failure/step_limit", "step limit 6 reached", _step_limit),
    "time_limit": Fault("agent_failure/time_limit", "time limit", _sleeps),
    "budget": Fault("agent_failure/budget", "exceeds the budget", _overspends),
    "prohibited_action": Fault("agent_failure/prohibited_action", "read audit", _snoops),
    "gave_up": Fault("agent_failure/gave_up", "the PIN is unknowable", _gives_up),
    "crashed": Fault("agent_failure/crashed", "boom", _raises(RuntimeError("boom"))),
    "incorrect_state": Fault("agent_failure/incorrect_state", "balances", _wrong_amount),
    "constraint_violation": Fault("agent_failure/constraint_violation", "pin-first", _skips_pin),
    # BaseExceptions from an agent end that attempt only
    "system_exit": Fault("agent_failure/crashed", "SystemExit", _raises(SystemExit(3))),
    "keyboard_interrupt": Fault(
        "agent_failure/crashed", "KeyboardInterrupt", _raises(KeyboardInterrupt())
    ),
    "cancelled": Fault(
        "agent_failure/crashed", "CancelledError", _raises(asyncio.CancelledError())
    ),
    "surrogate_in_exception": Fault(
        "agent_failure/crashed", "bad \\\\ud800", _raises(RuntimeError("bad \ud800"))
    ),
    # an unbounded query in a tool, caused by the agent's arguments, stops at the time limit
    "unbounded_sql": Fault(
        "agent_failure/time_limit", "ran past the attempt's time limit", _unbounded_sql
    ),
    # a tool blocked in Python cannot be interrupted: it is left behind, named, and the
    # batch goes on (it used to wait for the tool, holding up every attempt)
    "tool_blocks": Fault("agent_failure/time_limit", '"blocked_in_tool": "nap"', _blocking_tool),
    # adversarial agents (tests/test_adversarial_agents.py has more): a stop cannot be
    # cleared, named by the agent or dodged, odd arguments cannot crash a tool, and a write
    # behind the gateway is no tool call's
    "stop_cleared_on_the_session": Fault(
        "agent_failure/step_limit", "step limit 6 reached", _unlatches
    ),
    "stop_raised_by_the_agent": Fault(
        "agent_failure/crashed", "StepLimitReached", _raises(StepLimitReached("fake"))
    ),
    "negative_usage": Fault(
        "harness_compatibility_failure", "cost must be a non-negative", _credits_itself
    ),
    "two_faced_arguments": Fault("success", '"amount": 30', _two_faced_arguments),
    "write_behind_the_gateway": Fault(
        "agent_failure/prohibited_action",
        "written behind the tool gateway",
        _writes_behind_the_gateway,
    ),
    # protocol mismatches
    "sync_run": Fault("harness_compatibility_failure", "async def", _SyncRun),
    "missing_run": Fault("harness_compatibility_failure", "no run(session)", _NoRun),
    "tool_name_not_str": Fault(
        "harness_compatibility_failure", "a tool name must be a str, got int", _bad_tool_name
    ),
    "message_not_str": Fault(
        "harness_compatibility_failure", "a message must be a str, got list", _bad_message
    ),
    "final_not_str": Fault("harness_compatibility_failure", "run() returned int", _returns_number),
    # the agent's odd input is its own doing and cannot make the attempt invalid
    "args_not_a_dict": Fault(
        "success", "arguments must be an object", _then_honest(_args_not_a_dict)
    ),
    "surrogate_argument": Fault("success", "not encodable text", _then_honest(_surrogate_argument)),
    "int_outside_int64": Fault("success", "outside the 64-bit range", _huge_integer),
    "surrogate_message_and_final": Fault("success", "B \\\\ud800.", _surrogate_everywhere),
    # the environment's faults: invalid
    "setup_oserror": Fault(
        "environment_failure/setup", "No space left", env=_raising(OSError(28, "No space left"))
    ),
    "setup_sqlite_error": Fault(
        "environment_failure/setup",
        "disk I/O error",
        env=_raising(sqlite3.OperationalError("disk I/O error")),
    ),
    "setup_environment_failure": Fault(
        "environment_failure/setup", "no fixture", env=_raising(EnvironmentFailure("no fixture"))
    ),
    "setup_workdir": Fault("environment_failure/setup", "Not a directory", env=_workdir_is_a_file),
    "reset_oserror": Fault(
        "environment_failure/reset", "Input/output error", env=_env(_ResetRaisesOSError)
    ),
    "reset_corruption_undeclared": Fault(
        "environment_failure/reset_check", "the fixture built", env=_env(_CorruptingReset)
    ),
    "tool_crash": Fault("environment_failure/tool_crash", "backend is down", _explodes),
    "final_state": Fault(
        "environment_failure/final_state", "went away", env=_env(_FinalStateUnreadable)
    ),
    "user_simulator": Fault("environment_failure/user_simulator", "KeyError", _crashes_the_user),
    "grader_failure": Fault("grader_failure", "grader bug", _to_c),
    "model_serving": Fault(
        "environment_failure/model_serving",
        "503 after 3 tries",
        _raises(ModelServingFailure("503 after 3 tries", {"status_code": 503})),
    ),
}
INVALID = {"environment_failure", "grader_failure"}


def _run_batch(suite: Suite, fault: Fault, store: RunStore) -> tuple[list[AgentRun], float]:
    agents = iter([fault.first_agent()])
    envs = iter([fault.env or default_environment])

    def make_agent() -> Agent:
        return next(agents, None) or FunctionAgent(honest)

    def make_env(task: AgentTask, suite: Suite) -> SqliteEnvironment:
        return next(envs, default_environment)(task, suite)

    runner = BatchRunner(suite, _system(), store, make_agent=make_agent, make_env=make_env)
    batch = plan_batch(suite, runner.system, BatchConfig(attempts=ATTEMPTS))
    store.add_batch(batch)  # no preflight: the fault is meant to reach the batch
    started = time.perf_counter()
    asyncio.run(runner.resume(batch.batch_id, concurrency=ATTEMPTS, preflight=False))
    return store.runs(batch.batch_id), time.perf_counter() - started


def _stored_text(store: RunStore, run: AgentRun) -> str:
    """The record's evidence and its trace artifact, as read back from the store."""
    trace = store.read_artifact(run.artifact_locations["trace.jsonl"])
    assert load_jsonl(trace) == run.observation_action_log
    checks = [c.model_dump() for c in run.outcome_assertion_results + run.constraint_results]
    return json.dumps([run.infrastructure_status, checks]) + trace + (run.final_message or "")


@pytest.mark.usefixtures("user_crashes")
@pytest.mark.parametrize("name", list(FAULTS))
def test_fault_matrix(matrix_bank: Suite, tmp_path: Path, name: str) -> None:
    fault = FAULTS[name]
    with RunStore(tmp_path / "runs.db") as store:
        runs, seconds = _run_batch(matrix_bank, fault, store)
        assert len(runs) == ATTEMPTS  # every attempt stored, once
        faulty, *others = sorted(runs, key=lambda r: r.attempt)
        assert faulty.terminal_reason == fault.reason, faulty.infrastructure_status
        assert fault.evidence in _stored_text(store, faulty)
        assert [r.terminal_reason for r in others] == ["success"] * (ATTEMPTS - 1)
    expected_valid = fault.reason.split("/")[0] not in INVALID
    assert faulty.valid is expected_valid
    assert sum(r.valid for r in runs) == ATTEMPTS - (not expected_valid)
    assert seconds < 4 * TIME_LIMIT + 2  # nothing hangs the batch


def test_the_matrix_covers_every_terminal_reason() -> None:
    reasons = {fault.reason for fault in FAULTS.values()}
    documented = {
        "success",
        "harness_compatibility_failure",
        "grader_failure",
        *(
            f"agent_failure/{sub}"
            for sub in (
                "step_limit",
                "time_limit",
                "budget",
                "prohibited_action",
                "gave_up",
                "crashed",
                "incorrect_state",
                "constraint_violation",
            )
        ),
        *(
            f"environment_failure/{sub}"
            for sub in (
                "setup",
                "reset",
                "reset_check",
                "tool_crash",
                "final_state",
                "user_simulator",
                "model_serving",
            )
        ),
    }
    assert reasons == documented


# --- recordable strings through the store and a resume ---------------------------------------


class _Killed(BaseException):
    """Stands in for the process being killed between two attempts."""


def test_a_lone_surrogate_survives_the_store_and_a_resume(
    matrix_bank: Suite, tmp_path: Path
) -> None:
    built = iter(range(100))

    def make_agent() -> Agent:
        if next(built) == 1:
            raise _Killed  # the batch dies after its first attempt was stored
        return FunctionAgent(_surrogate_everywhere)

    with RunStore(tmp_path / "runs.db") as store:
        runner = BatchRunner(matrix_bank, _system(), store, make_agent=make_agent)
        batch = plan_batch(matrix_bank, runner.system, BatchConfig(attempts=ATTEMPTS))
        store.add_batch(batch)
        with pytest.raises(_Killed):
            asyncio.run(runner.resume(batch.batch_id, concurrency=1, preflight=False))
        # the first attempt is stored; one already under way when the batch died may be too
        assert 1 <= len(store.runs(batch.batch_id)) < ATTEMPTS
        result = asyncio.run(runner.resume(batch.batch_id, concurrency=1, preflight=False))
        runs = store.runs(batch.batch_id)
    assert len(result.runs) == len(runs) == ATTEMPTS
    assert {r.terminal_reason for r in runs} == {"success"}
    first = runs[0]
    assert first.final_message == "Moved 30 from A to B \\ud800."  # escaped, code point kept
    messages = [e.text for e in first.observation_action_log if isinstance(e, MessageEvent)]
    assert "Hello \\udfff, what is your PIN?" in messages


def _events(run: AgentRun) -> Iterator[ToolCallEvent]:
    return (e for e in run.observation_action_log if isinstance(e, ToolCallEvent))


def test_a_refused_surrogate_argument_is_recorded_escaped(
    matrix_bank: Suite, tmp_path: Path
) -> None:
    fault = FAULTS["surrogate_argument"]
    with RunStore(tmp_path / "runs.db") as store:
        runs, _ = _run_batch(matrix_bank, fault, store)
    first = next(_events(min(runs, key=lambda r: r.attempt)))
    assert first.args == {"account": "A\\ud800"}
    assert first.error_class == "invalid_arguments"


def test_the_clock_table_is_no_reset_blind_spot(matrix_bank: Suite) -> None:
    """A reset that leaves the harness's clock wrong is caught as well (it is in the hash)."""

    class ClockDrifts(SqliteEnvironment):
        def _restore(self) -> None:
            super()._restore()
            self._control.execute(f"UPDATE {META_TABLE} SET value = '2030-01-01' WHERE key='now'")

    task = matrix_bank.tasks["transfer"]
    with pytest.raises(EnvironmentFailure, match="reset gave state"):
        ClockDrifts(matrix_bank.fixture_path(task), clock=task.clock).reset()
