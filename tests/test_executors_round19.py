"""Nineteenth round of the executors: one batch of adversarial attempts, the same records on
every executor.

Each attempt misbehaves by its seed (the same way on reruns): its agent raises, blocks past
its time limit (in its thread, or awaiting), breaks a tool (an environment failure), returns a
value that is not JSON, or leaves a huge trace; or the suite's check (a Python constraint
reading the agent's last words) raises or blocks past the grader's limit. The batch runs
in-process, on the process pool and on Ray: the terminal reasons, the counted/uncounted flags,
the retry chains and the records themselves must be the same, but for the fields that are
the executor's own (ids, clocks, paths: ``VOLATILE``).

And Ray tells the grading as the pool does: a check that kills its Ray worker is the grader's
failure (uncounted, rerun), never the agent's crash (it was until now); a death while code of
the agent's still runs stays the agent's.
"""

from __future__ import annotations

import os
import shutil
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from groundstate.executors import make_executor
from groundstate.executors.ray import RayExecutor
from groundstate.grading import outcome
from groundstate.records import AgentRun
from groundstate.spec.suite import Suite, load_suite
from groundstate.spec.system import SystemSpec, load_system
from groundstate.store import RunStore

from .conftest import BANK, HANG, without_keys
from .test_executors import _report
from .test_executors_adversarial import VOLATILE, rogue_system, run
from .test_scale_round17 import chain, judged_bank, speaking_system

pytestmark = pytest.mark.timeout(240)

LIMIT = 2.0
"""The grader's time limit in these batches (seconds): set in-process by the test, and in
the workers by the check's module as it is imported (it is the suite's code)."""

CHECK = f"""
import os
import time

import groundstate.grading.outcome as _outcome
from groundstate.bindings import HARNESS

if os.getpid() != {{test_pid}}:  # a worker: in the test's process, the test sets it
    _outcome.GRADER_TIME_LIMIT = {LIMIT}
    HARNESS.rebase()  # the test's instrumentation, not a check tampering with the harness


def judge(trace, s0):
    words = " ".join(getattr(e, "text", None) or "" for e in trace).split()
    mode = next((w.split(":", 1)[1] for w in words if w.startswith("checkmode:")), None)
    if mode == "check-raise":
        raise ValueError("judge bug")
    if mode == "check-hang":  # past the grader's limit; returns once the test has ended
        end = time.monotonic() + {HANG}
        while time.monotonic() < end and not os.path.exists(os.path.join(MARKS, "released")):
            time.sleep(0.02)
    return True
"""

AGENT = f"""

class Opaque:
    pass


async def adversary(session, bad: dict, marks: str = "", wait: float = 0.0) -> object:
    \"\"\"Transfers as it should, but for its misbehaviour (``bad`` by seed).\"\"\"
    mode = bad.get(str(session.seed))
    await session.call("check_pin", {{"account": "A", "pin": "1234"}})
    if mode == "raise":
        raise RuntimeError("the agent's own bug")
    if mode == "block":  # its thread, past its time limit (until the test ends)
        end = time.monotonic() + {HANG}
        while time.monotonic() < end and not os.path.exists(os.path.join(marks, "released")):
            time.sleep(0.02)
    if mode == "await":
        await asyncio.sleep({HANG})
    if mode == "explode":  # the tool's backend is down: the environment's failure
        await session.call("explode", {{}})
    if mode == "huge":
        for n in range(3):
            await session.call("balance", {{"account": "A" * 300_000 + str(n)}})
    await session.call("transfer", {{"source": "A", "target": "B", "amount": 30}})
    if mode == "nonjson":
        return {{"moved": 30, "to": {{"B", "A"}}, "how": Opaque(), "lock": threading.Lock()}}
    if mode == "huge":
        return "Moved 30 from A to B. " + "z" * 2_000_000
    if mode == "print":  # kept as the attempt's stdout.txt and stderr.txt
        print("to stdout, \u00e9", "x" * 10_000)
        print("to stderr", file=sys.stderr)
    if mode == "surrogate":  # not UTF-8
        return "Moved 30 from A to B \\udc80."
    return f"Moved 30 from A to B. checkmode:{{mode}}"
"""

CASES = {2: "raise", 3: "block", 4: "await", 5: "explode", 6: "nonjson", 7: "huge",
         8: "check-raise", 9: "check-hang", 10: "print", 11: "surrogate"}  # fmt: skip
"""Attempt -> what it does; attempts 1 and 12 behave."""

EXPECTED = [
    (1, 0, "success", True),
    (2, 0, "agent_failure/crashed", True),
    (3, 0, "agent_failure/time_limit", True),
    (4, 0, "agent_failure/time_limit", True),
    (5, 0, "environment_failure/tool_crash", False),
    (5, 1, "environment_failure/tool_crash", False),
    (6, 0, "harness_compatibility_failure", True),
    (7, 0, "agent_failure/constraint_violation", True),  # its last words are too long to read
    (8, 0, "grader_failure", False),
    (8, 1, "grader_failure", False),
    (9, 0, "grader_failure", False),
    (9, 1, "grader_failure", False),
    (10, 0, "success", True),
    (11, 0, "success", True),
    (12, 0, "success", True),
]
"""Every try of the batch: (attempt, retry, terminal reason, valid)."""


@pytest.fixture(scope="module")
def local_ray() -> Iterator[bool]:
    """One small local Ray instance for this module's Ray batches (stopped after them);
    False when Ray is not installed (the other executors still run)."""
    try:
        import ray
    except ImportError:
        yield False
        return
    ray.init(**RayExecutor()._init_options())
    try:
        yield True
    finally:
        ray.shutdown()


def adversarial_suite(root: Path) -> Suite:
    """The bank suite with a Python constraint doing what the agent's last words say."""
    bank = root / "bank"
    shutil.copytree(BANK, bank)
    source = CHECK.replace("{test_pid}", str(os.getpid()))
    (bank / "judge.py").write_text(f"MARKS = {str(root / 'marks')!r}\n" + source)
    task = bank / "tasks" / "transfer.yaml"
    judged = "hard_process_constraints:\n  - id: judged\n    check: judge.py:judge\n"
    task.write_text(task.read_text().replace("hard_process_constraints:\n", judged))
    return load_suite(bank)


def adversarial_system(root: Path) -> SystemSpec:
    # 3 s, not 1: on a loaded machine a Ray worker took over 1 s to run the raising agent
    rogue_system(root, CASES, limit=3, extra="invalid_run_policy: {max_retries: 1}\n")
    with (root / "rogue.py").open("a") as agent:
        agent.write(AGENT)
    file = root / "rogue_system.yaml"
    file.write_text(file.read_text().replace("rogue.py:rogue", "rogue.py:adversary"))
    return load_system(file)


def comparable(runs: list[AgentRun]) -> list[Any]:
    """The records, ordered, without what is the executor's own (ids, clocks, paths)."""
    ordered = sorted(runs, key=lambda r: (r.task_id, r.attempt, r.retry))
    return [without_keys(r.model_dump(mode="json"), VOLATILE) for r in ordered]


def test_one_adversarial_batch_gives_the_same_records_on_every_executor(
    tmp_path: Path, local_ray: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The same suite and system, run in-process, on the pool and on Ray: the same tries
    with the same reasons and validity, and the same records but for ids, clocks and paths.
    (Found here: an object of the agent's classes in a record, its ``repr``, named the
    agent's module by a number each process picked anew.)"""
    monkeypatch.setattr(outcome, "GRADER_TIME_LIMIT", LIMIT)
    suite, system = adversarial_suite(tmp_path), adversarial_system(tmp_path)
    names = ["in-process", "process", *(["ray"] if local_ray else [])]
    results, stored = {}, {}
    try:
        for name in names:
            executor = make_executor(name, suite)  # the default grace: no attempt is killed
            results[name] = run(suite, system, tmp_path / f"{name}.db", executor, attempts=12)
            with RunStore(tmp_path / f"{name}.db") as store:
                assert store.verify(results[name].batch.batch_id).ok
                stored[name] = artifacts(store, results[name].batch.batch_id)
    finally:
        (tmp_path / "marks" / "released").touch()
        _wait_for_agent_threads()
    for name in names:
        assert chain(results[name].runs) == EXPECTED, name
    reference = comparable(results["in-process"].runs)
    for name in names[1:]:
        assert comparable(results[name].runs) == reference, name
        assert _report(results[name]) == _report(results["in-process"]), name
        assert stored[name] == stored["in-process"], name
    printed = stored["in-process"][(10, 0)]
    assert printed["stdout.txt"].startswith("to stdout, \u00e9 x")
    assert printed["stderr.txt"] == "to stderr\n"


def artifacts(store: RunStore, batch_id: str) -> dict[tuple[int, int], dict[str, str | None]]:
    """Each try's artifacts by name: the text of what it printed; the others (traces, with
    their clocks) named only."""
    texts: dict[tuple[int, int], dict[str, str | None]] = {}
    for one in store.runs(batch_id):
        texts[(one.attempt, one.retry)] = {
            name: store.read_artifact(where) if name in ("stdout.txt", "stderr.txt") else None
            for name, where in one.artifact_locations.items()
        }
    return texts


def _wait_for_agent_threads() -> None:
    """The in-process agent blocked past its limit returns once released: wait for it."""
    end = time.monotonic() + HANG
    while any(t.name.startswith("agent-") for t in threading.enumerate()):
        if time.monotonic() > end:
            break
        time.sleep(0.02)


def test_on_ray_a_check_that_kills_its_worker_is_a_grader_failure_as_in_the_pool(
    tmp_path: Path, local_ray: bool
) -> None:
    """Ray now tells the grading, as a pool worker does: a check that ends its process is an
    uncounted grader failure, rerun under the policy, with ``worker.grading``; a death while
    a thread of the agent's, or its own thread past its limit, still runs stays its crash."""
    if not local_ray:
        pytest.skip("ray is not installed")
    bank = judged_bank(tmp_path)
    system = speaking_system(tmp_path, {2: "exit", 3: "sigkill", 4: "thread", 5: "late"}, 3)
    executor = make_executor("ray", bank)
    result = run(bank, system, tmp_path / "ray.db", executor, 6, 1)
    assert chain(result.runs) == [
        (1, 0, "success", True),
        (2, 0, "grader_failure", False),
        (2, 1, "grader_failure", False),
        (3, 0, "grader_failure", False),
        (3, 1, "grader_failure", False),
        (4, 0, "agent_failure/crashed", True),
        (5, 0, "agent_failure/crashed", True),
        (6, 0, "success", True),
    ]
    killed = [r for r in result.runs if r.attempt in (2, 3)]
    assert all(r.infrastructure_status["worker"]["grading"] for r in killed)
    crashed = [r for r in result.runs if r.attempt in (4, 5)]
    assert all("grading" not in r.infrastructure_status["worker"] for r in crashed)


LEAVES = f"""

def _lurker(marks):
    end = time.monotonic() + {HANG}
    while time.monotonic() < end and not os.path.exists(os.path.join(marks, "later")):
        time.sleep(0.01)
    os._exit(5)


async def leaves(session, bad: dict, marks: str = "", wait: float = 0.0) -> object:
    \"\"\"Attempt "lurk" leaves a thread that kills its process once a later attempt runs;
    the others run as the rogue agent does.\"\"\"
    mode = bad.get(str(session.seed))
    if mode == "lurk":
        open(os.path.join(marks, "lurking"), "w").close()
        threading.Thread(target=_lurker, args=(marks,), daemon=True).start()
        return await rogue(session, {{}}, marks)
    if os.path.exists(os.path.join(marks, "lurking")):  # a later attempt: strike now
        open(os.path.join(marks, "later"), "w").close()
        await asyncio.sleep(0.5)
    return await rogue(session, bad, marks, wait)
"""


def test_on_ray_what_an_attempt_leaves_in_its_worker_never_reaches_later_attempts(
    tmp_path: Path, local_ray: bool
) -> None:
    """Ray reuses a worker from task to task: a thread an agent left there killed the worker
    during a later attempt (that attempt's counted crash), and while it ran no later check
    that killed the worker was the grader's. Now a Ray worker an attempt left something in
    exits after that attempt's record, as a pool worker retires."""
    if not local_ray:
        pytest.skip("ray is not installed")
    bank = load_suite(BANK)
    rogue_system(tmp_path, {2: "lurk", 4: "environ"})
    with (tmp_path / "rogue.py").open("a") as agent:
        agent.write(LEAVES)
    file = tmp_path / "rogue_system.yaml"
    file.write_text(file.read_text().replace("rogue.py:rogue", "rogue.py:leaves"))
    system = load_system(file)
    result = run(bank, system, tmp_path / "ray.db", make_executor("ray", bank), 5, 1)
    expected = {n: "success" for n in range(1, 6)}
    expected[4] = "agent_failure/incorrect_state"  # it moved the money to C itself
    assert {r.attempt: r.terminal_reason for r in result.runs} == expected


GIL_CHECK = """

import ctypes

_judge = judge


def judge(trace, s0):
    if any("checkmode:gil" in (getattr(e, "text", None) or "") for e in trace):
        ctypes.PyDLL(None).sleep(600)  # holds the GIL: only the hard limit ends it
    return _judge(trace, s0)
"""


def test_a_check_holding_its_worker_past_the_hard_limit_is_a_grader_failure_on_pool_and_ray(
    tmp_path: Path, local_ray: bool
) -> None:
    """A check in a C call that keeps the GIL is killed with its worker at the hard limit:
    the grader's failure (rerun), with ``worker.overdue`` and ``worker.grading``, on the
    pool and on Ray alike (Ray blamed the agent's time limit)."""
    judged_bank(tmp_path)
    with (tmp_path / "bank" / "judge.py").open("a") as checks:
        checks.write(GIL_CHECK)
    bank = load_suite(tmp_path / "bank")
    system = speaking_system(tmp_path, {1: "gil"}, limit=2)
    results = {}
    for name in ["process", *(["ray"] if local_ray else [])]:
        executor = make_executor(name, bank)
        # a fresh Ray worker loads the suite within the hard limit: 0.5 s of grace made a
        # loaded machine's retry the agent's time limit
        executor.grace = 3.0  # type: ignore[attr-defined]
        results[name] = run(bank, system, tmp_path / f"{name}.db", executor, 2, 1)
    for name, result in results.items():
        assert chain(result.runs) == [
            (1, 0, "grader_failure", False),
            (1, 1, "grader_failure", False),
            (2, 0, "success", True),
        ], name
        for killed in (r for r in result.runs if r.attempt == 1):
            worker = killed.infrastructure_status["worker"]
            assert (worker["overdue"], worker["grading"]) == (True, True), name
