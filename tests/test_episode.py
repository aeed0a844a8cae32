"""Every terminal-reason branch, each with a purpose-built agent or an injected fault."""

from __future__ import annotations

import asyncio
import gc
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from groundstate.agents.base import Session
from groundstate.environments.sqlite import SqliteEnvironment
from groundstate.episode import AttemptInfo, run_attempt
from groundstate.errors import EnvironmentFailure, HarnessCompatibilityError
from groundstate.returned import AgentRaised
from groundstate.spec.suite import Suite
from groundstate.spec.system import BudgetsSection
from groundstate.spec.task import AgentTask
from groundstate.testing import FunctionAgent, attempt, run_solution, scripted_system
from groundstate.trace import ToolCallEvent

from .conftest import BLOCK, HANG, EditTask


async def _verified_transfer(session: Session, target: str = "B") -> str:
    await session.say("What is your PIN?")
    await session.call("check_pin", {"account": "A", "pin": "1234"})
    await session.call("transfer", {"source": "A", "target": target, "amount": 30})
    return "done"


def _run(suite: Suite, fn: Any, **kwargs: Any) -> Any:
    return attempt(suite, "transfer", FunctionAgent(fn), **kwargs).run


def test_success_needs_outcome_and_every_constraint(bank: Suite) -> None:
    run = _run(bank, _verified_transfer)
    assert run.terminal_reason == "success" and run.success
    assert run.partial_score == 1.0
    assert run.initial_state_hash != run.final_state_hash
    assert all(r.passed for r in run.outcome_assertion_results + run.constraint_results)


def test_wrong_state_is_incorrect_state_with_evidence(bank: Suite) -> None:
    async def wrong(session: Session) -> str:
        return await _verified_transfer(session, target="C")

    run = _run(bank, wrong)
    assert run.terminal_reason == "agent_failure/incorrect_state"
    balances = next(r for r in run.outcome_assertion_results if r.id == "balances")
    assert balances.evidence["rows"] == [["A", 70], ["B", 50], ["C", 30]]


def test_claiming_success_without_acting_fails(bank: Suite) -> None:
    run = run_solution(bank, "transfer", "bad_claims")
    assert run.terminal_reason == "agent_failure/incorrect_state"
    assert run.final_message == "I have moved the money."
    assert run.initial_state_hash == run.final_state_hash


def test_constraint_violation_names_the_offending_step(bank: Suite) -> None:
    run = run_solution(bank, "transfer", "bad_no_pin")
    assert run.terminal_reason == "agent_failure/constraint_violation"
    pin_first = next(r for r in run.constraint_results if r.id == "pin-first")
    assert not pin_first.passed
    assert pin_first.evidence["offending_step"]["tool"] == "transfer"
    assert run.partial_score == pytest.approx(0.75)


def test_step_limit(bank: Suite) -> None:
    async def chatty(session: Session) -> None:
        for _ in range(10):
            await session.call("balance", {"account": "A"})

    run = _run(bank, chatty)
    assert run.terminal_reason == "agent_failure/step_limit"
    assert len(run.observation_action_log) == 1 + 6  # the request, then six calls


def test_time_limit(edited_bank: EditTask) -> None:
    suite = edited_bank(lambda t: t.update(time_limit=0.05))

    async def slow(session: Session) -> None:
        await asyncio.sleep(5)

    assert _run(suite, slow).terminal_reason == "agent_failure/time_limit"


def _too_late(future: asyncio.Future[Any]) -> bool:
    """Whether *future* holds the late agent's failure (as an exception, or as the outcome)."""
    if str(getattr(future, "_exception", None)) == "too late":
        return True
    outcome = getattr(future, "_result", None)
    raised = outcome[-1] if isinstance(outcome, tuple) and outcome else None
    return isinstance(raised, AgentRaised) and "too late" in raised.message


def _late_outcomes() -> list[asyncio.Future[Any]]:
    """The futures holding the late agent's failure, found by their outcome without reading
    it (``exception()`` marks a future read): what the agent raised comes as data, with the
    time it ended (see ``episode._run_to_end``)."""
    return [
        future
        for future in gc.get_objects()
        if isinstance(future, asyncio.Future)
        and not isinstance(future, asyncio.Task)
        and _too_late(future)
    ]


def test_an_abandoned_agent_that_fails_later_is_not_logged_as_unread(
    edited_bank: EditTask,
) -> None:
    """Its error is nobody's to read; left unread, asyncio logs it (with a traceback) whenever
    the garbage collector meets the future, in whatever code is running then."""
    suite = edited_bank(lambda t: t.update(time_limit=0.05))
    ended, released = threading.Event(), threading.Event()

    async def blocks_then_fails(session: Session) -> None:
        ended.wait(BLOCK)  # holds its thread past the limit, until the attempt has ended
        released.set()
        raise RuntimeError("too late")

    loop = asyncio.new_event_loop()  # kept open, as a batch's loop is
    try:
        info = AttemptInfo(run_id="r", batch_id="b", attempt=1, seed=0)
        output = loop.run_until_complete(
            run_attempt(
                suite.tasks["transfer"],
                suite,
                scripted_system(),
                FunctionAgent(blocks_then_fails),
                info,
            )
        )
        assert output.run.terminal_reason == "agent_failure/time_limit"
        ended.set()
        assert released.wait(HANG)
        deadline = time.monotonic() + HANG  # the late outcome is delivered (a loaded
        late = _late_outcomes()  # machine's agent thread may take its time to end)
        while not late and time.monotonic() < deadline:
            loop.run_until_complete(asyncio.sleep(0.05))
            late = _late_outcomes()
    finally:
        loop.close()
    assert late
    assert not any(future._log_traceback for future in late)  # type: ignore[attr-defined]


def test_prohibited_read_is_denied_recorded_and_changes_nothing(bank: Suite) -> None:
    async def snoop(session: Session) -> None:
        await session.call("read_audit", {})

    run = _run(bank, snoop)
    assert run.terminal_reason == "agent_failure/prohibited_action"
    call = run.observation_action_log[-1]
    assert isinstance(call, ToolCallEvent)
    assert call.error_class == "permission_denied" and not call.ok
    assert call.output is None and "audit" in (call.error or "")
    assert run.initial_state_hash == run.final_state_hash


def test_prohibited_action_can_be_recorded_without_ending(edited_bank: EditTask) -> None:
    suite = edited_bank(
        lambda t: t.update(terminal_conditions={"on_prohibited_action": "continue"})
    )

    async def snoop_then_work(session: Session) -> str:
        denied = await session.call("read_audit", {})
        assert denied.error_class == "permission_denied"
        return await _verified_transfer(session)

    assert _run(suite, snoop_then_work).terminal_reason == "success"


def test_gave_up(bank: Suite) -> None:
    async def quitter(session: Session) -> None:
        session.give_up("cannot find the account")

    assert _run(bank, quitter).terminal_reason == "agent_failure/gave_up"


def test_crashing_agent_counts_against_the_system(bank: Suite) -> None:
    async def crash(session: Session) -> None:
        raise KeyError("bug in the agent")

    run = _run(bank, crash)
    assert run.terminal_reason == "agent_failure/crashed"
    assert run.infrastructure_status["exception"]["type"] == "KeyError"


def test_harness_compatibility_failure(bank: Suite) -> None:
    async def incompatible(session: Session) -> None:
        raise HarnessCompatibilityError("model returned no tool-call format")

    assert _run(bank, incompatible).terminal_reason == "harness_compatibility_failure"


def test_budget(bank: Suite) -> None:
    system = scripted_system().model_copy(update={"budgets": BudgetsSection(max_cost=0.01)})

    async def spender(session: Session) -> None:
        session.record_usage(input_tokens=1000, output_tokens=10, cost=0.02)

    run = _run(bank, spender, system=system)
    assert run.terminal_reason == "agent_failure/budget"
    assert run.cost == pytest.approx(0.02) and run.usage.input_tokens == 1000


def test_crashing_tool_is_an_environment_failure(bank: Suite) -> None:
    async def call_broken(session: Session) -> None:
        await session.call("explode", {})

    run = _run(bank, call_broken)
    assert run.terminal_reason == "environment_failure/tool_crash"
    assert not run.valid
    event = run.observation_action_log[-1]
    assert isinstance(event, ToolCallEvent) and event.error_class == "environment_error"
    assert run.infrastructure_status["exception"]["message"].endswith("the tool backend is down")
    assert run.infrastructure_status["health_after"]["ok"] is True


def test_reset_check_mismatch_is_an_environment_failure(edited_bank: EditTask) -> None:
    suite = edited_bank(lambda t: t.update(reset_check={"initial_state_hash": "0" * 64}))
    run = _run(suite, _verified_transfer)
    assert run.terminal_reason == "environment_failure/reset_check"
    assert run.observation_action_log == []


def test_missing_fixture_is_an_environment_failure(edited_bank: EditTask) -> None:
    suite = edited_bank(lambda t: None)
    (suite.root / "fixtures" / "bank.sql").write_text("CREATE TABLE broken (")
    run = _run(suite, _verified_transfer)
    assert run.terminal_reason == "environment_failure/setup"
    assert "bank.sql" in run.infrastructure_status["exception"]["message"]


def test_broken_grader_is_a_grader_failure(edited_bank: EditTask) -> None:
    def add_broken_check(task: dict[str, Any]) -> None:
        task["outcome_assertions"].append({"id": "broken", "check": "checks.py:broken"})

    run = _run(edited_bank(add_broken_check), _verified_transfer)
    assert run.terminal_reason == "grader_failure"
    broken = next(r for r in run.outcome_assertion_results if r.id == "broken")
    assert broken.error == "ZeroDivisionError: grader bug"
    assert not run.valid


def test_bad_sql_in_an_assertion_is_a_grader_failure(edited_bank: EditTask) -> None:
    def bad_sql(task: dict[str, Any]) -> None:
        task["outcome_assertions"][0]["sql"] = "SELECT nope FROM nowhere"

    assert _run(edited_bank(bad_sql), _verified_transfer).terminal_reason == "grader_failure"


def test_evaluator_view_cannot_be_written_by_a_check(edited_bank: EditTask, tmp_path: Path) -> None:
    def writing_check(task: dict[str, Any]) -> None:
        task["outcome_assertions"].append({"id": "writes", "check": "checks.py:writes"})

    root = edited_bank(lambda task: None).root  # the copy, before a check names the function
    with (root / "checks.py").open("a") as handle:
        handle.write(
            "\n\ndef writes(s0, sT):\n    sT.query('DELETE FROM accounts')\n    return True\n"
        )
    run = _run(edited_bank(writing_check), _verified_transfer)
    writes = next(r for r in run.outcome_assertion_results if r.id == "writes")
    assert writes.error is not None and "readonly" in writes.error.replace(" ", "").lower()


def test_trace_records_each_call_with_its_effects(edited_bank: EditTask) -> None:
    async def with_mistakes(session: Session) -> str:
        bad_args = await session.call("balance", {"account": 7})
        assert bad_args.error_class == "invalid_arguments"
        unknown = await session.call("teleport", {})
        assert unknown.error_class == "unknown_tool"
        refused = await session.call("check_pin", {"account": "A", "pin": "0000"})
        assert (refused.error_class, refused.error) == ("tool_error", "wrong account or PIN")
        return await _verified_transfer(session)

    run = _run(edited_bank(lambda t: t.update(step_limit=20)), with_mistakes)
    calls = [e for e in run.observation_action_log if isinstance(e, ToolCallEvent)]
    assert [c.error_class for c in calls] == [
        "invalid_arguments",
        "unknown_tool",
        "tool_error",
        None,
        None,
    ]
    assert calls[-1].changed_tables == ["accounts", "transfers"]
    assert calls[-2].changed_tables == []
    assert all(c.duration_ms >= 0 for c in calls)
    assert run.terminal_reason == "success"  # mistakes the agent recovered from cost nothing


def test_values_that_are_not_json_never_break_the_record(bank: Suite) -> None:
    async def odd(session: Session) -> Any:
        bad = await session.call("balance", {"account": {1, 2}})  # a set is not JSON
        assert bad.error_class == "invalid_arguments"
        await session.call("opaque", {})
        return {"not": "a string"}

    run = _run(bank, odd)
    assert run.terminal_reason == "environment_failure/tool_crash"  # the tool is broken
    message = run.infrastructure_status["exception"]["message"]
    assert "opaque returned 'object', which is not JSON" in message
    assert run.model_dump_json()  # the record stays storable
    assert run.initial_state_hash is not None


def test_a_final_message_that_is_not_text_is_a_protocol_mismatch(bank: Suite) -> None:
    async def returns_dict(session: Session) -> Any:
        await _verified_transfer(session)
        return {"status": "done"}

    run = _run(bank, returns_dict)
    assert run.terminal_reason == "harness_compatibility_failure"  # not str or None
    assert run.valid  # the system's fault, counted against it
    assert run.final_message == "{'status': 'done'}"  # kept as evidence
    assert "run() returned dict" in run.infrastructure_status["exception"]["message"]


class _ResetFails(SqliteEnvironment):
    def reset(self, *, seed: int | None = None) -> str:
        raise EnvironmentFailure("the database server refused the connection")


class _FinalStateUnreadable(SqliteEnvironment):
    """Resets and serves the agent normally; reading the final state fails (a reset checks
    the file's bytes and does not read the state)."""

    def state_hash(self) -> str:
        raise EnvironmentFailure("the disk went away")


@pytest.mark.parametrize(
    ("environment", "reason"),
    [
        (_ResetFails, "environment_failure/reset"),
        (_FinalStateUnreadable, "environment_failure/final_state"),
    ],
)
def test_environment_failures_at_reset_and_at_the_end(
    bank: Suite, environment: type[SqliteEnvironment], reason: str
) -> None:
    def make_env(task: AgentTask, suite: Suite) -> SqliteEnvironment:
        return environment(suite.fixture_path(task), clock=task.clock, permissions=task.permissions)

    info = AttemptInfo(run_id="r", batch_id="b", attempt=1, seed=0)
    task = bank.tasks["transfer"]
    agent = FunctionAgent(_verified_transfer)
    run = asyncio.run(run_attempt(task, bank, scripted_system(), agent, info, make_env)).run
    assert run.terminal_reason == reason
    assert not run.valid and "exception" in run.infrastructure_status
