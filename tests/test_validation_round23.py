"""Twenty-third validation audit: verdicts a suite's validation gave that a batch would not.

- Under ``exercised_checks: required`` (``validate --strict``), a constraint of the suite's
  constraint sets that no replay of any task made fail was only listed: no task was invalid,
  so a batch (``require_valid``) ran them. Each task including it now fails ``exercised``,
  judged on every read from the cached per-task evidence (and with the other tasks that
  include it proven, when a batch runs only some).
- A route was proven by replays that all start from fresh tool modules at one moment: a tool
  keeping state between attempts (a cache of rows reset puts back) or drawing its outcome
  from chance or the wall clock passed validation and failed a batch's later attempts.
  ``grader_determinism`` now replays each route again after the others, with the tools'
  chance and wall clock at each end of their range.
"""

from __future__ import annotations

import random
import shutil
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner

from groundstate.bindings import HARNESS
from groundstate.cli import main
from groundstate.spec.suite import Suite, load_suite
from groundstate.store import RunStore
from groundstate.validation import InvalidTasks, require_valid, validate_suite
from groundstate.validation.checks import UNEXERCISED, validate_task
from groundstate.validation.replay import Proof, describe_run
from groundstate.validation.skew import fresh_checks, fresh_tools

from .conftest import BANK


def _copy(tmp_path: Path, config: dict[str, object] | None = None) -> Path:
    root = tmp_path / "bank"
    shutil.copytree(BANK, root, ignore=shutil.ignore_patterns("__pycache__"))
    task_file = root / "tasks" / "transfer.yaml"  # no replay stopped by a busy machine
    task_file.write_text(task_file.read_text().replace("time_limit: 5", "time_limit: 60"))
    if config:
        suite_file = root / "suite.yaml"
        suite_file.write_text(yaml.safe_dump({**yaml.safe_load(suite_file.read_text()), **config}))
    return root


# --- a set's constraint no task failed, under exercised_checks: required ---------------------


def _sets(tmp_path: Path, *, exercised_by_first: bool, mode: str = "required") -> Suite:
    """The bank with its PIN rule in a constraint set and a second task, ``transfer2``, a
    copy of ``transfer`` without the known-bad that breaks the rule; ``transfer`` keeps it
    when *exercised_by_first*. Mutation testing is off: its mutants break the rule too."""
    root = _copy(tmp_path, {"mutation_testing": "off", "exercised_checks": mode})
    task_file = root / "tasks" / "transfer.yaml"
    task = yaml.safe_load(task_file.read_text())
    pin_first = task.pop("hard_process_constraints")[0]
    task.pop("partial_credit_rubric")
    # without the mutants nothing fails the conservation check: only the set's rule is at issue
    task["outcome_assertions"] = [a for a in task["outcome_assertions"] if a["id"] != "conserved"]
    task["constraint_sets"] = ["banking"]
    task_file.write_text(yaml.safe_dump(task, sort_keys=False))
    (root / "tasks" / "transfer2.yaml").write_text(
        yaml.safe_dump({**task, "task_id": "transfer2"}, sort_keys=False)
    )
    solutions = root / "solutions"
    shutil.copytree(solutions / "transfer", solutions / "transfer2")
    (solutions / "transfer2" / "bad_no_pin.yaml").unlink()
    if not exercised_by_first:
        (solutions / "transfer" / "bad_no_pin.yaml").unlink()
    suite_file = root / "suite.yaml"
    config = yaml.safe_load(suite_file.read_text())
    suite_file.write_text(yaml.safe_dump({**config, "constraint_sets": {"banking": [pin_first]}}))
    return load_suite(root)


@pytest.fixture(scope="module")
def unexercised(tmp_path_factory: pytest.TempPathFactory) -> Suite:
    return _sets(tmp_path_factory.mktemp("unexercised"), exercised_by_first=False)


def test_required_fails_each_task_including_a_set_constraint_no_task_failed(
    unexercised: Suite,
) -> None:
    result = validate_suite(unexercised)
    assert result.unexercised_shared == ["constraint:pin-first"]
    for task in result.tasks:
        assert not task.valid and [c.name for c in task.failures] == ["exercised"]
        detail = task.check("exercised").detail
        assert "constraint:pin-first, of the suite's constraint sets, never failed" in detail
        assert "any of the 2 tasks including it (transfer, transfer2)" in detail
        assert UNEXERCISED in detail


def test_the_cached_verdicts_give_the_same_failure(unexercised: Suite, tmp_path: Path) -> None:
    """The per-task record is cached as proven; the suite's judgement is made on every read."""
    with RunStore(tmp_path / "runs.db") as store:
        first = validate_suite(unexercised, store=store)
        again = validate_suite(unexercised, store=store)
        assert again == first and not again.valid
        with pytest.raises(InvalidTasks, match="constraint:pin-first, of the suite's"):
            require_valid(unexercised, store, tasks=["transfer2"])
        assert require_valid(unexercised, store, allow_invalid=True) == ["transfer", "transfer2"]


def test_report_keeps_the_tasks_valid(tmp_path: Path) -> None:
    """Control: the default lists the constraint, and fails nothing."""
    result = validate_suite(_sets(tmp_path, exercised_by_first=False, mode="report"))
    assert result.valid and result.unexercised_shared == ["constraint:pin-first"]


def test_a_set_constraint_one_task_failed_is_exercised_for_a_batch_of_the_other(
    tmp_path: Path,
) -> None:
    """Control: ``transfer``'s known-bad breaks the rule, ``transfer2``'s replays do not. A
    batch of ``transfer2`` alone gets the verdict the whole suite's validation gives it: the
    other task including the rule is proven (and cached) to find that it fails."""
    suite = _sets(tmp_path, exercised_by_first=True)
    with RunStore(tmp_path / "runs.db") as store:
        alone = validate_suite(suite, store=store, tasks=["transfer2"])
        assert [t.task_id for t in alone.tasks] == ["transfer2"]
        assert alone.valid, [c.detail for c in alone.tasks[0].failures]
        assert validate_suite(suite, store=store).valid


def test_validate_strict_fails_each_task_and_names_the_constraint(tmp_path: Path) -> None:
    root = _sets(tmp_path, exercised_by_first=False, mode="report").root
    runner = CliRunner()
    out = runner.invoke(main, ["validate", str(root), "--no-cache", "--strict"]).stdout
    flat = " ".join(out.split())
    assert "0 of 2 tasks valid" in flat and "constraint:pin-first, of the suite's" in flat


# --- a route that passes only on a fresh module, or by luck ----------------------------------

CACHED_BALANCES = '''

_BALANCES: dict[str, int] = {}
"""Balances this module read or wrote, kept between attempts (reset does not clear it)."""


@tool
def transfer(ctx: ToolContext, source: str, target: str, amount: int) -> dict[str, Any]:
    """Move money between accounts (with a cache of balances that outlives reset)."""
    if amount <= 0:
        raise ToolError("amount must be positive")
    for account, delta in ((source, -amount), (target, amount)):
        if account not in _BALANCES:
            row = ctx.db.execute("SELECT balance FROM accounts WHERE id = ?", (account,))
            _BALANCES[account] = int(row.fetchone()[0])
        _BALANCES[account] += delta
        ctx.db.execute(
            "UPDATE accounts SET balance = ? WHERE id = ?", (_BALANCES[account], account)
        )
    cur = ctx.db.execute(
        "INSERT INTO transfers (source, target, amount, at) VALUES (?, ?, ?, ?)",
        (source, target, amount, ctx.now().isoformat()),
    )
    return {"transfer_id": cur.lastrowid}
'''

FLAKY = '''

import random


@tool
def transfer(ctx: ToolContext, source: str, target: str, amount: int) -> dict[str, Any]:
    """Move money between accounts; one call in a hundred meets a busy backend."""
    if random.random() < 0.01:
        raise ToolError("the backend is busy, try again later")
    ctx.db.execute("UPDATE accounts SET balance = balance - ? WHERE id = ?", (amount, source))
    ctx.db.execute("UPDATE accounts SET balance = balance + ? WHERE id = ?", (amount, target))
    cur = ctx.db.execute(
        "INSERT INTO transfers (source, target, amount, at) VALUES (?, ?, ?, ?)",
        (source, target, amount, ctx.now().isoformat()),
    )
    return {"transfer_id": cur.lastrowid}
'''

DATED = '''

from datetime import date


@tool
def transfer(ctx: ToolContext, source: str, target: str, amount: int) -> dict[str, Any]:
    """Move money between accounts; transfers close at the end of 2098 (the wall clock's)."""
    if date.today().year > 2098:
        raise ToolError("transfers are closed")
    ctx.db.execute("UPDATE accounts SET balance = balance - ? WHERE id = ?", (amount, source))
    ctx.db.execute("UPDATE accounts SET balance = balance + ? WHERE id = ?", (amount, target))
    cur = ctx.db.execute(
        "INSERT INTO transfers (source, target, amount, at) VALUES (?, ?, ?, ?)",
        (source, target, amount, ctx.now().isoformat()),
    )
    return {"transfer_id": cur.lastrowid}
'''


def _with_transfer(tmp_path: Path, code: str) -> Suite:
    """The bank with its ``transfer`` tool replaced by *code* (mutation testing off)."""
    root = _copy(tmp_path, {"mutation_testing": "off"})
    tools = root / "tools.py"
    source = tools.read_text()
    start = source.index("@tool\ndef transfer")
    end = source.index("@tool\ndef read_audit")
    tools.write_text(source[:start] + source[end:] + code)
    return load_suite(root)


@pytest.mark.parametrize(
    ("code", "setting"),
    [
        (CACHED_BALANCES, "lowest"),  # the first later attempt: the cache is warm
        (FLAKY, "lowest"),
        (DATED, "highest"),
    ],
    ids=["kept-between-attempts", "chance", "wall-clock"],
)
def test_a_route_passing_only_on_a_fresh_module_or_by_luck_fails(
    tmp_path: Path, code: str, setting: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # the unskewed draws are lucky every time (a draw of 0.5), so the test is not left to chance
    monkeypatch.setattr(random, "random", lambda: 0.5)
    validity = validate_task(_with_transfer(tmp_path, code), "transfer")
    check = validity.check("grader_determinism")
    assert validity.check("solvable").passed  # the first replay passes
    assert not check.passed, check.detail
    assert "a later attempt of oracle (replayed again in this process" in check.detail
    assert f"chance near its {setting} values" in check.detail
    assert "what the tools keep between attempts" in check.detail


def test_tools_that_keep_nothing_and_draw_nothing_still_pass(tmp_path: Path) -> None:
    """Control: the bank's own tools, in a copy whose checks and tools are unchanged."""
    validity = validate_task(load_suite(_copy(tmp_path, {"mutation_testing": "off"})), "transfer")
    assert validity.check("grader_determinism").passed, validity.check("grader_determinism")


# --- a table whose assertions say only what it must not hold ---------------------------------

ABSENCE_ONLY = [
    {"id": "a-debited", "sql": "SELECT id FROM accounts WHERE id = 'A' AND balance != 70"},
    {"id": "b-credited", "sql": "SELECT id FROM accounts WHERE id = 'B' AND balance != 80"},
]
"""Assertions that hold when no row of A or B is left wrong: on an empty table too."""


def _absence_only(tmp_path: Path) -> Suite:
    root = _copy(tmp_path, {"mutation_testing": "off"})
    task_file = root / "tasks" / "transfer.yaml"
    task = yaml.safe_load(task_file.read_text())
    transfer = {"id": "transfer-row", "sql": "SELECT source, target, amount FROM transfers"}
    task["outcome_assertions"] = [
        {**transfer, "expect_rows": [["A", "B", 30]]},
        *({**a, "expect_rows": []} for a in ABSENCE_ONLY),
    ]
    task.pop("partial_credit_rubric")
    task_file.write_text(yaml.safe_dump(task, sort_keys=False))
    return load_suite(root)


def test_a_table_passing_with_every_row_deleted_is_a_grader_gap(tmp_path: Path) -> None:
    validity = validate_task(_absence_only(tmp_path), "transfer")
    check = validity.check("grader_sensitivity")
    for proven in ("solvable", "discriminating"):
        assert validity.check(proven).passed, validity.check(proven).detail
    assert not check.passed, check.detail
    assert (
        "grader gap: oracle's final state passes with every row of accounts deleted" in check.detail
    )
    # the transfers table's assertion names the row it must hold: no gap there
    assert "every row of transfers deleted" not in check.detail


def test_a_table_whose_rows_are_named_passes_with_none_deleted(tmp_path: Path) -> None:
    """Control: the bank's own assertions name the rows each table must hold."""
    validity = validate_task(load_suite(_copy(tmp_path, {"mutation_testing": "off"})), "transfer")
    check = validity.check("grader_sensitivity")
    assert check.passed and "deleted" not in check.detail, check.detail


# --- a suite file imported anew for one check is no agent's tampering ------------------------


@pytest.mark.parametrize("anew", ["tools", "checks"])
def test_an_attempt_after_a_file_imported_anew_is_not_refused(tmp_path: Path, anew: str) -> None:
    """``grader_determinism`` imports the tools and check files anew and takes the modules
    out of ``sys.modules`` after; the harness's watch, which had taken them in, found them
    gone at the next attempt (the first mutant, or the later attempt's replay) and refused it
    as an agent's tampering (``prohibited_action``)."""
    suite = load_suite(_copy(tmp_path))
    proof = Proof(suite, suite.tasks["transfer"])
    fresh = fresh_tools(suite) if anew == "tools" else fresh_checks(suite.checks, suite.root)
    with fresh:
        HARNESS.refresh()  # as an attempt's start, or a suite file's import, does
    run = proof.run("oracle")
    assert run.success, describe_run(run)
