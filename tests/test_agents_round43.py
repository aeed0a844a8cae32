"""Round 43: adversarial in-process agents against the harness's own machinery. An agent that
finds the batch's event loops through ``sys._current_frames()`` and stops them, raises
``SystemExit``/``KeyboardInterrupt`` in them or cancels their tasks; signals sent around the
wrappers (``ctypes``' libc, a child process); writes to the environment's database from a
thread it leaves; tasks and threads it leaves that act later; the harness's modules, the
clock or the builtins rebound; deep recursion, ``MemoryError``, huge replies, ``gc`` tricks.
In each case the attempt's verdict is a failure or a stop with its reason, the batch keeps
every record whole, and the next attempt is graded as it acted."""

from __future__ import annotations

import asyncio
import contextvars
import gc
import shutil
import sqlite3
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from contextlib import suppress
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from groundstate.agents.base import Session
from groundstate.cli import main
from groundstate.environments.sqlite import SqliteEnvironment
from groundstate.interrupts import _ctrl_c
from groundstate.spec.suite import Suite, load_suite
from groundstate.store import RunStore
from groundstate.testing import FunctionAgent, attempt

from ._agents_builders import bank_world, stored_runs, validated_bank
from .conftest import BANK, BANK_SYSTEM, time_limit

PROHIBITED = "agent_failure/prohibited_action"

AGENT = """
import asyncio, ctypes, os, signal, subprocess, sys, threading, time

HOW, COUNT = {how!r}, {count!r}


def loops(skip_main=False):
    found = []
    for ident, frame in sys._current_frames().items():
        if skip_main and ident == threading.main_thread().ident:
            continue
        while frame is not None:
            for value in list(frame.f_locals.values()):
                if isinstance(value, asyncio.AbstractEventLoop) and value not in found:
                    found.append(value)
            frame = frame.f_back
    return found


def leave(code):
    raise code


def misbehave():
    if HOW == "stop":
        for loop in loops():
            loop.call_soon_threadsafe(loop.stop)
    elif HOW == "stop_directly":  # an attribute set from this thread, the loop woken later
        def stop():
            for loop in loops():
                loop.stop()
        thread = threading.Thread(target=stop)
        thread.start()
        thread.join()
    elif HOW == "exit":
        for loop in loops():
            loop.call_soon_threadsafe(leave, SystemExit(0))
    elif HOW == "keyboard":
        for loop in loops():
            loop.call_soon_threadsafe(leave, KeyboardInterrupt())
    elif HOW == "cancel_attempt":  # the attempt's own loop, not the batch's (main thread)
        for loop in loops(skip_main=True):
            for task in asyncio.all_tasks(loop):
                if task is not asyncio.current_task():
                    loop.call_soon_threadsafe(task.cancel)
    elif HOW == "cancel_all":
        for loop in loops():
            for task in asyncio.all_tasks(loop):
                if task is not asyncio.current_task():
                    loop.call_soon_threadsafe(task.cancel)
    elif HOW == "ctypes_kill":
        ctypes.CDLL(None).kill(os.getpid(), signal.SIGINT)
    elif HOW == "child_kill":
        subprocess.run(["kill", "-INT", str(os.getpid())])
    elif HOW == "fork_kill":  # the child's own os.kill: of another process, not wrapped
        pid = os.fork()
        if pid == 0:
            os.kill(os.getppid(), signal.SIGINT)
            os._exit(0)
        os.waitpid(pid, 0)


async def agent(session):
    if session.seed != 0:  # not the smoke run: the second stored attempt misbehaves
        with open(COUNT, "a") as f:
            f.write("x")
        if os.path.getsize(COUNT) == 2:
            misbehave()
            await asyncio.sleep(0.5)  # where the loop would have stopped
            return "Moved 30 from A to B."  # claims the work, never did it
    await session.say("What is your PIN?")
    await session.call("check_pin", {{"account": "A", "pin": "1234"}})
    await session.call("transfer", {{"source": "A", "target": "B", "amount": 30}})
    return "Moved 30 from A to B."
"""


@pytest.fixture(scope="module")
def template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The bank suite and a store holding its validation (each test copies both)."""
    return validated_bank(tmp_path_factory.mktemp("round43"))


def _world(template: Path, tmp_path: Path, how: str) -> list[str]:
    """``run``'s arguments for a batch of 3 attempts whose second misbehaves by *how*."""
    agent = AGENT.format(how=how, count=str(tmp_path / "count"))
    world = bank_world(template, tmp_path, agent)
    return ["run", *world, "--attempts", "3", "--concurrency", "1"]


def _reasons(store: Path) -> dict[int, str]:
    return {n: r.terminal_reason for n, r in stored_runs(store).items()}


def _in_its_own_process(args: list[str]) -> subprocess.CompletedProcess[str]:
    """``groundstate`` run in a process (and session) of its own: the signal an agent sends
    through C reaches no process but it."""
    return subprocess.run(
        [sys.executable, "-m", "groundstate.cli", *args],
        capture_output=True,
        text=True,
        timeout=300,
        start_new_session=True,
    )


def _resume(tmp_path: Path) -> subprocess.CompletedProcess[str]:
    with RunStore(tmp_path / "runs.db") as runs:
        batch = runs.batch().batch_id
    files = ["--system", str(tmp_path / "system.yaml"), "--store", str(tmp_path / "runs.db")]
    return _in_its_own_process(["run", str(tmp_path / "bank"), *files, "--resume", batch])


# --- (1) the batch's event loops, stopped or handed an exit ----------------------------------


@pytest.mark.parametrize(
    ("how", "said"),
    [
        ("stop", "stopped the batch's event loop"),
        ("stop_directly", "stopped the batch's event loop"),
        ("exit", "raised SystemExit(0)"),
        ("keyboard", "raised KeyboardInterrupt"),  # in a process of its own: see below
    ],
)
def test_an_agent_stopping_the_batchs_loops_is_its_prohibited_action(
    template: Path, tmp_path: Path, how: str, said: str
) -> None:
    """Before: ``loop.stop()`` ended ``run`` with a traceback, ``SystemExit(0)`` with status
    0 and one attempt of three stored, ``KeyboardInterrupt`` with status 70; the agent's
    attempt unstored each time, and ``--resume`` drew it anew. Now each loop runs again, the
    batch completes and the attempt that did it is its prohibited action."""
    args = _world(template, tmp_path, how)
    if how == "keyboard":  # only the command's process tells Ctrl-C (in a test: the user's)
        done = _in_its_own_process(args)
        assert done.returncode == 0, done.stderr
    else:
        result = CliRunner().invoke(main, args)
        assert result.exit_code == 0, result.output
    stored = stored_runs(tmp_path / "runs.db")
    reasons = {n: r.terminal_reason for n, r in stored.items()}
    assert reasons == {1: "success", 2: PROHIBITED, 3: "success"}
    stop = stored[2].infrastructure_status["stop"]
    assert stop["stage"] == "harness_code"
    assert said in stop["message"]


def test_an_agent_cancelling_its_attempts_task_is_its_crash(template: Path, tmp_path: Path) -> None:
    """Before: the cancellation reached the batch, which stopped with a traceback, the
    attempt unstored. Now the attempt is the agent's crash and the batch goes on."""
    result = CliRunner().invoke(main, _world(template, tmp_path, "cancel_attempt"))
    assert result.exit_code == 0, result.output
    stored = stored_runs(tmp_path / "runs.db")
    assert {n: r.terminal_reason for n, r in stored.items()} == {
        1: "success",
        2: "agent_failure/crashed",
        3: "success",
    }
    assert "cancelled" in stored[2].infrastructure_status["exception"]["message"]


def test_an_agent_cancelling_the_batchs_task_is_its_crash_on_resume(
    template: Path, tmp_path: Path
) -> None:
    """The batch's own task cancelled (no signal) cannot be run on: ``run`` says so and ends
    with status 70 (before: a traceback), and its try in flight keeps its mark with the
    cause, so the resume records the agent's crash instead of another draw (before: rerun,
    and the agent, honest then, passed)."""
    done = _in_its_own_process(_world(template, tmp_path, "cancel_all"))
    assert done.returncode == 70, done.stderr
    assert "cancelled the batch's task" in done.stderr
    assert "Traceback" not in done.stderr
    again = _resume(tmp_path)
    assert again.returncode == 0, again.stderr
    stored = stored_runs(tmp_path / "runs.db")
    assert {n: r.terminal_reason for n, r in stored.items()} == {
        1: "success",
        2: "agent_failure/crashed",
        3: "success",
    }
    # Its attempt's task (in its own loop) and the batch's were both cancelled: whichever
    # lands first says so (round 44: under load the attempt's did, and its crash was stored
    # before the batch's task was; tests/test_agents_round44.py orders both ways).
    said = stored[2].infrastructure_status["exception"]["message"]
    assert "cancelled by code" in said or "task was cancelled in its own event loop" in said


# --- (2) the steady loop itself ---------------------------------------------------------------


async def _stopped_thrice() -> list[int]:
    loop = asyncio.get_running_loop()
    done = []
    for n in range(3):
        threading.Thread(target=loop.call_soon_threadsafe, args=(loop.stop,)).start()
        await asyncio.sleep(0.05)
        done.append(n)
    return done


def test_a_loop_stopped_from_another_thread_runs_its_coroutine_to_the_end(
    tmp_path: Path,
) -> None:
    """Before (``asyncio.run``): ``RuntimeError: Event loop stopped before Future
    completed``, the coroutine's work abandoned half-way. The try in flight is told."""
    from groundstate import steadyloop
    from groundstate.exitcause import disruption_of, forget_interruption, watching

    RunStore(tmp_path / "runs.db").close()
    with watching(tmp_path / "runs.db") as watch:

        def acting() -> None:  # in a context of its own, as a try is: ``started`` marks it
            watch.started("acting")
            try:
                assert steadyloop.run(_stopped_thrice()) == [0, 1, 2]
                assert "loop.stop()" in (disruption_of("acting") or "")
            finally:
                watch.ended("acting")
                forget_interruption("acting")

        contextvars.copy_context().run(acting)


def test_an_attempts_loop_stopped_with_no_try_to_blame_ends_as_under_asyncio_run() -> None:
    """False-positive guard: with no in-process try in flight (a pool worker, the testing
    API, the canary) an attempt's loop stopped is never absorbed unremarked: it ends the
    work as it did. The batch's own loop is held all the same."""
    from groundstate import steadyloop

    loop = asyncio.new_event_loop()
    try:
        with pytest.raises(RuntimeError, match="Event loop stopped before Future completed"):
            steadyloop.run_on(loop, _stopped_thrice(), contextvars.copy_context())
    finally:
        loop.close()
    assert steadyloop.run(_stopped_thrice()) == [0, 1, 2]


def test_the_coroutines_own_exit_and_errors_still_leave_the_steady_loop() -> None:
    """False-positive guards: what the main coroutine itself raises is its end, not a
    disruption to run on from."""
    from groundstate import steadyloop

    async def exits() -> None:
        raise SystemExit(3)

    async def fails() -> None:
        raise ValueError("its own")

    with pytest.raises(SystemExit) as exited:
        steadyloop.run(exits())
    assert exited.value.code == 3
    with pytest.raises(ValueError, match="its own"):
        steadyloop.run(fails())


def test_the_users_ctrl_c_is_no_disruption(monkeypatch: pytest.MonkeyPatch) -> None:
    """A ``KeyboardInterrupt`` after a Ctrl-C (or with nobody watching, as in a library
    caller's process) is the user's: raised on, never laid at an agent."""
    from groundstate import steadyloop

    loop = asyncio.new_event_loop()
    try:
        pending = loop.create_future()
        monkeypatch.setitem(_ctrl_c, "watched", True)
        monkeypatch.setitem(_ctrl_c, "seen", True)
        assert steadyloop.disruption(KeyboardInterrupt(), pending) is None
        monkeypatch.setitem(_ctrl_c, "seen", False)
        assert steadyloop.disruption(KeyboardInterrupt(), pending) is not None
        assert steadyloop.disruption(RuntimeError("another"), pending) is None
        pending.set_result(None)
        assert steadyloop.disruption(SystemExit(0), pending) is None  # the task's own end
    finally:
        loop.close()


def test_a_disruption_is_laid_at_its_culprits_in_flight(tmp_path: Path) -> None:
    """Laid at the tries whose code made the call (told as it was made: round 44), those
    still in flight; never at the others in flight, being graded or not."""
    from groundstate.exitcause import disruption_of, forget_interruption, loop_disrupted, watching

    store = tmp_path / "runs.db"
    RunStore(store).close()
    with watching(store) as watch:

        def tries() -> bool:
            watch.started("acting")
            watch.started("other")
            watch.started("graded")
            watch.grading.add("graded")
            return loop_disrupted(
                "stopped the batch's event loop (loop.stop())", {"acting", "gone"}
            )

        assert contextvars.copy_context().run(tries)  # held: the batch has tries in flight
    try:
        assert disruption_of("acting") == "stopped the batch's event loop (loop.stop())"
        assert disruption_of("other") is None
        assert disruption_of("graded") is None
        assert disruption_of("gone") is None  # ended: nothing kept for it
        assert disruption_of(None) is None
    finally:
        forget_interruption("acting")
    assert disruption_of("acting") is None


# --- (3) signals sent around the wrappers --------------------------------------------------------


@pytest.mark.parametrize("how", ["ctypes_kill", "child_kill", "fork_kill"])
def test_a_signal_sent_around_the_wrappers_never_stores_the_attempt_as_passed(
    template: Path, tmp_path: Path, how: str
) -> None:
    """Not told from the user's Ctrl-C (see docs/reliability.md): the batch stops as
    interrupted (130), with what was stored whole and the agent's attempt not among it; the
    resume completes the batch."""
    done = _in_its_own_process(_world(template, tmp_path, how))
    assert done.returncode == 130, done.stderr
    assert _reasons(tmp_path / "runs.db") == {1: "success"}
    again = _resume(tmp_path)
    assert again.returncode == 0, again.stderr
    assert len(stored_runs(tmp_path / "runs.db")) == 3


# --- (4) in-process attempts: the database, left threads and tasks, rebinding -----------------


async def _do_the_task(session: Session) -> str:
    await session.say("What is your PIN?")
    await session.call("check_pin", {"account": "A", "pin": "1234"})
    await session.call("transfer", {"source": "A", "target": "B", "amount": 30})
    return "Moved 30 from A to B."


def _run(suite: Suite, fn: Callable[[Session], Any], seconds: float = 30) -> Any:
    with time_limit(suite, "transfer", seconds):
        return attempt(suite, "transfer", FunctionAgent(fn)).run


def _live_database() -> Path:
    """The live file of the environment the running attempt uses (as an agent finds it)."""
    envs = [o for o in gc.get_objects() if type(o) is SqliteEnvironment and not o._closed]
    return Path(envs[-1]._live)


SOLVE = [
    "UPDATE accounts SET balance = 70 WHERE id = 'A'",
    "UPDATE accounts SET balance = 80 WHERE id = 'B'",
    "INSERT INTO transfers (source, target, amount) VALUES ('A', 'B', 30)",
]


def _solve(path: Path) -> None:
    db = sqlite3.connect(path, timeout=5)
    try:
        for sql in SOLVE:
            db.execute(sql)
        db.commit()
    finally:
        db.close()


@pytest.mark.parametrize("how", ["connection", "file_bytes"])
def test_a_thread_writing_the_answer_as_the_agent_returns_is_caught(
    bank: Suite, tmp_path: Path, how: str
) -> None:
    """Between the gateway's last look and the grading: a second connection's commit, or the
    solved file's bytes written over the live file in place."""

    async def writes_behind(session: Session) -> str:
        live = _live_database()
        solved = tmp_path / "solved.db"
        shutil.copy(live, solved)
        _solve(solved)

        def write() -> None:
            time.sleep(0.01)
            if how == "connection":
                _solve(live)
            else:
                with open(live, "r+b") as f:
                    f.write(solved.read_bytes())

        threading.Thread(target=write, daemon=True).start()
        return "Moved 30 from A to B."

    run = _run(bank, writes_behind)
    assert run.terminal_reason != "success"
    assert run.terminal_reason in (PROHIBITED, "agent_failure/incorrect_state")
    if run.terminal_reason == PROHIBITED:
        assert run.infrastructure_status["stop"]["stage"] == "outside_gateway"


def test_a_thread_writing_while_the_checks_read_is_caught(bank: Suite) -> None:
    """The thread has written once before the agent replies (round 44: under load it could
    first run once the checks were done, and the attempt failed on its state instead) and
    goes on writing while the checks read."""
    stop, wrote = threading.Event(), threading.Event()

    async def keeps_writing(session: Session) -> str:
        live = _live_database()

        def write() -> None:
            while not stop.is_set():
                with suppress(sqlite3.Error):
                    _solve(live)
                    wrote.set()
                time.sleep(0.001)

        threading.Thread(target=write, daemon=True).start()
        await asyncio.to_thread(wrote.wait)
        return "Moved 30 from A to B."

    try:
        run = _run(bank, keeps_writing)
    finally:
        stop.set()
    assert run.terminal_reason == PROHIBITED
    assert run.infrastructure_status["stop"]["stage"] == "outside_gateway"


def test_a_task_left_running_cannot_do_the_work_after_the_reply(bank: Suite) -> None:
    """An asyncio task the agent leaves in its loop calls the tools after it returned: the
    calls are refused, the attempt graded as it stood (nothing done)."""
    seen: list[str] = []
    left: list[asyncio.Future[None]] = []

    async def leaves_a_task(session: Session) -> str:
        async def later() -> None:
            await asyncio.sleep(0.05)
            try:
                await _do_the_task(session)
            except BaseException as exc:
                seen.append(type(exc).__name__)
                raise

        left.append(asyncio.ensure_future(later()))
        return "Moved 30 from A to B."

    run = _run(bank, leaves_a_task)
    assert run.terminal_reason == "agent_failure/incorrect_state"


def test_a_thread_left_running_cannot_act_in_the_next_attempt(bank: Suite) -> None:
    """A thread the first attempt leaves calls its session's tools while the next attempt
    runs: refused, and the next attempt (honest) passes on its own work."""
    kept: list[Session] = []
    go, refused = threading.Event(), []

    async def leaves_a_thread(session: Session) -> str:
        kept.append(session)
        loop = asyncio.new_event_loop()

        def later() -> None:
            go.wait(30)
            try:
                loop.run_until_complete(_do_the_task(session))
            except BaseException as exc:
                refused.append(type(exc).__name__)
            finally:
                loop.close()

        threading.Thread(target=later, daemon=True).start()
        return "Moved 30 from A to B."

    async def honest_after_waking(session: Session) -> str:
        go.set()
        for _ in range(200):
            if refused:
                break
            await asyncio.sleep(0.01)
        return await _do_the_task(session)

    first = _run(bank, leaves_a_thread)
    second = _run(bank, honest_after_waking)
    assert first.terminal_reason == "agent_failure/incorrect_state"
    assert second.terminal_reason == "success", second.infrastructure_status
    assert refused  # the old session's calls were refused, not run on the new database


@pytest.mark.parametrize("target", ["sqlite3.connect", "json.dumps", "asyncio.wait_for"])
def test_an_agent_rebinding_a_module_the_harness_uses_is_stopped(bank: Suite, target: str) -> None:
    module_name, name = target.split(".")
    module = sys.modules[module_name]
    real = getattr(module, name)

    async def rebinds(session: Session) -> str:
        reply = await _do_the_task(session)
        setattr(module, name, lambda *a, **k: real(*a, **k))
        return reply

    run = _run(bank, rebinds)
    assert getattr(module, name) is real  # put back
    assert run.terminal_reason == PROHIBITED
    assert run.infrastructure_status["stop"]["stage"] == "harness_code"
    assert target in " ".join(run.infrastructure_status["harness_rebound"])


def test_an_agent_freezing_time_and_doing_nothing_still_fails(bank: Suite) -> None:
    real = time.monotonic, time.time

    async def freezes(session: Session) -> str:
        time.monotonic = lambda: 0.0
        time.time = lambda: 0.0
        return "Moved 30 from A to B."

    try:
        run = _run(bank, freezes)
    finally:
        time.monotonic, time.time = real
    assert run.terminal_reason != "success"
    assert run.terminal_reason.startswith("agent_failure/")


# --- (5) recursion, memory, huge replies, gc ---------------------------------------------------


@pytest.mark.parametrize("error", [RecursionError, MemoryError])
def test_an_agent_raising_recursion_or_memory_errors_after_the_work_is_a_crash(
    bank: Suite, error: type[BaseException]
) -> None:
    """Never taken for the environment's or the harness's failure (an invalid, rerun
    attempt): the agent's own crash."""

    async def raises(session: Session) -> str:
        await _do_the_task(session)
        raise error("on purpose")

    run = _run(bank, raises)
    assert run.terminal_reason == "agent_failure/crashed"
    assert run.infrastructure_status["exception"]["type"] == error.__name__


def test_an_agent_recursing_without_end_is_a_crash(bank: Suite) -> None:
    async def recurses(session: Session) -> str:
        def deeper(n: int) -> int:
            return deeper(n + 1) + 1

        return str(deeper(0))

    run = _run(bank, recurses)
    assert run.terminal_reason == "agent_failure/crashed"
    assert run.infrastructure_status["exception"]["type"] == "RecursionError"


def test_an_agent_lowering_the_recursion_limit_gets_no_grader_failure(bank: Suite) -> None:
    """A recursion limit too low for the checks would make the grading fail: an invalid
    attempt, rerun (another draw). The limit is put back as the agent's run ends."""
    limit = sys.getrecursionlimit()

    async def lowers(session: Session) -> str:
        sys.setrecursionlimit(60)
        return "Moved 30 from A to B."

    try:
        run = _run(bank, lowers)
    finally:
        sys.setrecursionlimit(limit)
    assert run.terminal_reason == "agent_failure/incorrect_state"


@pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning")  # its callback's
def test_an_agents_gc_tricks_leave_the_verdict_honest(bank: Suite) -> None:
    def refuses(phase: str, info: dict[str, Any]) -> None:
        raise SystemExit(0)

    async def tricks(session: Session) -> str:
        gc.callbacks.append(refuses)
        gc.disable()
        gc.collect()
        return "Moved 30 from A to B."

    try:
        run = _run(bank, tricks)
    finally:
        gc.enable()
        if refuses in gc.callbacks:
            gc.callbacks.remove(refuses)
    assert run.terminal_reason == "agent_failure/incorrect_state"


def test_a_huge_final_reply_is_kept_whole(bank: Suite) -> None:
    """A 20 MB final reply: the attempt graded on its state, the reply kept as given."""
    huge = "x" * (20 * 1024 * 1024)

    async def honest_and_verbose(session: Session) -> str:
        await _do_the_task(session)
        return huge

    run = _run(bank, honest_and_verbose)
    assert run.terminal_reason == "success"
    assert run.final_message == huge


def test_an_agent_raising_cancelled_error_itself_is_a_crash(bank: Suite) -> None:
    """Its own ``CancelledError`` is not the batch's cancellation."""

    async def cancels(session: Session) -> str:
        await _do_the_task(session)
        raise asyncio.CancelledError

    run = _run(bank, cancels)
    assert run.terminal_reason == "agent_failure/crashed"


# --- (6) a harness error on a try while code an agent left still runs ------------------------


def _batch_failing_on_attempt_2(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, release: threading.Event, leave: bool
) -> tuple[Any, RunStore]:
    """A two-attempt in-process batch whose harness work on attempt 2 fails (as when a
    thread rebinds what it calls); that attempt's agent leaves a thread running if *leave*."""
    import groundstate.executors.local as local
    from groundstate.runner import BatchConfig, run_batch
    from groundstate.spec.system import load_system

    real = local.run_job

    async def failing(job: Any, *args: Any) -> Any:
        output = await real(job, *args)
        if job.info.attempt == 2:
            raise ValueError("zip() argument 2 is shorter than argument 1")
        return output

    monkeypatch.setattr(local, "run_job", failing)

    async def agent(session: Session) -> str:
        if leave and session.seed != 0:
            threading.Thread(target=release.wait, args=(30,), daemon=True).start()
        return await _do_the_task(session)

    store = RunStore(tmp_path / "runs.db")
    config = BatchConfig(attempts=2)
    system = load_system(BANK_SYSTEM)
    factory = lambda: FunctionAgent(agent)  # noqa: E731
    try:
        return run_batch(load_suite(BANK), system, config, store, agent_factory=factory), store
    except BaseException:
        store.close()
        raise


def test_a_harness_error_while_a_left_thread_runs_is_the_agents_crash(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, release: threading.Event
) -> None:
    """Before: the batch stopped with the error, the try unstored and drawn anew by a resume
    (where the agent, honest that time, passed)."""
    result, store = _batch_failing_on_attempt_2(monkeypatch, tmp_path, release, leave=True)
    with store:
        reasons = {r.attempt: r.terminal_reason for r in result.runs}
        assert reasons == {1: "success", 2: "agent_failure/crashed"}
        (second,) = [r for r in result.runs if r.attempt == 2]
        message = second.infrastructure_status["exception"]["message"]
        assert "while code an agent left ran (ValueError: zip()" in message
        assert store.verify(result.batch.batch_id).ok


def test_a_harness_error_with_no_agent_code_left_still_stops_the_batch(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, release: threading.Event
) -> None:
    """False-positive guard: the harness's own bug is not laid at an agent that left
    nothing running; the batch stops with it, what was stored kept."""
    with pytest.raises(ValueError, match="zip"):
        _batch_failing_on_attempt_2(monkeypatch, tmp_path, release, leave=False)
    with RunStore(tmp_path / "runs.db") as store:
        batch = store.batch().batch_id
        assert [r.terminal_reason for r in store.runs(batch)] == ["success"]
