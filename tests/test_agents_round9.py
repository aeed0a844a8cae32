"""Adversarial in-process agents, ninth round: what an agent can hand the harness through its
output streams and its usage reports, and what it does around its stops and limits.

Each misbehaviour must end its own attempt with the agent's own reason (never a success,
never an invalid attempt, never a harness that raises), and an honest attempt after it must
still succeed.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
import subprocess
import sys
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest

from groundstate.agents.base import Session
from groundstate.capture import MAX_CHARS, Output
from groundstate.cli.interrupts import interruptible
from groundstate.interrupts import SHUT_OUT, InterruptFlag
from groundstate.records import AgentRun
from groundstate.runner import BatchConfig, BatchRunner
from groundstate.spec.suite import Suite
from groundstate.spec.system import BudgetsSection, load_system
from groundstate.store import RunStore, prepare_run
from groundstate.testing import FunctionAgent, attempt, scripted_system

from .conftest import BANK_SYSTEM, HANG, time_limit

AgentFn = Callable[[Session], Awaitable[Any]]


async def _do_the_task(session: Session) -> str:
    await session.say("What is your PIN?")
    await session.call("check_pin", {"account": "A", "pin": "1234"})
    await session.call("transfer", {"source": "A", "target": "B", "amount": 30})
    return "Moved 30 from A to B."


def _run(suite: Suite, fn: AgentFn, **kwargs: Any) -> AgentRun:
    return attempt(suite, "transfer", FunctionAgent(fn), **kwargs).run


def _then_honest(suite: Suite) -> None:
    """The next attempt, by an honest agent, is unaffected by what the adversary left: at
    the task's limit or longer, not at a tight one a test set for its adversary, which a
    loaded machine's honest attempt may not meet."""
    with time_limit(suite, "transfer", HANG):
        run = _run(suite, _do_the_task)
    assert run.terminal_reason == "success", run.infrastructure_status


# --- the output streams -------------------------------------------------------------------


class _Sized:
    """Not text, but with a length and items: what slicing and counting accept."""

    def __len__(self) -> int:
        return 3

    def __getitem__(self, key: Any) -> int:
        return 42


@pytest.mark.parametrize("junk", [b"raw bytes", _Sized(), 12])
def test_an_agent_writing_what_is_not_text_to_its_output_crashes_only_itself(
    bank: Suite, junk: Any
) -> None:
    """``sys.stdout.write(b"...")`` raises ``TypeError`` on a real text stream. The attempt's
    capture took it, and joining the captured output when the record was built raised in
    the harness (the attempt had no record; in the pool, the worker's job failed). The
    agent that does it and carries on gets its write refused as a text stream refuses it;
    one that lets it escape has crashed."""

    async def writes(session: Session) -> str:
        reply = await _do_the_task(session)
        sys.stdout.write(junk)
        return reply

    output = attempt(bank, "transfer", FunctionAgent(writes))
    run = output.run
    assert run.terminal_reason == "agent_failure/crashed"
    assert run.infrastructure_status["exception"]["type"] == "TypeError"
    prepare_run(run, output.artifacts)  # the record stores

    refused: list[str] = []

    async def carries_on(session: Session) -> str:
        try:
            sys.stderr.write(junk)
        except TypeError as exc:
            refused.append(str(exc))
        print("kept", end="")
        return await _do_the_task(session)

    output = attempt(bank, "transfer", FunctionAgent(carries_on))
    assert output.run.terminal_reason == "success"
    assert output.artifacts["stdout.txt"] == "kept"
    assert refused and "must be str" in refused[0]
    _then_honest(bank)


def test_a_str_subclass_written_to_the_output_is_kept_as_its_characters() -> None:
    class Loud(str):
        def __getitem__(self, key: Any) -> str:
            return "SHOUT"

    from groundstate.capture import captured

    with captured() as printed:
        sys.stdout.write(Loud("quiet"))
    assert printed.artifacts() == {"stdout.txt": "quiet"}


def test_writes_past_the_cap_keep_nothing_per_write() -> None:
    """An agent (or a thread it left) writing for ever past the cap: each write was kept as
    an empty part, a list growing with every write for the life of the attempt's record."""
    output = Output()
    output.write("stdout", "x" * MAX_CHARS)
    for _ in range(1000):
        output.write("stdout", "y")
    assert len(output._parts["stdout"]) == 1
    assert output.text("stdout").endswith("[1000 more characters not kept]\n")


# --- usage reports ------------------------------------------------------------------------


def test_a_cost_past_the_float_range_is_a_protocol_mismatch_not_a_dodged_budget(
    bank: Suite,
) -> None:
    """``record_usage(cost=10**400)`` raised ``OverflowError`` in the session's check, before
    anything was latched: the agent caught it and its report, over any budget, never counted
    (a success under ``max_cost: 1``)."""
    system = scripted_system().model_copy(update={"budgets": BudgetsSection(max_cost=1.0)})
    caught: list[BaseException] = []

    async def overflows(session: Session) -> str:
        try:
            session.record_usage(cost=10**400)
        except BaseException as exc:  # the agent swallows whatever it is
            caught.append(exc)
        return await _do_the_task(session)

    run = _run(bank, overflows, system=system)
    assert run.terminal_reason == "harness_compatibility_failure"
    assert run.infrastructure_status["stop"]["stage"] == "usage"
    assert run.cost == 0.0
    assert [type(e).__name__ for e in caught] == ["HarnessCompatibilityError"]
    _then_honest(bank)


def test_costs_adding_up_past_the_float_range_are_refused_not_stored_as_null(
    bank: Suite,
) -> None:
    """Two reports of 1.5e308 each are finite; their total is ``inf``, which the record's
    JSON holds as ``null``: the stored record could not be read back (``report`` said the
    batch was corrupt). The report that overflows is refused and latched."""

    async def adds_up(session: Session) -> str:
        session.record_usage(cost=1.5e308)
        with contextlib.suppress(Exception):  # swallowed, to carry on
            session.record_usage(cost=1.5e308)
        return await _do_the_task(session)

    output = attempt(bank, "transfer", FunctionAgent(adds_up))
    run = output.run
    assert run.terminal_reason == "harness_compatibility_failure"
    assert run.cost == 1.5e308
    stored = prepare_run(run, output.artifacts).run
    assert AgentRun.model_validate_json(stored.model_dump_json()).cost == 1.5e308
    _then_honest(bank)


# --- signals ------------------------------------------------------------------------------


def test_run_ignores_the_signals_an_in_process_agent_could_end_it_with(bank: Suite) -> None:
    """An in-process agent's ``signal.alarm(1)`` (or SIGUSR1 to its own process) ended
    ``run`` with every attempt in flight, where a pool worker ignores them and the batch
    goes on: ``run`` ignores them too while it runs, and puts them back after."""
    before = {signum: signal.getsignal(signum) for signum in SHUT_OUT}

    async def signals(session: Session) -> str:
        os.kill(os.getpid(), signal.SIGUSR2)  # ignored: the process goes on
        return await _do_the_task(session)

    with interruptible(InterruptFlag()):
        assert {signal.getsignal(signum) for signum in SHUT_OUT} == {signal.SIG_IGN}
        assert _run(bank, signals).terminal_reason == "success"
    assert {signum: signal.getsignal(signum) for signum in SHUT_OUT} == before


# --- the agent's factory ------------------------------------------------------------------

FACTORY = '''
import time

BUILT = [0]


class Agent:
    """Built once for the preflight and once for the smoke run; then the third build blocks
    past the time limit and the fourth raises."""

    def __init__(self, wait: float = 0.0) -> None:
        BUILT[0] += 1
        if BUILT[0] == 3:
            time.sleep(wait)
        if BUILT[0] == 4:
            raise RuntimeError("cannot build")

    async def run(self, session):
        await session.say("What is your PIN?")
        await session.call("check_pin", {"account": "A", "pin": "1234"})
        await session.call("transfer", {"source": "A", "target": "B", "amount": 30})
        return "Moved 30 from A to B."
'''


def test_the_agents_factory_runs_under_its_attempts_time_limit(bank: Suite, tmp_path: Path) -> None:
    """A system file's factory is the system's code: it was called before the attempt, with
    no time limit, so one that blocked held its attempt in-process as long as it liked (and
    then succeeded; the pool killed it at its hard limit), and one that raised stopped the
    whole batch. Each is now its own attempt's time limit or crash."""
    (tmp_path / "factory.py").write_text(FACTORY)
    file = tmp_path / "system.yaml"
    file.write_text(
        BANK_SYSTEM.read_text()
        .replace("entry: bank_agent.py:bank_agent", "entry: factory.py:Agent")
        .replace("{fault_rate: 0.5}", "{wait: 8}")  # past the limit, however late it strikes
        # the third attempt's work (a message, two calls) must fit: at 0.3 s it raced the limit
        .replace("  step_limit: 10\n", "  step_limit: 10\n  time_limit: 2\n")
    )
    with RunStore(tmp_path / "runs.db") as store:
        runner = BatchRunner(bank, load_system(file), store)
        result = asyncio.run(runner.start(BatchConfig(attempts=3)))
    assert {r.attempt: r.terminal_reason for r in result.runs} == {
        1: "agent_failure/time_limit",
        2: "agent_failure/crashed",
        3: "success",
    }
    crash = result.runs[1].infrastructure_status["exception"]
    assert (crash["type"], crash["message"]) == ("RuntimeError", "cannot build")


# --- the interpreter's limits -------------------------------------------------------------


def test_the_recursion_limit_and_switch_interval_an_agent_sets_are_put_back(
    bank: Suite,
) -> None:
    """``sys.setrecursionlimit(20)`` left the harness's own grading of the attempt raising
    ``RecursionError`` (no record: the batch stopped), and both settings reached every later
    attempt in the process. They are put back as the agent's run ends."""
    limit, interval = sys.getrecursionlimit(), sys.getswitchinterval()

    async def lowers(session: Session) -> str:
        reply = await _do_the_task(session)
        sys.setswitchinterval(0.5)
        with contextlib.suppress(RecursionError):  # if the stack is already deeper
            sys.setrecursionlimit(20)
        return reply

    try:
        run = _run(bank, lowers)
        assert (sys.getrecursionlimit(), sys.getswitchinterval()) == (limit, interval)
    finally:
        sys.setrecursionlimit(limit)
        sys.setswitchinterval(interval)
    assert run.terminal_reason == "success", run.infrastructure_status
    _then_honest(bank)


# --- standard output ----------------------------------------------------------------------


ASIDE = """
import os, subprocess, sys, threading
from groundstate.cli.runs import _standard_output_aside

aside = _standard_output_aside()
os.write(1, b"raw ")  # a C library, sys.stdout.buffer
sys.__stdout__.write("dunder ")
sys.__stdout__.flush()
subprocess.run(["echo", "child"])
print("printed")  # the harness's own stdout, in --json mode: nothing to add to the JSON
aside.write('{"json": true}')
aside.flush()
os.write(1, b"late")  # a thread left running after the batch
"""


def test_run_json_in_process_sets_the_real_standard_output_aside() -> None:
    """An in-process agent writing to file descriptor 1 (``os.write``, a C library,
    ``sys.stdout.buffer``, ``sys.__stdout__``, a subprocess) wrote into ``run --json``'s
    output, which the pool's workers were spared (their descriptor 1 is 2): ``run --json``
    sets the real descriptor 1 aside for its JSON, in-process too (the whole command with
    such an agent: checked by hand, as it costs seconds)."""
    done = subprocess.run([sys.executable, "-c", ASIDE], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == {"json": True}
    for written in ("raw", "dunder", "child", "printed", "late"):
        assert written in done.stderr


def test_the_agents_module_is_imported_before_its_attempt_the_factory_within(
    bank: Suite, tmp_path: Path
) -> None:
    """Only the factory's call is the attempt's: a module slow to import (a large library)
    is imported once per process before any attempt (a pool worker's first attempt does not
    pay for it within its time limit, as an in-process one, imported by the preflight,
    never does)."""
    from groundstate.episode import AttemptInfo, AttemptJob
    from groundstate.executors._job import _agent

    marks = tmp_path / "marks"
    (tmp_path / "factory.py").write_text(
        f"import pathlib\npathlib.Path({str(marks)!r}).write_text('imported ')\n"
        + FACTORY.replace(
            "BUILT[0] += 1", f"BUILT[0] += 1; pathlib.Path({str(marks)!r}).write_text('built ')"
        )
    )
    file = tmp_path / "system.yaml"
    file.write_text(
        BANK_SYSTEM.read_text()
        .replace("entry: bank_agent.py:bank_agent", "entry: factory.py:Agent")
        .replace("{fault_rate: 0.5}", "{}")
    )
    info = AttemptInfo("r", "b", 1, 0)
    job = AttemptJob(str(bank.root), bank.suite_hash, load_system(file), "transfer", info)
    _agent(job, bank, None)
    assert marks.read_text() == "imported "


def test_a_lone_surrogate_printed_is_kept_escaped_and_the_record_stores(bank: Suite) -> None:
    """An agent prints ``"\\ud800"`` (legal in a Python ``str``, refused by UTF-8): the
    stdout artifact could not be encoded, so the record could not be stored and the batch
    stopped (in-process a ``UnicodeEncodeError``, in the pool an ``ExecutorError``), for
    every attempt after it too. Kept escaped, as every other text an agent produces."""

    async def prints_a_surrogate(session: Session) -> str:
        print("card \ud800")
        sys.stderr.write("pin \udfff\n")
        return await _do_the_task(session)

    output = attempt(bank, "transfer", FunctionAgent(prints_a_surrogate))
    assert output.run.terminal_reason == "success", output.run.infrastructure_status
    assert output.artifacts["stdout.txt"] == "card \\ud800\n"
    assert output.artifacts["stderr.txt"] == "pin \\udfff\n"
    prepare_run(output.run, output.artifacts)  # raised UnicodeEncodeError
    _then_honest(bank)
