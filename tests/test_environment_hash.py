"""The environment kind a suite runs in is part of its hash: a batch on PostgreSQL and one on
SQLite of the same files are not the same evaluation, and ``compare`` says so."""

from __future__ import annotations

import uuid
from pathlib import Path

import pytest

from groundstate.analysis import batch_mismatches, compare_batches
from groundstate.episode import AttemptInfo, AttemptJob
from groundstate.errors import ExecutorError
from groundstate.executors._job import job_suite
from groundstate.runner import BatchConfig, plan_batch
from groundstate.spec.canonical import hash_value
from groundstate.spec.suite import load_suite, with_environment
from groundstate.stats.compare import RevisionMismatch
from groundstate.testing import run_solution, scripted_system

from .conftest import BANK


def test_the_kind_that_runs_is_hashed_and_sqlite_suites_keep_their_hash() -> None:
    suite = load_suite(BANK)
    assert suite.suite_hash == hash_value(suite.files)  # hashes recorded before stay valid
    on_postgres = with_environment(suite, "postgres")
    assert on_postgres.suite_hash != suite.suite_hash
    assert with_environment(on_postgres, "sqlite").suite_hash == suite.suite_hash


def test_a_suite_declaring_postgres_run_on_sqlite_is_another_evaluation(tmp_path: Path) -> None:
    import shutil

    root = tmp_path / "bank"
    shutil.copytree(BANK, root)
    config = (root / "suite.yaml").read_text()
    (root / "suite.yaml").write_text(config + "\nenvironment: postgres\n")
    declared = load_suite(root)
    assert declared.config.environment == "postgres"
    overridden = with_environment(declared, "sqlite")
    assert overridden.suite_hash == hash_value(declared.files)
    assert declared.suite_hash != overridden.suite_hash


def test_compare_refuses_batches_run_on_different_kinds() -> None:
    suite, system = load_suite(BANK), scripted_system()
    config = BatchConfig(tasks=("transfer",))
    on_sqlite = plan_batch(suite, system, config)
    on_postgres = plan_batch(with_environment(suite, "postgres"), system, config)
    assert batch_mismatches(on_sqlite, plan_batch(suite, system, config)) == []
    [line] = batch_mismatches(on_sqlite, on_postgres)
    assert line.startswith("suite_hash differs")
    runs = [run_solution(suite, "transfer", "oracle")]
    with pytest.raises(RevisionMismatch, match="suite_hash differs"):
        compare_batches(on_sqlite, runs, on_postgres, runs)
    allowed = compare_batches(on_sqlite, runs, on_postgres, runs, allow_mismatch=True)
    assert any("suite_hash differs" in line for line in allowed.mismatches)


def test_a_worker_applies_the_override_before_checking_the_hash() -> None:
    switched = with_environment(load_suite(BANK), "postgres")
    info = AttemptInfo(run_id=uuid.uuid4().hex, batch_id="b", attempt=1, seed=0)

    def job(environment: str | None) -> AttemptJob:
        return AttemptJob(
            suite_path=str(BANK),
            suite_hash=switched.suite_hash,
            system=scripted_system(),
            task_id="transfer",
            info=info,
            environment=environment,
        )

    assert job_suite(job("postgres")).config.environment == "postgres"
    with pytest.raises(ExecutorError, match="hashes to"):
        job_suite(job(None))  # the same files on SQLite are not what the batch ran
