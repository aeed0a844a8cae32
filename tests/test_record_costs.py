"""The record's cheaper paths give what the longhand ones gave: a kept system spec hash is never
stale, whatever is changed in the spec and however; a batch's result holds the records as a
read-back of the store gives them, without the read-back."""

from __future__ import annotations

import asyncio
import gc
import json
import math
import shutil
from pathlib import Path
from typing import Any

import pytest
import yaml

from groundstate.agents.base import Session
from groundstate.errors import StoreError
from groundstate.records import AgentRun
from groundstate.runner import BatchConfig, BatchRunner, plan_batch
from groundstate.spec import system as system_module
from groundstate.spec.canonical import hash_value
from groundstate.spec.suite import load_suite
from groundstate.spec.system import SystemSpec, UserSimulatorSection, load_system
from groundstate.store import RunStore, parse_stored, prepare_run
from groundstate.testing import FaultyEnvironments, FunctionAgent, attempt, scripted_system

from .conftest import BANK, BANK_SYSTEM


def _longhand(spec: SystemSpec) -> str:
    """The hash as it was always computed, nothing kept."""
    return hash_value(spec.model_dump(mode="json"))


def test_the_kept_hash_is_the_longhand_hash_and_is_kept_outside_the_spec() -> None:
    spec, twin = scripted_system(), scripted_system()
    first = spec.system_spec_hash
    assert first == _longhand(spec)
    assert spec.system_spec_hash is first  # the kept one, not recomputed
    assert spec == twin and spec.model_copy() == twin  # reading it changed no equality


@pytest.mark.parametrize(
    "change",
    [
        lambda s: s.model.decoding.update(temperature=0.5),
        lambda s: s.harness.orchestration_loop.params.update(steps=[1, 2]),
        lambda s: s.harness.tool_descriptions.update(refund="Refunds an order."),
        lambda s: s.resolved.update(code={"orchestration_loop": "abc"}),
    ],
    ids=["decoding", "params", "tool_descriptions", "resolved"],
)
def test_a_dict_changed_in_place_changes_the_hash(change: Any) -> None:
    spec = scripted_system()
    before = spec.system_spec_hash
    change(spec)  # frozen forbids assigning fields, not changing a dict inside one
    assert spec.system_spec_hash == _longhand(spec) != before


def test_a_copy_with_other_values_does_not_inherit_the_kept_hash() -> None:
    spec = scripted_system()
    kept = spec.system_spec_hash
    renamed = spec.model_copy(update={"name": "other"})
    assert renamed.system_spec_hash == _longhand(renamed) != kept
    users = spec.model_copy(update={"user_simulator": UserSimulatorSection(max_turns=3)})
    assert users.system_spec_hash == _longhand(users) != kept


@pytest.mark.parametrize(
    ("first", "second"),
    [(True, 1), (1, 1.0), (0, False), ("1", 1), ([1], (1,))],
    ids=["true-1", "int-float", "zero-false", "str-int", "list-tuple"],
)
def test_values_python_calls_equal_but_json_tells_apart_are_not_confused(
    first: Any, second: Any
) -> None:
    """A near miss for a cache keyed on equality: ``True == 1`` and ``1 == 1.0`` in Python,
    yet their hashes differ (a tuple and a list are the same JSON: the same hash)."""
    spec = scripted_system()
    spec.model.decoding["x"] = first
    one = spec.system_spec_hash
    spec.model.decoding["x"] = second
    assert spec.system_spec_hash == _longhand(spec)
    assert (one == spec.system_spec_hash) == (json.dumps(first) == json.dumps(second))


def test_non_finite_floats_hash_as_pydantic_writes_them() -> None:
    spec = scripted_system()
    for value in (float("nan"), float("inf"), None, 0.0, -0.0):
        spec.model.decoding["t"] = value
        assert spec.system_spec_hash == _longhand(spec)


# --- the batch result: the records as stored, without reading them back ----------------------


class _Killed(BaseException):
    """Stands in for the process being killed between two attempts."""


ODD_CHECK = """

def odd_evidence(s0: Any, sT: Any) -> tuple[bool, dict[Any, Any]]:
    \"\"\"Evidence JSON cannot hold exactly: stored as null and a string.\"\"\"
    import datetime

    return True, {"ratio": float("nan"), "when": datetime.date(2026, 1, 2)}
"""


@pytest.fixture(scope="module")
def odd_bank(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The bank with a check whose evidence changes when stored as JSON."""
    root = tmp_path_factory.mktemp("odd") / "bank"
    shutil.copytree(BANK, root)
    with (root / "checks.py").open("a") as handle:
        handle.write(ODD_CHECK)
    task_file = root / "tasks" / "transfer.yaml"
    task = yaml.safe_load(task_file.read_text())
    task["outcome_assertions"].append({"id": "odd", "check": "checks.py:odd_evidence"})
    task_file.write_text(yaml.safe_dump(task))
    return root


async def _honest(session: Session) -> str:
    await session.say("What is your PIN?")
    await session.call("check_pin", {"account": "A", "pin": "1234"})
    await session.call("transfer", {"source": "A", "target": "B", "amount": 30})
    return "Moved 30 from A to B."


def _odd_evidence(runs: list[AgentRun]) -> Any:
    first = next(r for r in runs if r.valid)
    return next(c.evidence for c in first.outcome_assertion_results if c.id == "odd")


def test_a_batch_result_holds_the_records_as_stored_not_as_built(
    odd_bank: Path, tmp_path: Path
) -> None:
    suite = load_suite(odd_bank)
    suite.config = suite.config.model_copy(update={"canary": None})
    built: list[AgentRun] = []
    with RunStore(tmp_path / "runs.db") as store:
        runner = BatchRunner(
            suite,
            load_system(BANK_SYSTEM),
            store,
            make_agent=lambda: FunctionAgent(_honest),
            make_env=FaultyEnvironments(rate=0.4, seed=3),
            on_run=built.append,
        )
        result = asyncio.run(runner.start(BatchConfig(attempts=6, concurrency=3)))
        stored = store.runs(result.batch.batch_id)
    assert len(stored) > 6 and any(not r.valid for r in stored)  # reruns happened
    assert len(built) == len(stored)
    odd = _odd_evidence(built)  # in memory: made JSON-like where the check ran, NaN kept
    assert math.isnan(odd["ratio"]) and odd["when"] == "2026-01-02"
    assert result.runs == stored  # as stored, in task, attempt, retry order
    assert _odd_evidence(result.runs) == {"ratio": None, "when": "2026-01-02"}
    assert [r.model_dump_json() for r in result.runs] == [r.model_dump_json() for r in stored]


def test_a_resumed_batch_result_holds_the_earlier_tries_and_the_new_ones(
    odd_bank: Path, tmp_path: Path
) -> None:
    suite = load_suite(odd_bank)
    agents = iter(range(100))

    def make_agent() -> FunctionAgent:
        if next(agents) == 3:  # preflight builds one; the batch dies at its third attempt
            raise _Killed
        return FunctionAgent(_honest)

    with RunStore(tmp_path / "runs.db") as store:
        runner = BatchRunner(suite, load_system(BANK_SYSTEM), store, make_agent=make_agent)
        with pytest.raises(_Killed):
            asyncio.run(runner.start(BatchConfig(attempts=5)))
        assert runner.batch_id is not None
        earlier = store.runs(runner.batch_id)
        result = asyncio.run(runner.resume(runner.batch_id))
        stored = store.runs(runner.batch_id)
    assert 1 <= len(earlier) < 5 and len(stored) == 5
    assert result.runs == stored
    assert {r.run_id for r in earlier} < {r.run_id for r in result.runs}


def _stored_batch(store: RunStore) -> list[str]:
    """A batch of one bank record stored twice; the JSON texts stored."""
    output = attempt(load_suite(BANK), "transfer", FunctionAgent(_honest))
    store.add_batch(plan_batch(load_suite(BANK), scripted_system(), BatchConfig()))
    batch_id = store.batch_ids()[0]
    tries = [
        (output.run.model_copy(update={"batch_id": batch_id, "run_id": f"r{n}", "attempt": n}), {})
        for n in (1, 2)
    ]
    prepared = [prepare_run(run, artifacts) for run, artifacts in tries]
    store.add_prepared(prepared)
    return [row.text for row in prepared]


@pytest.mark.parametrize("enabled", [True, False], ids=["collector-on", "collector-off"])
def test_reading_records_leaves_the_garbage_collector_as_it_found_it(
    enabled: bool, tmp_path: Path
) -> None:
    with RunStore(tmp_path / "runs.db") as store:
        texts = _stored_batch(store)
        batch_id = store.batch_ids()[0]
        was = gc.isenabled()
        try:
            gc.enable() if enabled else gc.disable()
            assert parse_stored(texts) == store.runs(batch_id)
            assert gc.isenabled() is enabled
            with store._db:  # a corrupt record: the error leaves the collector as it was
                store._db.execute("DROP TRIGGER runs_updated")
                store._db.execute("UPDATE runs SET record = '{}' WHERE run_id = 'r1'")
            with pytest.raises(StoreError, match=r"run r1 .* is unreadable"):
                store.runs(batch_id)
            assert gc.isenabled() is enabled
        finally:
            gc.enable() if was else gc.disable()


def test_the_kept_hashes_stay_few() -> None:
    specs = [scripted_system(f"system-{n}") for n in range(200)]
    assert all(s.system_spec_hash == _longhand(s) for s in specs)
    assert len(system_module._SPEC_HASHES) <= system_module._SPEC_HASHES_KEPT
