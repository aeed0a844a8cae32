"""Agents, twenty-first round, second pass: verdicts an in-process agent could still flip.

- A thread it starts and names like one of the harness's. Whether code of an agent's may still
  run (as a try's grading starts; what a pool worker leaves to its next attempts) told the
  threads other than the loop threads by their names: any thread named ``groundstate-...``,
  ``asyncio_...``, ``attempt-...`` (or, in-process, like a thread of the host's from before
  the batch) was the harness's. An agent that left such a thread, which ended the process once
  a check had started, made its crash an uncounted grader failure (rerun); on the pool, the
  thread outlived its attempt into the worker's next ones. The harness's threads are now told
  by who started them (:func:`groundstate.ourthreads.start`) and a library pool's (a loop's
  default executor) by the code they run, waiting for work.
- The environment's connections pointed at a database of the agent's own (graded on it).
- A budget loosened for the spending and put back before the run ends."""

from __future__ import annotations

import asyncio
import concurrent.futures
import sqlite3
import threading
import time
from collections.abc import Callable
from concurrent.futures import thread as executor_threads
from pathlib import Path
from typing import Any

import pytest

from groundstate import exitcause, ourthreads
from groundstate.agents.base import Session
from groundstate.executors._job import _agents_alive, leftovers, process_state
from groundstate.spec.suite import Suite
from groundstate.spec.system import BudgetsSection, load_system
from groundstate.store import RunStore
from groundstate.testing import FunctionAgent, attempt, scripted_system

from .conftest import EditTask, in_a_fresh_process
from .test_agents_round21 import _harness
from .test_executors_adversarial import pool, run
from .test_exitcause_round19 import _mark
from .test_gradexit_round19 import _in_try
from .test_inprocess_adversarial import _do_the_task, _then_honest
from .test_scale_round17 import chain, judged_bank, speaking_system

pytestmark = pytest.mark.timeout(300)

HARNESS_NAMES = ["groundstate-call", "groundstate-loop-idle", "asyncio_0", "attempt-1234abcd"]


def _foreign_names() -> list[str]:
    return ourthreads.names(ourthreads.foreign())


def _stays(release: threading.Event, name: str) -> threading.Thread:
    thread = threading.Thread(target=release.wait, args=(60,), name=name, daemon=True)
    thread.start()
    return thread


def _named_like_the_harness() -> dict[str, Any]:
    """In a fresh process: which threads of an agent's, named like the harness's or doing
    what a library pool does, are taken for the agent's, and which are not."""
    seen: dict[str, Any] = {"start": _foreign_names()}
    release = threading.Event()
    try:
        for name in HARNESS_NAMES:
            _stays(release, name)
        timer = threading.Timer(60, print)  # threading's own code, all of it
        timer.name = "asyncio_1"
        timer.start()
        # Code compiled under threading's file name, run by the pools' own loop: still foreign.
        spoof: dict[str, Any] = {}
        exec(compile("def get(block=True):\n    E.wait(60)\n", threading.__file__, "exec"), spoof)
        spoof["E"] = release
        fake = type("Q", (), {"get": staticmethod(spoof["get"]), "put": staticmethod(id)})()
        spoofed = threading.Thread(
            target=executor_threads._worker, args=(lambda: None, fake, None, ()), name="asyncio_2"
        )
        spoofed.start()
        busy = concurrent.futures.ThreadPoolExecutor(1, "asyncio")
        busy.submit(release.wait, 60)
        time.sleep(0.2)
        seen["agents"] = _foreign_names()
        seen["alive"] = _agents_alive()
        seen["left"] = leftovers(None, process_state())
        timer.cancel()
    finally:
        release.set()
    time.sleep(0.2)
    # Controls: a thread the harness started, idle pools (a loop's default executor, one of
    # the agent's own: waiting for work, they run nothing).
    ourthreads.start(threading.Thread(target=time.sleep, args=(5,), name="anything"))

    async def to_thread() -> None:
        await asyncio.to_thread(time.sleep, 0)

    asyncio.run(to_thread())
    own = concurrent.futures.ThreadPoolExecutor(1, "own")
    own.submit(time.sleep, 0).result()
    deadline = time.monotonic() + 30
    while _foreign_names() and time.monotonic() < deadline:
        time.sleep(0.05)
    seen["controls"] = _foreign_names()
    seen["controls_alive"] = _agents_alive()
    seen["controls_left"] = leftovers(None, process_state())
    return seen


def test_a_thread_named_like_the_harnesss_is_the_agents() -> None:
    """Threads of an agent's named ``groundstate-...``, ``asyncio_...``, ``attempt-...``, a
    ``threading.Timer``, the executors' loop run on a queue of the agent's (code compiled
    under ``threading``'s file name), and a pool thread at work are agents' code alive and
    left in a pool worker (before: only the last two, by name, and none of those named so).
    Controls: a thread the harness started, a loop's default executor and a pool of the
    agent's own once idle are not."""
    seen = in_a_fresh_process(_named_like_the_harness)
    assert seen["start"] == []
    assert seen["agents"] == sorted([*HARNESS_NAMES, "asyncio_0", "asyncio_1", "asyncio_2"])
    assert seen["alive"] is True
    assert seen["left"] is not None and seen["left"].startswith("threads left running: ")
    assert "asyncio_0" in seen["left"]  # the first five, sorted
    assert seen["controls"] == []
    assert seen["controls_alive"] is False
    assert seen["controls_left"] is None


def _named_like_the_host(tmp: str) -> tuple[set[str], set[str]]:
    """In a fresh process: the host's thread from before the batch, then an agent's thread
    given its very name; the try's grading is not noted while the agent's runs."""
    release, host_release = threading.Event(), threading.Event()
    host = _stays(host_release, "host-worker")
    with RunStore(Path(tmp) / "runs.db") as store:
        _mark(store, "r1")
        with exitcause.watching(store.path) as watch:
            watch.started("r1")
            lurker = _stays(release, host.name)
            try:
                _in_try("r1", exitcause.grading_starts)
                with_lurker = set(watch.grading)
            finally:
                release.set()
                lurker.join()
            _in_try("r1", exitcause.grading_starts)  # the host's own thread: no bar
            without = set(watch.grading)
    host_release.set()
    return with_lurker, without


def test_a_thread_named_like_the_hosts_keeps_grading_unnoted(tmp_path: Path) -> None:
    """In-process, the host's threads from before the batch are told by identity: an agent's
    thread named like one of them keeps its try's grading unnoted (a process-ending call
    stays the agent's); once it has ended, the host's own thread is no bar."""
    assert in_a_fresh_process(_named_like_the_host, str(tmp_path)) == (set(), {"r1"})


@pytest.mark.parametrize("name", ["groundstate-call", "asyncio_0"])
def test_an_agents_thread_named_like_the_harnesss_that_kills_its_worker_is_its_crash(
    tmp_path: Path, name: str
) -> None:
    """On the process pool, attempt 2's agent leaves a thread named like the harness's that
    kills its worker once the check runs: its crash, counted (before: the worker said its
    grading had started, and the death was an uncounted grader failure, rerun). Attempts 1
    and 3 are honest controls."""
    bank = judged_bank(tmp_path)
    speaking_system(tmp_path, {2: "thread"}, limit=3)
    agent = tmp_path / "rogue.py"
    plain = "threading.Thread(target=_lurk, args=(marks,), daemon=True)"
    assert plain in agent.read_text()
    agent.write_text(agent.read_text().replace(plain, plain[:-1] + f", name={name!r})"))
    system = load_system(tmp_path / "rogue_system.yaml")
    result = run(bank, system, tmp_path / "runs.db", pool(bank), 3, 1)
    assert chain(result.runs) == [
        (1, 0, "success", True),
        (2, 0, "agent_failure/crashed", True),
        (3, 0, "success", True),
    ]
    (crashed,) = [r for r in result.runs if r.attempt == 2]
    worker = crashed.infrastructure_status["worker"]
    assert worker["cause"] == "the worker process exited with code 9"
    assert "grading" not in worker or worker["grading"] is False


# --- the environment's connections, swapped for the agent's own -------------------------------


def _graded_on_a_copy(session: Session, which: tuple[str, ...]) -> str:
    """The task's end state made in a copy of the live database, and the environment's
    connections named in *which* pointed at the copy: the live one is never written."""
    env = _harness(session)._gateway._env
    copy = Path(env._workdir) / "agents-own.db"
    source = sqlite3.connect(env._live)
    target = sqlite3.connect(copy, isolation_level=None, check_same_thread=False)
    source.backup(target)
    source.close()
    target.execute("UPDATE accounts SET balance = balance - 30 WHERE id = 'A'")
    target.execute("UPDATE accounts SET balance = balance + 30 WHERE id = 'B'")
    target.execute("INSERT INTO transfers (source, target, amount, at) VALUES ('A', 'B', 30, '')")
    for name in which:
        if name == "_lease":
            env._lease = type(env._lease)(target)
        else:
            setattr(env, name, target)
    return "Moved 30 from A to B."


def _by_sql(task: dict[str, Any]) -> None:
    """The transfer task graded by its SQL assertion and check only (no state diff)."""
    task["outcome_assertions"] = [
        a for a in task["outcome_assertions"] if a["id"] != "exactly-one-transfer"
    ]


@pytest.mark.parametrize(
    "which", [("_control", "_lease"), ("_control",), ("_lease",)], ids=["both", "control", "lease"]
)
def test_the_environments_connections_swapped_for_the_agents_are_found(
    edited_bank: EditTask, which: tuple[str, ...]
) -> None:
    """The graders' and the harness's connections pointed at a database of the agent's own
    with the task's end state (the live database never written): before, the checks read
    the agent's copy (``success`` where the graders' lease was swapped). Now a prohibited
    action, stage ``harness_code``, naming the attribute, and put back for the grading."""
    suite = edited_bank(_by_sql)

    async def agent(session: Session) -> str:
        return _graded_on_a_copy(session, which)

    run = attempt(suite, "transfer", FunctionAgent(agent)).run
    assert run.terminal_reason == "agent_failure/prohibited_action", run.infrastructure_status
    assert run.infrastructure_status["stop"]["stage"] == "harness_code"
    message = str(run.infrastructure_status["exception"]["message"])
    assert all(f"the attempt's environment.{name}" in message for name in which)
    assert not run.success
    _then_honest(suite)


def test_an_honest_attempt_on_each_kind_keeps_its_connections(bank: Suite) -> None:
    """Control: the environment's own reset, calls and grading rebind none of them."""
    run = attempt(bank, "transfer", FunctionAgent(_do_the_task)).run
    assert run.terminal_reason == "success", run.infrastructure_status


# --- a budget loosened for the spending and put back before the run ends ----------------------


def _field_loosened(harness: Any) -> Callable[[], None]:
    budgets = harness._system.budgets
    object.__setattr__(budgets, "max_cost", None)
    return lambda: object.__setattr__(budgets, "max_cost", 0.01)


def _system_swapped(harness: Any) -> Callable[[], None]:
    real = harness._system
    harness._system = real.model_copy(update={"budgets": BudgetsSection(max_cost=None)})
    return lambda: setattr(harness, "_system", real)


@pytest.mark.parametrize("loosen", [_field_loosened, _system_swapped], ids=["field", "system"])
def test_a_budget_loosened_and_put_back_is_found(
    bank: Suite, loosen: Callable[[Any], Callable[[], None]]
) -> None:
    """The system's budget loosened (its field in place, or the session's system swapped),
    5.0 spent of 0.01, the task done, the budget put back before the run ends: before,
    ``success`` (the fields compared as the run ended were as loaded). Now the account's
    cost past the budget with no stop latched is a prohibited action."""
    system = scripted_system().model_copy(update={"budgets": BudgetsSection(max_cost=0.01)})

    async def agent(session: Session) -> str:
        put_back = loosen(_harness(session))
        session.record_usage(cost=5.0)
        reply = await _do_the_task(session)
        put_back()
        return reply

    run = attempt(bank, "transfer", FunctionAgent(agent), system=system).run
    assert run.terminal_reason == "agent_failure/prohibited_action", run.infrastructure_status
    message = str(run.infrastructure_status["exception"]["message"])
    assert "exceeds the budget 0.01 in the attempt's account, with no stop latched" in message
    assert not run.success


def test_spending_within_the_budget_passes(bank: Suite) -> None:
    """Control: 0.005 of 0.01 spent, the task done: ``success``."""
    system = scripted_system().model_copy(update={"budgets": BudgetsSection(max_cost=0.01)})

    async def agent(session: Session) -> str:
        session.record_usage(cost=0.005)
        return await _do_the_task(session)

    run = attempt(bank, "transfer", FunctionAgent(agent), system=system).run
    assert run.terminal_reason == "success", run.infrastructure_status


KINDS = __import__("tests.test_tally_round19", fromlist=["CASES"]).CASES


@pytest.mark.parametrize("case", KINDS, ids=[case.kind for case in KINDS])
def test_every_held_attribute_of_each_kind_rebound_is_found(case: Any) -> None:
    """On each kind (SQLite, PostgreSQL, workspace), each attribute its class holds bound,
    rebound to a stand-in by an agent that has done the task honestly, is named and put back
    before the grading (before: none of them was looked at)."""
    suite = case.suite()
    names: list[str] = []

    async def agent(session: Session) -> str:
        env = _harness(session)._gateway._env
        names.extend(sorted(type(env).held_bound))
        for tool, args in case.before:
            await session.call(tool, args)
        await session.call(case.tool, dict(case.args))
        for name in names:
            setattr(env, name, object())  # after its calls: the grading still reads
        return case.reply

    run = attempt(suite, case.task, FunctionAgent(agent)).run
    assert run.terminal_reason == "agent_failure/prohibited_action", run.infrastructure_status
    assert run.infrastructure_status["stop"]["stage"] == "harness_code"
    rebound = run.infrastructure_status["harness_rebound"]
    assert "_entered" in names
    assert sorted(rebound) == sorted(f"the attempt's environment.{n}" for n in names)


# --- a PostgreSQL environment's own connections closed by the agent ---------------------------

POSTGRES = next(case for case in KINDS if case.kind == "postgres")


@pytest.mark.parametrize("name", ["_control", "_evaluator", "_agent_raw", "_initial"])
@pytest.mark.parametrize("how", ["close", "finish"])
def test_a_postgres_connection_closed_is_the_agents_doing(name: str, how: str) -> None:
    """An agent that closes one of the PostgreSQL kind's own connections (``close()``, or its
    ``pgconn.finish()``, which leaves it looking broken) after doing the task: before, the
    final state's read or the grading failed (``environment_failure``, ``grader_failure``:
    an invalid attempt, rerun), or, for a connection not read after, ``success``. Now a
    prohibited action, stage ``harness_code``, naming the connection, as on SQLite."""

    async def agent(session: Session) -> str:
        for tool, args in POSTGRES.before:
            await session.call(tool, args)
        await session.call(POSTGRES.tool, dict(POSTGRES.args))
        connection = getattr(_harness(session)._gateway._env, name)
        connection.close() if how == "close" else connection.pgconn.finish()
        return str(POSTGRES.reply)

    run = attempt(POSTGRES.suite(), POSTGRES.task, FunctionAgent(agent)).run
    assert run.terminal_reason == "agent_failure/prohibited_action", run.infrastructure_status
    assert run.infrastructure_status["stop"]["stage"] == "harness_code"
    assert "connection to the database was closed" in str(
        run.infrastructure_status["exception"]["message"]
    )
    assert run.valid
