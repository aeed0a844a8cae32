"""Final states one step from the expected one, seventh audit of outcome assertions.

Two families: what the agent left behind (a BLOB where text was expected, the right change
plus one more, a row deleted and inserted again under a new id, duplicates, NULL against
``""``), which must be judged as the agent's doing and recorded whatever bytes it wrote; and
what the task's author got wrong (a table or column the fixture lacks, rows of two widths, a
row removed and changed at once, a check returning the wrong shape), which must be the
grader's fault (``grader_failure`` or a load error naming file, field and reason), never the
agent's."""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest
import yaml

from groundstate.agents.base import Session
from groundstate.environments.base import RowWrite, StateDiff, TableDiff
from groundstate.environments.sqlite import SqliteEnvironment
from groundstate.errors import SpecError
from groundstate.grading.outcome import States, evaluate_assertions
from groundstate.grading.terminal import classify
from groundstate.records import AgentRun, CheckResult
from groundstate.spec.suite import Suite, load_suite
from groundstate.spec.task import (
    ChangedPathsAssertion,
    DiffAssertion,
    PythonAssertion,
    SqlAssertion,
)
from groundstate.store import RunStore
from groundstate.testing import FunctionAgent, attempt
from groundstate.validation.static import NOT_A_READ, ORDER_LEFT_TO_STORAGE, check_suite

from .conftest import BANK
from .test_judges import JUDGES, LABELLED, _lines

FIXTURE = """
CREATE TABLE acc (id TEXT PRIMARY KEY, bal REAL, note);
CREATE TABLE tr (id INTEGER PRIMARY KEY AUTOINCREMENT, src TEXT, amount REAL, memo TEXT);
CREATE TABLE ci (a TEXT, b INTEGER, v TEXT, PRIMARY KEY (b, a));
INSERT INTO acc VALUES ('A', 10, 'a'), ('B', 2, 'x');
INSERT INTO tr (src, amount, memo) VALUES ('A', 5, 'first');
INSERT INTO ci VALUES ('x', 1, 'one'), ('y', 2, 'two');
CREATE TABLE log (line TEXT, amount);
INSERT INTO log VALUES ('first', 1), ('second', 2), ('first', 1);
"""

CHECKS = """
def reason(s0, sT):
    return True, "looks fine"

def triple(s0, sT):
    return True, {}, 1

def rows(s0, sT):
    return False, {"notes": sT.query("SELECT id, note FROM acc ORDER BY id")}
"""


@pytest.fixture
def env(tmp_path: Path) -> Iterator[SqliteEnvironment]:
    (tmp_path / "f.sql").write_text(FIXTURE, encoding="utf-8")
    (tmp_path / "checks.py").write_text(CHECKS, encoding="utf-8")
    with SqliteEnvironment(tmp_path / "f.sql", clock=datetime(2024, 1, 1)) as environment:
        environment.reset()
        yield environment


def _graded(
    env: SqliteEnvironment, writes: list[str], *assertions: Any, root: Path = Path(".")
) -> list[CheckResult]:
    for sql in writes:
        with env.tool_transaction():
            env.agent_db.execute(sql)
    s0 = env.initial_view().snapshot()
    states = States(env.initial_view(), env.evaluator_view(), s0, env.diff_from_initial(), root)
    results = evaluate_assertions(list(assertions), states)
    for result in results:  # whatever the state holds, the result is a storable record
        json.loads(result.model_dump_json())
    return results


def _diff(state_diff: dict[str, Any], nothing_else_changed: bool = True) -> DiffAssertion:
    return DiffAssertion.model_validate(
        {"id": "d", "state_diff": state_diff, "nothing_else_changed": nothing_else_changed}
    )


def _sql(sql: str, rows: list[list[Any]], ordered: bool = False) -> SqlAssertion:
    return SqlAssertion(id="s", sql=sql, expect_rows=rows, ordered=ordered)


def _reason(results: list[CheckResult]) -> str:
    return classify(None, results, [])


# --- a BLOB the agent wrote is state like any other, and evidence like any other ---------------

BLOB_NOTE = "UPDATE acc SET note = x'ff00' WHERE id = 'A'"


@pytest.mark.parametrize(
    "assertion",
    [
        _sql("SELECT id, note FROM acc", [["A", "a"], ["B", "x"]]),
        _sql("SELECT id, note FROM acc ORDER BY id", [["A", "a"], ["B", "x"]], ordered=True),
        _diff({"acc": {"changed": [{"key": "A", "set": {"note": "b"}}]}}),
        _diff({}),
    ],
    ids=["sql", "sql-ordered", "state_diff", "no-change"],
)
def test_a_blob_that_is_not_utf8_fails_the_assertion_not_the_grader(
    env: SqliteEnvironment, assertion: Any
) -> None:
    """An agent that wrote bytes no UTF-8 reader accepts made every state_diff assertion a
    grader failure (an invalid attempt, rerun at the agent's choosing) and a failing sql
    assertion's record impossible to store."""
    [result] = _graded(env, [BLOB_NOTE], assertion)
    assert (result.passed, result.error) == (False, None)
    assert _reason([result]) == "agent_failure/incorrect_state"
    assert '{"blob":"ff00"}' in result.model_dump_json()


def test_a_blob_is_not_the_text_it_spells(env: SqliteEnvironment) -> None:
    """A BLOB of UTF-8 bytes was shown as that text in evidence; it is state of its own."""
    [result] = _graded(
        env,
        ["UPDATE acc SET note = CAST('b' AS BLOB) WHERE id = 'A'"],
        _sql("SELECT note FROM acc WHERE id = 'A'", [["b"]]),
    )
    assert not result.passed
    assert result.evidence["rows"] == [[{"blob": "62"}]]


def test_a_python_checks_evidence_may_hold_what_the_agent_wrote(
    env: SqliteEnvironment, tmp_path: Path
) -> None:
    check = PythonAssertion(id="p", check="checks.py:rows")
    [result] = _graded(env, [BLOB_NOTE], check, root=tmp_path)
    assert (result.passed, result.error) == (False, None)
    assert result.evidence["notes"] == [["A", {"blob": "ff00"}], ["B", "x"]]


def test_diffs_and_writes_serialise_blobs_and_keep_plain_rows_as_they_are() -> None:
    diff = StateDiff(tables={"t": TableDiff(added=[{"k": b"\x01", "v": b"\xff"}, {"v": "x"}])})
    assert json.loads(diff.model_dump_json())["tables"]["t"]["added"] == [
        {"k": {"blob": "01"}, "v": {"blob": "ff"}},
        {"v": "x"},
    ]
    write = RowWrite(table="t", key=[1, b"\x02"], before=None, after={"v": b"\x00"})
    assert json.loads(write.model_dump_json())["key"] == [1, {"blob": "02"}]
    assert diff.model_dump()["tables"]["t"]["added"][0]["v"] == b"\xff"  # python mode: bytes


@pytest.fixture
def blob_bank(tmp_path: Path) -> Suite:
    """The bank with a tool that stores the agent's bytes (an attachment, say)."""
    root = tmp_path / "bank"
    shutil.copytree(BANK, root)
    with (root / "tools.py").open("a", encoding="utf-8") as tools:
        tools.write(
            "\n\n@tool\ndef memo(ctx: ToolContext, hex_bytes: str) -> None:\n"
            '    """Attach bytes to the last transfer."""\n'
            '    ctx.db.execute("UPDATE transfers SET at = ? WHERE id = '
            '(SELECT MAX(id) FROM transfers)", (bytes.fromhex(hex_bytes),))\n'
        )
    # ``at`` untyped: a TEXT column holding only text refuses bytes since the twentieth
    # round (as PostgreSQL's would); this test is about a blob the diff must carry
    fixture = root / "fixtures" / "bank.sql"
    sql = fixture.read_text(encoding="utf-8")
    fixture.write_text(sql.replace("amount INTEGER, at TEXT)", "amount INTEGER, at)"), "utf-8")
    task_file = root / "tasks" / "transfer.yaml"
    task = yaml.safe_load(task_file.read_text(encoding="utf-8"))
    task["available_tools"].append("memo")
    task["outcome_assertions"].append(
        {"id": "stamped", "sql": "SELECT at FROM transfers", "expect_rows": [["2026"]]}
    )
    task_file.write_text(yaml.safe_dump(task), encoding="utf-8")
    return load_suite(root)


async def _transfer_with_memo(session: Session) -> str:
    await session.call("check_pin", {"account": "A", "pin": "1234"})
    await session.call("transfer", {"source": "A", "target": "B", "amount": 30})
    await session.call("memo", {"hex_bytes": "ff"})
    return "Moved 30."


def test_an_attempt_that_wrote_a_blob_is_graded_and_stored(
    blob_bank: Suite, tmp_path: Path
) -> None:
    """Before, building the attempt's record raised (the diff artifact would not serialise):
    the agent's bytes stopped its attempt, and with it the batch."""
    output = attempt(blob_bank, "transfer", FunctionAgent(_transfer_with_memo))
    run = output.run
    assert run.terminal_reason == "agent_failure/incorrect_state"
    results = {r.id: (r.passed, r.error) for r in run.outcome_assertion_results}
    assert results["exactly-one-transfer"] == (True, None)  # the diff assertion still judges
    assert results["stamped"] == (False, None)
    diff = json.loads(output.artifacts["state_diff.json"])
    assert diff["tables"]["transfers"]["added"][0]["at"] == {"blob": "ff"}
    with RunStore(tmp_path / "runs.db") as store:
        stored = store.add_run(run, output.artifacts)
        assert AgentRun.model_validate_json(store.run(stored.run_id).model_dump_json())


# --- near misses of the agent's: judged as the agent's ------------------------------------------


@pytest.mark.parametrize(
    ("writes", "passes"),
    [
        (["UPDATE acc SET bal = 7 WHERE id = 'A'"], True),
        (["UPDATE acc SET bal = 7, note = 'b' WHERE id = 'A'"], False),  # one more column
        (
            ["UPDATE acc SET bal = 7 WHERE id = 'A'", "UPDATE acc SET note = 'y' WHERE id = 'B'"],
            False,
        ),
        (["UPDATE acc SET bal = 7 WHERE id = 'B'"], False),  # the right change, wrong row
        (["UPDATE acc SET bal = 7.0000001 WHERE id = 'A'"], False),
        (["UPDATE acc SET bal = '7' WHERE id = 'A'"], True),  # REAL affinity stores 7.0
        (["DELETE FROM acc WHERE id = 'A'", "INSERT INTO acc VALUES ('A', 7, 'a')"], True),
    ],
)
def test_the_right_change_and_nothing_else(
    env: SqliteEnvironment, writes: list[str], passes: bool
) -> None:
    [result] = _graded(env, writes, _diff({"acc": {"changed": [{"key": "A", "set": {"bal": 7}}]}}))
    assert result.passed is passes and result.error is None


def test_an_extra_write_passes_only_where_the_author_allowed_it(env: SqliteEnvironment) -> None:
    writes = ["UPDATE acc SET bal = 7, note = 'b' WHERE id = 'A'", "DELETE FROM ci WHERE a = 'y'"]
    expected = {"acc": {"changed": [{"key": "A", "set": {"bal": 7}}]}}
    strict, loose = _graded(env, writes, _diff(expected), _diff(expected, False))
    assert strict.evidence["problems"] == [
        "acc: row A unexpectedly changed ['note']",
        "ci: unexpected change",
    ]
    assert loose.passed


def test_a_row_inserted_again_under_a_new_id_is_not_the_row_changed(
    env: SqliteEnvironment,
) -> None:
    """``tr.id`` is the rowid: deleting transfer 1 and inserting its corrected copy makes
    transfer 2, which is what the diff says (and a task expecting that form passes)."""
    writes = [
        "DELETE FROM tr WHERE id = 1",
        "INSERT INTO tr (src, amount, memo) VALUES ('A', 6, 'first')",
    ]
    changed = _diff({"tr": {"changed": [{"key": 1, "set": {"amount": 6}}]}})
    replaced = _diff({"tr": {"removed": [1], "added": [{"id": 2, "amount": 6}]}})
    as_changed, as_replaced = _graded(env, writes, changed, replaced)
    assert not as_changed.passed and as_replaced.passed


@pytest.mark.parametrize(
    ("memo", "expected", "passes"),
    [
        ("NULL", None, True),
        ("''", None, False),
        ("NULL", "", False),
        ("'x '", "x", False),
        ("'X'", "x", False),
        ("'1'", 1, False),
        ("1", "1", False),
        ("1", True, True),  # SQLite has no boolean: documented
        ("1", 1.0, True),
    ],
)
def test_an_added_rows_value_by_type_and_spelling(
    env: SqliteEnvironment, memo: str, expected: Any, passes: bool
) -> None:
    """``memo`` is TEXT: an integer written to it is stored as the text ``'1'``."""
    insert = f"INSERT INTO tr (src, memo) VALUES ('B', {memo})"
    if memo == "1":
        insert = "INSERT INTO tr (src, amount) VALUES ('B', 1)"
        [result] = _graded(
            env, [insert], _diff({"tr": {"added": [{"src": "B", "amount": expected}]}})
        )
    else:
        [result] = _graded(
            env, [insert], _diff({"tr": {"added": [{"src": "B", "memo": expected}]}})
        )
    assert result.passed is passes and result.error is None


@pytest.mark.parametrize(
    ("writes", "passes"),
    [
        (["INSERT INTO tr (src) VALUES ('B')"], True),
        (["INSERT INTO tr (src) VALUES ('B')", "INSERT INTO tr (src) VALUES ('B')"], False),
        ([], False),
    ],
)
def test_one_expected_row_is_one_row(
    env: SqliteEnvironment, writes: list[str], passes: bool
) -> None:
    rows = _sql("SELECT src FROM tr WHERE src = 'B'", [["B"]])
    diff = _diff({"tr": {"added": [{"src": "B"}]}})
    assert [r.passed for r in _graded(env, writes, rows, diff)] == [passes, passes]


def test_rows_in_another_order_fail_only_an_ordered_query(env: SqliteEnvironment) -> None:
    query = "SELECT id FROM acc ORDER BY id DESC"
    ordered, unordered = _graded(
        env, [], _sql(query, [["A"], ["B"]], ordered=True), _sql(query, [["A"], ["B"]])
    )
    assert (ordered.passed, unordered.passed) == (False, True)


def test_a_composite_key_is_named_in_the_keys_column_order(env: SqliteEnvironment) -> None:
    """``ci``'s key is ``(b, a)``: ``[1, x]`` names the row, ``[x, 1]`` names none (check says
    so before a run)."""
    writes = ["UPDATE ci SET v = 'z' WHERE a = 'x'"]
    right = _diff({"ci": {"changed": [{"key": [1, "x"], "set": {"v": "z"}}]}})
    swapped = _diff({"ci": {"changed": [{"key": ["x", 1], "set": {"v": "z"}}]}})
    assert [r.passed for r in _graded(env, writes, right, swapped)] == [True, False]


# --- rows without a key: identical rows are one state ------------------------------------------


@pytest.mark.parametrize(
    ("writes", "passes"),
    [
        (["DELETE FROM log WHERE rowid = 3"], True),
        (["DELETE FROM log WHERE rowid = 1"], True),  # the same final state, hash and all
        (["DELETE FROM log WHERE rowid = 2"], False),
        (["DELETE FROM log WHERE rowid IN (1, 3)"], False),  # one more than asked
    ],
)
def test_removing_either_of_two_identical_rows_is_the_same_removal(
    env: SqliteEnvironment, writes: list[str], passes: bool
) -> None:
    """``removed: [3]`` held for the agent that deleted row 3 and failed the one that deleted
    row 1, whose final state has the same hash."""
    [result] = _graded(env, writes, _diff({"log": {"removed": [3]}}))
    assert result.passed is passes and result.error is None


@pytest.mark.parametrize(
    ("writes", "passes"),
    [
        (["UPDATE log SET amount = 5 WHERE rowid = 3"], True),
        (["UPDATE log SET amount = 5 WHERE rowid = 1"], True),
        (["UPDATE log SET amount = 5 WHERE rowid = 2"], False),
        (["UPDATE log SET amount = 6 WHERE rowid = 1"], False),
        # both copies changed: one of them holds 5, whichever rowid it has
        (
            [
                "UPDATE log SET amount = 6 WHERE rowid = 3",
                "UPDATE log SET amount = 5 WHERE rowid = 1",
            ],
            True,
        ),
    ],
)
def test_changing_either_of_two_identical_rows_is_the_same_change(
    env: SqliteEnvironment, writes: list[str], passes: bool
) -> None:
    expected = {"log": {"changed": [{"key": 3, "set": {"amount": 5}}]}}
    strict, loose = _graded(env, writes, _diff(expected), _diff(expected, False))
    assert loose.passed is passes and loose.error is None
    assert strict.passed is (passes and len(writes) == 1)


def test_the_same_final_state_gets_the_same_diff_verdict(tmp_path: Path) -> None:
    """Graded twice, by the hash's identity: whichever twin an agent touched."""
    verdicts: dict[str, set[bool]] = {}
    assertions = [
        _diff({"log": {"removed": [1]}}),
        _diff({"log": {"removed": [3], "changed": [{"key": 1, "set": {"line": "x"}}]}}),
        _diff({"log": {"changed": [{"key": 1, "set": {"amount": 2}}]}}, False),
    ]
    (tmp_path / "f.sql").write_text(FIXTURE, encoding="utf-8")
    for writes in [
        ["DELETE FROM log WHERE rowid = 1"],
        ["DELETE FROM log WHERE rowid = 3"],
        ["UPDATE log SET amount = 2 WHERE rowid = 1"],
        ["UPDATE log SET amount = 2 WHERE rowid = 3"],
        ["DELETE FROM log WHERE rowid = 1", "UPDATE log SET line = 'x' WHERE rowid = 3"],
        ["DELETE FROM log WHERE rowid = 3", "UPDATE log SET line = 'x' WHERE rowid = 1"],
    ]:
        with SqliteEnvironment(tmp_path / "f.sql", clock=datetime(2024, 1, 1)) as fresh:
            fresh.reset()
            results = _graded(fresh, writes, *assertions)
            key = fresh.state_hash()
        verdicts.setdefault(key, set()).add(tuple(r.passed for r in results))  # type: ignore[arg-type]
    assert len(verdicts) == 3 and all(len(v) == 1 for v in verdicts.values()), verdicts


# --- the author's mistakes: the grader's fault ---------------------------------------------------


@pytest.mark.parametrize(
    ("state_diff", "nothing_else_changed", "says"),
    [
        ({"accounts": {"added": [{"id": "C"}]}}, True, "accounts: the initial state has no such"),
        (
            {"accounts": {"added": [{"id": "C"}]}},
            False,
            "accounts: the initial state has no such table (it has: acc,",
        ),
        ({"tr": {"added": [{"source": "A"}]}}, True, "tr: no column 'source' to match"),
        ({"acc": {"changed": [{"key": "A", "set": {"Bal": 7}}]}}, False, "no column 'Bal'"),
        ({"acc": {"changed": [{"key": "a", "set": {"bal": 7}}]}}, False, 'has key "a"'),
        ({"tr": {"removed": [True]}}, True, "has key true"),  # not the key 1
        ({"tr": {"removed": [1.0]}}, True, "no row of the initial state has key 1.0"),
        ({"ci": {"removed": [1]}}, False, "no row of the initial state has key 1"),
    ],
)
def test_a_table_or_column_the_fixture_lacks_is_the_graders_fault(
    env: SqliteEnvironment, state_diff: dict[str, Any], nothing_else_changed: bool, says: str
) -> None:
    """It held vacuously (``nothing_else_changed: false``) or failed every attempt as
    ``incorrect_state``; ``check`` refuses it, but the Python API runs without ``check``."""
    writes = ["UPDATE acc SET bal = 7 WHERE id = 'A'", "INSERT INTO tr (src) VALUES ('A')"]
    [result] = _graded(env, writes, _diff(state_diff, nothing_else_changed))
    assert result.error is not None and says in result.error
    assert _reason([result]) == "grader_failure"


def test_a_query_of_another_width_than_its_rows_is_the_graders_fault(
    env: SqliteEnvironment,
) -> None:
    [result] = _graded(env, [], _sql("SELECT id, bal FROM acc", [["A", 10, "a"], ["B", 2, "x"]]))
    assert result.error == (
        "GraderError: the query selects 2 columns, expect_rows has 3 values a row: "
        "no final state can match"
    )
    [empty] = _graded(env, [], _sql("SELECT id, bal FROM acc WHERE 0", [["A", 10, "a"]]))
    assert (empty.passed, empty.error) == (False, None)  # no row shows the query's width


@pytest.mark.parametrize(
    ("check", "says"),
    [
        ("checks.py:reason", "checks.py:reason returned str evidence, expected bool or"),
        ("checks.py:triple", "checks.py:triple returned a tuple of 3, expected bool or"),
        ("checks.py:nothing", "GraderError: checks.py has no function 'nothing'"),
    ],
)
def test_a_check_of_the_wrong_shape_says_which_and_how(
    env: SqliteEnvironment, tmp_path: Path, check: str, says: str
) -> None:
    [result] = _graded(env, [], PythonAssertion(id="p", check=check), root=tmp_path)
    assert result.error is not None and says in result.error
    assert _reason([result]) == "grader_failure"


def _task_with(tmp_path: Path, assertion: dict[str, Any], alone: bool = False) -> Path:
    """The bank, its transfer task with one more assertion (*alone*: with only that one)."""
    root = tmp_path / "bank"
    shutil.copytree(BANK, root)
    task_file = root / "tasks" / "transfer.yaml"
    task = yaml.safe_load(task_file.read_text(encoding="utf-8"))
    task["outcome_assertions"] = [*([] if alone else task["outcome_assertions"]), assertion]
    task["partial_credit_rubric"] = [] if alone else task["partial_credit_rubric"]
    task_file.write_text(yaml.safe_dump(task, sort_keys=False), encoding="utf-8")
    return root


@pytest.mark.parametrize(
    ("assertion", "field", "says"),
    [
        (
            {
                "id": "x",
                "state_diff": {
                    "accounts": {"removed": ["C"], "changed": [{"key": "C", "set": {"balance": 5}}]}
                },
            },
            "outcome_assertions[3].state_diff.accounts",
            'row "C" is listed in removed and again in changed',
        ),
        (
            {
                "id": "x",
                "state_diff": {
                    "accounts": {
                        "changed": [
                            {"key": "A", "set": {"balance": 70}},
                            {"key": "A", "set": {"balance": 71}},
                        ]
                    }
                },
            },
            "outcome_assertions[3].state_diff.accounts",
            'row "A" is listed in changed and again in changed',
        ),
        (
            {"id": "x", "sql": "SELECT id FROM accounts", "expect_rows": [["A"], ["B", 80]]},
            "outcome_assertions[3].expect_rows",
            "rows of 1 and 2 values",
        ),
    ],
)
def test_an_assertion_that_can_never_hold_is_refused_at_load(
    tmp_path: Path, assertion: dict[str, Any], field: str, says: str
) -> None:
    with pytest.raises(SpecError) as raised:
        load_suite(_task_with(tmp_path, assertion))
    message = str(raised.value)
    assert f"transfer.yaml: {field}: {says}" in message, message


# --- an order SQLite chose, not the query -------------------------------------------------------


def test_an_ordered_query_without_order_by_reads_storage_order(env: SqliteEnvironment) -> None:
    """Why ``check`` refuses it: the same state (same hash) gives another verdict once a row
    is deleted and inserted again as it was."""
    before = env.state_hash()
    query = _sql("SELECT id, bal FROM acc", [["A", 10], ["B", 2]], ordered=True)
    writes = ["DELETE FROM acc WHERE id = 'A'", "INSERT INTO acc VALUES ('A', 10, 'a')"]
    [result] = _graded(env, writes, query)
    assert env.state_hash() == before
    assert not result.passed  # read as [B, A]


@pytest.mark.parametrize(
    ("sql", "rows", "refused"),
    [
        ("SELECT id, balance FROM accounts", [["A", 70], ["B", 80]], True),
        ("SELECT id, balance FROM accounts\n order\n BY id", [["A", 70], ["B", 80]], False),
        ("SELECT SUM(balance) FROM accounts", [[150]], False),  # one row has one order
    ],
)
def test_check_refuses_an_order_left_to_storage(
    tmp_path: Path, sql: str, rows: list[list[Any]], refused: bool
) -> None:
    root = _task_with(tmp_path, {"id": "x", "sql": sql, "expect_rows": rows, "ordered": True})
    problems = [p for p in check_suite(root).errors if p.field == "outcome_assertions[3].ordered"]
    assert [p.reason for p in problems] == ([ORDER_LEFT_TO_STORAGE] if refused else [])


@pytest.mark.parametrize(
    ("pattern", "says"),
    [
        ("./src/**", "without '.', '..' or '//' parts"),
        ("/src/**", "a relative path"),
        ("src/", "(a folder and all in it: 'src/**')"),
        ("src\\**", "a relative path"),
        ("src//x.py", "'//'"),
        ("src/../tests/**", "'..'"),
        ("", "a relative path"),
    ],
)
def test_a_changed_paths_pattern_no_path_can_match_is_refused(pattern: str, says: str) -> None:
    """Changed paths are relative and plain (``src/calc.py``): such a pattern allowed
    nothing, so the change the task asks for failed as the agent's collateral damage."""
    with pytest.raises(ValueError, match="can match no changed path") as raised:
        ChangedPathsAssertion.model_validate({"id": "p", "changed_paths": {"allowed": [pattern]}})
    assert says in str(raised.value)


@pytest.mark.parametrize("pattern", ["src/**", "**/*.py", "CHANGELOG.md", "src/*.py", "**"])
def test_a_changed_paths_pattern_paths_can_match_loads(pattern: str) -> None:
    ChangedPathsAssertion.model_validate({"id": "p", "changed_paths": {"allowed": [pattern]}})


# --- an assertion's SQL reads ------------------------------------------------------------------


def test_a_statement_in_one_assertion_changes_what_the_next_reads(env: SqliteEnvironment) -> None:
    """Why ``check`` refuses SQL that is not a read: the evaluator connection takes a TEMP
    table (SQLite's temp schema is writable on a read-only file), which then shadows the
    fixture's table for every later check of the attempt."""
    shadow = _sql("CREATE TEMP TABLE acc AS SELECT 'Z' AS id", [])
    results = _graded(env, [], shadow, _sql("SELECT id FROM acc", [["Z"]]))
    assert [r.passed for r in results] == [True, True]


@pytest.mark.parametrize(
    ("sql", "refused"),
    [
        ("DELETE FROM accounts", True),  # a grader failure on every attempt
        ("UPDATE accounts SET balance = 0 RETURNING id", True),
        ("CREATE TEMP TABLE accounts AS SELECT 1 AS id", True),
        ("ATTACH ':memory:' AS other", True),
        ("BEGIN", True),
        ("PRAGMA reverse_unordered_selects = 1", True),
        ("SELECT id FROM accounts", False),
        (
            "WITH r(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM r WHERE n < 3) SELECT n FROM r",
            False,
        ),
        ("PRAGMA table_info(accounts)", False),
        ("SELECT count(*) FROM accounts WHERE id IN (SELECT source FROM transfers)", False),
    ],
)
def test_check_refuses_sql_that_is_not_a_read(tmp_path: Path, sql: str, refused: bool) -> None:
    root = _task_with(tmp_path, {"id": "x", "sql": sql, "expect_rows": []})
    problems = [
        p.reason for p in check_suite(root).errors if p.field == "outcome_assertions[3].sql"
    ]
    assert problems == ([NOT_A_READ] if refused else [])


# --- two diff assertions no final state passes ---------------------------------------------------

TRANSFER = {"transfers": {"added": [{"source": "A", "target": "B", "amount": 30}]}}
BALANCES = {
    "accounts": {
        "changed": [{"key": "A", "set": {"balance": 70}}, {"key": "B", "set": {"balance": 80}}]
    }
}


def _two_diffs(tmp_path: Path, first: dict[str, Any], second: dict[str, Any]) -> Path:
    root = tmp_path / "bank"
    shutil.copytree(BANK, root)
    task_file = root / "tasks" / "transfer.yaml"
    task = yaml.safe_load(task_file.read_text(encoding="utf-8"))
    task["outcome_assertions"] = [{"id": "one", **first}, {"id": "two", **second}]
    task["partial_credit_rubric"] = []
    task_file.write_text(yaml.safe_dump(task, sort_keys=False), encoding="utf-8")
    return root


@pytest.mark.parametrize(
    ("first", "second", "says"),
    [  # the expected change split in two, each with the default nothing_else_changed: true
        ({"state_diff": TRANSFER}, {"state_diff": BALANCES}, "'one' expects transfers: 1 added"),
        (
            {"state_diff": {**TRANSFER, "accounts": {}}},
            {"state_diff": BALANCES, "nothing_else_changed": False},
            "'two' expects accounts: row \"A\" changed in balance, which 'one'",
        ),
        (
            {"state_diff": {"accounts": {"removed": ["C"]}}},
            {"state_diff": {"accounts": {"removed": ["B"]}}},
            "'one' expects accounts: row \"C\" removed",
        ),
    ],
)
def test_diff_assertions_no_state_passes_together_are_refused(
    tmp_path: Path, first: dict[str, Any], second: dict[str, Any], says: str
) -> None:
    with pytest.raises(SpecError) as raised:
        load_suite(_two_diffs(tmp_path, first, second))
    assert "transfer.yaml: outcome_assertions:" in str(raised.value)
    assert says in str(raised.value) and "no final state passes both" in str(raised.value)


@pytest.mark.parametrize(
    ("first", "second"),
    [
        (
            {"state_diff": TRANSFER, "nothing_else_changed": False},
            {"state_diff": BALANCES, "nothing_else_changed": False},
        ),
        (
            {"state_diff": TRANSFER, "nothing_else_changed": False},
            {"state_diff": BALANCES | TRANSFER},
        ),
        ({"state_diff": BALANCES | TRANSFER}, {"state_diff": TRANSFER | BALANCES}),
    ],
)
def test_diff_assertions_one_state_can_pass_load(
    tmp_path: Path, first: dict[str, Any], second: dict[str, Any]
) -> None:
    load_suite(_two_diffs(tmp_path, first, second))


# --- judges alone decide nothing --------------------------------------------------------------


def _judged_only(tmp_path: Path, *others: dict[str, Any]) -> Path:
    root = _task_with(tmp_path, {"id": "x", "state_diff": {}})  # replaced below
    (root / "judges").mkdir()
    (root / "judges" / "reply.jsonl").write_text(_lines(LABELLED), encoding="utf-8")
    (root / "judges.py").write_text(JUDGES, encoding="utf-8")
    task_file = root / "tasks" / "transfer.yaml"
    task = yaml.safe_load(task_file.read_text(encoding="utf-8"))
    judged = {"judge": "judges.py:names_amount", "labels": "judges/reply.jsonl"}
    task["outcome_assertions"] = [{"id": "says", **judged, "min_agreement": 0.4}, *others]
    task["partial_credit_rubric"] = []
    task_file.write_text(yaml.safe_dump(task, sort_keys=False), encoding="utf-8")
    return root


def test_a_task_judged_only_is_refused(tmp_path: Path) -> None:
    """A judged verdict never decides success: with judges alone, an agent that only said it
    moved the money succeeded."""
    with pytest.raises(SpecError, match="every outcome assertion is a judge"):
        load_suite(_judged_only(tmp_path))


def test_a_judge_beside_a_state_assertion_loads(tmp_path: Path) -> None:
    load_suite(_judged_only(tmp_path, {"id": "same", "state_diff": {}}))


# --- an expected value no column of that type can hold --------------------------------------------


@pytest.mark.parametrize(
    ("change", "says"),
    [  # accounts(owner TEXT, balance INTEGER), transfers(amount INTEGER, at TEXT)
        ({"accounts": {"changed": [{"key": "A", "set": {"owner": 1}}]}}, "1 is a number but"),
        ({"accounts": {"changed": [{"key": "A", "set": {"owner": False}}]}}, "YAML reads yes"),
        ({"accounts": {"changed": [{"key": "A", "set": {"balance": "70"}}]}}, "'70' is text"),
        ({"transfers": {"added": [{"amount": "3e1"}]}}, "3e1 reads as text in YAML 1.1"),
        ({"transfers": {"added": [{"at": 2026.5}]}}, "2026.5 is a number but transfers.at"),
    ],
)
def test_check_refuses_a_value_the_column_would_store_otherwise(
    tmp_path: Path, change: dict[str, Any], says: str
) -> None:
    """SQLite converts what is written to the column's affinity: a TEXT column holds the number
    ``1`` as ``'1'``, an INTEGER one the text ``'70'`` as ``70``; text and numbers never match,
    so no state (the oracle's included) meets the expectation. YAML's ``no`` is ``false``."""
    root = _task_with(tmp_path, {"id": "x", "state_diff": change}, alone=True)
    problems = [p.reason for p in check_suite(root).errors]
    assert len(problems) == 1 and says in problems[0], problems


@pytest.mark.parametrize(
    "change",
    [
        {"accounts": {"changed": [{"key": "A", "set": {"balance": 70, "owner": "ana b"}}]}},
        {"accounts": {"changed": [{"key": "A", "set": {"balance": True, "pin": "0070"}}]}},
        {"transfers": {"added": [{"amount": 30.0, "at": None, "source": "70 A"}]}},
    ],
)
def test_values_a_column_can_hold_pass_check(tmp_path: Path, change: dict[str, Any]) -> None:
    root = _task_with(tmp_path, {"id": "x", "state_diff": change}, alone=True)
    assert check_suite(root).errors == []


def test_check_refuses_a_change_of_a_rows_key(tmp_path: Path, env: SqliteEnvironment) -> None:
    """A row whose key changes is removed and another added: ``set: {id: Z}`` never held."""
    [result] = _graded(
        env,
        ["UPDATE acc SET id = 'Z' WHERE id = 'A'"],
        _diff({"acc": {"changed": [{"key": "A", "set": {"id": "Z"}}]}}),
    )
    assert not result.passed
    change = {"accounts": {"changed": [{"key": "C", "set": {"id": "D"}}]}}
    root = _task_with(tmp_path, {"id": "x", "state_diff": change}, alone=True)
    [problem] = check_suite(root).errors
    assert (
        problem.field.endswith("changed[0].set.id")
        and "id is the key of accounts" in problem.reason
    )


def test_a_set_restating_the_rows_key_passes_check(tmp_path: Path) -> None:
    change = {"accounts": {"changed": [{"key": "C", "set": {"id": "C", "balance": 5}}]}}
    assert (
        check_suite(_task_with(tmp_path, {"id": "x", "state_diff": change}, alone=True)).errors
        == []
    )


def test_check_refuses_matching_an_added_row_of_a_keyless_table_on_rowid(tmp_path: Path) -> None:
    """A keyless table's rowid is left out of the hash: an added row matched on it passed or
    failed with the same final state."""
    change = {"notes": {"added": [{"rowid": 1, "body": "hi"}]}}
    root = _task_with(tmp_path, {"id": "x", "state_diff": change}, alone=True)
    fixture = root / "fixtures" / "bank.sql"
    fixture.write_text(fixture.read_text() + "CREATE TABLE notes (body TEXT);\n")
    [problem] = check_suite(root).errors
    assert problem.field.endswith("added[0].rowid") and "its rowid is not state" in problem.reason
    change = {"notes": {"added": [{"body": "hi"}]}}
    (root / "tasks" / "transfer.yaml").write_text(
        (root / "tasks" / "transfer.yaml").read_text().replace("rowid: 1\n", "")
    )
    assert check_suite(root).errors == []


@pytest.mark.parametrize(
    "value",
    ["x'ff00'", "1e999", "-1e999", "char(0)", "9223372036854775807", "'{not json'", "zeroblob(3)"],
)
def test_the_built_in_comparisons_take_any_value_the_agent_stores(
    env: SqliteEnvironment, value: str
) -> None:
    """A value no expectation names fails the assertion, never the grader (an invalid
    attempt would be rerun, at the agent's choosing)."""
    results = _graded(
        env,
        [f"UPDATE acc SET note = {value} WHERE id = 'A'", "INSERT INTO tr (memo) VALUES ('m')"],
        _sql("SELECT id, note FROM acc", [["A", "a"], ["B", "x"]]),
        _sql("SELECT note FROM acc ORDER BY id", [["a"], ["x"]], ordered=True),
        _diff({"acc": {"changed": [{"key": "A", "set": {"note": "b"}}]}, "tr": {"added": [{}]}}),
        _diff({"tr": {"added": [{"memo": "m"}]}}, False),
    )
    assert [(r.passed, r.error) for r in results] == [(False, None)] * 3 + [(True, None)]


def test_a_diff_that_expects_nothing_and_allows_anything_is_refused() -> None:
    with pytest.raises(ValueError, match="holds for every final state"):
        _diff({"acc": {}, "tr": {}}, False)
    assert _diff({}).nothing_else_changed  # the "no change" form stays


def test_check_compiles_an_assertions_sql_without_running_it(tmp_path: Path) -> None:
    """An unbounded recursive query (a grader bug the time limit stops at run time) would
    hang ``check`` if checking ran it."""
    runaway = "WITH RECURSIVE r(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM r) SELECT n FROM r"
    root = _task_with(tmp_path, {"id": "x", "sql": runaway, "expect_rows": []})
    assert check_suite(root).errors == []
