"""`groundstate check`: each mistake found at load, once, as file:line: field: reason, exit 2.

One test per mistake that used to surface only as a failing oracle (or not at all), each with
near misses of its own: the same mistake in another place, and the correct form that must
not be reported.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from groundstate.cli import main
from groundstate.errors import SpecError
from groundstate.spec.suite import load_suite
from groundstate.validation import validate_task
from groundstate.validation.static import SuiteCheckFailed, check_suite, require_checked

from .conftest import BANK

TASK = "tasks/transfer.yaml"
ORACLE = "solutions/transfer/oracle.yaml"


@pytest.fixture
def bank(tmp_path: Path) -> Path:
    root = tmp_path / "bank"
    shutil.copytree(BANK, root)
    return root


def edit(root: Path, file: str, old: str, new: str) -> None:
    path = root / file
    text = path.read_text()
    assert old in text, f"{old!r} not in {file}"
    path.write_text(text.replace(old, new, 1))


def line(root: Path, file: str, text: str) -> int:
    """The 1-based line of *file* holding *text*."""
    lines = (root / file).read_text().splitlines()
    return next(i for i, content in enumerate(lines, 1) if text in content)


def check(*args: str) -> tuple[int, list[str]]:
    """Exit code and the error lines `check` prints (warnings left out)."""
    result = CliRunner().invoke(main, ["check", *args], catch_exceptions=False)
    lines = result.stdout.splitlines()
    return result.exit_code, [text for text in lines if not text.startswith("warning: ")]


def test_the_example_suites_have_no_errors() -> None:
    for suite in (BANK, Path(__file__).parent.parent / "examples" / "retail"):
        assert check_suite(suite).errors == []


# --- tool names ------------------------------------------------------------------------------


def test_a_solution_calling_a_tool_the_task_does_not_offer(bank: Path) -> None:
    edit(bank, TASK, "available_tools: [check_pin, balance,", "available_tools: [check_pin,")
    edit(
        bank,
        ORACLE,
        "  - call: transfer",
        "  - call: balance\n    args: {account: A}\n  - call: transfer",
    )
    code, errors = check(str(bank))
    at = line(bank, ORACLE, "call: balance")
    assert code == 2
    assert errors == [
        f"{bank / ORACLE}:{at}: steps[2].call: 'balance' is not in available_tools of {TASK}"
    ]


def test_a_solution_calling_a_tool_that_does_not_exist(bank: Path) -> None:
    edit(bank, ORACLE, "call: transfer", "call: transfr")
    code, errors = check(str(bank))
    at = line(bank, ORACLE, "call: transfr")
    assert (code, errors) == (
        2,
        [
            f"{bank / ORACLE}:{at}: steps[2].call: 'transfr' is not a tool of tools.py"
            " (did you mean 'transfer'?)"
        ],
    )


def test_solution_arguments_are_checked_against_the_tool_schema(bank: Path) -> None:
    edit(bank, ORACLE, "amount: 30}", 'amount: "30"}')
    edit(bank, ORACLE, "{account: A, pin:", "{acount: A, pin:")
    code, errors = check(str(bank))
    assert code == 2
    assert errors == [
        f"{bank / ORACLE}:{line(bank, ORACLE, 'acount')}: steps[1].args: "
        "'account' is a required property (schema of tool 'check_pin')",
        f"{bank / ORACLE}:{line(bank, ORACLE, 'acount')}: steps[1].args: Additional properties "
        "are not allowed ('acount' was unexpected) (schema of tool 'check_pin')",
        f"{bank / ORACLE}:{line(bank, ORACLE, 'amount')}: steps[2].args.amount: "
        "'30' is not of type 'integer' (schema of tool 'transfer')",
    ]


def test_a_constraint_naming_a_missing_tool(bank: Path) -> None:
    edit(bank, TASK, "then: {tool: transfer}", "then: {tool: transfers}")
    code, errors = check(str(bank))
    at = line(bank, TASK, "tool: transfers")
    assert (code, errors) == (
        2,
        [
            f"{bank / TASK}:{at}: hard_process_constraints[0].before.then.tool: "
            "'transfers' is not in the task's available_tools (did you mean 'transfer'?)"
        ],
    )


def test_a_constraint_set_naming_a_missing_tool(bank: Path) -> None:
    (bank / "suite.yaml").write_text(
        (bank / "suite.yaml").read_text()
        + "constraint_sets:\n  policy:\n    - id: no-audit\n      never: {tool: read_audti}\n"
    )
    code, errors = check(str(bank))
    at = line(bank, "suite.yaml", "read_audti")
    assert (code, errors) == (
        2,
        [
            f"{bank / 'suite.yaml'}:{at}: constraint_sets.policy[0].never.tool: "
            "'read_audti' is not a tool of the suite (did you mean 'read_audit'?)"
        ],
    )


def test_available_tools_naming_a_missing_tool(bank: Path) -> None:
    edit(bank, TASK, "read_audit, explode", "read_audit, explod")
    code, errors = check(str(bank))
    at = line(bank, TASK, "available_tools")
    assert (code, errors) == (
        2,
        [
            f"{bank / TASK}:{at}: available_tools[4]: 'explod' is not a tool of tools.py"
            " (did you mean 'explode'?)"
        ],
    )


def test_fails_by_naming_a_missing_constraint(bank: Path) -> None:
    edit(bank, "solutions/transfer/bad_no_pin.yaml", "constraint:pin-first", "constraint:pin-frist")
    bad = "solutions/transfer/bad_no_pin.yaml"
    code, errors = check(str(bank))
    at = line(bank, bad, "fails_by")
    assert (code, errors) == (
        2,
        [
            f"{bank / bad}:{at}: fails_by: tasks/transfer.yaml has no constraint 'pin-frist'"
            " (did you mean 'pin-first'?)"
        ],
    )


# --- tool declarations -----------------------------------------------------------------------


DROPPED = "without it the tool's first argument is dropped from its schema and calls are refused"
TOOLS_TAIL = """

@tool
def {name}({params}) -> int:
{doc}    return 1
"""


def add_tool(root: Path, name: str, params: str, doc: str = '    """A tool."""\n') -> int:
    """Append a tool to tools.py; the line where its declaration (``@tool``) starts."""
    path = root / "tools.py"
    before = path.read_text()
    path.write_text(before + TOOLS_TAIL.format(name=name, params=params, doc=doc))
    return len(before.splitlines()) + 3


def test_a_tool_without_its_ctx_parameter(bank: Path) -> None:
    at = add_tool(bank, "lookup", "order_id: str")
    code, errors = check(str(bank))
    assert (code, errors) == (
        2,
        [
            f"{bank / 'tools.py'}:{at}: lookup: the first parameter must be 'ctx: ToolContext' "
            "(got 'order_id: str'); without it the tool's first argument is dropped from its "
            "schema and calls are refused"
        ],
    )


@pytest.mark.parametrize(
    ("params", "doc", "reason"),
    [
        (
            "ctx: ToolContext, order_id",
            '    """A tool."""\n',
            "parameter 'order_id' has no type hint, so its schema is empty",
        ),
        (
            "ctx: ToolContext, order_id: str",
            "",
            "no docstring: the agent would see the tool with no description",
        ),
        (
            "ctx: ToolContext, **fields: str",
            '    """A tool."""\n',
            "parameter '**fields: str' cannot be given by name: list each argument",
        ),
        (
            "",
            '    """A tool."""\n',
            "the first parameter must be 'ctx: ToolContext' (got no parameters); " + DROPPED,
        ),
        (
            "context: int, n: int",
            '    """A tool."""\n',
            "the first parameter must be 'ctx: ToolContext' (got 'context: int'); " + DROPPED,
        ),
    ],
)
def test_tool_declarations_are_checked(bank: Path, params: str, doc: str, reason: str) -> None:
    at = add_tool(bank, "lookup", params, doc)
    assert check(str(bank)) == (2, [f"{bank / 'tools.py'}:{at}: lookup: {reason}"])


@pytest.mark.parametrize(
    "params", ["ctx, n: int", "context: ToolContext, n: int", "ctx: ToolContext"]
)
def test_correct_tool_declarations_are_not_reported(bank: Path, params: str) -> None:
    add_tool(bank, "lookup", params)
    assert check(str(bank)) == (0, [])


# --- state_diff and SQL against the fixture --------------------------------------------------


def test_a_state_diff_key_of_the_wrong_type(bank: Path) -> None:
    edit(bank, TASK, "      accounts:\n", "      audit:\n        removed: ['1']\n      accounts:\n")
    code, errors = check(str(bank))
    at = line(bank, TASK, "removed: ['1']")
    assert (code, errors) == (
        2,
        [
            f"{bank / TASK}:{at}: outcome_assertions[1].state_diff.audit.removed[0]: "
            "'1' is text but audit.id is INTEGER (write 1 without quotes)"
        ],
    )


@pytest.mark.parametrize(
    ("key", "reason"),
    [
        ("1", "1 is a number but accounts.id is TEXT (write '1' in quotes)"),
        ("Z", 'no row of accounts in fixture bank.sql has key "Z"'),
        ("[A, B]", "accounts's primary key is (id): give 1 value"),
        ("true", "True is not a key value of accounts.id"),
    ],
)
def test_state_diff_keys_near_misses(bank: Path, key: str, reason: str) -> None:
    edit(bank, TASK, "{key: A, set:", f"{{key: {key}, set:")
    code, errors = check(str(bank))
    at = line(bank, TASK, f"key: {key},")
    field = "outcome_assertions[1].state_diff.accounts.changed[0].key"
    assert (code, errors) == (2, [f"{bank / TASK}:{at}: {field}: {reason}"])


def test_a_state_diff_naming_a_missing_table(bank: Path) -> None:
    edit(bank, TASK, "      transfers:\n", "      transfer:\n")
    code, errors = check(str(bank))
    at = line(bank, TASK, "transfer:")
    assert (code, errors) == (
        2,
        [
            f"{bank / TASK}:{at}: outcome_assertions[1].state_diff.transfer: fixture bank.sql "
            "has no table 'transfer' (it has: accounts, audit, transfers)"
        ],
    )


def test_a_state_diff_naming_missing_columns(bank: Path) -> None:
    edit(bank, TASK, "{key: A, set: {balance: 70}}", "{key: A, set: {balanse: 70}}")
    edit(bank, TASK, "target: B, amount: 30}", "target: B, amont: 30}")
    code, errors = check(str(bank))
    prefix = f"{bank / TASK}"
    assert (code, errors) == (
        2,
        [
            f"{prefix}:{line(bank, TASK, 'amont')}: outcome_assertions[1].state_diff.transfers"
            ".added[0].amont: transfers has no column 'amont'",
            f"{prefix}:{line(bank, TASK, 'balanse')}: outcome_assertions[1].state_diff.accounts"
            ".changed[0].set.balanse: accounts has no column 'balanse'",
        ],
    )


def test_the_no_change_form_is_accepted(bank: Path) -> None:
    task = (bank / TASK).read_text()
    start = task.index("  - id: exactly-one-transfer")
    end = task.index("  - id: conserved")
    no_change = "  - id: nothing-changed\n    state_diff: {}\n    nothing_else_changed: true\n"
    (bank / TASK).write_text(task[:start] + no_change + task[end:])
    assert check(str(bank)) == (0, [])


def test_an_sql_assertion_that_does_not_run_on_the_fixture(bank: Path) -> None:
    edit(
        bank, TASK, "sql: SELECT id, balance FROM accounts", "sql: SELECT id, balanse FROM accounts"
    )
    code, errors = check(str(bank))
    at = line(bank, TASK, "balanse")
    assert (code, errors) == (
        2,
        [
            f"{bank / TASK}:{at}: outcome_assertions[0].sql: does not run on fixture bank.sql: "
            "no such column: balanse"
        ],
    )


# --- Python checks ---------------------------------------------------------------------------


def test_a_check_naming_a_missing_function(bank: Path) -> None:
    edit(bank, TASK, "checks.py:money_conserved", "checks.py:money_conserve")
    code, errors = check(str(bank))
    at = line(bank, TASK, "money_conserve")
    assert (code, errors) == (
        2,
        [
            f"{bank / TASK}:{at}: outcome_assertions[2].check: "
            "checks.py has no function 'money_conserve' (did you mean 'money_conserved'?)"
        ],
    )


def test_a_checks_file_that_cannot_import_is_reported_once(bank: Path) -> None:
    edit(
        bank,
        TASK,
        "  - id: conserved\n    check: checks.py:money_conserved\n",
        (
            "  - id: conserved\n    check: checks.py:money_conserved\n"
            "  - id: conserved-again\n    check: checks.py:money_conserved\n"
        ),
    )
    (bank / "checks.py").write_text((bank / "checks.py").read_text() + "\n1 / 0\n")
    code, errors = check(str(bank))
    assert code == 2
    assert len(errors) == 1
    at = line(bank, "checks.py", "1 / 0")
    assert errors[0].startswith(f"{bank / 'checks.py'}:{at}: importing failed: ZeroDivisionError")


@pytest.mark.parametrize(
    ("ref", "reason"),
    [
        ("checks.py", "expected 'file.py:function' in the suite, got 'checks.py'"),
        ("checks.txt:f", "expected 'file.py:function' in the suite, got 'checks.txt:f'"),
        (
            "nope.py:money_conserved",
            "no file nope.py in the suite (for 'nope.py:money_conserved')",
        ),
    ],
)
def test_malformed_check_references(bank: Path, ref: str, reason: str) -> None:
    edit(bank, TASK, "checks.py:money_conserved", ref)
    code, errors = check(str(bank))
    at = line(bank, TASK, ref)
    assert (code, errors) == (2, [f"{bank / TASK}:{at}: outcome_assertions[2].check: {reason}"])


# --- fixtures --------------------------------------------------------------------------------


def test_a_fixture_syntax_error_is_reported_once_with_its_line(bank: Path) -> None:
    edit(bank, "fixtures/bank.sql", "source TEXT,", "source TEXT,,")
    code, errors = check(str(bank))
    assert (code, errors) == (
        2,
        [f'{bank / "fixtures/bank.sql"}:2: does not build: near ",": syntax error'],
    )
    result = CliRunner().invoke(main, ["validate", str(bank), "--no-cache"])
    assert result.exit_code == 2
    assert result.stderr.count("syntax error") == 1
    assert result.stderr.startswith(f"error: {bank / 'fixtures/bank.sql'}:2: does not build")


def test_a_fixture_error_on_a_later_statement_names_that_line(bank: Path) -> None:
    edit(bank, "fixtures/bank.sql", "('C', 'cy', 0, '0000');", "('C', 'cy', 0);")
    code, errors = check(str(bank))
    assert (code, errors) == (
        2,
        [
            f"{bank / 'fixtures/bank.sql'}:4: does not build: "
            "all VALUES must have the same number of terms"
        ],
    )


YAML_FIXTURE = """\
schema: |
  CREATE TABLE accounts (id TEXT PRIMARY KEY, owner TEXT, balance INTEGER, pin TEXT);
  CREATE TABLE transfers (id INTEGER PRIMARY KEY AUTOINCREMENT, source TEXT, target TEXT,
    amount INTEGER, at TEXT);
  CREATE TABLE audit (id INTEGER PRIMARY KEY, note TEXT{broken});
rows:
  accounts:
    - {{id: A, owner: ana, balance: 100, pin: "1234"}}
    - {{id: B, owner: bo, balance: 50, pin: "9999"}}
    - {{id: C, owner: cy, balance: 0, pin: "0000"}}
  audit:
    - {{id: 1, note: secret}}
"""


@pytest.mark.parametrize(
    ("broken", "where", "reason"),
    [
        ("", None, None),
        (",", 5, 'does not build: near ")": syntax error'),
    ],
)
def test_yaml_fixtures(bank: Path, broken: str, where: int | None, reason: str | None) -> None:
    (bank / "fixtures" / "bank.yaml").write_text(YAML_FIXTURE.format(broken=broken))
    edit(bank, TASK, "bank.sql", "bank.yaml")
    expected = [] if where is None else [f"{bank / 'fixtures/bank.yaml'}:{where}: {reason}"]
    assert check(str(bank)) == (2 if expected else 0, expected)


@pytest.mark.parametrize(
    ("old", "new", "marker", "field", "reason"),
    [
        ("{id: B, owner: bo,", "{id: B, ownr: bo,", "ownr", "rows.accounts[1]",
         "table accounts has no column named ownr"),
        ("rows:\n", "rows:\n  extra: 5\n", "extra", "rows.extra", "Input should be a valid list"),
        ("rows:\n", "colums: []\nrows:\n", "colums", "colums", "unknown field"),
    ],
)  # fmt: skip
def test_yaml_fixture_rows_and_fields_are_named_with_their_line(
    bank: Path, old: str, new: str, marker: str, field: str, reason: str
) -> None:
    path = bank / "fixtures" / "bank.yaml"
    path.write_text(YAML_FIXTURE.format(broken="").replace(old, new))
    edit(bank, TASK, "bank.sql", "bank.yaml")
    at = line(bank, "fixtures/bank.yaml", marker)
    assert check(str(bank)) == (2, [f"{path}:{at}: {field}: {reason}"])


def test_a_yaml_fixture_that_is_not_yaml(bank: Path) -> None:
    (bank / "fixtures" / "bank.yaml").write_text("schema: [unclosed\nrows: {}\n")
    edit(bank, TASK, "bank.sql", "bank.yaml")
    code, errors = check(str(bank))
    assert code == 2
    assert len(errors) == 1 and errors[0].startswith(
        f"{bank / 'fixtures/bank.yaml'}:2: invalid YAML"
    )


# --- the agent entry -------------------------------------------------------------------------


def _system(root: Path, agent: str) -> Path:
    (root / "agent.py").write_text(agent)
    system = root / "system.yaml"
    system.write_text("harness:\n  orchestration_loop: {entry: agent.py:agent}\n")
    return system


def test_a_plain_def_agent_is_blamed_on_its_file(tmp_path: Path, bank: Path) -> None:
    system = _system(tmp_path, "import random\n\n\ndef agent(session):\n    return 'done'\n")
    code, errors = check(str(bank), "--system", str(system))
    assert (code, errors) == (
        2,
        [
            f"{tmp_path / 'agent.py'}:4: agent: is a plain 'def'; an agent entry is "
            "'async def agent(session, ...)' (or a factory returning an object with "
            "'async def run(self, session)')"
        ],
    )


def test_an_async_agent_and_a_factory_are_accepted(tmp_path: Path, bank: Path) -> None:
    system = _system(tmp_path, "async def agent(session):\n    return 'done'\n")
    assert check(str(bank), "--system", str(system)) == (0, [])
    factory = (
        "class A:\n    async def run(self, session):\n        return 'ok'\n\n\n"
        "def agent():\n    return A()\n"
    )
    system = _system(tmp_path, factory)
    assert check(str(bank), "--system", str(system)) == (0, [])


def test_an_agent_factory_that_raises_is_one_problem(tmp_path: Path, bank: Path) -> None:
    system = _system(tmp_path, "def agent():\n    raise RuntimeError('needs a GPU')\n")
    code, errors = check(str(bank), "--system", str(system))
    assert (code, errors) == (
        2,
        [
            f"{system}:2: harness.orchestration_loop: building the agent failed: "
            "RuntimeError: needs a GPU (at line 2 of agent.py)"
        ],
    )


def test_a_wrong_param_is_blamed_on_the_system_file(tmp_path: Path, bank: Path) -> None:
    system = _system(tmp_path, "async def agent(session):\n    return 'done'\n")
    system.write_text(
        system.read_text().replace("agent.py:agent}", "agent.py:agent, params: {x: 1}}")
    )
    code, errors = check(str(bank), "--system", str(system))
    assert code == 2
    assert errors == [
        f"{system}:2: harness.orchestration_loop.params: got an unexpected keyword argument 'x'"
    ]


# --- all problems, once; the decision; JSON --------------------------------------------------


def test_every_problem_is_reported_not_only_the_first(bank: Path) -> None:
    edit(bank, ORACLE, "call: transfer", "call: transfr")
    edit(bank, TASK, "checks.py:money_conserved", "checks.py:money")
    edit(bank, "solutions/transfer/bad_no_pin.yaml", "kind: known_bad", "kind: knownbad")
    add_tool(bank, "lookup", "order_id: str")
    code, errors = check(str(bank))
    assert code == 2
    assert len(errors) == 4
    assert len(set(errors)) == 4
    files = sorted(e.split(":")[0].rsplit("/", 1)[-1] for e in errors)
    assert files == ["bad_no_pin.yaml", "oracle.yaml", "tools.py", "transfer.yaml"]


def test_every_field_problem_of_a_file_is_reported(bank: Path) -> None:
    edit(bank, TASK, "task_revision: 1", "task_revision: 0")
    edit(bank, TASK, "step_limit: 6", "step_limit: 1.5\nstep_limmit: 6")
    code, errors = check(str(bank))
    task = bank / TASK
    assert code == 2
    assert errors == [
        f"{task}:2: task_revision: Input should be greater than or equal to 1",
        f"{task}:{line(bank, TASK, 'step_limit:')}: step_limit: Input should be a valid integer",
        f"{task}:{line(bank, TASK, 'step_limmit')}: step_limmit: unknown field"
        " (did you mean 'step_limit'?)",
    ]


def test_decision_and_population_are_warnings(bank: Path) -> None:
    result = CliRunner().invoke(main, ["check", str(bank)])
    assert result.exit_code == 0
    assert f"warning: {bank / 'suite.yaml'}: decision: not declared" in result.stdout
    edit(
        bank,
        "suite.yaml",
        "name: bank\n",
        (
            "name: bank\ndecision: ship the bank bot\npopulation:\n"
            "  description: transfers between own accounts\n  sampling: hand-written\n"
        ),
    )
    result = CliRunner().invoke(main, ["check", str(bank)])
    assert (result.exit_code, result.stdout) == (0, "")


@pytest.mark.parametrize(
    ("added", "field", "reason"),
    [
        (
            "weights: {transfr: 2}\n",
            "weights.transfr",
            "no task 'transfr' (did you mean 'transfer'?)",
        ),
        ("canary: transfr\n", "canary", "no task 'transfr' (did you mean 'transfer'?)"),
    ],
)
def test_suite_references_name_tasks(bank: Path, added: str, field: str, reason: str) -> None:
    edit(bank, "suite.yaml", "canary: transfer\n", "")
    (bank / "suite.yaml").write_text((bank / "suite.yaml").read_text() + added)
    at = line(bank, "suite.yaml", added.split(":")[0] + ":")
    assert check(str(bank)) == (2, [f"{bank / 'suite.yaml'}:{at}: {field}: {reason}"])


def test_a_missing_policy_file(bank: Path) -> None:
    (bank / "policy.md").unlink()
    at = line(bank, "suite.yaml", "policy:")
    assert check(str(bank)) == (
        2,
        [f"{bank / 'suite.yaml'}:{at}: policy: no file policy.md"],
    )


def test_an_empty_decision_is_an_error(bank: Path) -> None:
    edit(bank, "suite.yaml", "name: bank\n", "name: bank\ndecision: ''\n")
    code, errors = check(str(bank))
    assert code == 2 and errors[0].startswith(f"{bank / 'suite.yaml'}:2: decision: ")


def test_json_lists_every_problem(bank: Path) -> None:
    edit(bank, ORACLE, "call: transfer", "call: transfr")
    result = CliRunner().invoke(main, ["check", str(bank), "--json"])
    assert result.exit_code == 2
    data = json.loads(result.stdout)
    assert data["ok"] is False
    errors = [p for p in data["problems"] if p["severity"] == "error"]
    assert errors == [
        {
            "file": str(bank / ORACLE),
            "line": line(bank, ORACLE, "transfr"),
            "field": "steps[2].call",
            "reason": "'transfr' is not a tool of tools.py (did you mean 'transfer'?)",
            "severity": "error",
            "text": f"{bank / ORACLE}:{line(bank, ORACLE, 'transfr')}: steps[2].call: "
            "'transfr' is not a tool of tools.py (did you mean 'transfer'?)",
        }
    ]


def test_require_checked_raises_with_every_error(bank: Path) -> None:
    edit(bank, ORACLE, "call: transfer", "call: transfr")
    edit(bank, TASK, "checks.py:money_conserved", "checks.py:money")
    with pytest.raises(SuiteCheckFailed) as raised:
        require_checked(bank)
    # one problem a line, each printed as an error of its own (the forty-sixth round)
    assert str(raised.value).count("\n") == 1 and raised.value.several
    assert isinstance(raised.value.check.errors[0], object)


def test_not_a_suite(tmp_path: Path) -> None:
    assert check(str(tmp_path)) == (2, [f"{tmp_path}: not a suite folder (no suite.yaml)"])
    assert issubclass(SuiteCheckFailed, Exception) and not issubclass(SuiteCheckFailed, SpecError)


def test_run_refuses_a_suite_with_problems_before_anything_runs(bank: Path, tmp_path: Path) -> None:
    edit(bank, ORACLE, "call: transfer", "call: transfr")
    system = _system(tmp_path, "async def agent(session):\n    return 'done'\n")
    store = tmp_path / "runs.db"
    args = ["run", str(bank), "--system", str(system), "--store", str(store)]
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 2
    assert result.stderr.splitlines()[0] == (
        f"error: {bank / ORACLE}:{line(bank, ORACLE, 'transfr')}: steps[2].call: "
        "'transfr' is not a tool of tools.py (did you mean 'transfer'?)"
    )
    assert not store.exists()


def test_a_failing_oracle_shows_its_trace_with_the_refused_call(bank: Path) -> None:
    edit(bank, ORACLE, "amount: 30}", 'amount: "30"}')
    validity = validate_task(load_suite(bank), "transfer")
    detail = validity.check("solvable").detail
    assert "[trace: 1 say; 2 check_pin " in detail
    assert (
        '3 transfer {"amount":"30","source":"A","target":"B"} FAILED invalid_arguments: '
        "invalid arguments: amount: '30' is not of type 'integer'; 4 finish]"
    ) in detail
