"""Forty-seventh round: the in-process executor's hand-off of an attempt to its thread takes
the decision the attempt itself takes (:mod:`groundstate.untrusted`).

Before, the hand-off read the process-wide state (``loopthreads._shared_hooks``) and put it
back for every attempt, the suite's own oracle replay (the canary) and an ``mcp-command``
agent's included, although no code but the harness's and the suite's ran in the process;
and a system naming the harness's own agent was run through a wrapper that the attempt
took for untrusted code (marking the process for good). Now the hand-off skips that only
where :func:`~groundstate.untrusted.shares_interpreter` would; an in-process agent that
changes process-wide state in a batch is still watched, put back and graded as before.

Whether untrusted code has run is a property of the whole process, so each batch runs in a
fresh interpreter. What the hand-off read is counted by wrapping ``_shared_hooks`` (taken
as the harness's own with ``HARNESS.rebase()``), by the thread that asked: the batch's
(``MainThread``: an attempt's hand-off) or an attempt's (its agent's hand-off).
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
from groundstate.episode import AttemptInfo, AttemptJob
from groundstate.executors import _job
from groundstate.testing import scripted_system

from .conftest import BANK, EXAMPLES

SRC = Path(groundstate.__file__).resolve().parent.parent

PRELUDE = f"""
import asyncio, json, os, signal, sqlite3, sys, tempfile, threading
from dataclasses import replace
from pathlib import Path
import groundstate.loopthreads as loopthreads
from groundstate.agents.scripted import ScriptedAgent
from groundstate.bindings import HARNESS, _AUDIT_HOOK
from groundstate.executors import make_executor
from groundstate.runner import BatchConfig, BatchRunner
from groundstate.spec.suite import load_suite
from groundstate.spec.system import load_system
from groundstate.store import RunStore
from groundstate.testing import FunctionAgent, scripted_system

SUITE = load_suite(Path({str(BANK)!r}))
TASK = sorted(t for t in SUITE.tasks if "oracle" in SUITE.solutions.get(t, {{}}))[0]
STEPS = SUITE.solutions[TASK]["oracle"].steps
_BASE = scripted_system()
_LOOP = _BASE.harness.orchestration_loop.model_copy(update={{"params": {{"steps": []}}}})
_HARNESS = _BASE.harness.model_copy(update={{"orchestration_loop": _LOOP}})
SYSTEM = _BASE.model_copy(update={{"harness": _HARNESS}})
# (buildable, as preflight builds one agent; never run: oracles or a live factory's are)
READS = []
_READ = loopthreads._shared_hooks

def counted():
    READS.append(threading.current_thread().name)
    return _READ()

loopthreads._shared_hooks = counted
HARNESS.rebase()  # the wrapper is the harness's own from here on

class Oracles:
    \"\"\"The in-process executor replaying each task's oracle, as the canary does.\"\"\"
    name = "in-process"
    def __init__(self, inner):
        self.inner = inner
    def open(self, concurrency):
        self.inner.open(concurrency)
    def room(self, concurrency):
        self.inner.room(concurrency)
    def close(self):
        self.inner.close()
    async def run(self, job):
        return await self.inner.run(replace(job, solution="oracle"))

def batch(system=None, make_agent=None, oracles=False, suite=SUITE, tasks=(TASK,), at_once=2):
    READS.clear()
    with tempfile.TemporaryDirectory() as tmp, RunStore(Path(tmp) / "runs.db") as store:
        executor = None
        if oracles:
            executor = Oracles(make_executor("in-process", suite))
        runner = BatchRunner(
            suite, system or SYSTEM, store, make_agent=make_agent, executor=executor
        )
        config = BatchConfig(attempts=2, concurrency=at_once, tasks=tasks)
        result = asyncio.run(runner.start(config))
    return {{
        "reasons": sorted(run.terminal_reason for run in result.runs),
        "rebound": sorted(
            name for run in result.runs
            for name in run.infrastructure_status.get("harness_rebound", [])
        ),
        "reads": sorted(set(READS)),
        "handoffs": READS.count("MainThread"),
        "refused": _AUDIT_HOOK[0].__defaults__[0],
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


# --- the harness's own agents: no read of the process-wide state ----------------------------


def test_the_oracle_replay_through_the_in_process_executor_reads_no_process_state() -> None:
    got = fresh(
        """
        replay = batch(oracles=True)
        print(json.dumps(replay))
        """
    )
    assert got["reasons"] == ["success", "success"]
    assert got["reads"] == [] and got["handoffs"] == 0 and not got["refused"]


def test_once_an_in_process_agent_has_run_the_replay_hand_off_is_watched_again() -> None:
    got = fresh(
        """
        agent = batch(make_agent=lambda: FunctionAgent(replaying))
        replay = batch(oracles=True)
        print(json.dumps([agent, replay]))
        """
    )
    agent, replay = got
    # The untrusted agent: each attempt's hand-off (and its agent's) read the state.
    assert agent["reasons"] == ["success", "success"] and agent["refused"]
    assert agent["handoffs"] >= 2 and len(agent["reads"]) >= 2
    # From then on the replay's hand-offs are watched too (code it left may still run).
    assert replay["reasons"] == ["success", "success"]
    assert replay["handoffs"] >= 2 and len(replay["reads"]) >= 2


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


def test_an_mcp_command_system_run_as_groundstate_run_runs_it_is_not_watched(
    tmp_path: Path,
) -> None:
    """Built from its system file by the executor (not handed as a live object): the agent
    is the harness's own class, and neither hand-off reads the process-wide state."""
    system = _mcp_system(tmp_path)
    got = fresh(
        f"""
        retail = load_suite(Path({str(EXAMPLES / "retail")!r}))
        system = load_system(Path({str(system)!r}))
        print(json.dumps(batch(system=system, suite=retail, tasks=("refund-socks",))))
        """
    )
    assert got["reasons"] == ["success", "success"]
    assert got["reads"] == [] and not got["refused"]


def test_a_system_file_naming_the_scripted_agent_is_not_watched(tmp_path: Path) -> None:
    path = tmp_path / "system.yaml"
    loop = {"entry": "groundstate.agents.scripted:ScriptedAgent", "params": {"steps": []}}
    path.write_text(json.dumps({"name": "replay", "harness": {"orchestration_loop": loop}}))
    got = fresh(
        f"""
        print(json.dumps(batch(system=load_system(Path({str(path)!r})))))
        """
    )
    # No step: the agent ends without doing the task (its verdict, not a crash).
    assert got["reasons"] and all(r.startswith("agent_failure/") for r in got["reasons"])
    assert "agent_failure/crashed" not in got["reasons"]
    assert got["reads"] == [] and not got["refused"]


# --- untrusted in-process agents in a batch: still watched, put back, graded -----------------

TAMPERING = {
    "recursion": (
        "sys.setrecursionlimit(4321)",
        "sys.getrecursionlimit()",
        None,
    ),
    "environ": (
        "os.environ['GS47_LEFT'] = '1'; os.environ.pop('HOME', None)",
        "[os.environ.get('GS47_LEFT'), 'HOME' in os.environ]",
        None,
    ),
    "excepthook": (
        "threading.excepthook = lambda args: None; sys.unraisablehook = lambda u: None",
        "[threading.excepthook is threading.__excepthook__,"
        " sys.unraisablehook is sys.__unraisablehook__]",
        None,
    ),
    "sqlite_adapter": (
        "sqlite3.register_adapter(str, lambda s: 'success')",
        "str in sqlite3.adapters",
        # Its own tool calls' text went through its adapter: its own wrong state.
        "agent_failure/incorrect_state",
    ),
    "signal_handler": (
        # From the agent's thread only through a loop of the main thread's (the batch's).
        "[loop.call_soon_threadsafe(signal.signal, signal.SIGTERM, signal.SIG_IGN)"
        " for loop in MAIN_LOOPS]",
        "signal.getsignal(signal.SIGTERM) is signal.SIG_IGN",
        None,
    ),
}


@pytest.mark.parametrize("kind", sorted(TAMPERING))
def test_an_in_process_agent_changing_process_wide_state_is_put_back(kind: str) -> None:
    """The same agent in a batch, tampering or not: the tampering one gets the verdict the
    honest one gets (its own work is the task's) unless the change spoilt its own work,
    the state is as before the batch, and the hand-offs read it (the decision: watched).
    One attempt at a time: attempts running at once in one interpreter share its state
    (one's snapshot may hold another's change: docs/reliability.md)."""
    change, read, reason = TAMPERING[kind]
    got = fresh(
        f"""
        import gc
        MAIN_LOOPS = []
        async def tampering(session):
            MAIN_LOOPS[:] = [o for o in gc.get_objects()
                             if isinstance(o, asyncio.AbstractEventLoop) and o.is_running()
                             and getattr(o, "_thread_id", None) == threading.main_thread().ident]
            {change}
            return await replaying(session)
        before = {read}
        tampered = batch(make_agent=lambda: FunctionAgent(tampering), at_once=1)
        after = {read}
        honest = batch(make_agent=lambda: FunctionAgent(replaying), at_once=1)
        print(json.dumps([tampered, honest, before, after]))
        """
    )
    tampered, honest, before, after = got
    assert after == before
    assert honest["reasons"] == ["success", "success"]
    assert tampered["reasons"] == (honest["reasons"] if reason is None else [reason] * 2)
    assert tampered["handoffs"] >= 2 and tampered["refused"]


def test_an_in_process_agent_replacing_a_watched_module_is_still_caught() -> None:
    """``sys.modules['json']`` swapped for a module of the agent's: named, put back, and the
    attempt is a prohibited action, in a batch whose hand-offs it shares with nobody."""
    got = fresh(
        """
        import types
        import json as real_json
        async def swapping(session):
            fake = types.ModuleType("json")
            fake.dumps = lambda *a, **k: "{}"
            fake.loads = real_json.loads
            sys.modules["json"] = fake
            return await replaying(session)
        result = batch(make_agent=lambda: FunctionAgent(swapping), at_once=1)
        result["json_back"] = sys.modules["json"] is real_json
        print(json.dumps(result))
        """
    )
    assert got["json_back"] and got["refused"]
    assert got["reasons"] == ["agent_failure/prohibited_action"] * 2
    assert any("json" in name for name in got["rebound"])


def test_a_system_file_agent_changing_the_recursion_limit_is_watched(tmp_path: Path) -> None:
    """The agent of a Python file (``groundstate run``'s way, no live factory): the
    executor cannot tell it before it is built, and watches."""
    steps = [s.model_dump() for s in _bank_oracle()]
    (tmp_path / "mine47.py").write_text(
        textwrap.dedent(
            """
            import sys
            from groundstate.agents.scripted import ScriptedAgent
            from groundstate.spec.solution import Step

            async def agent(session, steps):
                sys.setrecursionlimit(4322)
                return await ScriptedAgent([Step(**s) for s in steps]).run(session)
            """
        )
    )
    loop = {"entry": "mine47.py:agent", "params": {"steps": steps}}
    path = tmp_path / "system.yaml"
    path.write_text(json.dumps({"name": "mine", "harness": {"orchestration_loop": loop}}))
    got = fresh(
        f"""
        limit = sys.getrecursionlimit()
        result = batch(system=load_system(Path({str(path)!r})), at_once=1)
        result["limit_kept"] = sys.getrecursionlimit() == limit
        print(json.dumps(result))
        """
    )
    assert got["limit_kept"] and got["refused"]
    assert got["reasons"] == ["success", "success"]
    assert got["handoffs"] >= 2


def _bank_oracle() -> list[Any]:
    from groundstate.spec.suite import load_suite

    suite = load_suite(BANK)
    task = sorted(t for t in suite.tasks if "oracle" in suite.solutions.get(t, {}))[0]
    return list(suite.solutions[task]["oracle"].steps)


# --- the decision itself -------------------------------------------------------------------


def _a_job(solution: str | None, system: Any = None) -> AttemptJob:
    info = AttemptInfo(run_id="r" * 32, batch_id="b", attempt=1, seed=0)
    return AttemptJob("x", "h", system or scripted_system(), "t", info, solution=solution)


def test_a_live_factory_or_a_python_entry_is_watched_whatever_the_process() -> None:
    from groundstate.testing import FunctionAgent

    def factory() -> Any:
        return FunctionAgent(lambda s: None)  # type: ignore[arg-type,return-value]

    assert _job.shares_interpreter(_a_job(None), factory)
    assert _job.shares_interpreter(_a_job(None, _with_entry("agent.py:agent")))
    assert _job.shares_interpreter(_a_job(None, _with_entry("mine.agent:agent")))
    assert _job.shares_interpreter(_a_job(None, _with_entry("no-colon")))


def _with_entry(entry: str) -> Any:
    system = scripted_system()
    loop = system.harness.orchestration_loop.model_copy(update={"entry": entry})
    return system.model_copy(
        update={"harness": system.harness.model_copy(update={"orchestration_loop": loop})}
    )


def test_the_decision_in_a_fresh_process_follows_the_mark() -> None:
    got = fresh(
        """
        from groundstate.episode import AttemptInfo, AttemptJob
        from groundstate.executors import _job
        from groundstate.bindings import refuse_audit_hooks
        info = AttemptInfo(run_id="r" * 32, batch_id="b", attempt=1, seed=0)
        oracle = AttemptJob("x", "h", scripted_system(), "t", info, solution="oracle")
        own = AttemptJob("x", "h", scripted_system(), "t", info)
        factory = lambda: FunctionAgent(replaying)
        before = [_job.shares_interpreter(oracle), _job.shares_interpreter(own),
                  _job.shares_interpreter(oracle, factory), _job.shares_interpreter(own, factory)]
        refuse_audit_hooks()
        after = [_job.shares_interpreter(oracle), _job.shares_interpreter(own)]
        print(json.dumps([before, after]))
        """
    )
    before, after = got
    # The replay (a live factory is not used for it) and the harness's own entry: not
    # watched; the live factory's agent: watched. Once marked: all watched.
    assert before == [False, False, False, True]
    assert after == [True, True]


# --- the collector during a batch ----------------------------------------------------------


def test_a_batch_collects_the_young_generations_less_often_and_puts_the_thresholds_back() -> None:
    """Concurrency 256 spent a fifth of its CPU in full collections of every running
    attempt's objects (promoted at Python's default thresholds); the batch raises them while
    it runs, and puts them back after. An embedding program that manages the collector
    itself (something frozen already) keeps its own."""
    got = fresh(
        """
        import gc
        from groundstate.runner import BATCH_GC_THRESHOLDS
        SEEN = []
        async def looking(session):
            SEEN.append(list(gc.get_threshold()))
            return await replaying(session)
        gc.set_threshold(650, 9, 8)
        own = batch(make_agent=lambda: FunctionAgent(looking))
        after = list(gc.get_threshold())
        raised, SEEN[:] = list(SEEN), []
        gc.freeze()
        managed = batch(make_agent=lambda: FunctionAgent(looking))
        print(json.dumps([own["reasons"], raised, after, SEEN, list(BATCH_GC_THRESHOLDS)]))
        """
    )
    reasons, raised, after, managed, thresholds = got
    assert reasons == ["success", "success"]
    assert raised[-2:] == [thresholds, thresholds] and thresholds != [650, 9, 8]
    assert after == [650, 9, 8]
    assert managed and all(seen == [650, 9, 8] for seen in managed)
