"""The batch runner, fifth audit: resuming a batch after its world moved (an invalid task
beside a subset, an edited suite, another concurrency, a copied store, a kill during the
resume's checks), the invalid-run policy at its edges (every try of a task invalid, 0
retries, thresholds 0 and 1, keys the runner does not apply), and reruns' seeds."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import CliRunner

from groundstate.cli import main
from groundstate.runner import derive_seed
from groundstate.spec.suite import load_suite
from groundstate.store import RunStore
from groundstate.validation.suite import ensure_valid

from .conftest import BANK, BANK_SYSTEM

AGENT = """
import os, signal, subprocess, sys, time

async def agent(session):
    hold = os.environ.get('ROUND5_HOLD')
    if hold and os.path.exists(hold):  # the resume's smoke run: say so, then wait to be killed
        open(hold + '.started', 'w').close()
        end = time.monotonic() + 30
        while time.monotonic() < end:
            time.sleep(0.01)
    count = os.environ.get('ROUND5_COUNT')
    if count and session.seed != 0:  # agent attempts (not the smoke run, seed 0)
        with open(count, 'a') as f:
            f.write('x')
        if os.path.getsize(count) >= int(os.environ['ROUND5_STOP_AT']):
            # As a Ctrl-C lands mid-batch: from another process (the agent's own
            # ``os.kill`` is refused, its attempt a prohibited action: round 40).
            kill = f"import os, signal; os.kill({os.getpid()}, signal.SIGINT)"
            subprocess.run([sys.executable, "-c", kill], check=True)
    if session.seed % 3 == 0:
        await session.call('explode', {})  # a broken tool: an invalid try
    await session.say('What is your PIN?')
    await session.call('check_pin', {'account': 'A', 'pin': '1234'})
    await session.call('transfer', {'source': 'A', 'target': 'B', 'amount': 30})
    return 'Moved 30 from A to B.'
"""

ALWAYS_INVALID = """
async def agent(session):
    if session.seed != 0:  # the smoke run (seed 0) must start: later tries all explode
        await session.call('explode', {})
    return 'done'
"""

World = tuple[Path, Path, Path]


@pytest.fixture(scope="module")
def template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A copy of the bank suite with a second task, ``broken``, whose oracle fails (an
    invalid task), and a store holding the suite's validation (each test copies both, so
    no test pays for validating)."""
    root = tmp_path_factory.mktemp("round5")
    suite = root / "bank"
    shutil.copytree(BANK, suite)
    task = yaml.safe_load((suite / "tasks" / "transfer.yaml").read_text())
    (suite / "tasks" / "broken.yaml").write_text(yaml.safe_dump({**task, "task_id": "broken"}))
    shutil.copytree(suite / "solutions" / "transfer", suite / "solutions" / "broken")
    (suite / "solutions" / "broken" / "oracle.yaml").write_text(
        yaml.safe_dump({"kind": "oracle", "steps": [{"finish": "Done."}]})
    )
    with RunStore(root / "runs.db") as store:
        ensure_valid(load_suite(suite), store)
    return root


def _world(template: Path, tmp_path: Path, agent: str = AGENT, **policy: Any) -> World:
    """The template's suite and validated store, and a system running *agent* under
    *policy*."""
    suite = tmp_path / "bank"
    shutil.copytree(template / "bank", suite)
    shutil.copy(template / "runs.db", tmp_path / "runs.db")
    (tmp_path / "agent.py").write_text(agent)
    system = yaml.safe_load(BANK_SYSTEM.read_text())
    system["harness"]["orchestration_loop"] = {"entry": "agent.py:agent", "params": {}}
    if policy:
        system["invalid_run_policy"] = policy
    (tmp_path / "system.yaml").write_text(yaml.safe_dump(system))
    return suite, tmp_path / "system.yaml", tmp_path / "runs.db"


def _cli(world: World, *more: str, store: Path | None = None, env: Any = None) -> Any:
    suite, system, default_store = world
    args = ["run", str(suite), "--system", str(system), "--json"]
    result = CliRunner(env=env).invoke(main, [*args, "--store", str(store or default_store), *more])
    assert result.exception is None or isinstance(result.exception, SystemExit), result.output
    return result


def _tries(store: Path, batch_id: str) -> list[tuple[str, int, int, bool]]:
    with RunStore(store) as runs:
        return sorted((r.task_id, r.attempt, r.retry, r.valid) for r in runs.runs(batch_id))


def _only_batch(store: Path) -> str:
    with RunStore(store) as runs:
        return runs.batch().batch_id


def _partial(world: World, tmp_path: Path, attempts: int, stop: int, *more: str) -> str:
    """A batch of *attempts* on ``transfer`` stopped by SIGINT after *stop* agent attempts
    (exit 130); returns its id."""
    env = {"ROUND5_COUNT": str(tmp_path / "count"), "ROUND5_STOP_AT": str(stop)}
    result = _cli(world, "--task", "transfer", "--attempts", str(attempts), *more, env=env)
    assert result.exit_code == 130, result.output
    return _only_batch(world[2])


# --- resume in a world that moved ------------------------------------------------------


def test_resuming_a_subset_batch_ignores_an_invalid_task_it_never_ran(
    template: Path, tmp_path: Path
) -> None:
    """Found here: the resume validated the whole suite, so a batch of ``--task transfer``
    could not be resumed because another task of the suite (never run) is invalid."""
    world = _world(template, tmp_path, max_retries=2, max_invalid_rate=1)
    batch_id = _partial(world, tmp_path, attempts=6, stop=2)
    before = _tries(world[2], batch_id)
    assert 0 < len({(t, a) for t, a, _, _ in before}) < 6
    result = _cli(world, "--resume", batch_id)
    assert result.exit_code == 0, result.output
    assert "not valid" not in result.output
    stored = _tries(world[2], batch_id)
    assert stored[: len(before)] == before or set(before) <= set(stored)
    assert sorted({(t, a) for t, a, _, _ in stored}) == [("transfer", n) for n in range(1, 7)]
    # every attempt exactly once per retry: no duplicate (task, attempt, retry)
    assert len({(t, a, r) for t, a, r, _ in stored}) == len(stored)


def test_a_changed_suite_is_refused_as_such_before_any_validation(
    template: Path, tmp_path: Path
) -> None:
    """An edit that also makes the task invalid names the change, not the validation."""
    world = _world(template, tmp_path, max_retries=2, max_invalid_rate=1)
    batch_id = _partial(world, tmp_path, attempts=4, stop=1)
    oracle = world[0] / "solutions" / "transfer" / "oracle.yaml"
    oracle.write_text(yaml.safe_dump({"kind": "oracle", "steps": [{"finish": "Done."}]}))
    result = _cli(world, "--resume", batch_id)
    assert result.exit_code == 2, result.output
    assert f"cannot resume batch {batch_id}: the suite" in result.output
    assert "not valid" not in result.output


def test_resuming_with_an_edited_system_file_is_refused_with_exit_2(
    template: Path, tmp_path: Path
) -> None:
    world = _world(template, tmp_path, max_retries=2, max_invalid_rate=1)
    batch_id = _partial(world, tmp_path, attempts=4, stop=1)
    before = _tries(world[2], batch_id)
    system = yaml.safe_load(world[1].read_text())
    system["invalid_run_policy"]["max_retries"] = 5  # a looser policy after the fact
    world[1].write_text(yaml.safe_dump(system))
    result = _cli(world, "--resume", batch_id)
    assert result.exit_code == 2, result.output
    assert "differs from the batch's in invalid_run_policy.max_retries" in result.output
    assert _tries(world[2], batch_id) == before


@pytest.mark.parametrize("with_artifacts", [True, False])
def test_a_copied_store_resumes_on_its_own_with_more_concurrency(
    template: Path, tmp_path: Path, with_artifacts: bool
) -> None:
    """A store is its database and the artifacts folder beside it (docs/reliability.md):
    copied whole, the copy resumes on its own; the database copied alone resumes too, but
    warns of every artifact it lacks, and verify names them."""
    world = _world(template, tmp_path, max_retries=2, max_invalid_rate=1)
    batch_id = _partial(world, tmp_path, attempts=8, stop=2)
    before = _tries(world[2], batch_id)
    elsewhere = tmp_path / "elsewhere" / "copy.db"
    elsewhere.parent.mkdir()
    shutil.copy(world[2], elsewhere)
    if with_artifacts:
        shutil.copytree(tmp_path / "artifacts", elsewhere.parent / "artifacts")
    result = _cli(world, "--resume", batch_id, "--concurrency", "4", store=elsewhere)
    assert result.exit_code == 0, result.output
    assert _tries(world[2], batch_id) == before  # the original is untouched
    stored = _tries(elsewhere, batch_id)
    assert sorted({(t, a) for t, a, _, _ in stored}) == [("transfer", n) for n in range(1, 9)]
    assert set(before) <= set(stored)
    with RunStore(elsewhere) as runs:
        check = runs.verify(batch_id)
        assert runs.batch(batch_id).concurrency == 1  # the batch's plan, not the resume's
    assert check.ok is with_artifacts
    if not with_artifacts:
        assert "missing" in result.stderr
        with RunStore(world[2]) as original:  # only the tries made before the copy
            assert {p.run_id for p in check.problems} <= {r.run_id for r in original.runs(batch_id)}


@contextmanager
def _killed_in_smoke_run(world: World, tmp_path: Path, *more: str) -> Iterator[None]:
    """``run`` with *more* in a subprocess, held in the smoke run of its checks (before any
    try) while the body runs, then killed with SIGKILL."""
    hold = tmp_path / "hold"
    hold.touch()
    suite, system, store = world
    args = ["run", str(suite), "--system", str(system), "--store", str(store), *more]
    proc = subprocess.Popen(
        [sys.executable, "-m", "groundstate.cli", *args],
        env={**os.environ, "ROUND5_HOLD": str(hold)},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 60
        while not Path(f"{hold}.started").exists():
            assert proc.poll() is None, "the run ended before its smoke run"
            assert time.monotonic() < deadline, "no smoke run within 60 s"
            time.sleep(0.02)
        yield
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        hold.unlink()


def test_sigkill_during_the_starts_checks_stores_no_batch(template: Path, tmp_path: Path) -> None:
    world = _world(template, tmp_path, max_retries=2, max_invalid_rate=1)
    with _killed_in_smoke_run(world, tmp_path, "--task", "transfer", "--attempts", "3"):
        pass
    assert not _batches(world[2])  # nothing to resume: the batch is stored after its checks
    result = _cli(world, "--task", "transfer", "--attempts", "3")
    assert result.exit_code == 0, result.output
    stored = _tries(world[2], _only_batch(world[2]))
    assert sorted({(t, a) for t, a, _, _ in stored}) == [("transfer", n) for n in range(1, 4)]


def test_sigkill_during_the_resumes_checks_then_resume_completes(
    template: Path, tmp_path: Path
) -> None:
    """A resume killed outright during its smoke run (before any try) leaves its lease to a
    dead process: the next resume takes it over and completes the batch exactly."""
    world = _world(template, tmp_path, max_retries=2, max_invalid_rate=1)
    batch_id = _partial(world, tmp_path, attempts=5, stop=2)
    before = _tries(world[2], batch_id)
    store = world[2]
    with _killed_in_smoke_run(world, tmp_path, "--resume", batch_id), RunStore(store) as runs:
        assert runs.lease(batch_id) is not None  # held by the process about to die
    assert _tries(store, batch_id) == before
    result = _cli(world, "--resume", batch_id)
    assert result.exit_code == 0, result.output
    stored = _tries(store, batch_id)
    assert sorted({(t, a) for t, a, _, _ in stored}) == [("transfer", n) for n in range(1, 6)]
    assert len({(t, a, r) for t, a, r, _ in stored}) == len(stored)


# --- the invalid-run policy at its edges ------------------------------------------------


@pytest.mark.parametrize("max_retries", [0, 2])
def test_a_task_whose_every_try_is_invalid_is_counted_honestly(
    template: Path, tmp_path: Path, max_retries: int
) -> None:
    """Reruns stop at the policy's limit (no endless retry), every try is stored, each
    attempt counts once, invalid, and the batch is flagged in run and report (exit 3 in
    both: it has no valid attempt)."""
    world = _world(
        template, tmp_path, ALWAYS_INVALID, max_retries=max_retries, max_invalid_rate=0.5
    )
    result = _cli(world, "--task", "transfer", "--attempts", "3")
    assert result.exit_code == 3, result.output
    data = json.loads(result.stdout)
    assert data["invalid_attempts"] == 3 and data["invalid_rate_flagged"]
    batch_id = _only_batch(world[2])
    stored = _tries(world[2], batch_id)
    assert stored == [
        ("transfer", a, r, False) for a in range(1, 4) for r in range(max_retries + 1)
    ]
    report = CliRunner().invoke(main, ["report", batch_id, "--json", "--store", str(world[2])])
    # no valid attempt: no estimate, exit 3 as run (round 27; report of a flagged batch with
    # valid attempts still exits non-zero only by its gates)
    assert report.exit_code == 3, report.output
    body = json.loads(report.stdout)
    assert (body["valid_attempts"], body["invalid_attempts"]) == (0, 3)
    assert body["tries"]["tries"] == 3 * (max_retries + 1)
    assert body["tries"]["invalid_tries"] == 3 * (max_retries + 1)
    assert body["invalid_as_failure"]["success_rate"]["estimate"] == 0.0
    # A resume has nothing left to run: the retries are spent, not rerun forever.
    again = _cli(world, "--resume", batch_id)
    assert again.exit_code == 3, again.output
    assert _tries(world[2], batch_id) == stored


def test_reruns_keep_the_attempts_seed(template: Path, tmp_path: Path) -> None:
    """A rerun is the same attempt again: same seed (documented), so a fault that the
    seed causes repeats until the retries are spent, and the seed never depends on order."""
    world = _world(template, tmp_path, max_retries=2, max_invalid_rate=1)
    result = _cli(world, "--task", "transfer", "--attempts", "6")
    assert result.exit_code == 0, result.output
    with RunStore(world[2]) as runs:
        stored = runs.runs(runs.batch().batch_id)
    for run in stored:
        assert run.seed == derive_seed(0, run.task_id, run.attempt)
    exploding = {n for n in range(1, 7) if derive_seed(0, "transfer", n) % 3 == 0}
    assert exploding  # the seeds of this suite make some attempts invalid
    tries = sorted((r.attempt, r.retry, r.valid) for r in stored)
    expected = sorted(
        (n, retry, n not in exploding)
        for n in range(1, 7)
        for retry in range(3 if n in exploding else 1)
    )
    assert tries == expected


@pytest.mark.parametrize(
    ("threshold", "max_retries", "flagged"),
    [
        (0, 0, True),  # one invalid try is too many
        (1, 0, False),  # never flagged, even when every counted attempt is invalid
        (0.5, 0, None),  # exactly at the threshold: "more often than" is not reached
    ],
)
def test_the_invalid_share_threshold_at_its_edges(
    template: Path, tmp_path: Path, threshold: float, max_retries: int, flagged: bool | None
) -> None:
    world = _world(template, tmp_path, max_retries=max_retries, max_invalid_rate=threshold)
    result = _cli(world, "--task", "transfer", "--attempts", "6")
    data = json.loads(result.stdout)
    share = data["invalid_attempts"] / 6
    assert 0 < share < 1
    if flagged is None:  # the share the seeds give decides; the rule is strict '>'
        flagged = share > threshold
    assert data["invalid_rate_flagged"] is flagged
    assert result.exit_code == (3 if flagged else 0), result.output


@pytest.mark.parametrize(
    "policy",
    [
        {"max_retries": 1, "retry_on": ["environment_failure"]},
        {"max_retries": 1, "stop_above": 0.2},
        {"max_retries": 1, "invalid_reasons": ["agent_failure/crashed"]},
    ],
)
def test_a_policy_key_the_runner_does_not_apply_is_refused(
    template: Path, tmp_path: Path, policy: dict[str, Any]
) -> None:
    """Found here: other sections keep extra keys for the record; in the invalid-run policy
    such a key read as a rule in force that nothing enforced (the batch ran as if absent)."""
    world = _world(template, tmp_path, **policy)
    result = _cli(world, "--task", "transfer")
    assert result.exit_code == 2, result.output
    extra = next(k for k in policy if k != "max_retries")
    assert f"invalid_run_policy.{extra}" in result.output
    assert "Traceback" not in result.output
    assert not _batches(world[2])


def _batches(store: Path) -> list[Any]:
    with RunStore(store) as runs:
        return runs.batch_summaries()


def test_a_batch_started_in_process_resumes_on_a_process_pool(
    template: Path, tmp_path: Path
) -> None:
    """Records do not depend on where attempts ran: the resume on another executor stores
    each missing attempt once, with the seeds the batch planned."""
    world = _world(template, tmp_path, max_retries=2, max_invalid_rate=1)
    batch_id = _partial(world, tmp_path, attempts=6, stop=2)
    before = _tries(world[2], batch_id)
    result = _cli(world, "--resume", batch_id, "--executor", "process", "--concurrency", "2")
    assert result.exit_code == 0, result.output
    stored = _tries(world[2], batch_id)
    assert set(before) <= set(stored)
    assert sorted({(t, a) for t, a, _, _ in stored}) == [("transfer", n) for n in range(1, 7)]
    assert len({(t, a, r) for t, a, r, _ in stored}) == len(stored)
    with RunStore(world[2]) as runs:
        for run in runs.runs(batch_id):
            assert run.seed == derive_seed(0, run.task_id, run.attempt)
        assert runs.verify(batch_id).ok


def test_a_task_the_batch_does_not_run_cannot_stop_it_at_the_reset_check(
    template: Path, tmp_path: Path
) -> None:
    """Found here: the checks before a batch reset-checked every task of the suite, so a
    ``--task transfer`` batch (and its resume) was aborted by another task's reset check,
    although only the chosen tasks are validated (docs/workflow.md)."""
    world = _world(template, tmp_path, max_retries=2, max_invalid_rate=1)
    broken = world[0] / "tasks" / "broken.yaml"
    task = yaml.safe_load(broken.read_text())
    task["reset_check"] = {**task.get("reset_check", {}), "initial_state_hash": "0" * 64}
    broken.write_text(yaml.safe_dump(task))
    whole = _cli(world, "--allow-invalid")
    assert whole.exit_code == 2, whole.output
    assert "reset check failed for task 'broken'" in whole.output
    assert not _batches(world[2])
    batch_id = _partial(world, tmp_path, attempts=4, stop=1)
    result = _cli(world, "--resume", batch_id)
    assert result.exit_code == 0, result.output
    stored = _tries(world[2], batch_id)
    assert sorted({(t, a) for t, a, _, _ in stored}) == [("transfer", n) for n in range(1, 5)]


def test_a_resume_keeps_the_batch_seed_given_at_the_start(template: Path, tmp_path: Path) -> None:
    """The batch's --seed is stored with it: a resume without --seed derives every attempt's
    seed from it (not from the default 0), at another concurrency too."""
    world = _world(template, tmp_path, max_retries=2, max_invalid_rate=1)
    batch_id = _partial(world, tmp_path, 6, 2, "--seed", "7")
    result = _cli(world, "--resume", batch_id, "--concurrency", "3")
    assert result.exit_code == 0, result.output
    with RunStore(world[2]) as runs:
        stored = runs.runs(batch_id)
    assert sorted({r.attempt for r in stored}) == list(range(1, 7))
    assert all(r.seed == derive_seed(7, r.task_id, r.attempt) for r in stored)
    assert any(r.seed != derive_seed(0, r.task_id, r.attempt) for r in stored)
