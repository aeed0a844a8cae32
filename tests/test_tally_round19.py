"""Calls outside the session on every environment kind, nineteenth round: an in-process agent
that enters ``env.tool_transaction()`` itself (directly, through a tool gateway of its own, or
from a thread it left that writes as grading starts) changed the state of a PostgreSQL or a
workspace attempt with no trace and passed; only SQLite counted the calls it entered. Each
kind now counts them in its base (:class:`ClosesOnExit`), so a new kind is counted too. And
writes made with no call at all: the workspace's files written by the agent's own code, and
PostgreSQL's tables through a connection of its own, passed; both kinds now find them."""

from __future__ import annotations

import shutil
import threading
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml

from groundstate.agents.base import Session
from groundstate.environments.base import CallEffects, ClosesOnExit
from groundstate.episode import GRADING
from groundstate.gateway import ToolGateway
from groundstate.spec.suite import Suite, load_suite, with_environment
from groundstate.testing import FunctionAgent, attempt
from groundstate.tools import ToolContext

from .conftest import BANK, HANG, HERE

WORKSPACE = HERE / "suites" / "workspace_mini"
FIXED = "def add(a, b):\n    return a + b\n"


@dataclass(frozen=True)
class Case:
    """One environment kind's task: the change that passes it, and what the agent says."""

    kind: str
    task: str
    tool: str
    args: dict[str, Any]
    reply: str
    before: tuple[tuple[str, dict[str, Any]], ...] = ()
    """Calls the task needs before the change (the bank's PIN)."""

    def suite(self, copy_to: Path | None = None) -> Suite:
        """The suite; *copy_to*: a copy of it there, its task given 30 steps."""
        root = WORKSPACE if self.kind == "workspace" else BANK
        if copy_to is not None:
            root = Path(shutil.copytree(root, copy_to / root.name))
            task_file = root / "tasks" / f"{self.task}.yaml"
            data = yaml.safe_load(task_file.read_text())
            task_file.write_text(yaml.safe_dump({**data, "step_limit": 30}))
        suite = load_suite(root)
        if self.kind == "postgres":
            from .test_postgres import needs_postgres

            needs_postgres()
            return with_environment(suite, "postgres")
        return suite


BANK_CASE = {"task": "transfer", "tool": "transfer", "reply": "Moved 30 from A to B."}
TRANSFER = {"source": "A", "target": "B", "amount": 30}
PIN = (("check_pin", {"account": "A", "pin": "1234"}),)
CASES = [
    Case("sqlite", args=TRANSFER, before=PIN, **BANK_CASE),
    Case("postgres", args=TRANSFER, before=PIN, **BANK_CASE),
    Case("workspace", "fix-add", "write_file", {"path": "src/calc.py", "content": FIXED}, "Done."),
]


@pytest.fixture(params=CASES, ids=[case.kind for case in CASES])
def case(request: pytest.FixtureRequest) -> Case:
    return request.param  # type: ignore[no-any-return]


def _harness(session: Session) -> Any:
    return session._session  # type: ignore[attr-defined]


def _change_directly(case: Case, harness: Any) -> None:
    env, tool = harness._gateway._env, harness._tools[case.tool]
    with env.tool_transaction():
        tool.fn(ToolContext(env), **case.args)


def _run(
    case: Case, agent: Callable[[Session], Awaitable[str]], copy_to: Path | None = None
) -> Any:
    return attempt(case.suite(copy_to), case.task, FunctionAgent(agent)).run


def _prohibited(run: Any) -> None:
    assert run.terminal_reason == "agent_failure/prohibited_action", run.infrastructure_status
    assert not run.success
    message = run.infrastructure_status["exception"]["message"]
    assert "called the environment outside the session" in message


# --- adversaries ------------------------------------------------------------------------------


def test_a_change_in_a_transaction_of_the_agents_own_is_prohibited(case: Case) -> None:
    async def agent(session: Session) -> str:
        _change_directly(case, _harness(session))  # the bank's PIN never asked
        return case.reply

    _prohibited(_run(case, agent))


def test_a_change_through_a_gateway_of_the_agents_own_is_prohibited(case: Case) -> None:
    async def agent(session: Session) -> str:
        gateway = _harness(session)._gateway
        own = ToolGateway(gateway._tools, gateway._env, lambda event: None, lambda: 0.0)
        assert own.call(1, case.tool, dict(case.args)).ok
        return case.reply

    _prohibited(_run(case, agent))


def test_a_change_hidden_among_honest_calls_is_prohibited(case: Case) -> None:
    """The honest calls are traced; one more, made off the session, is not."""

    async def agent(session: Session) -> str:
        for tool, args in case.before:
            await session.call(tool, args)
        _change_directly(case, _harness(session))
        await session.call(case.tool, dict(case.args))
        return case.reply

    _prohibited(_run(case, agent))


def test_a_thread_left_writing_as_grading_starts_is_prohibited(case: Case) -> None:
    """The agent does nothing and leaves a thread that makes the change once grading starts
    (the episode's ``GRADING`` hook lets it go, and waits for it)."""
    go, done, failed = threading.Event(), threading.Event(), []

    def leftover(harness: Any) -> None:
        try:
            if go.wait(HANG):
                _change_directly(case, harness)
        except Exception as exc:  # told to the test below
            failed.append(exc)
        finally:
            done.set()

    async def agent(session: Session) -> str:
        threading.Thread(target=leftover, args=(_harness(session),), daemon=True).start()
        return case.reply

    def at_grading() -> None:
        go.set()
        done.wait(HANG)

    token = GRADING.set(at_grading)
    try:
        run = _run(case, agent)
    finally:
        GRADING.reset(token)
        go.set()
        done.wait(HANG)
    assert not failed
    _prohibited(run)


def test_a_count_sent_back_by_hand_still_disagrees(case: Case) -> None:
    """The tally's generator only counts up: a negative sent to it reads it."""

    async def agent(session: Session) -> str:
        env = _harness(session)._gateway._env
        _change_directly(case, _harness(session))
        env._entered._count.send(-1)
        env._entered._count.send(False)
        return case.reply

    _prohibited(_run(case, agent))


def test_a_count_broken_by_the_agent_is_prohibited(case: Case) -> None:
    async def agent(session: Session) -> str:
        _harness(session)._gateway._env._entered._count.close()
        await session.call(case.tool, dict(case.args))
        return case.reply

    run = _run(case, agent)
    assert run.terminal_reason == "agent_failure/prohibited_action", run.infrastructure_status
    assert "broke the environment's count" in run.infrastructure_status["exception"]["message"]


# --- compliant controls -----------------------------------------------------------------------


def _honest(case: Case) -> Callable[[Session], Awaitable[str]]:
    async def agent(session: Session) -> str:
        if case.before:
            await session.say("What is your PIN?")
        for tool, args in case.before:
            await session.call(tool, args)
        result = await session.call(case.tool, dict(case.args))
        assert result.ok, result.error
        return case.reply

    return agent


def test_an_honest_agent_passes(case: Case) -> None:
    run = _run(case, _honest(case))
    assert run.terminal_reason == "success", run.infrastructure_status


ERRORS = {
    "sqlite": [("check_pin", {"account": "A", "pin": "0000"}), ("balance", {"account": "Z"})],
    "workspace": [
        ("read_file", {"path": "no/such.py"}),
        ("write_file", {"path": "../out.py", "content": ""}),
    ],
}
ERRORS["postgres"] = ERRORS["sqlite"]
REFUSED = [("no_such_tool", {}), ("balance", {"account": 7})]  # refused before the environment


def test_tool_errors_and_retries_then_the_task_pass(case: Case, tmp_path: Path) -> None:
    """Calls that fail in the tool (rolled back), calls the gateway refuses before entering
    the environment, and each retried, then the task done: every entered call is traced."""
    honest = _honest(case)
    refused = [(tool, args) for tool, args in REFUSED if case.kind != "workspace" or not args]

    async def agent(session: Session) -> str:
        for tool, args in ERRORS[case.kind] + refused:
            for _ in range(2):  # the same failing call retried
                assert not (await session.call(tool, args)).ok
        return await honest(session)

    run = _run(case, agent, copy_to=tmp_path)
    assert run.terminal_reason == "success", run.infrastructure_status
    classes = {e.error_class for e in run.observation_action_log if getattr(e, "tool", None)}
    assert {"tool_error", "unknown_tool"} <= classes


# --- a new kind is counted for free -----------------------------------------------------------


class _Kind(ClosesOnExit):
    def __init__(self) -> None:
        self.log: list[str] = []

    @contextmanager
    def tool_transaction(self) -> Iterator[CallEffects]:
        self.log.append("kind")
        yield CallEffects()

    def close(self) -> None:
        pass


class _Sub(_Kind):
    @contextmanager
    def tool_transaction(self) -> Iterator[CallEffects]:
        with super().tool_transaction() as effects:
            yield effects


class _Inherits(_Kind):
    pass


@pytest.mark.parametrize("kind", [_Kind, _Sub, _Inherits])
def test_a_kind_of_its_own_counts_each_call_once(kind: type[_Kind]) -> None:
    with kind() as env:
        assert env.calls_entered() == 0
        for _ in range(3):
            with env.tool_transaction():
                pass
        with pytest.raises(RuntimeError), env.tool_transaction():
            raise RuntimeError("a failing call is entered too")
        assert env.calls_entered() == 4
        assert env.log == ["kind"] * 4
        assert not hasattr(type(env).tool_transaction, "__wrapped__")  # no uncounted handle


# --- a workspace written behind its gateway ---------------------------------------------------
# The workspace kind had no ``written_outside_calls``: an in-process agent that wrote the work
# tree's files itself (no tool call at all) was graded on them, a success.

WS = CASES[2]


def _behind(run: Any, found: str) -> None:
    assert run.terminal_reason == "agent_failure/prohibited_action", run.infrastructure_status
    message = run.infrastructure_status["exception"]["message"]
    assert f"the work tree changed outside the tool calls (found {found})" in message


def _env(session: Session) -> Any:
    return _harness(session)._gateway._env


async def _writes_the_file_itself(session: Session) -> str:
    (_env(session).root / "src" / "calc.py").write_text(FIXED)
    return "Fixed add."


async def _uses_its_handle_outside_a_call(session: Session) -> str:
    _env(session).handle.write("src/calc.py", FIXED)
    return "Fixed add."


async def _writes_then_calls_then_undoes(session: Session) -> str:
    """A test file planted behind the gateway for a call to see, removed before the end."""
    planted = _env(session).root / "src" / "planted.py"
    planted.write_text("X = 1\n")
    await session.call("write_file", {"path": "src/calc.py", "content": FIXED})
    planted.unlink()
    return "Fixed add."


@pytest.mark.parametrize(
    ("agent", "found"),
    [
        (_writes_the_file_itself, "as the attempt ended"),
        (_uses_its_handle_outside_a_call, "as the attempt ended"),
        (_writes_then_calls_then_undoes, "as a call began"),
    ],
)
def test_a_work_tree_written_outside_the_calls_is_prohibited(
    agent: Callable[[Session], Awaitable[str]], found: str
) -> None:
    _behind(_run(WS, agent), found)


def test_a_thread_left_writing_the_tree_as_grading_starts_is_prohibited() -> None:
    go, done = threading.Event(), threading.Event()

    def leftover(root: Path) -> None:
        try:
            if go.wait(HANG):
                (root / "src" / "calc.py").write_text(FIXED)
        finally:
            done.set()

    async def agent(session: Session) -> str:
        threading.Thread(target=leftover, args=(_env(session).root,), daemon=True).start()
        return "Fixed add."

    def at_grading() -> None:
        go.set()
        done.wait(HANG)

    token = GRADING.set(at_grading)
    try:
        run = _run(WS, agent)
    finally:
        GRADING.reset(token)
        go.set()
        done.wait(HANG)
    _behind(run, "as the attempt ended")


def test_failed_and_undone_calls_leave_nothing_to_find() -> None:
    """Calls that fail and are undone (a write outside the tree, a file over the tree's
    limits), a read of what is not there, then the fix: a success."""

    async def agent(session: Session) -> str:
        for args in [
            {"path": "../out.py", "content": "x"},
            {"path": "src/big.py", "content": "#" * (2 * 1024 * 1024)},
        ]:
            await session.call("write_file", args)
        await session.call("read_file", {"path": "src/none.py"})
        await session.call("write_file", {"path": "src/calc.py", "content": FIXED})
        return "Fixed add."

    run = _run(WS, agent)
    assert run.terminal_reason == "success", run.infrastructure_status


# --- PostgreSQL written behind its gateway ----------------------------------------------------
# The write log's triggers fire for every connection; rows no call took were written outside
# the calls. Before, the SQL checks saw the transfer, the diff did not (a task checked by SQL
# alone passed).

PG = CASES[1]
MOVE = [
    "UPDATE accounts SET balance = balance - 30 WHERE id = 'A'",
    "UPDATE accounts SET balance = balance + 30 WHERE id = 'B'",
]


async def _writes_through_a_connection_of_its_own(session: Session) -> str:
    connection = _env(session)._open()  # the harness's role, a connection of the agent's
    for sql in MOVE:
        connection.execute(sql)
    connection.commit()
    connection.close()
    return "Moved 30 from A to B."


async def _writes_through_the_raw_handle_then_calls(session: Session) -> str:
    """The agent connection's own handle used outside a call; a call after it would have
    taken the writes as its own."""
    for sql in MOVE:
        _env(session)._agent_raw.execute(sql)
    await session.call("balance", {"account": "A"})
    return "Moved 30 from A to B."


@pytest.mark.parametrize(
    ("agent", "found"),
    [
        (_writes_through_a_connection_of_its_own, "as the attempt ended"),
        (_writes_through_the_raw_handle_then_calls, "as a call began"),
    ],
)
def test_a_database_written_outside_the_calls_is_prohibited(
    agent: Callable[[Session], Awaitable[str]], found: str
) -> None:
    run = _run(PG, agent)
    assert run.terminal_reason == "agent_failure/prohibited_action", run.infrastructure_status
    message = run.infrastructure_status["exception"]["message"]
    assert f"2 row writes outside the tool calls (found {found})" in message
    assert _run(PG, _honest(PG)).terminal_reason == "success"  # the database was reloaded
