"""In-process agents, nineteenth round: an agent that ends the whole process (``os._exit``,
``os.kill(os.getpid(), SIGKILL)``) mid-batch must not get its attempt run again on resume."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from groundstate.agents.base import Session
from groundstate.runner import BatchConfig, BatchRunner, derive_seed
from groundstate.spec.suite import load_suite
from groundstate.store import RunStore
from groundstate.testing import FunctionAgent, scripted_system

from .conftest import BANK
from .test_inprocess_adversarial import _do_the_task

ROOT = Path(__file__).resolve().parent.parent

# --- an agent that ends the process -------------------------------------------------------


def _ends_the_process(how: str) -> FunctionAgent:
    """Honest in the smoke run and every attempt but the second, where it ends the process."""

    async def agent(session: Session) -> str:
        if session.seed == derive_seed(0, "transfer", 2):
            await session.call("check_pin", {"account": "A", "pin": "1234"})
            if how == "exit":
                os._exit(7)
            os.kill(os.getpid(), signal.SIGKILL)
        return await _do_the_task(session)

    return FunctionAgent(agent)


def run_until_the_agent_ends_it(store_path: str, how: str) -> None:
    """Run in a process of its own (below): a batch of three attempts, cut by the agent."""
    with RunStore(Path(store_path)) as store:
        runner = BatchRunner(
            load_suite(BANK), scripted_system(), store, make_agent=lambda: _ends_the_process(how)
        )
        asyncio.run(runner.start(BatchConfig(attempts=3)))


@pytest.mark.parametrize("how", ["exit", "sigkill"])
def test_an_agent_that_ends_the_process_is_recorded_as_crashed_on_resume(
    tmp_path: Path, how: str
) -> None:
    store_path = tmp_path / "runs.db"
    code = (
        "import sys; from tests.test_agents_round19 import run_until_the_agent_ends_it as f; "
        "f(sys.argv[1], sys.argv[2])"
    )
    done = subprocess.run(
        [sys.executable, "-c", code, str(store_path), how],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode in (7, -signal.SIGKILL), done.stderr[-2000:]
    with RunStore(store_path) as store:
        (batch,) = store.batches()
        stored = store.runs(batch.batch_id)
        shown = [(r.attempt, r.terminal_reason) for r in stored]
        assert [attempt for attempt, _ in shown] == [1], (shown, done.stderr[-2000:])
        assert len(store.started_tries(batch.batch_id)) == 1  # the try the agent cut short
        runner = BatchRunner(
            load_suite(BANK),
            scripted_system(),
            store,
            make_agent=lambda: FunctionAgent(_do_the_task),
        )
        result = asyncio.run(runner.resume(batch.batch_id))
        runs = {r.attempt: r for r in result.runs}
        assert store.started_tries(batch.batch_id) == []
        assert store.verify(batch.batch_id).problems == []
    # Stored data kept; the cut try is the agent's crash, not another draw; the rest ran.
    assert runs[1].run_id == stored[0].run_id
    assert runs[2].terminal_reason == "agent_failure/crashed"
    assert runs[2].retry == 0 and runs[2].valid
    assert "ended during this try" in runs[2].infrastructure_status["exception"]["message"]
    assert runs[3].terminal_reason != "agent_failure/crashed"
    assert len(result.runs) == 3


def test_a_try_cut_short_by_an_interrupt_is_not_marked(tmp_path: Path) -> None:
    """A try that ends without being stored but with the process alive (an agent raising
    an error the executor passes on, a store refusing the write) leaves no mark: the
    resume runs it again, as before."""
    with RunStore(tmp_path / "runs.db") as store:
        runner = BatchRunner(
            load_suite(BANK),
            scripted_system(),
            store,
            make_agent=lambda: FunctionAgent(_do_the_task),
        )
        result = asyncio.run(runner.start(BatchConfig(attempts=2)))
        assert store.started_tries(result.batch.batch_id) == []
        assert [r.terminal_reason for r in result.runs] == ["success", "success"]
