"""The sandbox of workspace commands: no network, no writes outside, limits hold, and the
hidden tests stay out of reach (through the tools, commands and links)."""

from __future__ import annotations

import shutil
import socket
import time
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest

from groundstate.environments.workspace import WorkspaceEnvironment
from groundstate.environments.workspace_tools import TOOLS
from groundstate.gateway import ToolGateway
from groundstate.sandbox import find_bwrap
from groundstate.trace import ToolCallEvent

from .conftest import HANG

pytestmark = pytest.mark.skipif(find_bwrap() is None, reason="bubblewrap is not installed")

MINI = Path(__file__).parent / "suites" / "workspace_mini"
CLOCK = datetime(2026, 1, 15, 9, 30)
LIMITS = {"memory_mb": 256, "cpu_seconds": 1, "max_processes": 16, "command_timeout_s": 4}


@pytest.fixture(scope="module")
def suite_copy(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A suite folder with hidden tests and a fixture holding links that point at them."""
    root = tmp_path_factory.mktemp("sandbox") / "suite"
    shutil.copytree(MINI, root)
    repo = root / "repo"
    (repo / "peek").symlink_to(root / "hidden")
    (repo / "peek-relative").symlink_to("../hidden/fix-add/check_hidden.py")
    return root


@pytest.fixture
def env(suite_copy: Path) -> Iterator[WorkspaceEnvironment]:
    with WorkspaceEnvironment(suite_copy / "repo", clock=CLOCK, options=LIMITS) as made:
        made.reset()
        yield made


def _run(env: WorkspaceEnvironment, command: str, timeout_s: float = 10) -> dict[str, Any]:
    events: list[ToolCallEvent] = []
    gateway = ToolGateway(TOOLS, env, events.append, lambda: 0.0)
    result = gateway.call(1, "run_command", {"command": command, "timeout_s": timeout_s})
    assert result.ok, result.error
    output: dict[str, Any] = result.output
    return output


def test_commands_run_python_in_the_work_tree(env: WorkspaceEnvironment) -> None:
    ran = _run(env, "python -m unittest discover -s tests -p 'check_*.py'; pwd")
    assert ran["exit_code"] == 0 and "Ran 1 test" in ran["stderr"]
    assert ran["stdout"].strip() == str(env.root)


def test_no_network_not_even_the_hosts_loopback(env: WorkspaceEnvironment) -> None:
    # No thread waits in accept() (it outlived the test): a connection that got through would
    # wait in the listening socket's backlog, taken without blocking afterwards.
    server = socket.create_server(("127.0.0.1", 0))
    server.setblocking(False)
    port = server.getsockname()[1]
    code = (
        "import socket; s = socket.socket(); s.settimeout(2); "
        f"s.connect(('127.0.0.1', {port})); print('connected')"
    )
    ran = _run(
        env,
        f'python -c "{code}"; python -c "import socket; socket.getaddrinfo(\'example.com\', 80)"',
    )
    with server:
        accepted = _accepted(server)
    assert "connected" not in ran["stdout"]
    assert "ConnectionRefused" in ran["stderr"] or "unreachable" in ran["stderr"].lower()
    assert "gaierror" in ran["stderr"]  # no name resolution either
    assert not accepted


def _accepted(server: socket.socket) -> bool:
    """Whether a connection waits in *server*'s backlog (taken and closed)."""
    try:
        connection, _ = server.accept()
    except BlockingIOError:
        return False
    connection.close()
    return True


def test_writes_outside_the_work_tree_fail(env: WorkspaceEnvironment, suite_copy: Path) -> None:
    ran = _run(
        env,
        f"echo x > {suite_copy}/written.txt; echo x > /etc/written.txt; "
        f"echo x > {env.root.parent}/git/HEAD; echo x > /tmp/private.txt && echo tmp-ok; "
        "echo x > inside.txt && echo inside-ok",
    )
    assert not (suite_copy / "written.txt").exists()
    assert not Path("/etc/written.txt").exists()
    assert not Path("/tmp/private.txt").exists()  # the sandbox's /tmp is its own
    assert "tmp-ok" in ran["stdout"] and "inside-ok" in ran["stdout"]
    assert (env.root / "inside.txt").exists()
    assert env.diff()  # the base repository (outside the tree) is intact


def test_the_hidden_tests_cannot_be_read(env: WorkspaceEnvironment, suite_copy: Path) -> None:
    secret = suite_copy / "hidden" / "fix-add" / "check_hidden.py"
    ran = _run(
        env,
        f"cat {secret}; ls {suite_copy}; cat peek/fix-add/check_hidden.py; cat peek-relative; "
        f"grep -rl 'add(2, 3)' /tmp {suite_copy.parent} 2>/dev/null; true",
    )
    assert "add(2, 3)" not in ran["stdout"]
    events: list[ToolCallEvent] = []
    gateway = ToolGateway(TOOLS, env, events.append, lambda: 0.0)
    for tool, args in (
        ("read_file", {"path": "peek/fix-add/check_hidden.py"}),
        ("read_file", {"path": "peek-relative"}),
        ("read_file", {"path": str(secret)}),
        ("read_file", {"path": "../hidden/fix-add/check_hidden.py"}),
        ("list_files", {"path": "peek"}),
        ("search", {"pattern": "add\\(2, 3\\)", "path": "."}),
    ):
        result = gateway.call(1, tool, args)
        assert "add(2, 3)" not in str(result.output), (tool, args)


def test_a_fork_bomb_is_stopped(env: WorkspaceEnvironment) -> None:
    started = time.monotonic()
    ran = _run(env, "bomb() { bomb | bomb & }; bomb; sleep 2; echo survived", timeout_s=2)
    assert time.monotonic() - started < HANG
    assert "cannot fork" in ran["stderr"].lower()  # the process limit held
    again = _run(env, "echo alive")  # the next command starts: nothing is left running
    assert again["stdout"] == "alive\n"


def test_a_memory_hog_is_stopped(env: WorkspaceEnvironment) -> None:
    ran = _run(env, "python -c 'x = bytearray(1024 * 1024 * 1024); print(len(x))'")
    assert ran["exit_code"] != 0 and "MemoryError" in ran["stderr"]
    assert "1073741824" not in ran["stdout"]


def test_cpu_time_and_wall_time_are_limited(suite_copy: Path) -> None:
    # SIGXCPU after 1 s of CPU, however long a loaded machine takes to give it that: the
    # suite's 4 s cap on a command's time (LIMITS) timed it out first on a busy machine
    options = {**LIMITS, "command_timeout_s": 2 * HANG}
    with WorkspaceEnvironment(suite_copy / "repo", clock=CLOCK, options=options) as env:
        env.reset()
        started = time.monotonic()
        spin = _run(env, "python -c 'while True: pass'", timeout_s=2 * HANG)
        assert spin["exit_code"] not in (0, None) and not spin["timed_out"]
        assert time.monotonic() - started < HANG
        sleeper = _run(env, "sleep 30", timeout_s=0.5)
        assert sleeper["timed_out"] and sleeper["exit_code"] is None


def test_a_command_asking_for_more_time_gets_the_suites_cap(suite_copy: Path) -> None:
    options = {**LIMITS, "command_timeout_s": 0.5}
    with WorkspaceEnvironment(suite_copy / "repo", clock=CLOCK, options=options) as env:
        env.reset()
        capped = _run(env, "sleep 30", timeout_s=1000)
    assert capped["timed_out"] and capped["duration_s"] < 15  # the 0.5 s cap, not the 30 s sleep
