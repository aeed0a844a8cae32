"""Task, suite and system files: loading, clear errors, canonical hashes."""

from __future__ import annotations

import copy
import shutil
from pathlib import Path
from typing import Any

import pytest
import yaml

from groundstate.errors import SpecError
from groundstate.spec.suite import load_suite
from groundstate.spec.system import SystemSpec, load_system

from .conftest import BANK, BANK_SYSTEM, EditTask

SYSTEM = BANK_SYSTEM


def _task_error(edited_bank: EditTask, change: Any) -> SpecError:
    with pytest.raises(SpecError) as caught:
        edited_bank(change)
    return caught.value


@pytest.mark.parametrize(
    ("change", "field", "reason"),
    [
        (lambda t: t.pop("user_request"), "user_request", "required field is missing"),
        (lambda t: t.update(step_limit="many"), "step_limit", "valid integer"),
        (lambda t: t.update(colour="red"), "colour", "unknown field"),
        (
            lambda t: t["hard_process_constraints"].append({"id": "x"}),
            "hard_process_constraints[2]",
            "exactly one of",
        ),
        (
            lambda t: t["outcome_assertions"][0].pop("expect_rows"),
            "outcome_assertions[0].expect_rows",
            "missing",
        ),
        (
            lambda t: t.update(available_tools=["teleport"]),
            "available_tools[0]",
            "'teleport' is not a tool of tools.py",
        ),
        (lambda t: t.update(initial_state_fixture="nope.sql"), "initial_state_fixture", "no file"),
        (lambda t: t.update(task_id="other"), "task_id", "must match the file name"),
        (
            lambda t: t["partial_credit_rubric"].append({"id": "r", "assertion": "ghost"}),
            None,
            "unknown assertion 'ghost'",
        ),
    ],
)
def test_malformed_task_names_file_field_and_reason(
    edited_bank: EditTask, change: Any, field: str | None, reason: str
) -> None:
    error = _task_error(edited_bank, change)
    assert error.path.endswith("transfer.yaml")
    assert error.field == field or (field is None and error.field is not None)
    assert reason in error.reason


def test_invalid_yaml_names_the_line(tmp_path: Path) -> None:
    root = tmp_path / "bank"
    shutil.copytree(BANK, root)
    (root / "tasks" / "transfer.yaml").write_text("task_id: [unclosed\n")
    with pytest.raises(SpecError, match=r"transfer.yaml:2: invalid YAML"):
        load_suite(root)


def test_suite_derives_grader_revision_and_manifest(edited_bank: EditTask) -> None:
    task = load_suite(BANK).tasks["transfer"]
    assert len(task.grader_revision) == 16
    assert set(task.grader_test_manifest) == {
        "oracle",
        "bad_no_pin",
        "bad_wrong_target",
        "bad_claims",
    }

    def loosen(t: dict[str, Any]) -> None:
        t["outcome_assertions"][0]["expect_rows"][0][1] = 71

    changed = edited_bank(loosen).tasks["transfer"]
    assert changed.grader_revision != task.grader_revision


def test_grader_revision_follows_grader_code(tmp_path: Path) -> None:
    root = tmp_path / "bank"
    shutil.copytree(BANK, root)
    before = load_suite(root).tasks["transfer"].grader_revision
    with (root / "checks.py").open("a") as handle:
        handle.write("\n# a change to grader code\n")
    assert load_suite(root).tasks["transfer"].grader_revision != before


def test_system_hash_ignores_layout_and_key_order(tmp_path: Path) -> None:
    data = yaml.safe_load(SYSTEM.read_text())
    reordered = dict(reversed(list(data.items())))
    other = tmp_path / "system.yaml"
    other.write_text(yaml.safe_dump(reordered, default_flow_style=True, sort_keys=False))
    shutil.copy(BANK.parent / "bank_agent.py", tmp_path / "bank_agent.py")
    assert load_system(other).system_spec_hash == load_system(SYSTEM).system_spec_hash


def _leaves(value: Any, path: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    if isinstance(value, dict):
        return [leaf for k, v in value.items() for leaf in _leaves(v, (*path, k))]
    return [path]


def _mutated(value: Any) -> Any:
    if isinstance(value, bool):
        return not value
    if isinstance(value, int | float):
        return value + 1
    return f"{value}-changed"


def test_changing_any_single_value_changes_the_hash(tmp_path: Path) -> None:
    data = yaml.safe_load(SYSTEM.read_text())
    shutil.copy(BANK.parent / "bank_agent.py", tmp_path / "bank_agent.py")
    base = load_system(SYSTEM).system_spec_hash
    leaves = _leaves(data)
    assert len(leaves) >= 10
    for path in leaves:
        changed = copy.deepcopy(data)
        target = changed
        for key in path[:-1]:
            target = target[key]
        target[path[-1]] = _mutated(target[path[-1]])
        if path[-1] == "entry":
            continue  # renaming the entry breaks the reference; covered by the code hash test
        file = tmp_path / "system.yaml"
        file.write_text(yaml.safe_dump(changed))
        assert load_system(file).system_spec_hash != base, path


def test_agent_code_and_versions_are_part_of_the_spec(tmp_path: Path) -> None:
    shutil.copy(SYSTEM, tmp_path / "system.yaml")
    shutil.copy(BANK.parent / "bank_agent.py", tmp_path / "bank_agent.py")
    before = load_system(tmp_path / "system.yaml")
    assert before.resolved["versions"]["python"].count(".") == 2
    assert "pydantic" in before.resolved["versions"]
    with (tmp_path / "bank_agent.py").open("a") as handle:
        handle.write("\n# a change to the orchestration loop\n")
    after = load_system(tmp_path / "system.yaml")
    assert after.system_spec_hash != before.system_spec_hash


@pytest.mark.parametrize(
    ("text", "field", "reason"),
    [
        ("harness: {}\n", "harness.orchestration_loop", "required field is missing"),
        (
            "harness: {orchestration_loop: {entry: nowhere}}\n",
            "harness.orchestration_loop.entry",
            "expected",
        ),
        (
            "harness: {orchestration_loop: {entry: gone.py:f}}\n",
            "harness.orchestration_loop.entry",
            "no file",
        ),
        ("model: 3\nharness: {orchestration_loop: {entry: a:b}}\n", "model", "valid dictionary"),
        ("wizard: 1\nharness: {orchestration_loop: {entry: a:b}}\n", "wizard", "unknown field"),
        ("- a list\n", None, "expected a mapping"),
    ],
)
def test_malformed_system_file(tmp_path: Path, text: str, field: str | None, reason: str) -> None:
    path = tmp_path / "system.yaml"
    path.write_text(text)
    with pytest.raises(SpecError) as caught:
        load_system(path)
    assert caught.value.path == str(path)
    assert caught.value.field == field
    assert reason in caught.value.reason


def test_system_spec_round_trips_through_json() -> None:
    spec = load_system(SYSTEM)
    again = SystemSpec.model_validate_json(spec.model_dump_json())
    assert again.system_spec_hash == spec.system_spec_hash


def test_a_module_entry_is_hashed_by_its_source(tmp_path: Path) -> None:
    path = tmp_path / "system.yaml"
    path.write_text(
        "harness: {orchestration_loop: {entry: groundstate.agents.scripted:ScriptedAgent,"
        " params: {steps: []}}}"
    )
    import groundstate.agents.scripted as scripted
    from groundstate.spec.canonical import hash_file

    expected = hash_file(Path(scripted.__file__))
    assert load_system(path).resolved["code"]["orchestration_loop"] == expected
    path.write_text("harness: {orchestration_loop: {entry: nosuch.module:agent}}")
    with pytest.raises(
        SpecError,
        match=r"cannot import nosuch\.module: ModuleNotFoundError: No module named 'nosuch'",
    ):
        load_system(path)
