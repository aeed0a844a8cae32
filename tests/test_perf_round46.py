"""Forty-sixth round: the watches against in-process code run only when untrusted Python code
shares the interpreter (:mod:`groundstate.untrusted`).

Whether they run is a property of the whole process (untrusted code seen once stays: its
threads, its imports), so each case runs in a fresh interpreter, where nothing untrusted has
run yet. The same rebinding of the harness's code (``json.dumps``, made by the caller's
environment factory, so that it happens during the attempt whatever the agent) is put back
and blamed in an attempt of an in-process agent, and left alone in the suite's own replay or
an ``mcp-command`` agent's attempt, where no code but the harness's and the suite's runs.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

import groundstate
from groundstate.agents.mcp_command import McpCommandAgent
from groundstate.agents.python import FunctionAgent
from groundstate.agents.scripted import ScriptedAgent
from groundstate.bindings import _AUDIT_HOOK
from groundstate.sandbox import SandboxPolicy

from .conftest import BANK, EXAMPLES

SRC = Path(groundstate.__file__).resolve().parent.parent

PRELUDE = f"""
import asyncio, json, os, sys, uuid
from pathlib import Path
import groundstate.episode as episode
from groundstate.agents.python import FunctionAgent
from groundstate.agents.scripted import ScriptedAgent
from groundstate.bindings import _AUDIT_HOOK
from groundstate.episode import AttemptInfo, default_environment, run_attempt
from groundstate.spec.suite import load_suite
from groundstate.testing import scripted_system
from groundstate.users import ScriptedUser

SUITE = load_suite(Path({str(BANK)!r}))
TASK = next(t for t in SUITE.tasks if "oracle" in SUITE.solutions.get(t, {{}}))
STEPS = SUITE.solutions[TASK]["oracle"].steps
DUMPS = json.dumps
SEEN = []

def rebinding(also=None):
    def make_env(task, suite):
        # The caller's (trusted) code rebinds the harness's json.dumps as the attempt starts.
        json.dumps = lambda *a, **k: DUMPS(*a, **k)
        if also is not None:
            also()
        return default_environment(task, suite)
    return make_env

def run(agent, make_env=None, user=None, system=None):
    info = AttemptInfo(run_id=uuid.uuid4().hex, batch_id="adhoc", attempt=1, seed=0)
    runs = run_attempt(
        SUITE.tasks[TASK], SUITE, system or scripted_system(), agent, info,
        make_env or default_environment, user=user,
    )
    out = asyncio.run(runs).run
    put_back = json.dumps is DUMPS
    json.dumps = DUMPS
    return {{
        "reason": out.terminal_reason,
        "rebound": out.infrastructure_status.get("harness_rebound", []),
        "put_back": put_back,
        "refused": _AUDIT_HOOK[0].__defaults__[0],  # audit hooks refused: untrusted code seen
    }}

async def replaying(session):  # an in-process agent doing what the oracle does
    return await ScriptedAgent(STEPS).run(session)
"""


def fresh(body: str) -> Any:
    """Run *body* (after :data:`PRELUDE`) in a new interpreter; what it prints last, as JSON."""
    code = PRELUDE + textwrap.dedent(body)
    env = {**os.environ, "PYTHONPATH": str(SRC)}
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=300
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def caught(result: dict[str, Any]) -> bool:
    return (
        result["reason"] == "agent_failure/prohibited_action"
        and any("json.dumps" in name for name in result["rebound"])
        and result["put_back"]
    )


def test_the_oracle_replay_is_not_watched_until_an_in_process_agent_has_run() -> None:
    got = fresh(
        """
        replay = run(ScriptedAgent(STEPS), rebinding())
        agent = run(FunctionAgent(replaying), rebinding())
        after = run(ScriptedAgent(STEPS), rebinding())
        honest = run(ScriptedAgent(STEPS))
        print(json.dumps([replay, agent, after, honest]))
        """
    )
    replay, agent, after, honest = got
    # The suite's own replay: no untrusted code in the process, the watch did not run.
    assert replay == {"reason": "success", "rebound": [], "put_back": False, "refused": False}
    # The same calls made by an in-process agent: watched, blamed, put back.
    assert caught(agent) and agent["refused"]
    # From then on every attempt in the process is watched, the replay's too.
    assert caught(after) and after["refused"]
    assert honest["reason"] == "success" and honest["rebound"] == []


def test_the_first_in_process_agent_in_a_process_is_watched_from_its_start() -> None:
    """Nothing before it in the process: its own rebinding, and process-wide state it set
    in its run (an environment variable, the umask), are put back."""
    got = fresh(
        """
        import groundstate.grading.terminal as terminal
        classify = terminal.classify
        async def tamper(session):
            os.environ["GS46_LEFT"] = "1"
            os.umask(0o077)
            terminal.classify = lambda *a, **k: "success"
            return await replaying(session)
        os.umask(0o022)
        result = run(FunctionAgent(tamper))
        result["classify_put_back"] = terminal.classify is classify
        result["environ"] = os.environ.get("GS46_LEFT")
        result["umask"] = os.umask(0o022)
        print(json.dumps(result))
        """
    )
    assert got["reason"] == "agent_failure/prohibited_action"
    assert any("classify" in name for name in got["rebound"])
    assert got["classify_put_back"] and got["environ"] is None and got["umask"] == 0o022


@pytest.mark.parametrize(
    "agent",
    [
        # A subclass of the replay (its run may be anything).
        "type('Mine', (ScriptedAgent,), {})(STEPS)",
        # A class that names itself as the replay.
        "type('ScriptedAgent', (), {'__module__': 'groundstate.agents.scripted',"
        " '__qualname__': 'ScriptedAgent', 'run': lambda self, s: replaying(s)})()",
        # The replay's class, with a run of its own set on the object.
        "None",
    ],
)
def test_an_agent_that_only_looks_like_the_replay_is_watched(agent: str) -> None:
    body = f"""
        agent = {agent}
        if agent is None:
            agent = ScriptedAgent(STEPS)
            agent.run = replaying
        print(json.dumps(run(agent, rebinding())))
        """
    assert caught(fresh(body))


def test_a_user_of_the_callers_own_makes_the_replay_watched() -> None:
    got = fresh(
        """
        class Echo:
            left = False
            waits = False
            def reply(self, message):
                return "yes"
        mine = run(ScriptedAgent(STEPS), rebinding(), user=Echo())
        print(json.dumps(mine))
        """
    )
    assert caught(got)


def test_a_user_of_the_harness_own_keeps_the_replay_unwatched() -> None:
    got = fresh(
        """
        task = SUITE.tasks[TASK]
        user = ScriptedUser(scripted_system().user_simulator, task.user)
        print(json.dumps(run(ScriptedAgent(STEPS), rebinding(), user=user)))
        """
    )
    assert got["reason"] == "success" and not got["put_back"] and not got["refused"]


def test_untrusted_code_arriving_during_an_unwatched_attempt_gets_the_last_look() -> None:
    """An agent's file imported (by another attempt's build) while the replay ran: the look
    after the record runs, and finds what is still rebound."""
    got = fresh(
        """
        from groundstate.bindings import refuse_audit_hooks
        print(json.dumps(run(ScriptedAgent(STEPS), rebinding(also=refuse_audit_hooks))))
        """
    )
    assert caught(got)


def test_an_agent_file_marks_the_process_before_it_is_imported() -> None:
    got = fresh(
        f"""
        from groundstate.agents.python import load_agent
        from groundstate.spec.system import load_system
        before = _AUDIT_HOOK[0].__defaults__[0]
        load_agent(load_system(Path({str(BANK.parent / "bank_system.yaml")!r})))
        result = run(ScriptedAgent(STEPS), rebinding())
        result["before"] = before
        print(json.dumps(result))
        """
    )
    assert got["before"] is False
    assert caught(got)


def test_a_module_entry_of_the_systems_own_marks_the_process(tmp_path: Path) -> None:
    """Loading a system whose entry is a module imports its package (to hash it): code of
    the system's, run before any attempt."""
    package = tmp_path / "mine46"
    package.mkdir()
    (package / "__init__.py").write_text("IMPORTED = True\n")
    (package / "agent.py").write_text("async def agent(session):\n    return None\n")
    system = tmp_path / "system.yaml"
    system.write_text(
        "name: mine\nharness:\n  orchestration_loop:\n    entry: mine46.agent:agent\n"
    )
    got = fresh(
        f"""
        sys.path.insert(0, {str(tmp_path)!r})
        from groundstate.spec.system import load_system
        load_system(Path({str(system)!r}))
        result = run(ScriptedAgent(STEPS), rebinding())
        result["imported"] = "mine46" in sys.modules
        print(json.dumps(result))
        """
    )
    assert got["imported"] and caught(got)


def _mcp_system(tmp_path: Path) -> Path:
    """The example MCP agent, run unsandboxed (no bubblewrap needed for this test)."""
    program = (EXAMPLES / "agents" / "mcp_agent.py").resolve()
    loop = {
        "entry": "mcp-command",
        "params": {"command": ["{python}", str(program), "careful", "0"], "sandbox": "none"},
    }
    data = {"name": "external", "harness": {"orchestration_loop": loop}}
    path = tmp_path / "system.yaml"
    path.write_text(json.dumps(data))
    return path


def test_an_mcp_command_agent_is_not_watched_and_still_graded(tmp_path: Path) -> None:
    system = _mcp_system(tmp_path)
    got = fresh(
        f"""
        from groundstate.agents.python import load_agent
        from groundstate.spec.system import load_system
        SUITE = load_suite(Path({str(EXAMPLES / "retail")!r}))
        TASK = "refund-socks"
        system = load_system(Path({str(system)!r}))
        agent = load_agent(system)
        result = run(agent, rebinding(), system=system)
        honest = run(load_agent(system), system=system)
        print(json.dumps([result, honest]))
        """
    )
    rebound, honest = got
    assert rebound["rebound"] == [] and not rebound["put_back"] and not rebound["refused"]
    assert rebound["reason"] == honest["reason"] == "success"


# --- the decision itself, in this process ---------------------------------------------------


def test_the_harness_own_agents_and_users_are_told_apart_by_class_identity() -> None:
    from groundstate import untrusted

    mcp = McpCommandAgent(["true"], Path("."), SandboxPolicy())
    assert untrusted._is_one_of(ScriptedAgent([]), untrusted.AGENT_CLASSES)
    assert untrusted._is_one_of(mcp, untrusted.AGENT_CLASSES)
    fake = type("ScriptedAgent", (), {"__module__": "groundstate.agents.scripted"})()
    assert not untrusted._is_one_of(fake, untrusted.AGENT_CLASSES)
    assert not untrusted._is_one_of(FunctionAgent(lambda s: None), untrusted.AGENT_CLASSES)  # type: ignore[arg-type,return-value]
    assert untrusted.trusted_entry("groundstate.agents.mcp_command", "McpCommandAgent", None)
    assert not untrusted.trusted_entry("groundstate.agents.openai_chat", "OpenAIChatAgent", None)
    assert not untrusted.trusted_entry("groundstate.agents.scripted", "ScriptedAgent", Path("x"))


def test_an_untrusted_agent_marks_the_process_for_good() -> None:
    from groundstate import untrusted
    from groundstate.bindings import audit_hooks_refused

    assert untrusted.shares_interpreter(FunctionAgent(lambda s: None))  # type: ignore[arg-type,return-value]
    assert audit_hooks_refused()
    assert untrusted.shares_interpreter(ScriptedAgent([]))  # watched from now on
    (hook,) = _AUDIT_HOOK
    with pytest.raises(RuntimeError):
        hook.__defaults__ = (False, hook, None)
    assert audit_hooks_refused()
