"""Fifth validation audit: bad tasks an outside author could write, and what `validate` says.

Each case edits a copy of the test bank: vacuous outcome assertions of every kind (a query that
returns nothing on both sides, a column compared with itself, a count the fixture already has,
a check that is always true, reads only ``s0`` or swallows its own error), oracles that need a
tool the task does not offer or break the task's own constraint, and the commands that must
refuse what validation refused (``run``, ``run --locked`` with a fresh lock, a lock edited by
hand).
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import CliRunner

from groundstate.cli import main
from groundstate.spec.suite import Suite, load_suite
from groundstate.store import RunStore
from groundstate.validation import LOCK_FILE, check_lock, ensure_valid, lock_suite, validate_task

from .conftest import BANK

SYSTEM = Path(__file__).parent / "suites" / "bank_system.yaml"

CHECKS = """
def always(s0, sT):
    return True


def only_s0(s0, sT):
    return s0.query("SELECT balance FROM accounts WHERE id = 'A'") == [(100,)]


def swallowed(s0, sT):
    try:
        return sT.query("SELECT balance FROM acounts WHERE id = 'A'") == [(70,)]
    except Exception:
        return True
"""

VACUOUS = {
    "empty-both-sides": {"sql": "SELECT id FROM accounts WHERE balance < 0", "expect_rows": []},
    "column-with-itself": {
        "sql": "SELECT COUNT(*) FROM accounts WHERE balance = balance",
        "expect_rows": [[3]],
    },
    "fixture-count": {"sql": "SELECT COUNT(*) FROM accounts", "expect_rows": [[3]]},
    "always-true": {"check": "checks.py:always"},
    "reads-only-s0": {"check": "checks.py:only_s0"},
    "swallows-its-error": {"check": "checks.py:swallowed"},
}


def _bank(tmp_path: Path) -> Path:
    root = tmp_path / "bank"
    if not root.exists():
        shutil.copytree(BANK, root, ignore=shutil.ignore_patterns("__pycache__"))
        with (root / "checks.py").open("a") as handle:
            handle.write(CHECKS)
    return root


def _edit(tmp_path: Path, change: Any) -> Suite:
    root = _bank(tmp_path)
    task_file = root / "tasks" / "transfer.yaml"
    data = yaml.safe_load(task_file.read_text())
    change(data)
    task_file.write_text(yaml.safe_dump(data))
    return load_suite(root)


def _only(assertion: dict[str, Any], *, constraint: bool) -> Any:
    """The task's outcome is *assertion* alone; with *constraint*, a hard constraint asks for
    one successful transfer (so every straw agent still fails, by the constraint)."""

    def change(task: dict[str, Any]) -> None:
        task["outcome_assertions"] = [{"id": "vacuous", **assertion}]
        task.pop("partial_credit_rubric", None)
        if constraint:
            task["hard_process_constraints"].append(
                {"id": "did-transfer", "at_least": {"n": 1, "match": {"tool": "transfer"}}}
            )

    return change


def _invoke(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(main, list(args), catch_exceptions=False)
    return result.exit_code, result.stdout, result.stderr


# --- vacuous outcome assertions -------------------------------------------------------------


@pytest.mark.parametrize("kind", sorted(VACUOUS))
@pytest.mark.parametrize("constraint", [False, True])
def test_an_outcome_that_is_true_of_any_state_is_refused(
    tmp_path: Path, kind: str, constraint: bool
) -> None:
    suite = _edit(tmp_path, _only(VACUOUS[kind], constraint=constraint))
    validity = validate_task(suite, "transfer")
    assert not validity.valid
    discriminating = validity.check("discriminating")
    assert not discriminating.passed
    if constraint:  # straw agents fail, but by the constraint alone
        assert "every outcome assertion passes for the do-nothing agent" in discriminating.detail
    else:
        assert "the do-nothing agent passes" in discriminating.detail, discriminating.detail
        # and the oracle's write is checked by nothing (with the constraint, leaving it out
        # breaks the constraint: sensitivity passes, discriminating is what refuses the task)
        sensitivity = validity.check("grader_sensitivity")
        assert not sensitivity.passed and "grader gap: step 3 of oracle" in sensitivity.detail
    # the assertion at fault is named, for the author to fix
    assert "outcome assertion vacuous holds" in discriminating.detail, discriminating.detail


def test_the_same_assertions_made_to_read_the_change_are_valid(tmp_path: Path) -> None:
    """Near misses of the vacuous ones that do read sT: the good task is accepted."""
    good = {"sql": "SELECT COUNT(*) FROM transfers WHERE source = 'A'", "expect_rows": [[1]]}
    suite = _edit(tmp_path, lambda task: task["outcome_assertions"].append({"id": "g", **good}))
    assert validate_task(suite, "transfer").valid


# --- oracles the task itself does not allow --------------------------------------------------


def test_an_oracle_calling_a_tool_the_task_does_not_offer_is_refused(tmp_path: Path) -> None:
    root = _bank(tmp_path)
    oracle = root / "solutions" / "transfer" / "oracle.yaml"
    data = yaml.safe_load(oracle.read_text())
    data["steps"].insert(1, {"call": "balance", "args": {"account": "A"}})
    oracle.write_text(yaml.safe_dump(data))
    task_file = root / "tasks" / "transfer.yaml"
    task = yaml.safe_load(task_file.read_text())
    task["available_tools"].remove("balance")
    task_file.write_text(yaml.safe_dump(task))
    for command in (
        ["validate", str(root), "--no-cache"],
        ["run", str(root), "--system", str(SYSTEM), "--store", str(tmp_path / "runs.db")],
    ):
        code, out, err = _invoke(*command)
        assert code == 2, out + err
        assert "oracle.yaml" in err and "'balance' is not in available_tools" in err, err


def test_an_oracle_that_breaks_the_tasks_own_constraint_is_not_solvable(tmp_path: Path) -> None:
    def forbid_pin_check(task: dict[str, Any]) -> None:
        task["hard_process_constraints"].append({"id": "no-pin", "never": {"tool": "check_pin"}})

    validity = validate_task(_edit(tmp_path, forbid_pin_check), "transfer")
    solvable = validity.check("solvable")
    assert not solvable.passed and "no-pin" in solvable.detail, solvable.detail


# --- run refuses what validate refused -------------------------------------------------------


def test_run_refuses_an_invalid_task_even_with_a_fresh_lock(tmp_path: Path) -> None:
    root = _bank(tmp_path)
    _edit(tmp_path, _only(VACUOUS["always-true"], constraint=True))
    lock_suite(load_suite(root))  # locking says nothing about validity
    store = str(tmp_path / "runs.db")
    for extra in ([], ["--locked"]):
        args = ["run", str(root), "--system", str(SYSTEM), "--store", store, *extra]
        code, out, err = _invoke(*args)
        assert code == 2, out + err
        assert "transfer: " in err and "discriminating" in err, err
        assert "--allow-invalid" in err
    with RunStore(Path(store)) as runs:
        assert runs.batches() == []  # nothing ran


def test_a_lock_edited_to_match_a_changed_grader_still_names_the_grader(tmp_path: Path) -> None:
    """Someone changes checks.py, then copies its new hash into suite.lock by hand: the grader
    revision the lock recorded for the task gives the change away."""
    root = _bank(tmp_path)
    lock_suite(load_suite(root))
    checks = root / "checks.py"
    checks.write_text(checks.read_text().replace("before == after", "True"))
    edited = load_suite(root)
    lock = json.loads((root / LOCK_FILE).read_text())
    lock["files"]["checks.py"] = edited.files["checks.py"]
    (root / LOCK_FILE).write_text(json.dumps(lock))
    lines = check_lock(edited)
    assert len(lines) == 1 and lines[0].startswith("task transfer: grader revision"), lines


def test_a_lock_of_another_format_is_not_trusted(tmp_path: Path) -> None:
    root = _bank(tmp_path)
    lock_suite(load_suite(root))
    lock = json.loads((root / LOCK_FILE).read_text())
    lock["format"] = 99
    (root / LOCK_FILE).write_text(json.dumps(lock))
    lines = check_lock(load_suite(root))
    assert lines and "format" in lines[0], lines


# --- the cache follows the data files a grader or a tool reads -----------------------------------


def test_a_cached_validity_is_proven_again_when_a_data_file_a_check_reads_changes(
    tmp_path: Path,
) -> None:
    root = _bank(tmp_path)
    (root / "expected.json").write_text('{"A": 70}')
    with (root / "checks.py").open("a") as handle:
        handle.write(
            "\n\ndef from_data(s0, sT):\n"
            "    import json, pathlib\n"
            "    want = json.loads((pathlib.Path(__file__).parent / 'expected.json').read_text())\n"
            "    [[a]] = sT.query(\"SELECT balance FROM accounts WHERE id = 'A'\")\n"
            "    return a == want['A']\n"
        )
    suite = _edit(
        tmp_path,
        lambda task: task["outcome_assertions"].append(
            {"id": "from-data", "check": "checks.py:from_data"}
        ),
    )
    with RunStore(tmp_path / "runs.db") as store:
        assert ensure_valid(suite, store)["transfer"].valid
        (root / "expected.json").write_text('{"A": 71}')  # the oracle now fails
        again = ensure_valid(load_suite(root), store)["transfer"]
    assert "from-data" in again.check("solvable").detail, again.to_dict()


def test_an_oracle_that_reaches_the_state_by_a_forbidden_read_is_not_solvable(
    tmp_path: Path,
) -> None:
    """The task's permissions deny the audit table: an oracle reading it gets there only by a
    path no agent may take."""
    root = _bank(tmp_path)
    oracle = root / "solutions" / "transfer" / "oracle.yaml"
    data = yaml.safe_load(oracle.read_text())
    data["steps"].insert(1, {"call": "read_audit", "args": {}})
    oracle.write_text(yaml.safe_dump(data))
    solvable = validate_task(load_suite(root), "transfer").check("solvable")
    assert not solvable.passed and "prohibited_action" in solvable.detail, solvable.detail
    assert "read_audit" in solvable.detail, solvable.detail


# --- a resumed batch is refused only for the tasks it runs -----------------------------------


def test_a_resume_validates_the_tasks_of_its_batch_not_the_whole_suite(tmp_path: Path) -> None:
    """A batch run with --task, interrupted, is resumed by the command it printed (no --task):
    an invalid task the batch left out must not refuse it, one of its own tasks still must."""
    root = _bank(tmp_path)
    task = yaml.safe_load((root / "tasks" / "transfer.yaml").read_text())
    _only(VACUOUS["fixture-count"], constraint=False)(task)
    task["task_id"] = "vacuous"
    (root / "tasks" / "vacuous.yaml").write_text(yaml.safe_dump(task))
    shutil.copytree(root / "solutions" / "transfer", root / "solutions" / "vacuous")
    store = str(tmp_path / "runs.db")
    base = ["run", str(root), "--system", str(SYSTEM), "--store", store]
    code, _, err = _invoke(*base)
    assert code == 2 and "vacuous: discriminating" in err, err
    code, out, err = _invoke(*base, "--task", "transfer", "--json")
    assert code == 0, err
    batch_id = json.loads(out)["batch_id"]
    assert _invoke(*base, "--resume", batch_id)[0] == 0
    _edit(tmp_path, _only(VACUOUS["always-true"], constraint=False))  # its own task, now invalid
    code, _, err = _invoke(*base, "--resume", batch_id)
    # editing its own task changes the suite the batch ran: refused as such, before validating
    assert code == 2 and "changed since the batch started" in err, err
