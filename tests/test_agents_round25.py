"""Agents, twenty-fifth round: an in-process agent turning the harness's protections off by
writing the state they read.

Audit hooks: once an in-process agent has run, ``groundstate.bindings`` refuses every audit
hook added (one cannot be taken out, runs on every thread for every audited event, and sees
the harness's own objects: the SQLite connection the checks grade through). Whether it
refused was a module global, ``bindings._refusing``, left out of the rebinding watch (the
harness sets it itself): an agent that set it to False added a hook of its own, unnamed, for
the rest of the process; one that gave the refusing hook other code (``__code__``) was named,
but its hook stayed. And an agent's file imported before the first attempt could add one
while hooks were still let in. Now the refusal is held in the hook's own defaults, which
the hook refuses to let anyone change (``object.__setattr__`` is an audited event), and
begins before an agent's file is imported.

The mark's cache: each attempt's mark (``bindings.Mark``) reuses the copies of the last one
for the namespaces unwritten since (``_Flat.marked``). An agent that set that cache to
copies of its own had the next attempt's code rebound for a while and put back go unnamed.
Now a cache not as the mark left it is named, and dropped."""

from __future__ import annotations

import contextlib
import gc
import signal
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest

import groundstate.bindings
import groundstate.episode
from groundstate.agents.base import Session
from groundstate.records import AgentRun
from groundstate.spec.suite import Suite, load_suite
from groundstate.testing import FunctionAgent, attempt

from .conftest import BANK, BANK_SYSTEM, in_a_fresh_process
from .test_inprocess_adversarial import _do_the_task

pytestmark = pytest.mark.timeout(300)

PROHIBITED = "agent_failure/prohibited_action"


def _run(bank: Suite, agent: Any) -> AgentRun:
    return attempt(bank, "transfer", FunctionAgent(agent)).run


def _message(run: AgentRun) -> str:
    return str(run.infrastructure_status["exception"]["message"])


# --- an audit hook added after the refusal was turned off ------------------------------------

_SEEN: list[str] = []


def _spy(event: str, args: tuple[Any, ...]) -> None:
    """The agent's hook: notes every connection the harness opens from then on."""
    if event == "sqlite3.connect":
        _SEEN.append(event)


def _flag_off() -> None:
    groundstate.bindings._refusing = False  # type: ignore[attr-defined]


def _code_swapped() -> None:
    hook = _the_hook()
    hook.__code__ = (lambda event, args, *rest: None).__code__


def _defaults_swapped() -> None:
    hook = _the_hook()
    hook.__defaults__ = (False, *tuple(hook.__defaults__ or ())[1:])


def _defaults_deleted() -> None:
    del _the_hook().__defaults__


def _the_hook() -> Any:
    """The harness's audit hook, found as an agent finds it."""
    for one in gc.get_objects():
        if getattr(one, "__module__", None) == "groundstate.bindings" and callable(one):
            code = getattr(one, "__code__", None)
            if code is not None and code.co_varnames[:2] == ("event", "args"):
                return one
    raise AssertionError("no audit hook of the harness's found")


def _turns_it_off_and_adds(how: str) -> tuple[str, str, list[str]]:
    """In a process of its own (a hook added stays): an attempt whose agent turns the refusal
    off (*how*) and adds a hook, then an honest attempt; the two reasons and what the hook
    saw."""
    bank = load_suite(BANK)

    async def agent(session: Session) -> str:
        with contextlib.suppress(Exception):  # refused: the agent goes on
            globals()[how]()
        sys.addaudithook(_spy)
        return await _do_the_task(session)

    first = _run(bank, agent)
    _SEEN.clear()
    second = _run(bank, _do_the_task)
    return first.terminal_reason, second.terminal_reason, list(_SEEN)


@pytest.mark.parametrize(
    "how", ["_flag_off", "_code_swapped", "_defaults_swapped", "_defaults_deleted"]
)
def test_an_agent_cannot_turn_the_refusal_of_audit_hooks_off(how: str) -> None:
    """Before: with ``bindings._refusing`` set to False (or the refusing hook's code swapped),
    the agent's hook was added, and saw the next attempt's connections (the checks' own)."""
    first, second, seen = in_a_fresh_process(_turns_it_off_and_adds, how)
    assert seen == []
    assert first in ("success", PROHIBITED)
    assert second == "success"


def test_the_harness_hook_cannot_be_given_other_code_once_refusing() -> None:
    """Its code, defaults and keyword defaults are refused in this process (an agent has run
    in it, or this refuses)."""
    groundstate.bindings.refuse_audit_hooks()
    hook = _the_hook()
    code, defaults = hook.__code__, hook.__defaults__
    with pytest.raises(RuntimeError):
        hook.__code__ = (lambda event, args, *rest: None).__code__
    with pytest.raises(RuntimeError):
        hook.__defaults__ = tuple(defaults or ())
    with pytest.raises(RuntimeError):
        del hook.__defaults__
    with pytest.raises(RuntimeError):
        hook.__kwdefaults__ = {}
    assert hook.__code__ is code and hook.__defaults__ is defaults
    added: list[str] = []
    sys.addaudithook(lambda event, args: added.append(event))
    open(__file__).close()
    assert added == []


AGENT_FILE = """
import sys

SEEN = []


def _spy(event, args):
    if event == "sqlite3.connect":
        SEEN.append(event)


sys.addaudithook(_spy)


async def spying(session) -> str:
    await session.say("What is your PIN?")
    await session.call("check_pin", {"account": "A", "pin": "1234"})
    await session.call("transfer", {"source": "A", "target": "B", "amount": 30})
    return str(len(SEEN))
"""


def _adds_as_it_is_imported(folder: str) -> tuple[str, str]:
    """In a process of its own: a system whose agent's file adds an audit hook as it is
    imported, one attempt; its reason and final answer (the connections its hook saw)."""
    import asyncio

    from groundstate.episode import AttemptInfo, run_attempt
    from groundstate.spec.system import load_system

    tmp = Path(folder)
    (tmp / "spying.py").write_text(AGENT_FILE)
    file = tmp / "spying_system.yaml"
    file.write_text(BANK_SYSTEM.read_text().replace("bank_agent.py:bank_agent", "spying.py:spying"))
    file.write_text(file.read_text().replace("params: {fault_rate: 0.5}", "params: {}"))
    system = load_system(file)
    bank = load_suite(BANK)
    from groundstate.agents.python import load_agent

    agent = load_agent(system)
    info = AttemptInfo(run_id="r", batch_id="adhoc", attempt=1, seed=0)
    output = asyncio.run(run_attempt(bank.tasks["transfer"], bank, system, agent, info))
    return output.run.terminal_reason, str(output.run.final_message)


def test_an_agent_file_cannot_add_an_audit_hook_as_it_is_imported(tmp_path: Path) -> None:
    """Before: the agent's file was imported (as its system was loaded) while hooks were
    let in: its hook saw every connection the harness opened, the checks' own included."""
    reason, answer = in_a_fresh_process(_adds_as_it_is_imported, str(tmp_path))
    assert reason == "success"
    assert answer == "0"


# --- the mark's cache of copies, set by the agent ---------------------------------------------


def _stale_cache(session: Session) -> Any:
    async def agent(session: Session) -> str:
        flat = groundstate.bindings.HARNESS._flat
        if flat is not None and flat.versions is not None:
            flat.marked = (flat.versions(), tuple(() for _ in flat.spaces))
        return await _do_the_task(session)

    return agent


async def _rebinds_for_a_while(session: Session) -> str:
    real = groundstate.episode.classify
    groundstate.episode.classify = lambda *a: "success"
    groundstate.episode.classify = real
    return await _do_the_task(session)


def test_a_cache_of_copies_set_by_an_agent_is_named_and_dropped(bank: Suite) -> None:
    """Attempt 1 sets the mark's cache to empty copies; attempt 2 rebinds ``classify`` for a
    while. Before: both a ``success``, nothing named (the copies, empty, differed from the
    namespace: taken for a lawful change)."""
    if groundstate.bindings.HARNESS.mark() is None:
        pytest.skip("this interpreter keeps no dict versions")
    first = _run(bank, _stale_cache(None))  # type: ignore[arg-type]
    assert first.terminal_reason == PROHIBITED, first.infrastructure_status
    assert "_flat.marked" in _message(first)
    second = _run(bank, _rebinds_for_a_while)
    assert second.terminal_reason == PROHIBITED, second.infrastructure_status
    assert "groundstate.episode (written and put back)" in _message(second)
    assert _run(bank, _do_the_task).terminal_reason == "success"


class _Raising:
    """A count that raises as the next mark adds to it, or compares."""

    def __add__(self, other: object) -> Any:
        raise RuntimeError("the agent's count")

    def __eq__(self, other: object) -> bool:
        raise RuntimeError("the agent's count")

    __hash__ = object.__hash__


async def _count_replaced(session: Session) -> str:
    flat = groundstate.bindings.HARNESS._flat
    if flat is not None:
        flat.marks = _Raising()
    return await _do_the_task(session)


def test_a_count_of_marks_set_by_an_agent_is_named_and_set_back(bank: Suite) -> None:
    """A new place (this round's count): set to an object of the agent's, it would have made
    the next mark raise."""
    if groundstate.bindings.HARNESS.mark() is None:
        pytest.skip("this interpreter keeps no dict versions")
    run = _run(bank, _count_replaced)
    assert run.terminal_reason == PROHIBITED, run.infrastructure_status
    assert "_flat.marks" in _message(run)
    assert _run(bank, _do_the_task).terminal_reason == "success"


def test_a_cache_left_alone_is_reused(bank: Suite) -> None:
    """Control: honest attempts one after another keep the cache and pass."""
    for _ in range(2):
        run = _run(bank, _do_the_task)
        assert run.terminal_reason == "success", run.infrastructure_status
        assert "harness_rebound" not in run.infrastructure_status


# --- when the agent ended, as the caller read it ------------------------------------------------


def _claims_an_early_end(session: Session) -> Any:
    async def agent(session: Session) -> str:
        with contextlib.suppress(Exception):  # no list to find: the agent goes on
            frame = sys._getframe()
            while frame.f_code.co_name != "_run_to_end":
                frame = frame.f_back  # type: ignore[assignment]
            frame.f_locals["ended"].append(time.monotonic())
        for one in gc.get_objects():  # its alarm too (as one that holds the interpreter)
            if type(one).__name__ == "Alarm" and type(one).__module__ == "groundstate.alarms":
                one.cancelled = True
        answer = await _do_the_task(session)
        time.sleep(4)
        return answer

    return agent


def test_an_agent_cannot_say_when_it_ended(edited_bank: Any) -> None:
    """The agent puts the time it starts in the list its end time went to (read first),
    cancels its alarm (as an agent that holds the interpreter in a long C call keeps it from
    ringing), does the task and returns 4 s later, past its limit of 2 s. Before: a
    ``success``."""
    suite = edited_bank(lambda t: t.update(time_limit=2))
    run = _run(suite, _claims_an_early_end(None))  # type: ignore[arg-type]
    assert run.terminal_reason == "agent_failure/time_limit", run.infrastructure_status
    _then = _run(suite, _do_the_task)
    assert _then.terminal_reason == "success", _then.infrastructure_status


# --- the signals the agent's thread blocks ------------------------------------------------------


_THREADS: list[int] = []
_MASKS: list[set[int]] = []


async def _blocks(session: Session) -> str:
    _THREADS.append(threading.get_ident())
    signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGTERM, signal.SIGINT})
    return await _do_the_task(session)


async def _looks(session: Session) -> str:
    _THREADS.append(threading.get_ident())
    _MASKS.append(set(signal.pthread_sigmask(signal.SIG_BLOCK, ())))
    return await _do_the_task(session)


def _blocks_then_looks() -> tuple[list[str], list[int], list[set[int]]]:
    """In a process of its own (one thread for agents, reused): an attempt whose agent blocks
    SIGTERM and SIGINT, then one whose agent looks at its thread's mask."""
    bank = load_suite(BANK)
    reasons = [_run(bank, _blocks).terminal_reason, _run(bank, _looks).terminal_reason]
    return reasons, _THREADS, _MASKS


def test_signals_an_agent_blocks_are_not_blocked_for_the_next() -> None:
    """The agent's thread (reused for the next attempt's agent) blocks SIGTERM and SIGINT.
    Before: blocked for the next attempt's agent on that thread, and for every process it
    started (a child inherits its starter's mask: ``SIGTERM`` could not stop it)."""
    if not hasattr(signal, "pthread_sigmask"):
        pytest.skip("no signal masks here")
    reasons, threads, masks = in_a_fresh_process(_blocks_then_looks)
    assert reasons == ["success", "success"]
    assert threads[0] == threads[1]  # the thread reused: what this is about
    assert not masks[0] & {signal.SIGTERM, signal.SIGINT}


def test_marks_of_attempts_side_by_side_name_nothing() -> None:
    """Control: two attempts' marks taken one after the other, looked at in either order
    (an in-process batch's attempts run side by side): nothing named. Before the count was
    taken as a mark where one drops the other's cache, the second named its cache edited."""
    from groundstate.bindings import HARNESS

    for order in (0, 1):
        marks = [HARNESS.mark(), HARNESS.mark()]
        if marks[0] is None:
            pytest.skip("this interpreter keeps no dict versions")
        for mark in marks if order == 0 else marks[::-1]:
            assert HARNESS.written_back(mark) == []
