"""Agents, twenty-fourth round: an in-process agent editing what the episode compares the
attempt's own objects and the watched namespaces with.

Before the agent runs, the episode takes the attempt's own objects as it set them up
(``bindings.Held``: the session, its gateway, the environment, the user) and the watched
namespaces as they are (``bindings.Mark``: their versions and a copy of each). After the
run, what differs is an ``agent_failure/prohibited_action`` (stage ``harness_code``). Both
were objects an agent could find (``gc.get_objects()``) and edit: one that put a copy of its
task with a step limit of 100 in the session's place, and then set the ``Held``'s first-seen
``_task`` to that copy (or shadowed its ``changed``, pointed it at another object, swapped
its class), took 11 steps of 6 and passed; one that rebound the harness's code for a while
and put it back, and then set the ``Mark``'s ``seen`` versions to those after its writes
(or an entry of its copy, or swapped its class), had its rebinding go unnamed: a
``success``. Both are now tuples of tuples, read through ``tuple`` once given their class
back, and the episode calls ``Held``'s methods on the class."""

from __future__ import annotations

import asyncio
import contextlib
import gc
import inspect
import json
import os
import resource
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

import groundstate.episode
from groundstate.agents.base import Session
from groundstate.bindings import Held, Mark
from groundstate.records import AgentRun
from groundstate.runner import BatchConfig, BatchRunner
from groundstate.spec.suite import Suite
from groundstate.spec.system import load_system
from groundstate.store import RunStore
from groundstate.testing import FunctionAgent, attempt

from .conftest import BANK_SYSTEM, in_a_fresh_process
from .test_agents_round21 import _eleven_steps, _harness
from .test_executors_adversarial import pool, seed
from .test_inprocess_adversarial import _do_the_task, _then_honest

pytestmark = pytest.mark.timeout(300)

PROHIBITED = "agent_failure/prohibited_action"


def _run(bank: Suite, agent: Any) -> AgentRun:
    return attempt(bank, "transfer", FunctionAgent(agent)).run


def _message(run: AgentRun) -> str:
    return str(run.infrastructure_status["exception"]["message"])


# --- the attempt's own objects as first seen, edited ---------------------------------------


def _helds(owner: object) -> list[Any]:
    """The ``Held`` of *owner*, found as an agent finds it (a ``Held`` before this round had
    an ``owner``; now its first field is the owner)."""
    found = []
    for one in gc.get_objects():
        if type(one).__name__ != "Held" or type(one).__module__ != "groundstate.bindings":
            continue
        if getattr(one, "owner", None) is owner or (isinstance(one, tuple) and one[0] is owner):
            found.append(one)
    return found


def _first(held: Any, task: Any) -> None:
    """Its first-seen ``_task`` made the agent's copy."""
    first = getattr(held, "first", None)
    if isinstance(first, dict):
        first["_task"] = task


def _shadowed(held: Any, task: Any) -> None:
    """``changed`` shadowed on the object, finding nothing."""
    with contextlib.suppress(AttributeError):
        held.changed = lambda: []


def _pointed_elsewhere(held: Any, task: Any) -> None:
    """Made to hold another object, with no ``__dict__``."""
    with contextlib.suppress(AttributeError):
        held.owner, held.cls, held.space = object(), object, None


def _retyped(held: Any, task: Any) -> None:
    """Given a class of the agent's, whose ``changed`` finds nothing."""
    blind = type("Blind", (type(held),), {"__slots__": (), "changed": lambda self: []})
    with contextlib.suppress(TypeError):
        held.__class__ = blind


@pytest.mark.parametrize(
    "edit",
    [_first, _shadowed, _pointed_elsewhere, _retyped],
    ids=["first-seen", "shadowed", "pointed-elsewhere", "retyped"],
)
def test_a_held_edited_by_the_agent_still_finds_its_task_replaced(
    bank: Suite, edit: Callable[[Any, Any], None]
) -> None:
    """The session's task swapped for a copy with a step limit of 100, and the ``Held`` of
    the session made to miss it. Before: 11 steps of 6, a ``success``."""

    async def agent(session: Session) -> str:
        harness = _harness(session)
        task = harness._task.model_copy(update={"step_limit": 100})
        harness._task = task
        for held in _helds(harness):
            edit(held, task)
        return await _eleven_steps(session)

    run = _run(bank, agent)
    assert run.terminal_reason == PROHIBITED, run.infrastructure_status
    assert "the attempt's session._task" in _message(run)
    assert not run.success
    _then_honest(bank)


def test_a_held_cannot_be_edited_in_place() -> None:
    """What a ``Held`` keeps is tuples: nothing to set, nothing to add."""

    class Box:
        pass

    box = Box()
    box.table = {"a": 1}  # type: ignore[attr-defined]
    held = Held(box, "box", frozenset())
    assert type(held) is Held and isinstance(held, tuple)
    with pytest.raises(AttributeError):
        held.changed = lambda: []  # type: ignore[method-assign]
    assert all(type(part) is not dict and type(part) is not list for part in held[5:])
    box.table["b"] = 2  # type: ignore[attr-defined]
    blind = type("Blind", (Held,), {"__slots__": (), "changed": lambda self: []})
    held.__class__ = blind  # type: ignore[assignment]
    assert Held.changed(held) == ["box.table"]
    assert type(held) is Held
    Held.put_back(held)
    assert box.table == {"a": 1} and Held.changed(held) == []  # type: ignore[attr-defined]


def test_an_agent_that_changes_only_its_run_state_passes(bank: Suite) -> None:
    """Control: the attempt's own objects untouched (the session's run state moves as it
    runs), the task done in its limit: a ``success``, nothing named."""
    run = _run(bank, _do_the_task)
    assert run.terminal_reason == "success", run.infrastructure_status
    assert "harness_rebound" not in run.infrastructure_status


# --- the watched namespaces as marked, edited ----------------------------------------------


def _seen_moved(mark: Any) -> None:
    """The versions it saw set to those after the agent's writes."""
    seen = mark.seen
    if isinstance(seen, list):
        seen[:] = mark.versions()


def _copy_edited(mark: Any) -> None:
    """The episode's copy made to differ from the namespace (a lawful change, not named)."""
    copy = mark.copies[mark.wheres.index("groundstate.episode")]
    if isinstance(copy, dict):
        copy["_the_agents_own"] = 1


def _mark_retyped(mark: Any) -> None:
    """Given a class of the agent's, whose ``seen`` is the versions now."""
    lying = type(
        "Lying",
        (type(mark),),
        {"__slots__": (), "seen": property(lambda self: tuple(self.versions()))},
    )
    with contextlib.suppress(TypeError):
        mark.__class__ = lying


def _marks() -> list[Any]:
    return [one for one in gc.get_objects() if _named(one, "Mark")]


def _named(one: object, name: str) -> bool:
    """Whether *one* is of the harness's class *name* (or an agent's subclass of it)."""
    return any(
        cls.__name__ == name and cls.__module__ == "groundstate.bindings"
        for cls in type(one).__mro__
    )


def _rebinds_for_a_while(edit: Callable[[Any], None]) -> Any:
    async def agent(session: Session) -> str:
        real = groundstate.episode.classify
        groundstate.episode.classify = lambda *a: "success"
        groundstate.episode.classify = real
        for mark in _marks():
            edit(mark)
        return await _do_the_task(session)

    return agent


@pytest.mark.parametrize(
    "edit",
    [_seen_moved, _copy_edited, _mark_retyped],
    ids=["seen", "copy", "retyped"],
)
def test_a_mark_edited_by_the_agent_still_finds_code_rebound_for_a_while(
    bank: Suite, edit: Callable[[Any], None]
) -> None:
    """``classify`` rebound and put back during the run, and the mark made to miss it.
    Before: a ``success``, nothing named."""
    if groundstate.bindings.HARNESS.mark() is None:
        pytest.skip("this interpreter keeps no dict versions")
    run = _run(bank, _rebinds_for_a_while(edit))
    assert run.terminal_reason == PROHIBITED, run.infrastructure_status
    assert "groundstate.episode (written and put back)" in _message(run)
    _then_honest(bank)


def test_a_mark_is_tuples() -> None:
    mark = groundstate.bindings.HARNESS.mark()
    if mark is None:
        pytest.skip("this interpreter keeps no dict versions")
    assert type(mark) is Mark and type(mark.seen) is tuple
    assert all(type(copy) is tuple for copy in mark.copies)
    assert groundstate.bindings.HARNESS.written_back(mark) == []


def test_code_rebound_for_a_while_with_the_mark_untouched_is_named(bank: Suite) -> None:
    """Control: the rebinding alone is named as before."""
    if groundstate.bindings.HARNESS.mark() is None:
        pytest.skip("this interpreter keeps no dict versions")
    run = _run(bank, _rebinds_for_a_while(lambda mark: None))
    assert run.terminal_reason == PROHIBITED, run.infrastructure_status
    assert "groundstate.episode (written and put back)" in _message(run)


# --- through a batch, on the process pool too ------------------------------------------------

EDITING = '''
import gc
import sys

sys.path.insert(0, {tests!r})
from test_agents_round24_editing import _first, _helds


async def editing(session, bad: dict) -> str:
    """Does the task; with its seed in *bad*, in 9 steps of 6 under a copy of its task with
    a step limit of 100, its session's ``Held`` made to take the copy as first seen."""
    if str(session.seed) in bad:
        harness = session._session
        task = harness._task.model_copy(update={{"step_limit": 100}})
        harness._task = task
        for held in _helds(harness):
            _first(held, task)
        for _ in range(5):
            await session.call("balance", {{"account": "A"}})
    await session.say("What is your PIN?")
    await session.call("check_pin", {{"account": "A", "pin": "1234"}})
    await session.call("transfer", {{"source": "A", "target": "B", "amount": 30}})
    return "Moved 30 from A to B."
'''


@pytest.mark.parametrize("executor", ["in-process", "process"])
def test_a_held_edited_in_a_batch(bank: Suite, tmp_path: Path, executor: str) -> None:
    """Attempt 2 passes its step limit under a task of its own and edits its session's
    ``Held``; 1 and 3 do the task. Before: all three stored as ``success`` (the pool's worker
    runs the attempt in the agent's process)."""
    (tmp_path / "test_agents_round24_editing.py").write_text(
        "import contextlib\nimport gc\nfrom typing import Any\n\n\n"
        + inspect.getsource(_helds)
        + "\n\n"
        + inspect.getsource(_first)
    )
    (tmp_path / "editing.py").write_text(EDITING.format(tests=str(tmp_path)))
    file = tmp_path / "editing_system.yaml"
    file.write_text(
        BANK_SYSTEM.read_text()
        .replace("bank_agent.py:bank_agent", "editing.py:editing")
        .replace("{fault_rate: 0.5}", json.dumps({"bad": {str(seed(2)): True}}))
    )
    chosen = pool(bank) if executor == "process" else None
    with RunStore(tmp_path / "runs.db") as runs:
        runner = BatchRunner(bank, load_system(file), runs, executor=chosen)
        result = asyncio.run(runner.start(BatchConfig(attempts=3, concurrency=1)))
        stored = {run.attempt: run.terminal_reason for run in runs.runs(result.batch.batch_id)}
    assert stored == {1: "success", 2: PROHIBITED, 3: "success"}


# --- the event that says the agent's work was given up, set by the agent ----------------------


def _given_up_events() -> list[Any]:
    return [
        one for one in gc.get_objects() if _named_in(one, "_GivenUp", "groundstate.loopthreads")
    ]


def _named_in(one: object, name: str, module: str) -> bool:
    return any(cls.__name__ == name and cls.__module__ == module for cls in type(one).__mro__)


def _set(event: Any) -> None:
    event.set()


def _is_set_shadowed(event: Any) -> None:
    event.is_set = lambda: True


def _shared_dropped(event: Any) -> None:
    """What ``abandon`` put back from, before this round, taken away."""
    with contextlib.suppress(AttributeError):
        event.shared = None


def _leaves_its_settings(how: Callable[[Any], None]) -> Any:
    async def agent(session: Session) -> str:
        for event in _given_up_events():
            how(event)
        os.umask(0o077)
        os.environ["GROUNDSTATE_ROUND24"] = "the agent's"
        soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft - 1, hard))
        return "Done."

    return agent


def _settings() -> tuple[int, str | None, tuple[int, int]]:
    mask = os.umask(0o022)
    os.umask(mask)
    return mask, os.environ.get("GROUNDSTATE_ROUND24"), resource.getrlimit(resource.RLIMIT_NOFILE)


@pytest.mark.parametrize(
    "how", [_set, _is_set_shadowed, _shared_dropped], ids=["set", "is-set", "shared"]
)
def test_an_agent_that_says_it_was_given_up_has_its_settings_put_back(
    bank: Suite, how: Callable[[Any], None]
) -> None:
    """The agent's thread puts back what it changed of the process as its work ends unless
    the work was given up: an agent that set its event (or shadowed its ``is_set``) kept
    its umask, environment variable and descriptor limit for its grading and every later
    attempt in the process. Before: all three left as the agent set them."""
    before = _settings()
    try:
        run = _run(bank, _leaves_its_settings(how))
        assert run.terminal_reason == "agent_failure/incorrect_state", run.infrastructure_status
        assert _settings() == before
    finally:
        os.umask(before[0])
        os.environ.pop("GROUNDSTATE_ROUND24", None)
        resource.setrlimit(resource.RLIMIT_NOFILE, before[2])
    _then_honest(bank)


def _broken(event: Any) -> None:
    """What its ``set`` uses, and what it names as its thread, broken."""
    event._cond = None
    event.worker = "nobody"


def _past_its_limit(root: str, breaks: str) -> tuple[str, bool, bool]:
    """An attempt whose agent edits its given-up event (*breaks*: ``_shared_dropped`` or
    ``_broken``), changes the settings and blocks past its time limit; its reason, whether
    the agent changed the settings before the limit, and whether they are as before."""
    from groundstate.spec.suite import load_suite

    release, changed = threading.Event(), threading.Event()

    async def agent(session: Session) -> str:
        await _leaves_its_settings(globals()[breaks])(session)
        changed.set()
        release.wait(30)
        return "Done."

    before = _settings()
    try:
        run = _run(load_suite(Path(root)), agent)
        return run.terminal_reason, changed.is_set(), _settings() == before
    finally:
        release.set()


@pytest.mark.parametrize("breaks", ["_shared_dropped", "_broken"])
def test_an_agent_past_its_limit_that_edited_its_given_up_event(
    edited_bank: Any, breaks: str
) -> None:
    """Past its time limit, the agent is given up and what it changed put back at once:
    before, from the event's ``shared``, which the agent set to None (its umask, variable and
    limit kept while its thread ran on); an event whose ``set`` raised made the time limit an
    error of the harness's. In a fresh process: the agent's thread."""
    # 2 s: a fresh process's agent must change the settings before it (else none to put back)
    suite = edited_bank(lambda t: t.update(time_limit=2))
    reason, changed, put_back = in_a_fresh_process(_past_its_limit, str(suite.root), breaks)
    assert reason == "agent_failure/time_limit"
    assert changed and put_back


def test_an_agent_that_changes_nothing_leaves_the_settings_alone(bank: Suite) -> None:
    """Control: the put back from the caller's copy changes nothing an honest run left."""
    before = _settings()
    run = _run(bank, _do_the_task)
    assert run.terminal_reason == "success", run.infrastructure_status
    assert _settings() == before
