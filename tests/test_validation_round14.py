"""Fourteenth task validation and environments audit: the validation cache follows every input
a proof depends on, and environments keep what their state says."""

from __future__ import annotations

import json
import shutil
import subprocess
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest

from groundstate.environments.sqlite import SqliteEnvironment
from groundstate.environments.workspace import WorkspaceEnvironment
from groundstate.spec.suite import Suite, load_suite
from groundstate.validation import (
    check_lock,
    lock_suite,
    packages,
    regress,
    validate_task,
    validation_key,
)
from groundstate.validation.lock import lock_data

from .conftest import EditTask
from .test_envs_round12 import _matches_direct_read
from .test_validation import _stored_run, add_checks, bank_copy, verified_transfer_to_c

TESTS = Path(__file__).parent
WORKSPACE_MINI = TESTS / "suites" / "workspace_mini"
CLOCK = datetime(2026, 1, 15, 9, 30)


# --- the cache key of a folder fixture --------------------------------------------------------


def _workspace_suite(tmp_path: Path) -> Path:
    root = tmp_path / "suite"
    shutil.copytree(WORKSPACE_MINI, root)
    return root


def _key(root: Path) -> str:
    suite = load_suite(root)
    return validation_key(suite, suite.tasks["fix-add"])


def _initial_hash(suite: Suite) -> str:
    task = suite.tasks["fix-add"]
    with WorkspaceEnvironment(
        suite.fixture_path(task), clock=CLOCK, options={"sandbox": "none"}
    ) as env:
        return env.reset()


def test_a_fixture_file_made_executable_proves_the_task_again(tmp_path: Path) -> None:
    """The workspace's state holds each file's mode; the key held its bytes only, so a
    validity proven for the old initial state was read back for the new one."""
    root = _workspace_suite(tmp_path)
    before, state = _key(root), _initial_hash(load_suite(root))
    (root / "repo" / "tests" / "check_calc.py").chmod(0o755)
    assert _initial_hash(load_suite(root)) != state
    assert _key(root) != before


def test_a_fixture_link_led_elsewhere_proves_the_task_again(tmp_path: Path) -> None:
    """A link is state by its target's name; the key read what it leads to (the same bytes
    for two files alike) and left out a link that leads nowhere."""
    root = _workspace_suite(tmp_path)
    src = root / "repo" / "src"
    (src / "copy.py").write_bytes((src / "calc.py").read_bytes())
    (src / "link.py").symlink_to("calc.py")
    before = _key(root)
    (src / "link.py").unlink()
    (src / "link.py").symlink_to("copy.py")
    assert _key(root) != before
    again = _key(root)
    (src / "dangling.py").symlink_to("nowhere.py")
    assert _key(root) != again
    again = _key(root)
    (src / "dangling.py").unlink()
    (src / "dangling.py").symlink_to("elsewhere.py")
    assert _key(root) != again


def test_a_fixture_repository_committed_anew_proves_the_task_again(tmp_path: Path) -> None:
    """A fixture with its own .git is taken at its HEAD commit; the key read its work tree.
    Committing an edit the work tree held already moved the state, not the key."""
    root = _workspace_suite(tmp_path)
    repo = root / "repo"
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@t", "-C", str(repo)]
    subprocess.run([*git, "init", "-q"], check=True)
    subprocess.run([*git, "add", "-A"], check=True)
    subprocess.run([*git, "commit", "-qm", "base"], check=True)
    (repo / "src" / "calc.py").write_text("def add(a, b):\n    return a + b\n")
    before, state = _key(root), _initial_hash(load_suite(root))
    subprocess.run([*git, "commit", "-qam", "fixed"], check=True)
    assert _initial_hash(load_suite(root)) != state
    assert _key(root) != before


# --- the cache key of code the suite imports from outside it ---------------------------------


def _bank_importing(tmp_path: Path, name: str) -> Path:
    root = bank_copy(tmp_path)
    with (root / "tools.py").open("a") as handle:
        handle.write(f"\n\ndef _limit() -> int:\n    import {name}\n\n    return 1\n")
    return root


def _bank_key(root: Path) -> str:
    suite = load_suite(root)
    return validation_key(suite, suite.tasks["transfer"])


def test_application_code_the_tools_import_proves_the_tasks_again_when_edited(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A module on sys.path that no distribution provides (the application a suite's tools
    wrap) was keyed as ``None``: editing its refund logic kept the proof of the old one."""
    app = tmp_path / "app"
    (app / "gsround14app").mkdir(parents=True)
    logic = app / "gsround14app" / "refunds.py"
    (app / "gsround14app" / "__init__.py").write_text("")
    logic.write_text("def refund(amount):\n    return amount\n")
    monkeypatch.syspath_prepend(str(app))
    root = _bank_importing(tmp_path, "gsround14app")
    before = _bank_key(root)
    assert _bank_key(root) == before
    logic.write_text("def refund(amount):\n    return amount * 2\n")
    assert _bank_key(root) != before
    assert packages.distribution_versions([root / "tools.py"])["module:gsround14app"]


def test_an_editable_distribution_the_tools_import_is_keyed_by_its_code(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An editable install keeps one version while its working copy changes."""
    site, work = tmp_path / "site", tmp_path / "work"
    (work / "gsround14edit").mkdir(parents=True)
    code = work / "gsround14edit" / "__init__.py"
    code.write_text("RATE = 1\n")
    info = site / "gsround14edit-1.0.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: gsround14edit\nVersion: 1.0\n")
    url = {"url": work.as_uri(), "dir_info": {"editable": True}}
    (info / "direct_url.json").write_text(json.dumps(url))
    monkeypatch.syspath_prepend(str(site))
    monkeypatch.syspath_prepend(str(work))
    root = _bank_importing(tmp_path, "gsround14edit")
    before = _bank_key(root)
    code.write_text("RATE = 2\n")
    assert _bank_key(root) != before
    assert packages.distribution_versions([root / "tools.py"])["gsround14edit"] == "1.0"


# --- the lock of a folder fixture -------------------------------------------------------------


def test_a_locked_workspace_fixture_edited_where_the_file_table_cannot_see_is_refused(
    tmp_path: Path,
) -> None:
    """A folder fixture's lock entry was ``sha256: null`` (no suite file has the folder's
    name), and the suite's file table leaves out hidden files, modes and links: a
    ``.gitignore`` edited (which decides which new files are state) or a script made
    executable ran ``--locked`` as the suite that was proven."""
    root = _workspace_suite(tmp_path)
    (root / "repo" / ".gitignore").write_text("build/\n")
    lock_suite(load_suite(root))
    assert check_lock(load_suite(root)) == []
    (root / "repo" / ".gitignore").write_text("build/\n*.txt\n")
    assert check_lock(load_suite(root)) == ["task fix-add: fixture repo changed"]
    (root / "repo" / ".gitignore").write_text("build/\n")
    (root / "repo" / "tests" / "check_calc.py").chmod(0o755)
    assert check_lock(load_suite(root)) == ["task fix-add: fixture repo changed"]


def test_a_locked_sqlite_fixture_keeps_its_entry(tmp_path: Path) -> None:
    """A file fixture's entry is its sha256, as the suite's file table has it: locks written
    before stay valid."""
    suite = load_suite(bank_copy(tmp_path))
    entry = lock_data(suite)["tasks"]["transfer"]["fixture"]
    assert entry["sha256"] == suite.files[entry["path"]]


# --- regression cases ------------------------------------------------------------------------


def test_a_regression_case_takes_the_modules_its_tools_and_checks_import(
    tmp_path: Path,
) -> None:
    """Regressed into another suite, a task whose tools and checks import helper modules of
    their own got the files named in suite.yaml and the task only: the new suite did not load
    ("No module named 'fees'"), and the run could not become a case."""
    root = bank_copy(tmp_path)
    (root / "limits").mkdir()
    (root / "limits" / "__init__.py").write_text("from limits.values import MAX\n")
    (root / "limits" / "values.py").write_text("MAX = 1000\n")
    (root / "fees.py").write_text("FEE = 0\n")
    add_checks(root, "from limits import MAX\n")
    with (root / "tools.py").open("a") as handle:
        handle.write("\nfrom fees import FEE\n")
    suite = load_suite(root)
    run = _stored_run(tmp_path, suite, verified_transfer_to_c)
    target = tmp_path / "regressions"
    case = regress(run, suite, into=target)
    for name in ("fees.py", "limits/__init__.py", "limits/values.py"):
        assert (target / name).read_bytes() == (root / name).read_bytes(), name
    assert validate_task(load_suite(target), case.stem).valid


# --- a table the oracle changes that no assertion reads ---------------------------------------


def _only_balances(task: dict[str, Any]) -> None:
    task["outcome_assertions"] = [
        a for a in task["outcome_assertions"] if a["id"] != ("exactly-one-transfer")
    ]


def test_a_table_the_oracle_changes_and_no_assertion_reads_is_a_grader_gap(
    edited_bank: EditTask,
) -> None:
    """One transfer call changes accounts and adds a transfers row. With only the balances
    checked, leaving the call out fails the task, so every step mattered; yet an agent that
    moved the balances by another route, recording no transfer, passed. The oracle's final
    state with transfers put back as it was now passes: a gap, named by its table."""
    suite = edited_bank(_only_balances)
    sensitivity = validate_task(suite, "transfer").check("grader_sensitivity")
    assert not sensitivity.passed
    assert "grader gap: oracle changes transfers, yet its final state passes with transfers" in (
        sensitivity.detail
    )
    assert "changes accounts" not in sensitivity.detail  # the balances read that one


def test_a_task_checking_every_table_it_changes_says_so(edited_bank: EditTask) -> None:
    sensitivity = validate_task(edited_bank(lambda task: None), "transfer").check(
        "grader_sensitivity"
    )
    assert sensitivity.passed, sensitivity.detail
    assert "with transfers as it was: exactly-one-transfer fail" in sensitivity.detail


def test_restoring_one_table_leaves_the_others_and_the_hash_reads_the_file(
    tmp_path: Path,
) -> None:
    fixture = tmp_path / "f.sql"
    fixture.write_text(
        "CREATE TABLE a (id INTEGER PRIMARY KEY, v, twice AS (v * 2));\n"
        "CREATE TABLE b (x);\n"
        "INSERT INTO a (id, v) VALUES (1, 10), (2, 20);\n"
        "INSERT INTO b VALUES ('kept');\n"
    )
    with SqliteEnvironment(fixture, clock=CLOCK) as env:
        initial = env.reset()
        with env.tool_transaction():
            env.agent_db.execute("UPDATE a SET v = 11 WHERE id = 1")
            env.agent_db.execute("DELETE FROM a WHERE id = 2")
            env.agent_db.execute("INSERT INTO a (id, v) VALUES (3, 30)")
            env.agent_db.execute("UPDATE b SET x = 'changed'")
        env.restore_collection("a")
        assert set(env.diff_from_initial().tables) == {"b"}
        _matches_direct_read(env)
        env.restore_collection("b")
        assert env.state_hash() == initial
        assert env.reset() == initial
