"""Fifth audit of external agents over MCP: programs that misbehave as processes (exit mid-call,
linger after ``finish`` ignoring SIGTERM, leave a child in its own session) and at the protocol
level (requests a server does not serve, floods, odd and duplicate ids, calls past the step
limit, malformed arguments, answers never read, a whole budget spent initialising).

Each attempt must end with the taxonomy's terminal reason, within the time limit plus a small
grace, and leave no process behind. The programs are ``mcp_programs/round5.py``.
"""

from __future__ import annotations

import json
import os
import signal
import time
import uuid
from pathlib import Path
from typing import Any

import pytest

from groundstate.agents.python import load_agent
from groundstate.episode import AttemptOutput
from groundstate.sandbox import find_bwrap
from groundstate.spec.suite import Suite, load_suite
from groundstate.spec.system import load_system
from groundstate.testing import attempt
from groundstate.trace import ToolCallEvent

from .conftest import EXAMPLES, HANG
from .test_mcp_agents import process_running, system_file

pytestmark = pytest.mark.skipif(find_bwrap() is None, reason="no bubblewrap (bwrap) found")

PROGRAM = Path(__file__).parent / "mcp_programs" / "round5.py"
TASK = "refund-socks"
LONG = 2 * HANG
"""A time limit no attempt should reach (a cold start on a loaded machine takes seconds):
an attempt that must end before it ends well within HANG."""


@pytest.fixture(scope="module")
def retail() -> Suite:
    return load_suite(EXAMPLES / "retail")


def run_program(
    retail: Suite,
    tmp_path: Path,
    mode: str,
    arg: str = "",
    time_limit: float = LONG,
    step_limit: int | None = None,
    **params: Any,
) -> tuple[AttemptOutput, float]:
    """The attempt and the seconds it took."""
    system = load_system(system_file(tmp_path, ["{python}", str(PROGRAM), mode, arg], **params))
    update: dict[str, Any] = {"time_limit": time_limit}
    if step_limit is not None:
        update["step_limit"] = step_limit
    system = system.model_copy(update={"budgets": system.budgets.model_copy(update=update)})
    started = time.monotonic()
    out = attempt(retail, TASK, load_agent(system), system=system)
    return out, time.monotonic() - started


def tool_calls(out: AttemptOutput) -> list[ToolCallEvent]:
    return [e for e in out.run.observation_action_log if isinstance(e, ToolCallEvent)]


def exit_code(out: AttemptOutput) -> Any:
    return json.loads(out.artifacts["agent_process.json"])["exit_code"]


def test_a_program_that_exits_non_zero_mid_call_is_a_crash(retail: Suite, tmp_path: Path) -> None:
    out, _ = run_program(retail, tmp_path, "exit_mid_call")
    assert out.run.terminal_reason == "agent_failure/crashed", out.run.infrastructure_status
    assert exit_code(out) == 5
    assert out.run.valid and out.run.final_message is None


def test_a_program_that_lingers_after_finish_ignoring_sigterm_is_killed_soon(
    retail: Suite, tmp_path: Path
) -> None:
    """Its final reply counts; the state decides; it is killed a short grace after finish,
    not at the time limit."""
    out, took = run_program(retail, tmp_path, "linger_after_finish")
    assert out.run.final_message == "done, but staying"
    assert out.run.terminal_reason == "agent_failure/incorrect_state"
    assert exit_code(out) == -9
    assert took < HANG, took


@pytest.mark.parametrize("sandbox", ["bwrap", "none"])
def test_a_child_in_its_own_session_does_not_outlive_the_attempt(
    retail: Suite, tmp_path: Path, sandbox: str
) -> None:
    """A child that left the program's process group (``setsid``) and holds its stdout open
    must neither keep the evaluator reading nor survive the attempt."""
    marker = f"gs-{uuid.uuid4()}"
    out, took = run_program(retail, tmp_path, "escape_child", marker, sandbox=sandbox)
    assert out.run.final_message == "left a child", out.run.infrastructure_status
    assert out.run.terminal_reason == "agent_failure/incorrect_state"
    assert took < HANG, took
    assert not process_running(marker.encode())


def test_without_a_cgroup_an_escaped_child_holding_stdout_does_not_hold_the_attempt(
    retail: Suite, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The documented limit: unsandboxed and with no pids cgroup to kill it by, the child
    lives on, but the evaluator stops reading its pipe and the final reply counts."""
    from groundstate.agents import mcp_command

    monkeypatch.setattr(mcp_command, "pids_cgroup", lambda _max: None)
    marker = f"gs-{uuid.uuid4()}"
    try:
        out, took = run_program(retail, tmp_path, "escape_child", marker, sandbox="none")
    finally:
        for pid in pids_of(marker.encode()):  # the test's own clean-up of what it let live
            os.kill(pid, signal.SIGKILL)
    assert out.run.final_message == "left a child", out.run.infrastructure_status
    assert out.run.terminal_reason == "agent_failure/incorrect_state"
    assert took < HANG, took


def pids_of(marker: bytes) -> list[int]:
    pids = []
    for cmdline in Path("/proc").glob("[0-9]*/cmdline"):
        try:
            if marker in cmdline.read_bytes().split(b"\0")[1:]:
                pids.append(int(cmdline.parent.name))
        except (OSError, ValueError):
            continue
    return pids


def test_requests_a_server_does_not_serve_and_floods_do_not_end_the_attempt(
    retail: Suite, tmp_path: Path
) -> None:
    out, _ = run_program(retail, tmp_path, "unexpected_requests", "2000")
    reply = out.run.final_message or ""
    assert "sampling/createMessage=error" in reply and "bogus/method=error" in reply, reply
    assert "ping=ok" in reply
    assert out.run.valid
    assert out.run.terminal_reason == "agent_failure/incorrect_state"


def test_duplicate_odd_and_stray_ids_do_not_break_the_evaluator(
    retail: Suite, tmp_path: Path
) -> None:
    out, _ = run_program(retail, tmp_path, "odd_ids")
    assert out.run.final_message == "odd ids sent", out.run.infrastructure_status
    assert out.run.valid
    assert out.run.terminal_reason == "agent_failure/incorrect_state"
    assert all(e.tool == "get_order" for e in tool_calls(out))


def test_calls_sent_at_once_past_the_step_limit_stop_at_it(retail: Suite, tmp_path: Path) -> None:
    out, took = run_program(retail, tmp_path, "flood_calls", "40", step_limit=3)
    assert out.run.terminal_reason == "agent_failure/step_limit", out.run.infrastructure_status
    assert len(tool_calls(out)) <= 3
    assert took < HANG, took  # the stop kills the program; it does not wait for the limit


def test_malformed_arguments_come_back_as_errors_and_run_nothing(
    retail: Suite, tmp_path: Path
) -> None:
    out, _ = run_program(retail, tmp_path, "bad_arguments", "1000000")
    answers = (out.run.final_message or "").split(" ")
    assert len(answers) == 9, out.run.final_message
    assert all(a.startswith("error:") for a in answers), answers
    assert out.run.terminal_reason == "agent_failure/incorrect_state"
    assert out.run.valid


def test_a_false_claim_of_success_is_not_a_success(retail: Suite, tmp_path: Path) -> None:
    out, _ = run_program(retail, tmp_path, "false_claim")
    assert not out.run.success
    assert out.run.terminal_reason == "agent_failure/incorrect_state"


@pytest.mark.parametrize(
    ("mode", "arg"),
    [("unread_answers", "1000"), ("call_then_sleep", ""), ("initialize_only", "")],
)
def test_a_program_that_stalls_ends_at_its_time_limit(
    retail: Suite, tmp_path: Path, mode: str, arg: str
) -> None:
    out, took = run_program(retail, tmp_path, mode, arg, time_limit=2)
    assert out.run.terminal_reason == "agent_failure/time_limit", out.run.infrastructure_status
    assert out.run.valid
    assert took < HANG, took
    # The kill lands in the record when the clean-up beats the episode's own deadline (the
    # kill is a fraction of a second before it); either way the program is gone.
    if "agent_process.json" in out.artifacts:
        assert exit_code(out) == -9


def test_half_a_message_then_exit_zero_is_no_success(retail: Suite, tmp_path: Path) -> None:
    out, _ = run_program(retail, tmp_path, "partial_then_exit")
    assert out.run.terminal_reason == "agent_failure/incorrect_state"
    assert out.run.final_message is None
    assert exit_code(out) == 0


def test_calls_after_give_up_change_nothing(retail: Suite, tmp_path: Path) -> None:
    out, took = run_program(retail, tmp_path, "give_up_then_call")
    assert out.run.terminal_reason == "agent_failure/gave_up", out.run.infrastructure_status
    assert tool_calls(out) == []
    assert out.run.final_message is None
    assert took < HANG, took


@pytest.mark.parametrize(("leaves", "reason"), [(False, "time_limit"), (True, "incorrect_state")])
def test_http_connections_left_half_open_do_not_hold_the_attempt(
    retail: Suite, tmp_path: Path, leaves: bool, reason: str
) -> None:
    """Over streamable HTTP a program holds many requests half sent, then stalls or leaves:
    the server's shutdown must not wait on them."""
    env = {"ROUND5_EXIT": "1"} if leaves else {}
    out, took = run_program(
        retail,
        tmp_path,
        "http_hold",
        "50",
        time_limit=LONG if leaves else 2,
        transport="http",
        network="host",
        env=env,
    )
    assert out.run.terminal_reason == f"agent_failure/{reason}", out.run.infrastructure_status
    assert took < HANG, took


def test_a_program_that_closes_its_input_still_finishes(retail: Suite, tmp_path: Path) -> None:
    """Its answers cannot be written; its calls and its ``finish`` still count."""
    out, took = run_program(retail, tmp_path, "close_stdin")
    assert out.run.final_message == "finished deaf", out.run.infrastructure_status
    assert [e.tool for e in tool_calls(out)] == ["list_orders"]
    assert out.run.terminal_reason == "agent_failure/incorrect_state"
    assert took < HANG, took


def test_an_endless_notification_flood_ends_at_the_time_limit(
    retail: Suite, tmp_path: Path
) -> None:
    out, took = run_program(retail, tmp_path, "notify_forever", time_limit=2)
    assert out.run.terminal_reason == "agent_failure/time_limit", out.run.infrastructure_status
    assert took < HANG, took


@pytest.mark.parametrize("depth", [150, 100_000])
def test_deeply_nested_arguments_are_refused_or_stored_never_a_crash(
    retail: Suite, tmp_path: Path, depth: int
) -> None:
    """A nesting bomb is refused when parsed (the program goes on); a deep but parseable
    argument reaches the gateway and its record stores and reads back."""
    from groundstate.store import RunStore

    out, _ = run_program(retail, tmp_path, "deep", str(depth))
    assert out.run.final_message == "deep sent", out.run.infrastructure_status
    assert out.run.terminal_reason == "agent_failure/incorrect_state"
    assert len(tool_calls(out)) == (1 if depth < 200 else 0)
    with RunStore(tmp_path / "runs.db") as store:
        store.add_run(out.run, out.artifacts)
        back = store.run(out.run.run_id)
    assert back.observation_action_log == out.run.observation_action_log


HTTP_AGENTS = """
import os, signal, threading, time

async def linger(session):
    await session.call("list_orders", {"customer_id": "C-100"})
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    threading.Thread(target=time.sleep, args=(1000,)).start()  # holds the exit
    return "lingering"

async def dies(session):
    await session.call("list_orders", {"customer_id": "C-100"})
    os._exit(5)
"""


@pytest.mark.parametrize(
    ("factory", "reason", "reply", "code"),
    [
        ("linger", "agent_failure/incorrect_state", "lingering", -9),
        ("dies", "agent_failure/crashed", None, 5),
    ],
)
def test_over_http_a_program_that_lingers_or_dies_after_a_call(
    retail: Suite, tmp_path: Path, factory: str, reason: str, reply: str | None, code: int
) -> None:
    (tmp_path / "agents.py").write_text(HTTP_AGENTS)
    command = ["{python}", "-m", "groundstate.mcp_client", f"agents.py:{factory}"]
    path = system_file(tmp_path, command, transport="http", network="host")
    system = load_system(path)
    budgets = system.budgets.model_copy(update={"time_limit": LONG})
    system = system.model_copy(update={"budgets": budgets})
    started = time.monotonic()
    out = attempt(retail, TASK, load_agent(system), system=system)
    took = time.monotonic() - started
    assert out.run.terminal_reason == reason, out.run.infrastructure_status
    assert out.run.final_message == reply
    assert [e.tool for e in tool_calls(out)] == ["list_orders"]
    assert exit_code(out) == code
    assert took < HANG, took
