"""External agents over MCP: a program per attempt, sandboxed, served the task's tools.

Each test starts a real program (the example agent, or ``mcp_programs/misbehave.py``) that
speaks MCP with the official client over its stdio, inside the bubblewrap sandbox.
"""

from __future__ import annotations

import contextlib
import json
import random
import socket
import threading
from pathlib import Path
from typing import Any

import pytest
import yaml

from groundstate.agents.python import load_agent
from groundstate.episode import AttemptOutput
from groundstate.errors import SpecError
from groundstate.sandbox import find_bwrap
from groundstate.spec.suite import Suite, load_suite
from groundstate.spec.system import SystemSpec, load_system
from groundstate.testing import attempt

from .conftest import EXAMPLES

pytestmark = pytest.mark.skipif(find_bwrap() is None, reason="no bubblewrap (bwrap) found")

PROGRAM = Path(__file__).parent / "mcp_programs" / "misbehave.py"
TASK = "refund-socks"


@pytest.fixture(scope="module")
def retail() -> Suite:
    return load_suite(EXAMPLES / "retail")


def system_file(tmp_path: Path, command: list[str], **params: Any) -> Path:
    loop = {"entry": "mcp-command", "params": {"command": command, **params}}
    data = {"name": "external", "harness": {"orchestration_loop": loop}}
    path = tmp_path / "system.yaml"
    path.write_text(yaml.safe_dump(data))
    return path


def run_program(
    retail: Suite, tmp_path: Path, mode: str, arg: str = "", time_limit: float = 60, **params: Any
) -> AttemptOutput:
    system = load_system(system_file(tmp_path, ["{python}", str(PROGRAM), mode, arg], **params))
    budgets = system.budgets.model_copy(update={"time_limit": time_limit})
    system = system.model_copy(update={"budgets": budgets})
    return attempt(retail, TASK, load_agent(system), system=system)


def process_running(marker: str) -> bool:
    """Whether any process on the machine has *marker* as an argument."""
    for cmdline in Path("/proc").glob("[0-9]*/cmdline"):
        try:
            if marker in cmdline.read_bytes().split(b"\0")[1:]:
                return True
        except OSError:
            continue
    return False


def test_the_example_program_solves_a_task_through_the_sandbox(retail: Suite) -> None:
    system = load_system(EXAMPLES / "systems" / "mcp-careful.yaml")
    loop = system.harness.orchestration_loop
    exact = loop.model_copy(
        update={"params": {**loop.params, "command": [*loop.params["command"][:3], "0"]}}
    )  # no seeded slips: the verdict is deterministic
    harness = system.harness.model_copy(update={"orchestration_loop": exact})
    system = system.model_copy(update={"harness": harness})
    out = attempt(retail, TASK, load_agent(system), system=system)
    assert out.run.terminal_reason == "success", out.run.infrastructure_status
    assert "refund" in (out.run.final_message or "").lower()
    tools = [e.tool for e in out.run.observation_action_log if e.kind == "tool_call"]
    assert "refund_item" in tools  # the change went through the gateway, as any agent's
    assert json.loads(out.artifacts["agent_process.json"])["exit_code"] == 0


@pytest.mark.parametrize("served", [{}, {"transport": "http", "network": "host"}])
def test_a_program_that_hangs_is_killed_at_the_limit_with_its_children(
    retail: Suite, tmp_path: Path, served: dict[str, str]
) -> None:
    marker = str(random.randint(10**6, 10**7))
    out = run_program(retail, tmp_path, "sleep", marker, time_limit=4, **served)
    assert out.run.terminal_reason == "agent_failure/time_limit"
    assert json.loads(out.artifacts["agent_process.json"])["exit_code"] == -9
    assert not process_running(marker.encode())


def test_a_crashing_program_is_a_crash_with_its_exit_code_and_stderr(
    retail: Suite, tmp_path: Path
) -> None:
    out = run_program(retail, tmp_path, "crash")
    assert out.run.terminal_reason == "agent_failure/crashed"
    assert json.loads(out.artifacts["agent_process.json"])["exit_code"] == 3
    assert "boom: the agent program failed" in out.artifacts["agent_stderr.txt"]
    assert "exited with code 3" in json.dumps(out.run.infrastructure_status)


def test_a_forbidden_action_stops_the_attempt_and_later_calls_learn_nothing(
    retail: Suite, tmp_path: Path
) -> None:
    out = run_program(retail, tmp_path, "forbidden")
    assert out.run.terminal_reason == "agent_failure/prohibited_action"
    tools = [e.tool for e in out.run.observation_action_log if e.kind == "tool_call"]
    assert tools == ["lookup_card_on_file"]  # list_orders after the stop never ran
    assert out.run.final_message is None  # killed: its finish never counted


def test_an_unknown_tool_comes_back_as_an_mcp_error(retail: Suite, tmp_path: Path) -> None:
    out = run_program(retail, tmp_path, "unknown")
    assert "unknown_tool" in (out.run.final_message or "")
    assert out.run.terminal_reason == "agent_failure/incorrect_state"


def test_the_program_cannot_see_the_suite_or_work_directories(
    retail: Suite, tmp_path: Path
) -> None:
    solution = next((EXAMPLES / "retail" / "solutions" / TASK).iterdir())
    out = run_program(retail, tmp_path, "snoop", str(solution.resolve()))
    assert out.run.final_message == "cannot read: FileNotFoundError"
    assert solution.read_text()  # the file is there, outside the sandbox


def test_the_program_has_no_network_not_even_loopback(retail: Suite, tmp_path: Path) -> None:
    accepted: list[object] = []
    with socket.create_server(("127.0.0.1", 0)) as server:
        server.settimeout(5)
        port = server.getsockname()[1]
        listener = threading.Thread(target=lambda: _accept(server, accepted), daemon=True)
        listener.start()
        out = run_program(retail, tmp_path, "connect", str(port))
        listener.join(timeout=6)
    assert (out.run.final_message or "").startswith("no connection")
    assert accepted == []


def _accept(server: socket.socket, accepted: list[object]) -> None:
    with contextlib.suppress(OSError):
        accepted.append(server.accept())


def test_memory_and_process_limits_hold(retail: Suite, tmp_path: Path) -> None:
    hog = run_program(retail, tmp_path, "hog", "1024", memory_mb=256)
    assert hog.run.terminal_reason == "agent_failure/crashed"
    assert "MemoryError" in hog.artifacts["agent_stderr.txt"]
    fork = run_program(retail, tmp_path, "spawn", "200", max_processes=16)
    spawned = int((fork.run.final_message or "spawned 999").split()[1])
    assert spawned < 200


def test_the_program_gets_the_request_and_seed_in_its_environment(
    retail: Suite, tmp_path: Path
) -> None:
    out = run_program(retail, tmp_path, "env")
    assert out.run.final_message == (
        "GROUNDSTATE_DEADLINE,GROUNDSTATE_INSTRUCTIONS,GROUNDSTATE_SEED,GROUNDSTATE_USER_REQUEST"
    )


def test_the_program_files_are_part_of_the_system_hash(tmp_path: Path) -> None:
    program = tmp_path / "agent.py"
    program.write_text("print('v1')\n")
    first = load_system(system_file(tmp_path, ["{python}", "agent.py"]))
    program.write_text("print('v2')\n")
    second = load_system(system_file(tmp_path, ["{python}", "agent.py"]))
    assert first.system_spec_hash != second.system_spec_hash
    moved = tmp_path / "elsewhere"
    moved.mkdir()
    (moved / "agent.py").write_text("print('v2')\n")
    third = load_system(system_file(moved, ["{python}", "agent.py"]))
    assert third.system_spec_hash == second.system_spec_hash  # not where, only what


def test_without_bubblewrap_it_refuses_unless_told_to_run_unsandboxed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("groundstate.agents.mcp_command.find_bwrap", lambda: None)
    system = load_system(system_file(tmp_path, ["{python}", str(PROGRAM), "env"]))
    with pytest.raises(SpecError, match="no bubblewrap sandbox found"):
        load_agent(system)
    unsandboxed = load_system(
        system_file(tmp_path, ["{python}", str(PROGRAM), "env"], sandbox="none")
    )
    assert load_agent(unsandboxed) is not None


@pytest.mark.parametrize(
    ("params", "message"),
    [
        ({"command": []}, "needs a command"),
        ({"command": ["{python}", 3]}, "needs a command"),
        (
            {"command": ["{python}", "-c", "pass"], "sandbox": "docker"},
            "params.sandbox: must be bwrap or none, not .docker.",
        ),
    ],
)
def test_bad_command_settings_name_the_field(
    tmp_path: Path, params: dict[str, Any], message: str
) -> None:
    loop = {"entry": "mcp-command", "params": params}
    path = tmp_path / "system.yaml"
    path.write_text(yaml.safe_dump({"harness": {"orchestration_loop": loop}}))
    with pytest.raises(SpecError, match=message):
        load_agent(load_system(path))


def test_a_command_that_cannot_start_is_a_harness_compatibility_failure(
    retail: Suite, tmp_path: Path
) -> None:
    program = tmp_path / "gone"  # a program that was there when the system loaded
    program.write_text("#!/bin/sh\n")
    program.chmod(0o755)
    system: SystemSpec = load_system(system_file(tmp_path, ["./gone"], sandbox="none"))
    program.unlink()
    out = attempt(retail, TASK, load_agent(system), system=system)
    assert out.run.terminal_reason == "harness_compatibility_failure"


BANK_AGENT = Path(__file__).parent / "suites" / "bank_agent.py"


def _bank_agent_command() -> list[str]:
    """The bank agent run unchanged as an external program by ``groundstate.mcp_client``."""
    return [
        "{python}",
        "-m",
        "groundstate.mcp_client",
        f"{BANK_AGENT}:bank_agent",
        '{"fault_rate": 0.5}',
    ]


def _in_process(folder: Path) -> Any:
    """The bank agent the external system runs as a program, loaded in this process instead
    (from a system file of its own: the external system's hashes name the program's code)."""
    loop = {"entry": f"{BANK_AGENT}:bank_agent", "params": {"fault_rate": 0.5}}
    path = folder / "inside.yaml"
    path.write_text(yaml.safe_dump({"name": "inside", "harness": {"orchestration_loop": loop}}))
    return load_agent(load_system(path))


def test_a_python_agent_runs_unchanged_as_an_external_program(
    edited_bank: Any, tmp_path: Path
) -> None:
    """``python -m groundstate.mcp_client`` runs the bank agent sandboxed; with the same seeds
    it makes the same seeded choices, so every verdict matches the in-process run."""
    bank = edited_bank(lambda task: task.update(time_limit=60))  # room for a cold start
    command = _bank_agent_command()
    external = load_system(system_file(tmp_path, command))
    assert f"{BANK_AGENT}:bank_agent" in external.resolved["code"]["command"]
    inside = _in_process(tmp_path)
    verdicts = {}
    for seed in range(3):
        outside = attempt(bank, "transfer", load_agent(external), system=external, seed=seed)
        same = attempt(bank, "transfer", inside, system=external, seed=seed)
        verdicts[seed] = (outside.run.terminal_reason, same.run.terminal_reason)
    assert all(a == b for a, b in verdicts.values()), verdicts
    assert len({a for a, _ in verdicts.values()}) == 2  # both routes: a PIN check or not


SPENDER = """
async def spender(session):
    session.record_usage(input_tokens=600, output_tokens=500, cost=0.25)
    await session.call("balance", {"account": "A"})
    return "done"
"""


def test_an_external_programs_usage_counts_against_the_budgets(
    edited_bank: Any, tmp_path: Path
) -> None:
    bank = edited_bank(lambda task: task.update(time_limit=60))
    (tmp_path / "spender.py").write_text(SPENDER)
    command = ["{python}", "-m", "groundstate.mcp_client", "spender.py:spender"]
    system = load_system(system_file(tmp_path, command))
    budgets = system.budgets.model_copy(update={"max_tokens": 1000})
    system = system.model_copy(update={"budgets": budgets})
    out = attempt(bank, "transfer", load_agent(system), system=system)
    assert out.run.terminal_reason == "agent_failure/budget"
    assert (out.run.usage.input_tokens, out.run.usage.output_tokens) == (600, 500)
    assert out.run.cost == 0.25
    assert not [e for e in out.run.observation_action_log if e.kind == "tool_call"]


def test_over_streamable_http_the_same_agent_gets_the_same_verdicts(
    edited_bank: Any, tmp_path: Path
) -> None:
    """``transport: http``: the program reaches the server at ``$GROUNDSTATE_MCP_URL``. Its
    verdicts are the agent's in this process, as over stdio (the test above)."""
    bank = edited_bank(lambda task: task.update(time_limit=60))
    http = load_system(
        system_file(tmp_path, _bank_agent_command(), transport="http", network="host")
    )
    inside = _in_process(tmp_path)
    verdicts = [
        tuple(
            attempt(bank, "transfer", agent, system=http, seed=seed).run.terminal_reason
            for agent in (load_agent(http), inside)
        )
        for seed in range(2)
    ]
    assert all(a == b for a, b in verdicts), verdicts
    assert len({a for a, _ in verdicts}) == 2, verdicts  # seed 0 checks the PIN, 1 not


def test_http_inside_a_sandbox_without_network_is_refused(tmp_path: Path) -> None:
    path = system_file(tmp_path, ["{python}", str(PROGRAM), "env"], transport="http")
    with pytest.raises(SpecError, match="set network: host, or use transport: stdio"):
        load_agent(load_system(path))
