"""Hostile files, eighth round: what YAML and JSON read otherwise than they look, and files the
earlier audits did not read as a suite's other files are read.

Each case goes through the CLI (`check`, or `validate` where only it read the file) and
asserts the one line a user sees: the file, the line or field, and the reason; exit 2.
"""

from __future__ import annotations

import codecs
import json
import shutil
import sqlite3
from datetime import UTC, datetime
from pathlib import Path

import pytest
import yaml

from groundstate.environments.sqlite import fixture_image
from groundstate.errors import SpecError
from groundstate.spec.files import parse_json
from groundstate.spec.suite import load_suite

from .test_check import edit, line
from .test_loading_adversarial import errors

TASK = "tasks/book-room-a.yaml"
ORACLE = "solutions/book-room-a/oracle.yaml"
FIXTURE = "fixtures/rooms.yaml"
ADDED = '{room: R-A, employee: E1, day: "2026-01-16", slot: 9}'


# --- YAML 1.1 numbers that read otherwise than they look -------------------------------------


@pytest.mark.parametrize(
    ("written", "reason"),
    [
        ("010", '010 reads as the octal number 8 in YAML: quote it ("010") if it is text'),
        ("1:30", '1:30 reads as a base-60 number in YAML: quote it ("1:30") if it is text'),
        ("1:30.5", '1:30.5 reads as a base-60 number in YAML: quote it ("1:30.5") if it is'),
    ],
)
def test_octal_and_base_60_numbers_are_refused_with_their_line(
    rooms: Path, written: str, reason: str
) -> None:
    """`step_limit: 010` ran with 8 steps, `1:30` with 90: YAML 1.1 reads them so, a reader
    (and YAML 1.2, and JSON) does not."""
    edit(rooms, TASK, "step_limit: 10", f"step_limit: {written}")
    code, lines = errors("check", str(rooms))
    assert code == 2
    at = line(rooms, TASK, "step_limit")
    assert lines[0].startswith(f"{rooms / TASK}:{at}: step_limit: {reason}")


def test_a_zip_code_with_a_leading_zero_is_refused_in_a_fixture(rooms: Path) -> None:
    edit(rooms, FIXTURE, 'badge: "4411"}', "badge: 04411}")
    code, lines = errors("check", str(rooms))
    assert code == 2
    at = line(rooms, FIXTURE, "04411")
    where = "rows.employees[0].badge"
    assert lines[0].startswith(f"{rooms / FIXTURE}:{at}: {where}: 04411 reads as the octal number")


def test_numbers_that_read_as_they_look_still_load(rooms: Path) -> None:
    edit(rooms, TASK, "step_limit: 10", "step_limit: 0x0a")  # hexadecimal says so
    edit(rooms, TASK, "time_limit: 5", "time_limit: 1_0")
    edit(rooms, FIXTURE, "{id: R-B, capacity: 10}", "{id: R-B, capacity: 0}")
    task = load_suite(rooms).tasks["book-room-a"]
    assert (task.step_limit, task.time_limit) == (10, 10.0)
    edit(rooms, TASK, "step_limit: 0x0a", 'step_limit: "010"')  # quoted: text, refused as such
    code, lines = errors("check", str(rooms))
    assert code == 2 and "step_limit: Input should be a valid integer" in lines[0]


# --- bare timestamps: the text written -------------------------------------------------------


def _cells(fixture: Path, sql: str) -> list[tuple[object, ...]]:
    image, _ = fixture_image(fixture, datetime(2026, 1, 15, tzinfo=UTC))
    db = sqlite3.connect(":memory:")
    db.deserialize(image)
    return db.execute(sql).fetchall()


def test_a_bare_timestamp_in_a_fixture_is_stored_as_written(rooms: Path) -> None:
    """It was stored as Python's isoformat: `2026-01-10 09:00:00` became `...T09:00:00`, `Z`
    became `+00:00`, so an SQL assertion or a tool comparing the text written missed it."""
    edit(
        rooms, FIXTURE, 'created_at: "2026-01-10T09:00:00+00:00"', "created_at: 2026-01-10 09:00:00"
    )
    (rooms / "fixtures" / "z.yaml").write_text(
        (rooms / FIXTURE).read_text().replace("2026-01-10 09:00:00", "2026-01-10T09:00:00Z")
    )
    assert _cells(rooms / FIXTURE, "SELECT day, created_at FROM bookings") == [
        ("2026-01-16", "2026-01-10 09:00:00")
    ]
    assert _cells(rooms / "fixtures" / "z.yaml", "SELECT created_at FROM bookings") == [
        ("2026-01-10T09:00:00Z",)
    ]


@pytest.mark.parametrize(
    ("file", "old", "new"),
    [
        (TASK, ADDED, ADDED.replace('"2026-01-16"', "2026-01-16")),  # a state_diff cell
        (ORACLE, 'day: "2026-01-16"', "day: 2026-01-16"),  # a tool's argument
        (TASK, 'badge: "4411"}', 'badge: "4411", on: 2026-01-16}'),  # what the user knows
    ],
)
def test_a_bare_date_is_the_same_text_in_every_file(
    rooms: Path, file: str, old: str, new: str
) -> None:
    """The fixture stored a bare date as text while a task refused it in four errors (one per
    type a cell may have) and a solution handed the tool a `datetime.date`."""
    edit(rooms, file, old, new)
    suite = load_suite(rooms)
    assert errors("check", str(rooms)) == (0, [f"{rooms}: 2 tasks, no errors"])
    if file == ORACLE:
        assert suite.solutions["book-room-a"]["oracle"].steps[3].args["day"] == "2026-01-16"


@pytest.mark.parametrize(
    ("clock", "moment"),
    [
        ("2026-01-15 10:00:00 +0", datetime(2026, 1, 15, 10, tzinfo=UTC)),
        ('"2026-01-15 10:00:00 -1"', datetime(2026, 1, 15, 11, tzinfo=UTC)),  # quoted too
        ("2026-01-15t10:00:00z", datetime(2026, 1, 15, 10, tzinfo=UTC)),
        ("2026-01-15 1:00:00Z", datetime(2026, 1, 15, 1, tzinfo=UTC)),
    ],
)
def test_every_yaml_timestamp_form_is_still_a_clock(
    rooms: Path, clock: str, moment: datetime
) -> None:
    edit(rooms, TASK, 'clock: "2026-01-15T10:00:00+00:00"', f"clock: {clock}")
    assert load_suite(rooms).tasks["book-room-a"].clock == moment


# --- a judge's labelled set: read by `check`, as every file of the suite --------------------

JUDGED = """  - id: reply
    judge: checks.py:says_booked
    labels: judges/reply.jsonl
    min_agreement: 0.4
  - id: no-double
"""


def _with_judge(rooms: Path, labels: bytes) -> Path:
    with (rooms / "checks.py").open("a") as checks:
        checks.write("\n\ndef says_booked(s0, sT, final_message, trace):\n")
        checks.write('    return "ooked" in (final_message or ""), "read"\n')
    edit(rooms, TASK, "  - id: no-double\n", JUDGED)
    (rooms / "judges").mkdir()
    (rooms / "judges" / "reply.jsonl").write_bytes(labels)
    return rooms / "judges" / "reply.jsonl"


def _item(n: int, **fields: object) -> bytes:
    item = {"id": f"i{n}", "final_message": "Booked.", "label": True, **fields}
    return json.dumps(item).encode() + b"\n"


@pytest.mark.parametrize(
    ("bad", "reason"),
    [
        (b'{"id": "x", "final_message": "caf\xe9", "label": true}\n', "not UTF-8 text"),
        (b'{"id": "x", "final_message": NaN, "label": true}\n', "NaN is not a finite number"),
        (_item(3, labl=False), "labl: unknown field (did you mean 'label'?)"),
        (b"[1, 2]\n", "expected a JSON object on each line"),
        (b'{"id": "x", "id": "y", "final_message": "a", "label": true}\n', "duplicate key"),
    ],
)
def test_a_bad_labelled_set_is_named_by_check(rooms: Path, bad: bytes, reason: str) -> None:
    """`check` passed it, and `validate` said "judge_agreement: could not be checked:
    UnicodeDecodeError: 'utf-8' codec can't decode byte 0xe9 in position 599", no file named."""
    path = _with_judge(rooms, _item(1) + _item(2, final_message="No.", label=False) + bad)
    code, lines = errors("check", str(rooms))
    assert code == 2 and len(lines) == 1, lines
    assert lines[0].startswith(str(path)) and reason in lines[0]
    if reason != "not UTF-8 text":  # a line, where the file has lines
        assert lines[0].startswith(f"{path}:3: ")


def test_a_good_labelled_set_passes_check(rooms: Path) -> None:
    labels = _item(1) + b"\r\n" + _item(2, final_message="No\u2028more.", label=False)
    _with_judge(rooms, codecs.BOM_UTF8 + labels)
    assert errors("check", str(rooms)) == (0, [f"{rooms}: 2 tasks, no errors"])


# --- a value that fits no type of a cell: one error ------------------------------------------


def test_a_mapping_for_a_cell_is_one_error_at_the_cell(rooms: Path) -> None:
    edit(rooms, TASK, ADDED, ADDED.replace("slot: 9", "slot: {at: 9}"))
    code, lines = errors("check", str(rooms))
    assert (code, lines) == (
        2,
        [
            f"{rooms / TASK}:{line(rooms, TASK, 'slot: {at: 9}')}:"
            " outcome_assertions[0].state_diff.bookings.added[0].slot:"
            " expected text, a number or true/false; found a mapping"
        ],
    )


# --- JSON and text as editors save them --------------------------------------------------------


def _json_fixture(rooms: Path, text: str) -> None:
    (rooms / "fixtures" / "rooms.json").write_bytes(text.encode())
    for task in ("book-room-a", "cancel-other"):
        edit(rooms, f"tasks/{task}.yaml", "rooms.yaml", "rooms.json")


def _fixture_json(rooms: Path) -> str:
    return json.dumps(yaml.safe_load((rooms / FIXTURE).read_text()), default=str)


def test_a_json_key_stated_twice_is_refused(rooms: Path) -> None:
    """YAML refused it; JSON kept the last value without a word."""
    _json_fixture(rooms, _fixture_json(rooms).replace('{"id": "E1"', '{"id": "E1", "id": "E7"'))
    code, lines = errors("check", str(rooms))
    assert (code, lines) == (
        2,
        [f"{rooms / 'fixtures/rooms.json'}: not valid JSON: duplicate key 'id'"],
    )
    with pytest.raises(SpecError, match="duplicate key 'a'"):
        parse_json("x.json", '[{"b": 1}, {"a": 1, "b": 2, "a": 1}]')


def test_a_utf8_byte_order_mark_is_not_part_of_the_text(rooms: Path) -> None:
    """A JSON fixture saved "UTF-8 with BOM" was refused ("decode using utf-8-sig"); a policy
    so saved handed the agent a U+FEFF."""
    _json_fixture(rooms, "\ufeff" + _fixture_json(rooms))
    policy = rooms / "policy.md"
    policy.write_bytes(codecs.BOM_UTF8 + policy.read_bytes())
    assert errors("check", str(rooms))[0] == 0
    assert not load_suite(rooms).policy.startswith("\ufeff")
    (rooms / "fixtures" / "rooms.json").write_bytes(codecs.BOM_UTF8 + b'{"schema": "\xe9"}')
    code, lines = errors("check", str(rooms))
    assert code == 2
    assert f"{rooms / 'fixtures/rooms.json'}: not UTF-8 text (invalid byte at offset 15)" in lines


# --- names that one file system keeps apart and another does not --------------------------


def test_files_differing_only_in_case_are_refused(rooms: Path) -> None:
    """Copied to macOS or Windows, one of the two would be lost (and the suite's hash change)."""
    other = rooms / "tasks" / "Book-Room-A.yaml"
    other.write_text((rooms / TASK).read_text().replace("book-room-a", "Book-Room-A"))
    code, lines = errors("check", str(rooms))
    assert (code, lines) == (
        2,
        [
            f"{rooms / TASK}: differs from tasks/Book-Room-A.yaml only in case:"
            " on macOS and Windows they are one file"
        ],
    )


def test_a_canary_whose_file_is_a_folder_is_not_hinted_as_itself(rooms: Path) -> None:
    (rooms / TASK).unlink()
    (rooms / TASK).mkdir()
    assert errors("check", str(rooms)) == (2, [f"{rooms / TASK}: is a folder, not a file"])


# --- a folder where a file is expected, and a file where a folder is --------------------------


def test_a_file_where_the_solutions_of_a_task_go_is_named(rooms: Path) -> None:
    """`check` said "no errors" and the task had no solutions at all."""
    shutil.rmtree(rooms / "solutions" / "book-room-a")
    (rooms / "solutions" / "book-room-a").write_text("steps: []\n")
    where = rooms / "solutions" / "book-room-a"
    reason = "not a folder: solutions go in solutions/<task_id>/"
    assert errors("check", str(rooms)) == (2, [f"{where}: {reason}"])
    shutil.rmtree(rooms / "solutions")
    (rooms / "solutions").write_text("")
    assert errors("check", str(rooms)) == (2, [f"{rooms / 'solutions'}: {reason}"])


def test_a_folder_for_the_tools_file_is_named_as_one(rooms: Path) -> None:
    """It was `fixtures: file not found`; then `fixtures: is a folder, not a file`, naming
    no field (the twenty-third round names the field of suite.yaml that names it)."""
    (rooms / "suite.yaml").write_text((rooms / "suite.yaml").read_text() + "tools: fixtures\n")
    code, lines = errors("check", str(rooms))
    assert (code, len(lines)) == (2, 1), lines
    assert lines[0].startswith(f"{rooms / 'suite.yaml'}:")
    assert lines[0].endswith(": tools: fixtures: is a folder, not a file")


# --- what the loader refuses names the field, not only the line -------------------------------


@pytest.mark.parametrize(
    ("old", "new", "where", "reason"),
    [
        (
            "      then: {tool: book_room}",
            "      then: {tool: book_room}\n      first: {tool: x}",
            "hard_process_constraints[0].before.first",
            "duplicate key 'first'",
        ),
        (
            ADDED,
            ADDED.replace("slot: 9", "slot: .nan"),
            "outcome_assertions[0].state_diff.bookings.added[0].slot",
            "'.nan' is not a finite number",
        ),
        ("step_limit: 10", "step_limit: 010", "step_limit", "010 reads as the octal number 8"),
    ],
)
def test_a_refused_value_is_named_by_its_path_in_the_file(
    rooms: Path, old: str, new: str, where: str, reason: str
) -> None:
    """`FILE:18: duplicate key 'first'` left the reader to find which of the task's `first`."""
    edit(rooms, TASK, old, new)
    code, lines = errors("check", str(rooms))
    assert code == 2 and len(lines) == 1
    assert f": {where}: {reason}" in lines[0] and lines[0].startswith(f"{rooms / TASK}:")


# --- an MCP program's settings ------------------------------------------------------------------

MCP_SYSTEM = """name: mcp-probe
model: {revision: none, serving_route: local}
harness:
  system_prompt: probe
  orchestration_loop:
    entry: mcp-command
    params:
      command: ["{python}", agent.py]
      sandbox: none
      network: none
"""


@pytest.mark.parametrize(
    ("old", "new", "where", "reason"),
    [
        ("sandbox: none", "sandbox: nope", "params.sandbox", "must be bwrap or none, not 'nope'"),
        (
            "network: none",
            "network: false",
            "params.network",
            "must be none or host, not False (YAML reads a bare no, off or false as false)",
        ),
        (
            "network: none",
            "netwrk: none",
            "params",
            "got an unexpected keyword argument 'netwrk' (did you mean 'network'?)",
        ),
    ],
)
def test_an_mcp_programs_setting_is_named_in_its_file(
    rooms: Path, tmp_path: Path, old: str, new: str, where: str, reason: str
) -> None:
    """The file was named as its folder (`sys: ...params: sandbox must be bwrap or none;
    network must be none or host`, both fields at once), a misspelt setting by the class's
    method (`McpCommandAgent.from_system() got an unexpected keyword argument`)."""
    (tmp_path / "agent.py").write_text("")  # a command naming no file is refused first
    system = tmp_path / "mcp.yaml"
    system.write_text(MCP_SYSTEM.replace(old, new))
    code, lines = errors("check", str(rooms), "--system", str(system))
    at = line(tmp_path, "mcp.yaml", where.split(".")[-1] + ":")
    field = "harness.orchestration_loop." + where
    assert (code, lines) == (2, [f"{system}:{at}: {field}: {reason}"])
