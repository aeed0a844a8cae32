"""Constraint sets: constraints stated once in suite.yaml and included by task files."""

from __future__ import annotations

import re
import shutil
from pathlib import Path
from typing import Any

import pytest
import yaml

from groundstate.agents.base import Session
from groundstate.errors import SpecError
from groundstate.runner import BatchConfig, plan_batch
from groundstate.spec.suite import Suite, load_suite
from groundstate.store import RunStore
from groundstate.testing import FunctionAgent, attempt, scripted_system
from groundstate.validation import regress, validate_task

from .conftest import BANK

PIN_FIRST = {
    "id": "pin-first",
    "before": {"first": {"tool": "check_pin", "ok": True}, "then": {"tool": "transfer"}},
}
ONE_TRANSFER = {
    "id": "one-transfer",
    "at_most": {"n": 1, "match": {"tool": "transfer", "ok": True}},
}
NO_AUDIT = {"id": "no-audit", "never": {"tool": "read_audit"}}
FEW_BALANCES = {"id": "few-balances", "at_most": {"n": 3, "match": {"tool": "balance"}}}
SETS = {"pin": [PIN_FIRST], "limits": [ONE_TRANSFER, FEW_BALANCES]}


@pytest.fixture
def root(tmp_path: Path) -> Path:
    """A copy of the bank suite whose transfer task states no constraints of its own."""
    root = tmp_path / "bank"
    shutil.copytree(BANK, root, ignore=shutil.ignore_patterns("__pycache__"))
    (root / "tasks" / "transfer.yaml").unlink()
    edit_task(root, "transfer")
    return root


def define_sets(root: Path, sets: Any) -> None:
    config = yaml.safe_load((root / "suite.yaml").read_text())
    config["constraint_sets"] = sets
    (root / "suite.yaml").write_text(yaml.safe_dump(config, sort_keys=False))


def edit_task(root: Path, task_id: str, **fields: Any) -> None:
    """Edit task *task_id*, made from the bank's transfer task without its constraints and
    rubric if missing: *fields* replace the task's (None removes one)."""
    path = root / "tasks" / f"{task_id}.yaml"
    if path.exists():
        data = yaml.safe_load(path.read_text())
    else:
        data = yaml.safe_load((BANK / "tasks" / "transfer.yaml").read_text())
        data.update(hard_process_constraints=[], partial_credit_rubric=[])
    data["task_id"] = task_id
    for name, value in fields.items():
        if value is None:
            data.pop(name, None)
        else:
            data[name] = value
    path.write_text(yaml.safe_dump(data, sort_keys=False))


def load_error(root: Path) -> SpecError:
    with pytest.raises(SpecError) as caught:
        load_suite(root)
    return caught.value


def ids(suite: Suite, task_id: str = "transfer") -> list[str]:
    return [c.id for c in suite.tasks[task_id].hard_process_constraints]


# --- expansion -------------------------------------------------------------------------------


def test_sets_come_first_in_the_order_listed_then_the_tasks_own(root: Path) -> None:
    define_sets(root, SETS)
    edit_task(
        root, "transfer", constraint_sets=["limits", "pin"], hard_process_constraints=[NO_AUDIT]
    )
    task = load_suite(root).tasks["transfer"]
    assert [c.id for c in task.hard_process_constraints] == [
        "one-transfer",
        "few-balances",
        "pin-first",
        "no-audit",
    ]
    assert task.constraint_sets == ["limits", "pin"]
    edit_task(root, "transfer", constraint_sets=["pin", "limits"])
    assert ids(load_suite(root)) == ["pin-first", "one-transfer", "few-balances", "no-audit"]


def test_a_set_gives_the_same_task_as_writing_its_constraints_out(root: Path) -> None:
    edit_task(root, "transfer", hard_process_constraints=[PIN_FIRST, ONE_TRANSFER, NO_AUDIT])
    written_out = load_suite(root).tasks["transfer"]
    define_sets(root, {"policy": [PIN_FIRST, ONE_TRANSFER]})
    edit_task(root, "transfer", constraint_sets=["policy"], hard_process_constraints=[NO_AUDIT])
    included = load_suite(root).tasks["transfer"]
    assert included.hard_process_constraints == written_out.hard_process_constraints
    assert included.grader_revision == written_out.grader_revision  # the names are not hashed


def test_a_task_may_consist_of_sets_only_and_others_of_none(root: Path) -> None:
    define_sets(root, SETS)
    edit_task(root, "transfer", constraint_sets=["pin"], hard_process_constraints=None)
    edit_task(root, "plain", hard_process_constraints=[NO_AUDIT])
    suite = load_suite(root)
    assert ids(suite) == ["pin-first"]
    assert ids(suite, "plain") == ["no-audit"]
    assert suite.tasks["plain"].constraint_sets == []


def test_set_constraints_are_graded(root: Path) -> None:
    """The bank's known-bad transfer without a PIN still fails by pin-first, from a set."""
    define_sets(root, SETS)
    edit_task(root, "transfer", constraint_sets=["pin"])
    validity = validate_task(load_suite(root), "transfer")
    discriminating = validity.check("discriminating")
    assert discriminating.passed, validity.to_dict()
    assert "bad_no_pin fails by constraint:pin-first" in discriminating.detail


# --- hashing ---------------------------------------------------------------------------------


def test_editing_a_set_changes_the_grader_of_the_tasks_using_it_only(root: Path) -> None:
    define_sets(root, SETS)
    edit_task(root, "transfer", constraint_sets=["limits"])
    edit_task(root, "other-set", constraint_sets=["pin"])
    edit_task(root, "no-set", hard_process_constraints=[ONE_TRANSFER])
    before = {t.task_id: t.grader_revision for t in load_suite(root).tasks.values()}
    define_sets(
        root,
        {
            **SETS,
            "limits": [
                ONE_TRANSFER,
                {**FEW_BALANCES, "at_most": {"n": 4, "match": {"tool": "balance"}}},
            ],
        },
    )
    after = {t.task_id: t.grader_revision for t in load_suite(root).tasks.values()}
    assert after["transfer"] != before["transfer"]
    assert after["other-set"] == before["other-set"]
    assert after["no-set"] == before["no-set"]


def test_reordering_a_set_changes_the_grader(root: Path) -> None:
    """Order is part of the list that is hashed (it decides which violation is reported)."""
    define_sets(root, SETS)
    edit_task(root, "transfer", constraint_sets=["limits"])
    before = load_suite(root).tasks["transfer"].grader_revision
    define_sets(root, {**SETS, "limits": [FEW_BALANCES, ONE_TRANSFER]})
    assert load_suite(root).tasks["transfer"].grader_revision != before


def test_a_sets_python_check_is_grader_code_of_the_tasks_using_it(root: Path) -> None:
    (root / "policy_checks.py").write_text("def fine(trace, s0):\n    return True\n")
    define_sets(root, {"coded": [{"id": "coded", "check": "policy_checks.py:fine"}]})
    edit_task(root, "transfer", constraint_sets=["coded"])
    edit_task(root, "plain", hard_process_constraints=[NO_AUDIT])
    before = {t.task_id: t.grader_revision for t in load_suite(root).tasks.values()}
    with (root / "policy_checks.py").open("a") as handle:
        handle.write("\n# an edit of grader code\n")
    after = {t.task_id: t.grader_revision for t in load_suite(root).tasks.values()}
    assert after["transfer"] != before["transfer"]
    assert after["plain"] == before["plain"]


# --- rubric ----------------------------------------------------------------------------------


async def _transfer_without_pin(session: Session) -> str:
    await session.call("transfer", {"source": "A", "target": "B", "amount": 30})
    return "Done."


def test_a_rubric_node_may_name_a_constraint_from_a_set(root: Path) -> None:
    define_sets(root, SETS)
    rubric = [
        {"id": "state", "weight": 1, "assertion": "balances"},
        {"id": "process", "weight": 1, "constraint": "pin-first"},
    ]
    edit_task(root, "transfer", constraint_sets=["pin"], partial_credit_rubric=rubric)
    run = attempt(load_suite(root), "transfer", FunctionAgent(_transfer_without_pin)).run
    assert [(r.id, r.passed) for r in run.constraint_results] == [("pin-first", False)]
    assert run.partial_score == 0.5  # the balances are right; the set's constraint failed


def test_a_rubric_node_naming_a_set_the_task_does_not_include_fails(root: Path) -> None:
    define_sets(root, SETS)
    rubric = [{"id": "process", "constraint": "pin-first"}]
    edit_task(root, "transfer", constraint_sets=["limits"], partial_credit_rubric=rubric)
    error = load_error(root)
    assert error.path.endswith("transfer.yaml")
    assert "unknown constraint 'pin-first'" in error.reason


# --- errors ----------------------------------------------------------------------------------


def test_an_unknown_set_names_the_task_file_and_the_known_sets(root: Path) -> None:
    define_sets(root, SETS)
    edit_task(root, "transfer", constraint_sets=["pin", "polcy"])
    error = load_error(root)
    assert error.path.endswith("transfer.yaml")
    assert error.field == "constraint_sets"
    assert error.reason == "unknown constraint set 'polcy' (suite.yaml defines: pin, limits)"


def test_an_unknown_set_when_the_suite_defines_none(root: Path) -> None:
    edit_task(root, "transfer", constraint_sets=["pin"])
    assert load_error(root).reason == "unknown constraint set 'pin' (suite.yaml defines: none)"


def test_a_set_listed_twice(root: Path) -> None:
    define_sets(root, SETS)
    edit_task(root, "transfer", constraint_sets=["pin", "limits", "pin"])
    error = load_error(root)
    assert (error.field, error.reason) == ("constraint_sets", "constraint set 'pin' listed twice")


@pytest.mark.parametrize("value", ["pin", [["pin"]], [1], {"pin": True}])
def test_set_names_must_be_a_list_of_strings(root: Path, value: Any) -> None:
    define_sets(root, SETS)
    edit_task(root, "transfer", constraint_sets=value)
    error = load_error(root)
    assert (error.field, error.reason) == (
        "constraint_sets",
        "expected a list of constraint set names",
    )


def test_an_id_in_a_set_and_in_the_task_names_both(root: Path) -> None:
    define_sets(root, SETS)
    mine = {**NO_AUDIT, "id": "few-balances"}
    edit_task(
        root,
        "transfer",
        constraint_sets=["pin", "limits"],
        hard_process_constraints=[NO_AUDIT, mine],
    )
    error = load_error(root)
    assert error.path.endswith("transfer.yaml")
    assert error.field == "hard_process_constraints[1].id"
    assert error.reason == (
        "constraint id 'few-balances' is defined twice: in constraint set 'limits' "
        "(suite.yaml: constraint_sets.limits[1]) and in hard_process_constraints[1]"
    )


def test_an_id_in_two_included_sets_names_both(root: Path) -> None:
    define_sets(root, {**SETS, "strict": [NO_AUDIT, {**ONE_TRANSFER, "description": "again"}]})
    edit_task(root, "transfer", constraint_sets=["limits", "strict"])
    error = load_error(root)
    assert error.field == "constraint_sets"
    assert error.reason == (
        "constraint id 'one-transfer' is defined twice: in constraint set 'limits' "
        "(suite.yaml: constraint_sets.limits[0]) and in constraint set 'strict' "
        "(suite.yaml: constraint_sets.strict[1])"
    )


def test_sets_sharing_an_id_are_fine_when_no_task_includes_both(root: Path) -> None:
    define_sets(root, {**SETS, "strict": [ONE_TRANSFER]})
    edit_task(root, "transfer", constraint_sets=["limits"])
    edit_task(root, "other", constraint_sets=["strict"])
    assert ids(load_suite(root), "other") == ["one-transfer"]


def test_an_id_twice_among_the_tasks_own_names_both_places(root: Path) -> None:
    define_sets(root, SETS)
    edit_task(
        root, "transfer", constraint_sets=["pin"], hard_process_constraints=[NO_AUDIT, NO_AUDIT]
    )
    error = load_error(root)
    assert error.field == "hard_process_constraints[1].id"
    assert "in hard_process_constraints[0] and in hard_process_constraints[1]" in error.reason


def test_an_id_twice_within_a_set_is_an_error_of_suite_yaml(root: Path) -> None:
    define_sets(root, {"pin": [PIN_FIRST, NO_AUDIT, PIN_FIRST]})
    error = load_error(root)
    assert error.path.endswith("suite.yaml")
    assert error.field == "constraint_sets.pin"
    assert "constraint id 'pin-first' is defined twice, at [0] and [2]" in error.reason


@pytest.mark.parametrize(
    ("constraint", "field", "reason"),
    [
        (
            {"id": "c", "confirmed": {"change": {"tool": "transfer"}, "names": "args.amount"}},
            "constraint_sets.limits[1].confirmed.names",
            "valid list",
        ),
        ({"id": "c"}, "constraint_sets.limits[1]", "exactly one of"),
        (
            {"id": "c", "never": {"tool": "transfer", "contains": "x"}},
            "constraint_sets.limits[1].never",
            "message matches only",
        ),
        (
            {"id": "c", "never": {"tool": "transfer"}, "colour": "red"},
            "constraint_sets.limits[1].colour",
            "unknown field",
        ),
    ],
)
def test_a_malformed_set_constraint_names_suite_yaml_and_its_path(
    root: Path, constraint: dict[str, Any], field: str, reason: str
) -> None:
    define_sets(root, {**SETS, "limits": [ONE_TRANSFER, constraint]})
    error = load_error(root)  # no task needs to include the set
    assert error.path.endswith("suite.yaml")
    assert error.field == field
    assert reason in error.reason


@pytest.mark.parametrize(
    ("ref", "reason"),
    [
        ("missing.py:fn", "no file missing.py in the suite (for 'missing.py:fn')"),
        ("checks.py", "expected 'file.py:function' in the suite, got 'checks.py'"),
        ("policy_checks.py", "expected 'file.py:function' in the suite, got 'policy_checks.py'"),
    ],
)
def test_a_sets_python_check_must_name_a_file_of_the_suite(
    root: Path, ref: str, reason: str
) -> None:
    define_sets(root, {**SETS, "coded": [NO_AUDIT, {"id": "coded", "check": ref}]})
    error = load_error(root)
    assert error.path.endswith("suite.yaml")
    assert error.field == "constraint_sets.coded[1].check"
    assert reason in error.reason


def test_the_tasks_own_errors_keep_their_index_in_the_task_file(root: Path) -> None:
    """The set constraints come first in the task, yet an error points into the file."""
    define_sets(root, SETS)
    edit_task(
        root,
        "transfer",
        constraint_sets=["limits"],
        hard_process_constraints=[NO_AUDIT, {"id": "x"}],
    )
    error = load_error(root)
    assert (error.field, error.path.endswith("transfer.yaml")) == (
        "hard_process_constraints[1]",
        True,
    )
    assert "exactly one of" in error.reason
    edit_task(root, "transfer", hard_process_constraints=[{"id": "x", "check": "gone.py:fn"}])
    assert load_error(root).field == "hard_process_constraints[0].check"


def test_constraint_sets_must_be_a_mapping_of_lists(root: Path) -> None:
    define_sets(root, [PIN_FIRST])
    error = load_error(root)
    assert (error.field, error.path.endswith("suite.yaml")) == ("constraint_sets", True)


def test_errors_reach_the_command_line_without_a_traceback(root: Path) -> None:
    from click.testing import CliRunner

    from groundstate.cli import main

    define_sets(root, SETS)
    edit_task(root, "transfer", constraint_sets=["nope"])
    result = CliRunner().invoke(main, ["validate", str(root), "--no-cache"])
    assert result.exit_code == 2
    assert re.search(
        r"transfer.yaml:\d+: constraint_sets: unknown constraint set 'nope'", result.stderr
    )
    assert "Traceback" not in result.stderr + result.stdout


# --- regression cases ------------------------------------------------------------------------


async def _transfer_to_c(session: Session) -> str:
    await session.say("What is your PIN?")
    await session.call("check_pin", {"account": "A", "pin": "1234"})
    await session.call("transfer", {"source": "A", "target": "C", "amount": 30})
    return "Moved 30 from A."


def test_a_regression_case_states_the_expanded_constraints(root: Path, tmp_path: Path) -> None:
    """The new task file is complete wherever it goes, so it does not list the sets again."""
    define_sets(root, SETS)
    edit_task(root, "transfer", constraint_sets=["pin"], hard_process_constraints=[NO_AUDIT])
    suite = load_suite(root)
    batch = plan_batch(suite, scripted_system(), BatchConfig())
    output = attempt(suite, "transfer", FunctionAgent(_transfer_to_c))
    with RunStore(tmp_path / "runs.db") as store:
        store.add_batch(batch)
        run = store.add_run(
            output.run.model_copy(update={"batch_id": batch.batch_id}), output.artifacts
        )
    path = regress(run, suite, into=root)
    assert "constraint_sets" not in yaml.safe_load(path.read_text())
    regressed = load_suite(root).tasks[path.stem]
    assert regressed.hard_process_constraints == suite.tasks["transfer"].hard_process_constraints
    assert regressed.grader_revision == suite.tasks["transfer"].grader_revision
