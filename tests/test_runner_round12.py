"""The batch runner and executors, twelfth audit: the code a batch's records name is the code
that ran, and a resume refused for a changed suite or system says what changed."""

from __future__ import annotations

import asyncio
import os
import pickle
import re
import shutil
import signal
import socket
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path

import pytest

from groundstate.agents.python import agent_builder
from groundstate.errors import ExecutorError
from groundstate.executors import InProcessExecutor
from groundstate.executors._job import FILES_PER_ATTEMPT
from groundstate.executors.ray import RayExecutor
from groundstate.runner import (
    BatchAborted,
    BatchConfig,
    BatchRunner,
    ResumeMismatch,
    check_resumable,
    plan_batch,
)
from groundstate.selection import NoTasksSelected
from groundstate.spec.suite import Suite, load_suite, with_environment
from groundstate.spec.system import SystemSpec, load_system
from groundstate.store import BatchLeased, RunStore

from .conftest import BANK, BANK_SYSTEM
from .test_executors import Flaky


def _own_system(root: Path) -> tuple[Path, SystemSpec]:
    """The bank system with a copy of its agent of its own; the agent file and the system."""
    shutil.copy(BANK_SYSTEM, root / "bank_system.yaml")
    agent = root / "bank_agent.py"
    shutil.copy(BANK.parent / "bank_agent.py", agent)
    return agent, load_system(root / "bank_system.yaml")


def _break(agent: Path) -> None:
    """Edit the agent so that every attempt of it crashes."""
    text = agent.read_text()
    agent.write_text(text.replace("    async def run(self, session: Any) -> str:\n",
                                  "    async def run(self, session: Any) -> str:\n"
                                  "        raise RuntimeError('the edited agent')\n"))  # fmt: skip


def test_an_agent_file_edited_after_its_system_was_loaded_is_refused(
    bank: Suite, tmp_path: Path
) -> None:
    """Found here: the agent's code is hashed into the system when its file is loaded, and
    imported by content when the first agent is built (the preflight; in a pool worker, its
    first job): an agent edited in between ran, every record naming the hash of the code
    before the edit. Now the batch stops before anything is stored, naming the file."""
    agent, system = _own_system(tmp_path)
    _break(agent)
    with RunStore(tmp_path / "runs.db") as store:
        runner = BatchRunner(bank, system, store)
        with pytest.raises(BatchAborted, match=r"bank_agent\.py: changed since it was loaded"):
            asyncio.run(runner.start(BatchConfig(attempts=2)))
        assert store.batches() == []


def test_a_worker_builds_the_agent_its_system_hashed_not_the_file_as_it_is_now(
    tmp_path: Path,
) -> None:
    """A pool or Ray worker gets each job's system unpickled (a spec it has not seen) and
    built the agent from the file as it was then: an agent edited during a batch ran in
    later attempts under the batch's hash (in-process, the first build was kept). Now a
    process that imported the hashed code builds from it; one that did not is refused."""
    agent, system = _own_system(tmp_path)
    first = agent_builder(system)()
    _break(agent)
    again = agent_builder(pickle.loads(pickle.dumps(system)))()  # as a worker's next job
    assert type(again) is type(first)  # the class of the module imported before the edit
    moved = tmp_path / "moved"
    moved.mkdir()
    shutil.copy(agent, moved / "bank_agent.py")
    shutil.copy(tmp_path / "bank_system.yaml", moved / "bank_system.yaml")
    elsewhere = load_system(moved / "bank_system.yaml")  # the edited agent, hashed as such
    fresh = elsewhere.model_copy(update={"resolved": system.resolved})  # claims the old hash
    with pytest.raises(Exception, match="changed since it was loaded and hashed"):
        agent_builder(fresh)


def test_a_refused_resume_names_what_changed_in_the_system(bank: Suite, tmp_path: Path) -> None:
    """Found here: a resume refused for a changed system said only "the system spec hash
    differs from the batch's", whatever changed (a parameter, the agent's code, a package's
    version): the batch stores the whole spec, so the fields are named."""
    agent, system = _own_system(tmp_path)
    batch = plan_batch(bank, system, BatchConfig())
    agent.write_text(agent.read_text() + "\n# edited\n")
    file = tmp_path / "bank_system.yaml"
    file.write_text(file.read_text().replace("max_turns: 5", "max_turns: 6"))
    with pytest.raises(ResumeMismatch) as refused:
        check_resumable(batch, bank, load_system(file))
    assert str(refused.value).endswith(
        "differs from the batch's in resolved.code.orchestration_loop, "
        "user_simulator.max_turns (its agent's code changed)"
    )


def test_a_resume_in_another_environment_says_which_the_batch_ran(bank: Suite) -> None:
    """Found here: a resume without the ``--environment`` its batch ran with was refused as
    "the suite changed since the batch started", which sent users looking for an edit."""
    batch = plan_batch(with_environment(bank, "postgres"), _bank_system(), BatchConfig())
    with pytest.raises(ResumeMismatch, match="ran the suite in environment 'postgres', not "
                       "'sqlite': resume it with --environment postgres"):  # fmt: skip
        check_resumable(batch, bank, _bank_system())
    edited = batch.model_copy(update={"suite_hash": "0" * 64})
    with pytest.raises(ResumeMismatch, match="changed since the batch started"):
        check_resumable(edited, bank, _bank_system())


def _bank_system() -> SystemSpec:
    return load_system(BANK_SYSTEM)


def test_a_ray_cluster_that_cannot_be_joined_is_one_clear_error(
    bank: Suite, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Found here: ``run --executor ray --ray-address ray://head:10001`` without Ray's client
    extra, or with no cluster there, ended in a traceback of Ray's (a ValueError, a
    ConnectionError): whatever ``ray.init`` raises is now an ExecutorError naming the
    address, which ``run`` prints as one line (exit 2), nothing stored."""
    ray = pytest.importorskip("ray")

    def refuse(**options: object) -> None:
        raise ConnectionError(f"no cluster at {options['address']}\nretry later")

    monkeypatch.setattr(ray, "is_initialized", lambda: False)
    monkeypatch.setattr(ray, "init", refuse)
    executor = RayExecutor(address="ray://head:10001", suite=bank)
    with RunStore(tmp_path / "runs.db") as store:
        runner = BatchRunner(bank, _bank_system(), store, executor=executor)
        with pytest.raises(ExecutorError) as refused:
            asyncio.run(runner.start(BatchConfig()))
        assert store.batches() == []
    assert str(refused.value).startswith(
        "cannot start or join the Ray cluster at ray://head:10001: ConnectionError: no cluster"
    )


def test_a_resume_refused_for_a_live_holder_changes_nothing_in_the_batch(
    bank: Suite, tmp_path: Path
) -> None:
    """Found here: ``run --resume --allow-invalid`` named the tasks found invalid in the
    batch before it took the batch's lease, so a resume refused because another process
    runs the batch still changed that batch's figures (its invalid tasks)."""
    batch = plan_batch(bank, _bank_system(), BatchConfig())
    with RunStore(tmp_path / "runs.db") as store:
        store.add_batch(batch)
        now = datetime.now(UTC).isoformat()
        with store._transaction() as db:  # another process on this host, alive: this one's parent
            db.execute(
                "INSERT INTO leases VALUES (?, ?, ?, ?, ?)",
                (batch.batch_id, os.getppid(), socket.gethostname(), now, now),
            )
        runner = BatchRunner(bank, _bank_system(), store)
        with pytest.raises(BatchLeased):
            asyncio.run(runner.resume(batch.batch_id, invalid_tasks=["transfer"]))
        assert store.batch(batch.batch_id).invalid_tasks == []


KILLED = """
import asyncio, os, signal, sys
from pathlib import Path
from groundstate.runner import BatchConfig, BatchRunner
from groundstate.spec.suite import load_suite
from groundstate.spec.system import load_system
from groundstate.store import RunStore

suite, system, store, method, count = sys.argv[1:]
plain = getattr(RunStore, method)
calls = []

def killed_after(self, *args, **kwargs):  # the count-th call returns, then SIGKILL
    result = plain(self, *args, **kwargs)
    calls.append(1)
    if len(calls) == int(count):
        os.kill(os.getpid(), signal.SIGKILL)
    return result

setattr(RunStore, method, killed_after)
with RunStore(Path(store)) as runs:
    runner = BatchRunner(load_suite(Path(suite)), load_system(Path(system)), runs)
    asyncio.run(runner.start(BatchConfig(attempts=3)))
"""


def test_a_batch_killed_at_a_counted_store_write_resumes_to_each_try_once(
    tmp_path: Path,
) -> None:
    """SIGKILL (not a timed one: the process kills itself right after its *count*-th write
    of that kind), here when an invalid try is stored and its rerun is due (the batch
    stored with no try, and mid-batch, were checked the same way by hand: a subprocess
    costs seconds); a resume then stores exactly the tries missing: each attempt's invalid
    first try and its linked rerun, no try twice, nothing lost."""
    method, count = "add_prepared", 1
    flaky = Flaky(tmp_path)
    flaky.fresh()  # every attempt's first try is invalid (the model API's 429), then valid
    store = tmp_path / "runs.db"
    killed = subprocess.run(
        [sys.executable, "-c", KILLED, str(BANK), str(flaky.file), str(store), method, str(count)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert killed.returncode == -signal.SIGKILL, killed.stderr
    with RunStore(store) as runs:
        batch = runs.batch()
        assert len(runs.runs(batch.batch_id)) == count
        # The tries the kill cut short may have met the failing API already (their marks
        # made): how far they got is the machine's timing. Start the API again as the stored
        # tries left it, so each missing first try fails once, as in the killed process.
        flaky.fresh()
        for run in runs.runs(batch.batch_id):
            (flaky.marks / str(run.seed)).mkdir()
        runner = BatchRunner(load_suite(BANK), load_system(flaky.file), runs)
        asyncio.run(runner.resume(batch.batch_id, preflight=False))
        stored = runs.runs(batch.batch_id)
        assert runs.verify(batch.batch_id).ok
    assert sorted((r.attempt, r.retry) for r in stored) == [
        (n, t) for n in (1, 2, 3) for t in (0, 1)
    ]
    assert len({r.run_id for r in stored}) == 6
    first = {r.attempt: r for r in stored if r.retry == 0}
    for rerun in (r for r in stored if r.retry == 1):
        assert rerun.retry_of == first[rerun.attempt].run_id
        assert rerun.seed == first[rerun.attempt].seed and rerun.valid
    assert {r.terminal_reason for r in first.values()} == {"environment_failure/model_serving"}


def test_an_executor_makes_room_for_the_files_its_attempts_open(bank: Suite) -> None:
    """Found here: each attempt holds about ten files (three SQLite connections with their
    journals, an event loop), and nothing matched the concurrency to the process's limit:
    ``--concurrency 150`` under a soft limit of 256 ended in invalid tries ("unable to open
    database file", rerun into the same wall), tracebacks of threads that could not make an
    event loop, and a StoreError that stopped the batch. Now the soft limit is raised (up
    to the hard one) when the executor opens."""
    resource = pytest.importorskip("resource")
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard != resource.RLIM_INFINITY and hard < 2_000:
        pytest.skip(f"a hard limit of {hard} open files leaves no room to test in")
    resource.setrlimit(resource.RLIMIT_NOFILE, (128, hard))
    try:
        InProcessExecutor(bank).open(100)
        assert resource.getrlimit(resource.RLIMIT_NOFILE)[0] >= 100 * FILES_PER_ATTEMPT
    finally:
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))


def test_a_concurrency_past_the_hard_file_limit_is_refused_naming_what_fits(
    bank: Suite, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Past the hard limit, the batch is refused before anything is stored, naming the
    concurrency that fits."""
    resource = pytest.importorskip("resource")
    monkeypatch.setattr(resource, "getrlimit", lambda _: (256, 256))
    monkeypatch.setattr(resource, "setrlimit", lambda *_: None)
    with RunStore(tmp_path / "runs.db") as store:
        runner = BatchRunner(bank, _bank_system(), store)
        with pytest.raises(ExecutorError, match=r"lower --concurrency to 16 or less"):
            asyncio.run(runner.start(BatchConfig(concurrency=150)))
        assert store.batches() == []


@pytest.mark.parametrize(
    ("plan", "refused"),
    [
        ({"concurrency": 0}, "BatchConfig.concurrency is a whole number, at least 1, not 0"),
        ({"attempts": 0}, "BatchConfig.attempts is a whole number, at least 1, not 0"),
        ({"attempts": -1}, "BatchConfig.attempts is a whole number, at least 1, not -1"),
        ({"tasks": ()}, "BatchConfig.tasks names no task"),
    ],
)
def test_a_plan_no_batch_can_run_is_refused(plan: dict[str, object], refused: str) -> None:
    """Found here: from Python, ``BatchConfig(concurrency=0)`` waited for ever for a slot,
    and ``attempts=0`` (or -1) or ``tasks=()`` stored a batch with no attempt to run (the
    CLI's own checks kept ``run`` from them)."""
    with pytest.raises(ValueError, match=re.escape(refused)):
        BatchConfig(**plan)  # type: ignore[arg-type]


def test_a_plan_naming_a_task_the_suite_lacks_is_refused_by_name(
    bank: Suite, tmp_path: Path
) -> None:
    """Found here: ``BatchConfig(tasks=("nope",))`` failed in the preflight with a bare
    ``KeyError: 'nope'``; a resume's concurrency 0 waited for ever."""
    with RunStore(tmp_path / "runs.db") as store:
        runner = BatchRunner(bank, _bank_system(), store)
        with pytest.raises(NoTasksSelected, match=r"has no task 'nope' \(its tasks: transfer\)"):
            asyncio.run(runner.start(BatchConfig(tasks=("nope",))))
        with pytest.raises(ValueError, match="concurrency is a whole number"):
            asyncio.run(runner.resume("any", concurrency=0))
        assert store.batches() == []
