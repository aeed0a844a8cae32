"""Hostile files, tenth round: an MCP program that cannot start, fixtures past a sane size,
SQL errors located in the statement that fails, tool schemas, ids that look like others.

Each case asserts the one line a user sees (the file, the line or field, and the reason; exit
2), through ``check`` and, where the suite loads, the Python API.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from click.testing import CliRunner

from groundstate.cli import main
from groundstate.environments import sqlite as sqlite_env
from groundstate.errors import SpecError
from groundstate.spec.suite import load_suite
from groundstate.spec.system import load_system

from .test_check import line
from .test_loading_adversarial import errors
from .test_loading_round9 import MCP_SYSTEM

TASK = "tasks/book-room-a.yaml"


# --- an MCP program that cannot start ---------------------------------------------------------


@pytest.mark.parametrize(
    ("command", "reason"),
    [
        ("[no-such-agent-program, careful]", "no program 'no-such-agent-program' on PATH"),
        ("[./agent.sh]", "no program './agent.sh': no file "),
        ("[./plain.sh]", "'./plain.sh' is not executable: chmod +x "),
    ],
)
def test_an_mcp_program_that_cannot_start_is_refused_at_load(
    rooms: Path, tmp_path: Path, command: str, reason: str
) -> None:
    """Each passed `check --system`; `run` then failed its smoke run (or, with the smoke run
    passed over, every attempt) as a harness failure: only a run found the program missing."""
    (tmp_path / "plain.sh").write_text("#!/bin/sh\n")
    system = tmp_path / "mcp.yaml"
    system.write_text(MCP_SYSTEM.format(command=command))
    code, lines = errors("check", str(rooms), "--system", str(system))
    at = line(tmp_path, "mcp.yaml", "command:")
    assert code == 2
    assert lines == [lines[0]]
    assert lines[0].startswith(f"{system}:{at}: harness.orchestration_loop.params.command[0]: ")
    assert reason in lines[0]


def test_a_program_on_path_or_an_executable_file_loads(rooms: Path, tmp_path: Path) -> None:
    program = tmp_path / "agent.sh"
    program.write_text("#!/bin/sh\n")
    program.chmod(0o755)
    for command in ("[sh, -c, exit]", "[./agent.sh]"):
        system = tmp_path / "mcp.yaml"
        system.write_text(MCP_SYSTEM.format(command=command))
        code, lines = errors("check", str(rooms), "--system", str(system))
        assert (code, lines[1:]) == (0, []), command


# --- the SQL statement of a fixture that fails ------------------------------------------------

SCHEMA = (
    "CREATE TABLE employees (id TEXT PRIMARY KEY, name TEXT, badge TEXT);\n"
    "CREATE TABLE rooms (id TEXT PRIMARY KEY, capacity INTEGER);\n"
    "CREATE TABLE bookings (id INTEGER PRIMARY KEY AUTOINCREMENT, room TEXT NOT NULL,"
    " employee TEXT NOT NULL, day TEXT NOT NULL, slot INTEGER NOT NULL, created_at TEXT);\n"
)


@pytest.mark.parametrize(
    ("sql", "at", "reason"),
    [
        # two statements on a line: was "You can only execute one statement at a time."
        ("INSERT INTO rooms VALUES ('R-A', 4); INSERT INTO nosuch VALUES (1);\n", 4, "no such"),
        ("INSERT INTO rooms VALUES ('R-A',\n 4); INSERT INTO nosuch\n VALUES (1);\n", 5, "no such"),
        ("-- rooms\n\nINSERT INTO rooms VALUES ('R-A', 4, 5);\n", 6, "has 2 columns but 3"),
        # SQLite quotes the text it refuses, line break included: still one line
        ("INSERT INTO rooms VALUES ('R-A, 4);\n", 4, 'unrecognized token: "\'R-A, 4);\\n"'),
    ],
)
def test_a_sql_fixture_error_names_the_statement_that_fails(
    rooms: Path, sql: str, at: int, reason: str
) -> None:
    fixture = rooms / "fixtures" / "rooms.sql"
    fixture.write_text(SCHEMA + sql)
    (rooms / TASK).write_text((rooms / TASK).read_text().replace("rooms.yaml", "rooms.sql"))
    code, lines = errors("check", str(rooms))
    assert code == 2
    assert lines == [f"{fixture}:{at}: does not build: {lines[0].partition('build: ')[2]}"]
    assert reason in lines[0]


def test_a_yaml_fixture_schema_error_names_the_statement_that_fails(rooms: Path) -> None:
    fixture = rooms / "fixtures" / "rooms.yaml"
    text = fixture.read_text().replace(
        "  CREATE TABLE rooms", "  CREATE TABLE rooms (x); CREATE TABLE rooms"
    )
    fixture.write_text(text)
    code, lines = errors("check", str(rooms))
    at = line(rooms, "fixtures/rooms.yaml", "CREATE TABLE rooms")
    assert (code, lines) == (2, [f"{fixture}:{at}: does not build: table rooms already exists"])


# --- what a fixture's build may do, and how large it may be ----------------------------------


def sql_fixture(rooms: Path, sql: str) -> Path:
    fixture = rooms / "fixtures" / "rooms.sql"
    fixture.write_text(SCHEMA + sql)
    (rooms / TASK).write_text((rooms / TASK).read_text().replace("rooms.yaml", "rooms.sql"))
    return fixture


@pytest.mark.parametrize(
    ("sql", "reason"),
    [
        ("ATTACH DATABASE '{out}' AS other;\n", "ATTACH and VACUUM INTO are not allowed"),
        ("VACUUM INTO '{out}';\n", "ATTACH and VACUUM INTO are not allowed"),
        ("PRAGMA max_page_count = 2147483646;\n", "PRAGMA max_page_count is set by groundstate"),
        ("PRAGMA Page_Size = 65536;\n", "PRAGMA Page_Size is set by groundstate"),
    ],
)
def test_a_fixture_reaching_outside_its_database_is_refused(
    rooms: Path, tmp_path: Path, sql: str, reason: str
) -> None:
    """`ATTACH` read another file into the initial state (no suite hash covers it) and, like
    `VACUUM INTO`, created a file wherever it named, even under `check`; the page settings
    would lift the size limit below."""
    out = tmp_path / "outside.db"
    fixture = sql_fixture(rooms, sql.format(out=out))
    code, lines = errors("check", str(rooms))
    assert (code, lines) == (
        2,
        [f"{fixture}:4: does not build: {reason}{lines[0].partition(reason)[2]}"],
    )
    assert not out.exists()


def test_reading_the_page_settings_and_other_pragmas_still_build(rooms: Path) -> None:
    sql_fixture(rooms, "PRAGMA page_size;\nPRAGMA foreign_keys = ON;\n")
    code, lines = errors("check", str(rooms))
    assert (code, lines[1:]) == (0, [])


def test_a_fixture_building_a_database_past_the_limit_is_refused(
    rooms: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A few lines of SQL (or rows) built an in-memory database without bound: every process
    holds the image and every reset copies it, so the machine ran out of memory."""
    monkeypatch.setattr(sqlite_env, "MAX_FIXTURE_DATABASE_BYTES", 64 * 1024)
    grow = (
        "CREATE TABLE big (x);\nWITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n"
        " LIMIT 100) INSERT INTO big SELECT zeroblob(1000) FROM n;\n"
    )
    fixture = sql_fixture(rooms, grow)
    code, lines = errors("check", str(rooms))
    reason = "does not build: builds a database larger than 0.0625 MiB, the most a fixture may"
    assert code == 2
    assert lines == [lines[0]] and lines[0].startswith(f"{fixture}: {reason}")
    # the same past the limit by a YAML fixture's rows
    yaml_fixture = rooms / "fixtures" / "rows.yaml"
    rows = "".join(f"    - {{id: R{i}{'-' * 1000}, capacity: 1}}\n" for i in range(100))
    yaml_fixture.write_text(f"schema: {SCHEMA.replace(chr(10), ' ')!r}\nrows:\n  rooms:\n{rows}")
    (rooms / TASK).write_text((rooms / TASK).read_text().replace("rooms.sql", "rows.yaml"))
    code, lines = errors("check", str(rooms))
    assert code == 2
    assert lines == [lines[0]] and lines[0].startswith(f"{yaml_fixture}: {reason}")


def test_a_fixture_file_past_the_limit_is_refused_before_it_is_read(
    rooms: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An SQL or JSON fixture was read whole, however large (a YAML one stopped at 10 MiB)."""
    monkeypatch.setattr(sqlite_env, "MAX_FIXTURE_BYTES", 1024)
    fixture = sql_fixture(rooms, "-- padding\n" * 100)
    code, lines = errors("check", str(rooms))
    assert (code, lines) == (2, [f"{fixture}: larger than 1,024 bytes"])


# --- tools no agent could be offered ----------------------------------------------------------

RAW = """
from groundstate.tools import Tool

raw = Tool(name={name!r}, description="d", parameters={schema}, fn=lambda ctx: 1)
"""


@pytest.mark.parametrize(
    ("name", "schema", "reason"),
    [
        ("raw", "{'type': 'objekt'}", "parameters: a JSON Schema of type object"),
        ("raw", "[]", "parameters: a JSON Schema of type object"),
        (
            "raw",
            "{'type': 'object', 'properties': {'a': {'type': 'strng'}}}",
            "parameters['properties']['a']['type']: not valid JSON Schema: 'strng' is not valid",
        ),
        (
            "raw",
            "{'type': 'object', 'properties': {'a': {'type': 'string', 'pattern': '['}}}",
            "parameters['properties']['a']['pattern']: not valid JSON Schema: '[' is not a 'regex'",
        ),
        (
            "raw",
            "{'type': 'object', 'required': 'a'}",
            "parameters['required']: not valid JSON Schema: 'a' is not of type 'array'",
        ),
        ("réserver", "{'type': 'object'}", "a tool name is 1 to 64 ASCII letters, digits"),
        ("a" * 65, "{'type': 'object'}", "a tool name is 1 to 64 ASCII letters, digits"),
    ],
)
def test_a_tool_no_agent_could_be_offered_is_refused_at_load(
    rooms: Path, name: str, schema: str, reason: str
) -> None:
    """A declared schema that is no JSON Schema (or no object's) loaded: the gateway then
    failed on every call of the tool, and a model API refused every request naming a tool
    whose name it does not take."""
    tools = rooms / "tools.py"
    tools.write_text(tools.read_text() + RAW.format(name=name, schema=schema))
    at = line(rooms, "tools.py", "raw = Tool(")
    code, lines = errors("check", str(rooms))
    assert (code, lines) == (2, [f"{tools}:{at}: {name}: {reason}{lines[0].partition(reason)[2]}"])
    with pytest.raises(SpecError, match=re.escape(reason)):
        load_suite(rooms)


def test_a_tool_parameter_type_without_a_schema_is_named(rooms: Path) -> None:
    """Was pydantic's paragraph (`Unable to generate pydantic-core schema for <built-in
    function allocate_lock>. Set arbitrary_types_allowed...`), naming neither tool nor
    parameter, its line breaks printed as `\\n`."""
    tools = rooms / "tools.py"
    weird = """
import threading

@tool
def weird(ctx: ToolContext, lock: threading.Lock) -> str:
    '''x'''
    return ""
"""
    tools.write_text(tools.read_text() + weird)
    code, lines = errors("check", str(rooms))
    at = line(rooms, "tools.py", "def weird") - 1  # the decorator's line
    assert code == 2
    assert lines[0].startswith(
        f"{tools}:{at}: importing failed: TypeError: tool 'weird': parameter 'lock': its type"
    )
    assert lines[0].endswith(
        "has no JSON schema (use str, int, float, bool, Literal, lists, dicts or pydantic models)"
    )


# --- ids that could be taken for others -------------------------------------------------------

CYRILLIC_I = "\u0456"  # looks like a Latin i
FULLWIDTH_B = "\uff42"


@pytest.mark.parametrize(
    ("old", "new", "field", "reason"),
    [
        (
            "id: one-booking",
            f"id: badge-f{CYRILLIC_I}rst",
            "hard_process_constraints[4].id",
            f"'badge-f{CYRILLIC_I}rst' mixes Latin letters with Cyrillic ones that look like"
            f" them ('{CYRILLIC_I}' (U+0456 CYRILLIC SMALL LETTER BYELORUSSIAN-UKRAINIAN I))",
        ),
        (
            "id: one-booking",
            'id: "badge-first\\u200b"',
            "hard_process_constraints[4].id",
            "'badge-first\\u200b' holds '\\u200b' (U+200B ZERO WIDTH SPACE), which does not show",
        ),
        (
            "id: no-double",
            'id: "no\\ndouble"',
            "outcome_assertions[1].id",
            "'no\\ndouble' holds '\\n' (U+000A a control character), which does not show",
        ),
        ("id: one-booking", 'id: " "', "hard_process_constraints[4].id", "is blank"),
        (
            "id: booked",
            f"id: {FULLWIDTH_B}ooked",
            "outcome_assertions[0].id",
            f"holds '{FULLWIDTH_B}' (U+FF42 FULLWIDTH LATIN SMALL LETTER B), which stands for"
            " 'b': write 'booked'",
        ),
        ("slice_labels: [booking]", 'slice_labels: [""]', "slice_labels[0]", "is blank"),
        (
            "slice_labels: [booking]",
            "slice_labels: [b\u043eoking]",
            "slice_labels[0]",
            "mixes Latin letters with Cyrillic ones",
        ),
    ],
)
def test_an_id_that_could_be_taken_for_another_is_refused(
    rooms: Path, old: str, new: str, field: str, reason: str
) -> None:
    """Each loaded: a constraint `badge-first` beside one with a Cyrillic i, an id with
    a zero-width space or a line break, a blank id (no `fails_by` can name it), a slice label
    `--slice booking` never selects. Reports print them as if they were the same."""
    task = rooms / TASK
    task.write_text(task.read_text().replace(old, new, 1))
    code, lines = errors("check", str(rooms))
    at = line(rooms, TASK, new.partition(" ")[0] if old.startswith("slice") else new)
    assert code == 2
    assert lines == [lines[0]] and lines[0].startswith(f"{task}:{at}: {field}: ")
    assert reason in lines[0]


def test_ids_in_one_script_or_with_inner_spaces_load(rooms: Path) -> None:
    task = rooms / TASK
    text = task.read_text().replace("id: one-booking", "id: \u043e\u0434\u0438\u043d")
    text = text.replace("id: no-double", "id: no double").replace("[booking]", "[予約-booking]")
    task.write_text(text)
    code, lines = errors("check", str(rooms))
    assert (code, lines[1:]) == (0, [])


# --- a system naming a tool the suite does not have -------------------------------------------

AGENT = Path(__file__).parents[1] / "examples" / "agents" / "retail_agents.py"
DESCRIBED_SYSTEM = f"""name: probe
harness:
  tool_descriptions: {{{{{{descriptions}}}}}}
  orchestration_loop:
    entry: {AGENT}:careful
"""


def described(tmp_path: Path, descriptions: str) -> Path:
    system = tmp_path / "system.yaml"
    system.write_text(DESCRIBED_SYSTEM.format(descriptions=descriptions))
    return system


def test_a_description_of_a_misspelt_tool_is_refused_by_check_and_run(
    rooms: Path, tmp_path: Path
) -> None:
    """`tool_descriptions: {book_rom: ...}` loaded and ran: the agent saw the suite's own
    description of book_room, and nothing said the override was never used."""
    system = described(tmp_path, "book_rom: Book a room (say which)., talk_to_user: Ask.")
    at = line(tmp_path, "system.yaml", "tool_descriptions")
    expected = (
        f"{system}:{at}: harness.tool_descriptions.book_rom: 'book_rom' is no tool of suite"
        " 'rooms' (did you mean 'book_room'?): this description is never shown"
    )
    assert errors("check", str(rooms), "--system", str(system)) == (2, [expected])
    store = tmp_path / "runs.db"
    code, lines = errors("run", str(rooms), "--system", str(system), "--store", str(store))
    assert (code, lines) == (2, [f"error: {expected}"])
    assert not store.exists()


def test_a_description_of_another_suites_tool_is_a_warning(rooms: Path, tmp_path: Path) -> None:
    system = described(tmp_path, "cancel_flight: Cancel a flight., book_room: Book it.")
    result = CliRunner().invoke(main, ["check", str(rooms), "--system", str(system)])
    assert result.exit_code == 0
    assert "warning: " in result.stdout
    assert "harness.tool_descriptions.cancel_flight: 'cancel_flight' is no tool" in result.stdout


# --- links and folders ------------------------------------------------------------------------


def test_a_suite_yaml_linked_from_outside_the_suite_is_refused(rooms: Path, tmp_path: Path) -> None:
    """A task file linked from outside was refused; suite.yaml loaded."""
    elsewhere = tmp_path / "elsewhere.yaml"
    (rooms / "suite.yaml").rename(elsewhere)
    (rooms / "suite.yaml").symlink_to(elsewhere)
    reason = f"a link leading outside the suite folder (to {elsewhere})"
    assert errors("check", str(rooms)) == (2, [f"{rooms / 'suite.yaml'}: {reason}"])
    with pytest.raises(SpecError, match="a link leading outside the suite folder"):
        load_suite(rooms)


def test_a_fixture_that_is_a_folder_is_named_as_one(rooms: Path) -> None:
    """Was `does not build: [Errno 21] Is a directory: '...'`."""
    (rooms / "fixtures" / "more.yaml").mkdir()
    (rooms / TASK).write_text((rooms / TASK).read_text().replace("rooms.yaml", "more.yaml"))
    folder = rooms / "fixtures" / "more.yaml"
    reason = "is a folder, not a file (a .sql, .yaml or .json)"
    assert errors("check", str(rooms)) == (2, [f"{folder}: {reason}"])


@pytest.mark.parametrize(
    ("entry", "reason"),
    [
        (
            "./agent:run",
            "'./agent' is neither a .py file nor a module name: expected 'file.py:name' or"
            " 'package.module:name', got './agent:run' (did you mean './agent.py:run'?)",
        ),
        ("../agents:run", "'../agents' is neither a .py file nor a module name"),
        ("':run'", "'' is neither a .py file nor a module name"),
    ],
)
def test_an_agent_entry_that_is_no_file_or_module_says_so(
    tmp_path: Path, entry: str, reason: str
) -> None:
    """Was `cannot import: ImportError: no package specified for '../agents' (required for
    relative module names)`, or `cannot import : ValueError: Empty module name`."""
    (tmp_path / "agent.py").write_text("def run(session):\n    pass\n")
    system = tmp_path / "system.yaml"
    system.write_text(f"harness:\n  orchestration_loop: {{entry: {entry}}}\n")
    with pytest.raises(SpecError) as raised:
        load_system(system)
    assert str(raised.value).startswith(f"{system}: harness.orchestration_loop.entry: {reason}")


def test_a_fixture_cell_that_is_a_mapping_is_named_at_its_cell(rooms: Path) -> None:
    """Was SQLite's `rows.a[0]: Error binding parameter 1: type 'dict' is not supported`."""
    fixture = rooms / "fixtures" / "rooms.json"
    fixture.write_text('{"schema": "CREATE TABLE a (x);", "rows": {"a": [{"x": {"y": 1}}]}}')
    (rooms / TASK).write_text((rooms / TASK).read_text().replace("rooms.yaml", "rooms.json"))
    reason = "expected text, a number or true/false; found a mapping"
    assert errors("check", str(rooms)) == (2, [f"{fixture}: rows.a[0].x: {reason}"])


def test_run_names_the_line_of_a_system_files_field(rooms: Path, tmp_path: Path) -> None:
    """`check --system` said `mcp.yaml:6: harness...command[0]: ...`; `run` said the same
    without the line."""
    system = tmp_path / "mcp.yaml"
    system.write_text(MCP_SYSTEM.format(command="[no-such-agent-program]"))
    store = tmp_path / "runs.db"
    code, lines = errors("run", str(rooms), "--system", str(system), "--store", str(store))
    at = line(tmp_path, "mcp.yaml", "command:")
    field = "harness.orchestration_loop.params.command[0]"
    reason = "no program 'no-such-agent-program' on PATH"
    assert (code, lines) == (2, [f"error: {system}:{at}: {field}: {reason}"])
    assert not store.exists()
