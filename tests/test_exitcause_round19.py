"""Who ended the process, nineteenth round: an in-process batch marks each try as it starts;
an agent's process-ending call (``os._exit``, a fatal signal to itself) writes what it
called onto the mark, and the resume records that try as the agent's crash. A process
ended from outside (SIGKILL, the out-of-memory killer) writes nothing: its tries in flight
are no verdict on the agent and run again, as on the process pool."""

from __future__ import annotations

import asyncio
import os
import posix
import signal
import subprocess
import sys
import threading
from datetime import UTC, datetime
from os import _exit  # bound before any batch: still laid at the agent's door
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from groundstate import exitcause
from groundstate.agents.base import Session
from groundstate.cli import interrupts as cli_interrupts
from groundstate.cli import main
from groundstate.leftovers import harness_exit
from groundstate.runner import BatchConfig, BatchRunner, derive_seed
from groundstate.spec.suite import load_suite
from groundstate.store import RunStore, StartedTry
from groundstate.testing import FunctionAgent, scripted_system
from groundstate.workdirs import TMPDIR_ENV

from .conftest import BANK
from .test_executors import Killed
from .test_inprocess_adversarial import _do_the_task

ROOT = Path(__file__).resolve().parent.parent
ORIGINAL = {
    "_exit": posix._exit,
    "abort": posix.abort,
    "kill": posix.kill,
    "killpg": posix.killpg,
    "execv": posix.execv,
    "execve": posix.execve,
}


# --- killed from outside: no verdict on the agent ------------------------------------------


@pytest.mark.skipif(not Path("/proc/self/task").exists(), reason="needs /proc")
def test_sigkill_from_outside_during_an_in_process_batch_then_resume_reruns_the_tries(
    tmp_path: Path,
) -> None:
    """The tries in flight when the process was killed are marked without a cause: the
    resume runs them again, and the batch holds each attempt once, every one valid, none
    the agent's crash, with the verdicts of the same batch run without the kill."""
    (tmp_path / "killed").mkdir()
    killed = Killed(tmp_path / "killed", "in-process", attempts=12, after=3)
    with RunStore(killed.store) as store:
        marks = store.started_tries(killed.batch_id)
    assert all(mark.cause is None for mark in marks), marks
    stored = killed.resume("in-process")
    killed.assert_each_attempt_once(stored)
    assert not [r for r in stored if r.terminal_reason == "agent_failure/crashed"]
    with RunStore(killed.store) as store:
        assert store.started_tries(killed.batch_id) == []
    whole = tmp_path / "whole.db"
    result = CliRunner(env={TMPDIR_ENV: str(killed.tmp)}).invoke(
        main, [*killed.run[3:], "--executor", "in-process", "--store", str(whole), "--json"]
    )
    assert result.exit_code == 0, result.output
    with RunStore(whole) as store:
        (batch,) = store.batches()
        uninterrupted = store.runs(batch.batch_id)

    def verdicts(runs: list[Any]) -> list[tuple[int, str]]:
        return sorted((r.attempt, r.terminal_reason) for r in runs)

    assert verdicts(stored) == verdicts(uninterrupted)


# --- ended by the agent: its crash, whichever way it called ---------------------------------


def _ends_it(how: str) -> FunctionAgent:
    """Honest but in the second attempt, where it ends the process its own way."""

    async def agent(session: Session) -> str:
        if session.seed == derive_seed(0, "transfer", 2):
            await session.call("check_pin", {"account": "A", "pin": "1234"})
            if how == "from-os-import":
                _exit(9)
            elif how == "abort":
                os.abort()
            elif how == "raise_signal":
                signal.raise_signal(signal.SIGSEGV)
            elif how == "thread":  # a thread of its own: no attempt's context there
                threading.Thread(target=os.kill, args=(os.getpid(), signal.SIGKILL)).start()
                await asyncio.sleep(60)
        return await _do_the_task(session)

    return FunctionAgent(agent)


def run_until_it_ends(store_path: str, how: str) -> None:
    """Run in a process of its own: a batch of three attempts, two at once, cut by the agent."""
    with RunStore(Path(store_path)) as store:
        runner = BatchRunner(
            load_suite(BANK), scripted_system(), store, make_agent=lambda: _ends_it(how)
        )
        asyncio.run(runner.start(BatchConfig(attempts=3, concurrency=2)))


@pytest.mark.parametrize(
    ("how", "called"),
    [
        ("from-os-import", "the agent called os._exit(9)"),
        ("abort", "the agent called os.abort()"),
        ("raise_signal", "the agent called signal.raise_signal(SIGSEGV)"),
        ("thread", "the agent called os.kill("),
    ],
)
def test_an_agent_that_ends_the_process_is_named_and_recorded_as_crashed(
    tmp_path: Path, how: str, called: str
) -> None:
    store_path = tmp_path / "runs.db"
    code = (
        "import sys; from tests.test_exitcause_round19 import run_until_it_ends as f; "
        "f(sys.argv[1], sys.argv[2])"
    )
    done = subprocess.run(
        [sys.executable, "-c", code, str(store_path), how],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode != 0, done.stderr[-2000:]
    with RunStore(store_path) as store:
        (batch,) = store.batches()
        marks = {m.attempt: m for m in store.started_tries(batch.batch_id)}
        assert 2 in marks, (marks, done.stderr[-2000:])
        assert called in (marks[2].cause or ""), marks[2]
        if how != "thread":  # the call is laid at the try that made it, not its neighbour
            assert all(m.cause is None for a, m in marks.items() if a != 2), marks
        runner = BatchRunner(
            load_suite(BANK),
            scripted_system(),
            store,
            make_agent=lambda: FunctionAgent(_do_the_task),
        )
        result = asyncio.run(runner.resume(batch.batch_id))
        assert store.started_tries(batch.batch_id) == []
        assert store.verify(batch.batch_id).problems == []
    runs = {r.attempt: r for r in result.runs}
    assert sorted(runs) == [1, 2, 3] and len(result.runs) == 3
    assert runs[2].terminal_reason == "agent_failure/crashed" and runs[2].valid
    assert called in runs[2].infrastructure_status["exception"]["message"]
    crashed = {a for a, r in runs.items() if r.terminal_reason == "agent_failure/crashed"}
    # A neighbour in flight is laid at the agent's door only when the call came from a
    # thread without an attempt's context (then every try in flight is marked).
    assert crashed == {2} or (how == "thread" and marks.keys() >= crashed)


# --- the wrappers: installed for the batch only, and only for what ends the process ---------


def test_the_originals_are_bound_again_after_an_in_process_batch(tmp_path: Path) -> None:
    seen: dict[str, Any] = {}

    async def agent(session: Session) -> str:
        seen.update(
            os_exit=os._exit,
            posix_exit=posix._exit,
            module_exit=globals()["_exit"],
            kill=os.kill,
            raise_signal=signal.raise_signal,
            try_id=exitcause.TRY.get(),
        )
        os.kill(os.getpid(), 0)  # reaches this process, ends nothing: passes through
        return await _do_the_task(session)

    with RunStore(tmp_path / "runs.db") as store:
        runner = BatchRunner(
            load_suite(BANK), scripted_system(), store, make_agent=lambda: FunctionAgent(agent)
        )
        result = asyncio.run(runner.start(BatchConfig(attempts=1)))
        assert store.started_tries(result.batch.batch_id) == []
    assert [r.terminal_reason for r in result.runs] == ["success"]
    # During the attempt: wrapped, the module's own ``from os import _exit`` too.
    assert seen["os_exit"] is not ORIGINAL["_exit"] and seen["os_exit"] is seen["posix_exit"]
    assert seen["module_exit"] is seen["os_exit"]
    assert seen["kill"] is not ORIGINAL["kill"]
    assert seen["try_id"] == result.runs[0].run_id
    # After the batch: every original, by identity.
    for name, original in ORIGINAL.items():
        assert getattr(os, name) is original, name
        assert getattr(posix, name) is original, name
    assert globals()["_exit"] is ORIGINAL["_exit"]
    assert not hasattr(signal.raise_signal, "__wrapped__")
    assert not hasattr(signal.pthread_kill, "__wrapped__")
    # The harness's own forced exits were never wrapped.
    assert cli_interrupts.harness_exit is ORIGINAL["_exit"]
    assert harness_exit is ORIGINAL["_exit"]


def _mark(store: RunStore, run_id: str) -> None:
    store.mark_started(
        "b1",
        StartedTry(
            run_id=run_id,
            task_id="t",
            attempt=1,
            retry=0,
            retry_of=None,
            seed=1,
            started_at=datetime.now(UTC),
            pid=os.getpid(),
            host="here",
        ),
    )


def test_a_call_that_does_not_end_the_process_leaves_no_cause(tmp_path: Path) -> None:
    """A signal that ends nothing (0, SIGCHLD), one to another process, and a call that
    fails (a bad status) name no cause: the try would otherwise be the agent's crash after
    a kill from outside."""
    with RunStore(tmp_path / "runs.db") as store:
        _mark(store, "r1")
        with exitcause.watching(store.path) as watch:
            watch.started("r1")
            os.kill(os.getpid(), 0)
            os.kill(os.getpid(), signal.SIGCHLD)
            signal.pthread_kill(threading.get_ident(), 0)
            with pytest.raises(TypeError):
                os._exit("not a status")  # type: ignore[arg-type]
            with pytest.raises(ProcessLookupError):
                os.killpg(2**30, signal.SIGKILL)
            (mark,) = store.started_tries("b1")
            assert mark.cause is None
            token = exitcause.TRY.set("r1")
            try:
                with pytest.raises(TypeError):
                    os.abort(1)  # type: ignore[call-arg]
            finally:
                exitcause.TRY.reset(token)
            (mark,) = store.started_tries("b1")
            assert mark.cause is None
        assert os.abort is ORIGINAL["abort"]


def test_an_agent_that_unwraps_a_call_is_put_back_and_named(tmp_path: Path) -> None:
    """The wrappers are the harness's bindings while the batch runs: an agent that binds the
    original again (to end the process unnamed) has it put back, as any rebinding of the
    harness's code, and the attempt is its prohibited action."""
    seen: list[Any] = []

    async def agent(session: Session) -> str:
        os._exit = ORIGINAL["_exit"]
        await asyncio.sleep(0)
        return await _do_the_task(session)

    def after(run: Any) -> None:
        seen.append(os._exit)

    with RunStore(tmp_path / "runs.db") as store:
        runner = BatchRunner(
            load_suite(BANK), scripted_system(), store, make_agent=lambda: FunctionAgent(agent),
            on_run=after,
        )  # fmt: skip
        result = asyncio.run(runner.start(BatchConfig(attempts=1)))
    (run,) = result.runs
    assert run.terminal_reason == "agent_failure/prohibited_action"
    assert "os._exit" in run.infrastructure_status["exception"]["message"]
    assert seen and seen[0] is not ORIGINAL["_exit"]  # put back: wrapped while the batch ran
    assert os._exit is ORIGINAL["_exit"]
