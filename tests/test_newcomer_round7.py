"""A newcomer's path, seventh audit: a suite written from the docs alone, and what it found.

`tests/suites/rooms` is a meeting-room desk (a YAML fixture, four tools, a `before`, a
`confirmed`, a `provenance`, message and `never` constraints, a Python check, a task whose
right answer is no change) written only from README.md and docs/, with two systems beside it
(`tests/suites/rooms_systems`). The first test walks it through every command of the
workflow exactly as the docs give them; the others keep the mistakes that walk met, each as a
class: a `state_diff` value SQLite cannot store as written, and a permission on a table the
fixture does not have (both were silent until an oracle failed, or forever).
"""

from __future__ import annotations

import io
import json
import os
import re
import shutil
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import click
import pytest
import yaml
from click.testing import CliRunner

from groundstate.cli import main
from groundstate.environments.sqlite import SqliteEnvironment
from groundstate.errors import PermissionDenied
from groundstate.spec.suite import load_suite
from groundstate.spec.task import Permissions
from groundstate.testing import run_solution
from groundstate.validation.static import check_suite

HERE = Path(__file__).resolve().parent
ROOMS = HERE / "suites" / "rooms"
SYSTEMS = HERE / "suites" / "rooms_systems"
CLOCK = datetime(2026, 1, 15, 10, tzinfo=UTC)


def gs(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(main, list(args))
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exception
    return result.exit_code, result.stdout, result.stderr


@pytest.fixture
def rooms(tmp_path: Path) -> Path:
    suite = tmp_path / "rooms"
    shutil.copytree(ROOMS, suite)
    return suite


def edit_task(suite: Path, task_id: str, change: dict[str, Any]) -> Path:
    path = suite / "tasks" / f"{task_id}.yaml"
    task = yaml.safe_load(path.read_text())
    task.update(change)
    path.write_text(yaml.safe_dump(task, sort_keys=False))
    return path


# --- the walk ---------------------------------------------------------------------------------


def test_a_suite_written_from_the_docs_goes_from_check_to_a_ci_gate(
    rooms: Path, tmp_path: Path
) -> None:
    store = str(tmp_path / "runs.db")
    desk, hasty = str(SYSTEMS / "desk.yaml"), str(SYSTEMS / "hasty.yaml")
    code, out, err = gs("check", str(rooms), "--system", desk)
    assert code == 0, out + err
    code, out, err = gs("validate", str(rooms), "--store", store)
    assert code == 0, out + err
    assert "2 of 2 tasks valid" in out

    code, out, err = gs("lock", str(rooms))
    assert code == 0, err
    code, out, _ = gs("lock", str(rooms), "--check", "--json")
    assert code == 0 and json.loads(out)["matches"] is True

    code, out, err = gs("run", str(rooms), "--system", desk, "--attempts", "2", "--store", store)
    assert code == 0, out + err
    careful = out.split("batch ")[1].split()[0]
    code, out, err = gs(
        "run", str(rooms), "--system", hasty, "--locked", "--attempts", "2", "--store", store,
        "--fail-under", "success_rate=0.8", "--fail-under", "pass^2=0.5", "--json",
    )  # fmt: skip
    assert code == 4, err
    batch = json.loads(out)
    assert [(g["metric"], g["passed"]) for g in batch["fail_under"]] == [
        ("success_rate", False),
        ("pass^2", False),
    ]
    assert "error: --fail-under: success_rate = 0.000 is below 0.8" in err
    reasons = {run["task_id"]: run["terminal_reason"] for run in batch["runs"]}
    assert reasons == {
        "book-room-a": "agent_failure/constraint_violation",  # booked without the badge
        "cancel-other": "agent_failure/incorrect_state",  # cancelled another's booking
    }

    code, out, err = gs("report", "--store", store)
    assert code == 0 and batch["batch_id"] in out, err
    code, out, err = gs("report", "--store", store, "--fail-under", "pass^2=0.6")
    assert code == 4 and "pass^2 = 0.000 is below 0.6" in err
    code, out, _ = gs("batches", "--json", "--store", store)
    assert [b["status"] for b in json.loads(out)] == ["complete", "complete"]
    code, out, err = gs("compare", careful, batch["batch_id"], "--json", "--store", store)
    assert code == 0, err
    code, out, _ = gs("runs", batch["batch_id"], "--reason", "agent_failure", "--store", store)
    run_id = out.split("\n")[3].split()[0]  # the first row, after the title and the header
    code, out, err = gs("show", run_id, "--store", store)
    assert code == 0 and "FAIL  badge-first (before)" in out, out + err


# --- a state_diff value of the wrong type -----------------------------------------------------

# Each (declared type, value written in the task, flagged): SQLite's column affinity stores
# numeric text as a number in a numeric column and a number as text in a text column, and the
# grader compares JSON types, so the flagged ones can never match. The others can.
VALUES = [
    ("INTEGER", "9", True),
    ("INTEGER", "-9", True),
    ("INTEGER", "9.5", True),  # an exponent ("9.5e3") is refused before: loading_round11
    ("REAL", "2.5", True),
    ("NUMERIC", "2026", True),  # a year written as text in a DATE-like numeric column
    ("TEXT", 9, True),
    ("VARCHAR(10)", 9.5, True),
    ("TEXT", True, True),  # stored as the text '1'
    ("INTEGER", 9, False),
    ("INTEGER", "abc", False),  # text that is not a number stays text, even in INTEGER
    ("INTEGER", " 9x", False),
    ("INTEGER", None, False),
    ("REAL", 9, False),  # numbers compare by value
    ("TEXT", "9", False),
    ("TEXT", None, False),
    ("", "9", False),  # no declared type: stored as given
    ("", 9, False),
    ("BLOB", "9", False),
]


def _typed_suite(tmp_path: Path, declared: str) -> Path:
    suite = tmp_path / "typed"
    shutil.copytree(ROOMS, suite)
    fixture = suite / "fixtures" / "rooms.yaml"
    data = yaml.safe_load(fixture.read_text())
    data["schema"] += f"CREATE TABLE notes (id INTEGER PRIMARY KEY, v {declared});\n"
    data["rows"]["notes"] = [{"id": 1, "v": None}]
    fixture.write_text(yaml.safe_dump(data))
    return suite


@pytest.mark.parametrize(("declared", "value", "flagged"), VALUES)
def test_a_state_diff_value_sqlite_cannot_store_as_written_is_named(
    tmp_path: Path, declared: str, value: Any, flagged: bool
) -> None:
    suite = _typed_suite(tmp_path, declared)
    for form in ("added", "changed"):
        added = {"added": [{"v": value}]}
        change = added if form == "added" else {"changed": [{"key": 1, "set": {"v": value}}]}
        edit_task(suite, "book-room-a", {"outcome_assertions": [
            {"id": "noted", "state_diff": {"notes": change}, "nothing_else_changed": False},
        ]})  # fmt: skip
        texts = [str(p) for p in check_suite(suite).errors]
        where = "added[0].v" if form == "added" else "changed[0].set.v"
        named = [t for t in texts if f"state_diff.notes.{where}:" in t]
        assert bool(named) == flagged, (form, texts)
        if flagged:
            assert len(named) == 1 and f"notes.v is {declared}" in named[0]
            assert any(
                hint in named[0] for hint in ("without quotes", "in quotes", "quote the text")
            )


def test_the_value_check_runs_in_validate_and_run_too(rooms: Path, tmp_path: Path) -> None:
    edit_task(rooms, "book-room-a", {"outcome_assertions": [{
        "id": "booked",
        "state_diff": {"bookings": {"added": [{"room": "R-A", "slot": "9"}]}},
    }]})  # fmt: skip
    desk = str(SYSTEMS / "desk.yaml")
    for command in (["validate", str(rooms)], ["run", str(rooms), "--system", desk]):
        code, out, err = gs(*command, "--store", str(tmp_path / "runs.db"))
        assert code == 2, out + err
        assert "state_diff.bookings.added[0].slot: '9' is text but bookings.slot is INTEGER" in err


# --- a permission on a table the fixture lacks ------------------------------------------------


@pytest.mark.parametrize(
    ("name", "hint"),
    [
        ("employes", "did you mean 'employees'?"),
        ("Employees", "the fixture spells it 'employees'"),  # the authorizer sees exact names
        ("EMPLOYEES", "the fixture spells it 'employees'"),
        ("staff", "it has: bookings, employees, rooms"),
        ("sqlite_master", "it has: bookings, employees, rooms"),
    ],
)
def test_a_permission_on_a_table_the_fixture_lacks_is_an_error(
    rooms: Path, name: str, hint: str
) -> None:
    edit_task(rooms, "book-room-a", {"permissions": {"tables": {name: "read"}}})
    errors = check_suite(rooms).errors
    assert len(errors) == 1, [str(p) for p in errors]
    assert errors[0].field == f"permissions.tables.{name}"
    assert errors[0].line is not None and "restricts nothing" in errors[0].reason
    assert hint in errors[0].reason


def test_a_permission_spelt_as_the_fixture_declares_it_is_accepted(rooms: Path) -> None:
    tables = {"employees": "read", "rooms": "none"}
    edit_task(rooms, "book-room-a", {"permissions": {"tables": tables}})
    assert check_suite(rooms).errors == []


def test_a_case_mismatched_permission_really_restricted_nothing(rooms: Path) -> None:
    """Why the check is an error and not a warning: SQLite hands the authorizer the declared
    name, so `Bookings: none` leaves `bookings` readable by the agent (and `employees` spelt
    exactly is enforced)."""
    fixture = rooms / "fixtures" / "rooms.yaml"
    for name, readable in (("Bookings", True), ("bookings", False)):
        permissions = Permissions(tables={name: "none"})
        with SqliteEnvironment(fixture, clock=CLOCK, permissions=permissions) as env:
            try:
                with env.tool_transaction():
                    rows = env.agent_db.execute("SELECT COUNT(*) FROM bookings").fetchall()
            except PermissionDenied:
                rows = []
        assert (rows == [(1,)]) == readable, name


# --- the docs' claims about options -----------------------------------------------------------


def _commands(group: click.Group, prefix: tuple[str, ...] = ()) -> dict[str, click.Command]:
    found: dict[str, click.Command] = {}
    for name, command in group.commands.items():
        if isinstance(command, click.Group):
            found.update(_commands(command, (*prefix, name)))
        else:
            found[" ".join((*prefix, name))] = command
    return found


def test_the_commands_workflow_md_says_use_no_store_are_exactly_those_without_store() -> None:
    text = (HERE.parent / "docs" / "workflow.md").read_text()
    said = text.split("artifacts beside it; ")[1].split(" use no store")[0]
    names = (name.strip("`\n ") for name in re.split(r",|\band\b", said))
    without = {name for name in names if name}
    commands = _commands(main)
    assert without <= set(commands), without - set(commands)
    have_no_store = {
        name
        for name, command in commands.items()
        if not any("--store" in p.opts for p in command.params if isinstance(p, click.Option))
    }
    assert have_no_store == without


# --- a blank opening message ------------------------------------------------------------------


@pytest.mark.parametrize("request_text", ["", "   ", "\n\t"])
def test_a_blank_user_request_is_refused_naming_the_field(rooms: Path, request_text: str) -> None:
    """It was accepted: the agent was handed an empty request and every attempt was graded."""
    path = edit_task(rooms, "book-room-a", {"user_request": request_text})
    errors = check_suite(rooms).errors
    assert [(e.file, e.field) for e in errors] == [(str(path), "user_request")]
    assert "is empty" in errors[0].reason and errors[0].line is not None


# --- τ² data with a hostile edit ----------------------------------------------------------------

TAU2 = Path(
    os.environ.get("GROUNDSTATE_TAU2_DATA")
    or HERE.parent.parent / "shared" / "tau_data" / "tau2-bench" / "retail"
)
needs_tau2 = pytest.mark.skipif(
    not (TAU2 / "tasks.json").is_file(),
    reason=f"τ²-bench retail data not found at {TAU2} (set GROUNDSTATE_TAU2_DATA)",
)


def _actions(tasks: list[Any]) -> list[dict[str, Any]]:
    actions: list[dict[str, Any]] = tasks[5]["evaluation_criteria"]["actions"]
    return actions


def _instructions(tasks: list[Any]) -> dict[str, Any]:
    instructions: dict[str, Any] = tasks[5]["user_scenario"]["instructions"]
    return instructions


# Each edit of τ²'s own tasks.json (task 5, an exchange) and what its one line must name.
HOSTILE: dict[str, tuple[Any, list[str]]] = {
    "unknown tool": (
        lambda t: _actions(t)[1].update(name="refund_everything"),
        ["τ² task '5'", "'refund_everything' is not a documented tool"],
    ),
    "duplicated id": (lambda t: t[40].update(id="5"), ["[40].id", "'5' appears twice (also [5])"]),
    "duplicated id, not the task asked for": (
        lambda t: t[41].update(id="40"), ["[41].id", "'40' appears twice"],
    ),
    "missing id": (lambda t: t[5].pop("id"), ["[5].id", "Field required"]),
    "missing scenario": (lambda t: t[5].pop("user_scenario"), ["[5].user_scenario", "required"]),
    "missing criteria": (
        lambda t: t[5].pop("evaluation_criteria"), ["[5].evaluation_criteria", "required"],
    ),
    "missing action name": (
        lambda t: _actions(t)[1].pop("name"), ["[5].evaluation_criteria.actions.1.name"],
    ),
    "missing gold argument": (
        lambda t: _actions(t)[-1]["arguments"].pop("order_id"),
        ["τ² task '5'", "does not fit its interface", "missing ['order_id']"],
    ),
    "unknown gold argument": (
        lambda t: _actions(t)[-1]["arguments"].update(bogus=1),
        ["τ² task '5'", "unknown arguments ['bogus']"],
    ),
    "missing reason for the call": (
        lambda t: _instructions(t).pop("reason_for_call"),
        ["[5].user_scenario.instructions.reason_for_call", "Field required"],
    ),
    "blank reason for the call": (
        lambda t: _instructions(t).update(reason_for_call="  "),
        ["τ² task '5'", "reason_for_call is empty"],
    ),
}  # fmt: skip


@needs_tau2
@pytest.mark.parametrize("case", list(HOSTILE))
def test_tau2_data_with_a_hostile_edit_gives_one_clear_line(tmp_path: Path, case: str) -> None:
    edit, named = HOSTILE[case]
    data = tmp_path / "retail"
    data.mkdir()
    for name in ("db.json", "policy.md", "split_tasks.json", "tools_interface.json"):
        (data / name).symlink_to(TAU2 / name)
    tasks = json.loads((TAU2 / "tasks.json").read_text())
    edit(tasks)
    (data / "tasks.json").write_text(json.dumps(tasks))
    into = tmp_path / "suite"
    code, out, err = gs("import-tau2", str(data), "--into", str(into), "--task", "5")
    assert code == 2, out + err
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), err
    assert "tasks.json" in lines[0] and all(part in lines[0] for part in named), lines[0]
    assert not into.exists()  # nothing half-written, that the next import would refuse


@needs_tau2
def test_the_documented_import_command_prints_what_the_audit_page_shows(tmp_path: Path) -> None:
    """docs/tau2-audit.md's first command, on one task (the page's counts are for all 114,
    which tests/test_tau2_suite.py checks)."""
    code, out, err = gs("import-tau2", str(TAU2), "--into", str(tmp_path / "t"), "--task", "5")
    assert code == 0, err
    assert out.splitlines()[0] == f"wrote 1 of 114 τ² tasks to {tmp_path / 't'}"
    assert out.splitlines()[-1] == f"next: groundstate validate {tmp_path / 't'}"
    assert check_suite(tmp_path / "t").ok


@needs_tau2
def test_a_failed_import_leaves_the_folder_as_it_was_and_the_fixed_one_goes_in(
    tmp_path: Path,
) -> None:
    """A failed import used to leave tools.py and empty folders (a fresh folder, which the
    next import refused as "not a suite"), or an earlier suite with its tasks deleted."""
    data = tmp_path / "retail"
    data.mkdir()
    for name in ("db.json", "policy.md", "split_tasks.json", "tools_interface.json"):
        (data / name).symlink_to(TAU2 / name)
    tasks = json.loads((TAU2 / "tasks.json").read_text())
    (data / "tasks.json").write_text(json.dumps(tasks))
    into = tmp_path / "suite"
    assert gs("import-tau2", str(data), "--into", str(into), "--task", "5")[0] == 0
    (into / "systems").mkdir()
    (into / "systems" / "mine.yaml").write_text("name: mine\n")  # the user's own file
    before = {p: p.read_bytes() for p in into.rglob("*") if p.is_file()}

    _actions(tasks)[1]["name"] = "refund_everything"
    (data / "tasks.json").write_text(json.dumps(tasks))
    assert gs("import-tau2", str(data), "--into", str(into), "--task", "5")[0] == 2
    assert {p: p.read_bytes() for p in into.rglob("*") if p.is_file()} == before

    assert gs("import-tau2", str(TAU2), "--into", str(into), "--task", "6")[0] == 0
    assert sorted(p.name for p in (into / "tasks").iterdir()) == ["retail-006.yaml"]
    assert (into / "systems" / "mine.yaml").read_text() == "name: mine\n"
    assert check_suite(into).ok


@needs_tau2
def test_a_converted_task_gives_a_model_driven_user_taus_instructions(tmp_path: Path) -> None:
    """They were only comments, so a `kind: model` user had the facts and nothing else."""
    assert gs("import-tau2", str(TAU2), "--into", str(tmp_path / "t"), "--task", "0")[0] == 0
    task = yaml.safe_load((tmp_path / "t" / "tasks" / "retail-000.yaml").read_text())
    source = json.loads((TAU2 / "tasks.json").read_text())[0]["user_scenario"]["instructions"]
    lines = task["user"]["instructions"].splitlines()
    assert lines == [
        f"Reason for call: {source['reason_for_call']}",
        f"Known info: {source['known_info']}",
        f"Unknown info: {source['unknown_info']}",
        f"Task instructions: {source['task_instructions']}",
    ]
    assert task["user_request"] == source["reason_for_call"]


# --- a tool that returns something JSON cannot hold ---------------------------------------------

# What book_room returns instead of its dict, and what the crash must name.
NOT_JSON = [
    ('{"booking_id": cur.lastrowid, "at": ctx.now()}', "'dict' with a datetime at output.at"),
    ('{"ids": [1, {"when": ctx.now().date()}]}', "'dict' with a date at output.ids[1].when"),
    ('{"price": float("nan")}', "'dict' with nan at output.price"),
    ('{(1, 2): "pair"}', "'dict' with a tuple key at output"),
    ("ctx.now()", "returned 'datetime', which"),
    ('float("inf")', "returned inf, which"),
    ("{1, 2}", "returned 'set', which"),
]


@pytest.mark.parametrize(("returned", "named"), NOT_JSON)
def test_a_tool_output_that_is_not_json_is_named_where_it_is(
    rooms: Path, returned: str, named: str
) -> None:
    """The crash said only "book_room returned 'dict', which is not JSON"."""
    tools = rooms / "tools.py"
    tools.write_text(
        tools.read_text().replace('return {"booking_id": cur.lastrowid}', f"return {returned}")
    )
    run = run_solution(load_suite(rooms), "book-room-a", "oracle")
    assert run.terminal_reason == "environment_failure/tool_crash"
    message = run.infrastructure_status["exception"]["message"]
    assert "book_room returned" in message and named in message and "not JSON" in message


def test_every_fails_by_form_the_solution_reference_lists_is_accepted(rooms: Path) -> None:
    row = next(
        line
        for line in (HERE.parent / "docs" / "reference" / "solution.md").read_text().splitlines()
        if line.startswith("| `fails_by` |")
    )
    forms = re.findall(r"`((?:outcome|constraint|agent_failure)[^`]*)`", row)
    assert {"outcome", "outcome:<id>", "constraint:<id>"} <= set(forms), forms
    bad = rooms / "solutions" / "book-room-a" / "bad_no_badge.yaml"
    ids = {"outcome:<id>": "outcome:booked", "constraint:<id>": "constraint:badge-first"}
    for form in forms:
        solution = yaml.safe_load(bad.read_text())
        solution["fails_by"] = ids.get(form, form)
        bad.write_text(yaml.safe_dump(solution))
        assert check_suite(rooms).errors == [], form


def _interface_edit(tools: list[Any], name: str, **change: Any) -> list[Any]:
    return [dict(tool, **change) if tool["name"] == name else tool for tool in tools]


PRECISION = {"name": "precision"}

# Each edit of τ²'s tools_interface.json and what the one line must name; None: it imports.
INTERFACE: dict[str, tuple[Any, str | None]] = {
    "a tool gone": (
        lambda t: [x for x in t if x["name"] != "get_order_details"],
        "has no tool 'get_order_details': the converted tasks would offer a tool the domain lacks",
    ),
    "a parameter renamed": (
        lambda t: _interface_edit(t, "get_order_details", parameters=[{"name": "id"}]),
        "get_order_details: takes (id), the importer's tool takes (order_id)",
    ),
    "a parameter added": (
        lambda t: _interface_edit(t, "calculate", parameters=[{"name": "expression"}, PRECISION]),
        "calculate: takes (expression, precision), the importer's tool takes (expression)",
    ),
    "not a list": (lambda t: {"tools": t}, "Input should be a valid list"),
    "a tool without a name": (lambda t: [t[0], {"parameters": []}], "[1].name: Field required"),
    "a tool the importer lacks": (lambda t: [*t, {"name": "refund_all", "parameters": []}], None),
}  # fmt: skip


@needs_tau2
@pytest.mark.parametrize("case", list(INTERFACE))
def test_a_tools_interface_that_differs_from_the_importers_tools_is_one_line(
    tmp_path: Path, case: str
) -> None:
    """tools_interface.json was never read: a domain whose interface lost a tool, or renamed
    a parameter, was converted into tasks offering the importer's tools all the same."""
    edit, named = INTERFACE[case]
    data = tmp_path / "retail"
    data.mkdir()
    for name in ("db.json", "policy.md", "split_tasks.json", "tasks.json"):
        (data / name).symlink_to(TAU2 / name)
    interface = json.loads((TAU2 / "tools_interface.json").read_text())
    (data / "tools_interface.json").write_text(json.dumps(edit(interface)))
    into = tmp_path / "suite"
    code, out, err = gs("import-tau2", str(data), "--into", str(into), "--task", "5")
    if named is None:  # a tool no gold action of task 5 uses: the import goes on
        assert code == 0, err
        return
    assert code == 2, out + err
    lines = err.strip().splitlines()
    assert len(lines) == 1 and "tools_interface.json" in lines[0] and named in lines[0], err
    assert not into.exists()


# --- validate's table at 80 columns -------------------------------------------------------------


def _validity_lines(suite: Path, width: int) -> list[str]:
    from rich.console import Console

    from groundstate.cli.tasks import _print_validity
    from groundstate.validation import validate_suite

    console = Console(width=width, record=True, file=io.StringIO())
    _print_validity(console, validate_suite(load_suite(suite)))
    return console.export_text().splitlines()


def test_validates_table_keeps_every_verdict_whole_at_80_columns(rooms: Path) -> None:
    """With a long task id every cell was cut ("p…", "1…") and the id too."""
    long_id = "cancel-someone-elses-booking-refused"
    task = yaml.safe_load((rooms / "tasks" / "cancel-other.yaml").read_text())
    (rooms / "tasks" / "cancel-other.yaml").unlink()
    (rooms / "tasks" / f"{long_id}.yaml").write_text(yaml.safe_dump({**task, "task_id": long_id}))
    (rooms / "solutions" / "cancel-other").rename(rooms / "solutions" / long_id)
    lines = _validity_lines(rooms, 80)
    assert all(len(line) <= 80 for line in lines[:9])  # the table (a pin line is pasteable)
    assert not any("…" in line for line in lines[:9]), "\n".join(lines[:9])
    table = "\n".join(lines[:9])
    for word in ("reset", "minating", "robust-", "agree-"):
        assert word in table
    rows = [line for line in lines[5:9] if " pass " in line]
    assert len(rows) == 2 and all(row.split()[-9:].count("pass") == 8 for row in rows), rows
    assert all("100%" in row for row in rows)
    folded = "".join(line.split()[0] for line in lines[6:9] if line.strip())
    assert long_id in folded  # folded onto more lines, never cut


# --- a Python check's verdict of the wrong shape ------------------------------------------------


@pytest.mark.parametrize(
    ("returned", "named"),
    [
        ('True, "no double bookings"', "returned str evidence, expected bool or (bool, evidence)"),
        ("True, None", "returned NoneType evidence"),
        ("True, [1, 2]", "returned list evidence"),
        ("True, {}, 'extra'", "returned a tuple of 3, expected bool or (bool, evidence)"),
        ("(True,)", "returned a tuple of 1"),
        ("1", "returned int, expected bool or (bool, evidence)"),
    ],
)
def test_a_check_verdict_of_the_wrong_shape_says_what_was_expected(
    rooms: Path, returned: str, named: str
) -> None:
    """`(True, "text")` gave "dictionary update sequence element #0 has length 1"."""
    checks = rooms / "checks.py"
    checks.write_text(checks.read_text().replace('len(rows) == 0, {"double": rows}', returned))
    run = run_solution(load_suite(rooms), "book-room-a", "oracle")
    assert run.terminal_reason == "grader_failure"
    (result,) = [r for r in run.outcome_assertion_results if r.id == "no-double"]
    assert result.error is not None and "checks.py:no_double_booking " + named in result.error


@needs_tau2
@pytest.mark.parametrize(
    ("options", "chosen"),
    [
        (["--task", "5"], "the 1 task chosen by --task of the 114"),
        (
            ["--sample", "2", "--seed", "3"],
            "a seeded random sample (--sample 2 --seed 3) of the 114",
        ),
    ],
)
def test_an_imported_suite_declares_its_population_and_only_the_decision_is_asked_for(
    tmp_path: Path, options: list[str], chosen: str
) -> None:
    """Every check, validate and run of an imported suite warned about both."""
    into = tmp_path / "t"
    assert gs("import-tau2", str(TAU2), "--into", str(into), *options)[0] == 0
    population = yaml.safe_load((into / "suite.yaml").read_text())["population"]
    assert population["sampling"].startswith(chosen)
    assert "not drawn at random" in population["sampling"]
    warnings = [p.field for p in check_suite(into).warnings]
    assert warnings == ["decision"]
