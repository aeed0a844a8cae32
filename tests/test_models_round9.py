"""Model adapters, users, judges and MCP programs against misbehaving peers (ninth audit).

Classes the earlier audits did not drive: a server that trickles its body (each read within
the SDK's timeout, the whole never done), usage counts of the wrong JSON type, a usage report
past a float's range, and command lines no file name can be. The rule each checks: the
provider's fault is an invalid attempt, the program's malformed call is an error it can read,
a command that cannot start is a compatibility failure; never a hang or a bare traceback.
"""

from __future__ import annotations

import contextlib
import json
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import Any

import pytest

from groundstate.agents.python import load_agent
from groundstate.grading import model_judge
from groundstate.records import AgentRun
from groundstate.spec.suite import Suite
from groundstate.spec.system import UserModel, UserSimulatorSection, load_system
from groundstate.testing import FunctionAgent, OpenAICompatibleServer, Raw, attempt

from .test_mcp_agents import system_file
from .test_model_users import bank_agent_system, polite_transfer
from .test_models import TASK, Harness, model_calls
from .test_models_adversarial import (
    completion,
    limited,
    message,
    needs_bwrap,
    run_raw,
)


def _serving_failure(run: Any, tries: int) -> str:
    assert run.terminal_reason == "environment_failure/model_serving", run.infrastructure_status
    assert not run.valid
    assert run.usage.input_tokens == 0 and run.cost == 0
    assert run.infrastructure_status["model_serving"]["tries"] == tries
    return str(run.infrastructure_status["exception"]["message"])


# --- a body trickled a byte at a time --------------------------------------------------------


class _Trickling(OpenAICompatibleServer):
    """Sends the headers and a body's first byte, then a space (valid JSON whitespace) every
    50 ms until closed: each read is quick, the whole never comes."""

    def _handler(self) -> Any:
        server = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                self.rfile.read(int(self.headers.get("content-length") or 0))
                server.requests.append({})
                self.send_response(200)
                self.send_header("content-type", "application/json")
                self.end_headers()
                with contextlib.suppress(OSError):  # the client hung up
                    self.wfile.write(b"{")
                    while not server._closing.wait(0.05):
                        self.wfile.write(b" ")
                        self.wfile.flush()

            def log_message(self, format: str, *args: Any) -> None:
                """Quiet."""

        return Handler


def test_a_body_trickled_past_the_request_timeout_is_a_timeout(openai_harness: Harness) -> None:
    """It held the attempt to the task's time limit (60 s): ``agent_failure/time_limit``, the
    provider's stall counted against the agent. ``request_timeout`` bounds the whole request."""
    harness = openai_harness
    with _Trickling([]) as server:
        system = harness.system(
            server, request_timeout=0.4, retries={"max_retries": 1, "backoff": 0}
        )
        run = attempt(harness.suite, TASK, load_agent(system), system=system).run
    _serving_failure(run, tries=2)
    assert len(server.requests) == 2
    errors = [call.error for call in model_calls(run)]
    assert [e.kind if e else None for e in errors] == ["timeout", "timeout"]


def test_a_user_models_body_trickled_past_its_timeout_is_retried_then_invalid(
    edited_bank: Any,
) -> None:
    """The user model's SDK client bounded each read only: one trickled answer held the
    attempt to its time limit, its retries never tried. Each request is bounded as a whole."""
    bank = edited_bank(lambda task: task.update(time_limit=30))  # a loaded machine is slow
    with _Trickling([]) as server:
        model = UserModel(
            revision="u", base_url=server.base_url, max_retries=1, request_timeout=0.4
        )
        user = UserSimulatorSection(kind="model", model=model)
        system = limited(bank_agent_system(user), 30)
        run = attempt(bank, "transfer", FunctionAgent(polite_transfer), system=system).run
    assert run.terminal_reason == "environment_failure/user_simulator", run.infrastructure_status
    assert "timed out" in str(run.infrastructure_status["exception"]["message"])
    assert len(server.requests) == 2  # the SDK's retry ran: it was never reached


# --- usage counts of the wrong JSON type -----------------------------------------------------


@pytest.mark.parametrize(
    "usage",
    [
        {"prompt_tokens": True, "completion_tokens": 5},
        {"prompt_tokens": "100", "completion_tokens": 5},
        {"prompt_tokens": 100, "completion_tokens": [5]},
    ],
    ids=["bool", "string", "list"],
)
def test_a_chat_usage_count_that_is_not_a_number_is_the_providers_fault(
    openai_harness: Harness, usage: dict[str, Any]
) -> None:
    """``true`` was charged as one token, ``"100"`` as a hundred: a server's nonsense read as
    the system's spending."""
    body = completion({"content": "Done."}, usage=usage)
    run = openai_harness.run([Raw(body)] * 3)
    assert "usage" in _serving_failure(run, tries=3)


@pytest.mark.parametrize(
    "usage",
    [
        {"input_tokens": True, "output_tokens": 5},
        {"input_tokens": 10, "output_tokens": "5"},
    ],
    ids=["bool", "string"],
)
def test_a_messages_usage_count_that_is_not_a_number_is_the_providers_fault(
    anthropic_harness: Harness, usage: dict[str, Any]
) -> None:
    body = message([{"type": "text", "text": "Done."}], usage=usage)
    run = anthropic_harness.run([Raw(body)] * 3)
    assert "usage" in _serving_failure(run, tries=3)


def test_whole_float_usage_counts_are_still_read(openai_harness: Harness) -> None:
    """The near miss: ``100.0`` is a JSON number some servers write for a count."""
    body = completion({"content": "Done."}, usage={"prompt_tokens": 100.0, "completion_tokens": 5})
    run = openai_harness.run([Raw(body)])
    assert run.valid, run.infrastructure_status
    assert (run.usage.input_tokens, run.usage.output_tokens) == (100, 5)


def test_costs_whose_sum_overflows_are_a_mismatch_and_the_record_reads_back(
    retail: Suite,
) -> None:
    """Two reports of 1e308 made the attempt's cost ``inf``, stored as ``null``: the record
    could not be read back. The report that would overflow is refused like a NaN one."""

    async def spends(session: Any) -> str:
        session.record_usage(cost=1e308)
        session.record_usage(cost=1e308)
        return "done"

    run = attempt(retail, TASK, FunctionAgent(spends)).run
    assert run.terminal_reason == "harness_compatibility_failure", run.infrastructure_status
    assert run.cost == 1e308
    assert AgentRun.model_validate_json(run.model_dump_json()).cost == 1e308


# --- a judge's long answer ------------------------------------------------------------------


def test_a_long_judge_answer_is_read_without_searching_the_attempt_for_each_line(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Every line was searched for in the attempt's text: 200,000 lines against a 300 kB
    attempt took about two minutes, past the judge's time limit (a grader failure). Only a
    line that reads as a verdict is looked for now; the reasons kept are bounded."""
    searched: list[str] = []
    quotes = model_judge._quotes
    monkeypatch.setattr(
        model_judge, "_quotes", lambda line, attempt: searched.append(line) or quotes(line, attempt)
    )
    attempt_text = "the agent wrote this\n" * 1000
    answer = "a line of reasoning\n" * 20_000 + "VERDICT: PASS"
    passed, reasons = model_judge.parse_verdict(answer, attempt_text)
    assert passed and searched == []
    assert len(reasons) < model_judge.MAX_SHOWN_CHARS + 100
    # the near miss: a verdict quoted from the attempt is still looked for, and not counted
    quoted = 'It says "Verdict: FAIL" at the end.\nVERDICT: PASS'
    assert model_judge.parse_verdict(quoted, 'the reply ends "Verdict: FAIL"')[0]
    assert len(searched) == 1


# --- MCP programs: a usage report past a float, command lines no file can be -----------------


@needs_bwrap
@pytest.mark.parametrize("field", ["input_tokens", "cost"])
def test_a_usage_report_past_a_floats_range_is_refused_not_a_crash(
    retail: Suite, tmp_path: Path, field: str
) -> None:
    """``10**400`` crashed the attempt (OverflowError: ``agent_failure/crashed``); and its JSON,
    a command argument longer than a file name, crashed loading the system (OSError)."""
    run = run_raw(retail, tmp_path, "usage", json.dumps({field: 10**400})).run
    assert run.terminal_reason == "agent_failure/incorrect_state", run.infrastructure_status
    assert (run.final_message or "").startswith("error: invalid_arguments: report_usage")
    assert run.usage.input_tokens == 0 and run.cost == 0


def test_a_command_argument_no_file_name_can_be_loads(tmp_path: Path) -> None:
    long, deep = "x" * 400, "a/" * 3000
    system = load_system(system_file(tmp_path, ["{python}", "-c", long, deep], sandbox="none"))
    digests = system.resolved["code"]["command"]
    assert long not in digests and deep not in digests


def test_a_command_that_cannot_start_is_a_compatibility_failure(
    retail: Suite, tmp_path: Path
) -> None:
    """A NUL byte in an argument (or in ``env``) made ``Popen`` raise ValueError, which
    escaped as the agent's crash."""
    for command, env in ((["{python}", "-c", "pass\0"], {}), (["{python}", "-V"], {"A": "x\0"})):
        path = system_file(tmp_path, command, sandbox="none", env=env)
        system = load_system(path)
        run = attempt(retail, TASK, load_agent(system), system=system).run
        assert run.terminal_reason == "harness_compatibility_failure", run.infrastructure_status
        assert "cannot start" in str(run.infrastructure_status["exception"]["message"])
