"""Hostile files, ninth round: YAML 1.1's yes/no/on/off and tags, suite names written in
another spelling than the suite's file list, and an MCP program's command line.

Each case asserts the one line a user sees (the file, the line or field, and the reason; exit
2) or, where a file loaded, that what it names is followed as the file it is.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from pydantic import ValidationError

from groundstate.errors import SpecError
from groundstate.spec.suite import load_suite
from groundstate.spec.system import load_system
from groundstate.spec.task import JudgeModel
from groundstate.validation.lock import lock_data

from .test_check import edit, line
from .test_loading_adversarial import errors

TASK = "tasks/book-room-a.yaml"
FIXTURE = "fixtures/rooms.yaml"


# --- YAML 1.1's booleans and tags -------------------------------------------------------------


@pytest.mark.parametrize(
    ("file", "old", "new", "field", "reason"),
    [
        (
            TASK,
            "confirms: true",
            "confirms: yes",
            "user.confirms",
            "yes reads as true in YAML 1.1 (and as text in YAML 1.2): write true, or quote"
            ' it ("yes")',
        ),
        (
            FIXTURE,
            'name: bo, badge: "9922"',
            'name: "NO", badge: OFF',
            "rows.employees[1].badge",
            "OFF reads as false in YAML 1.1 (and as text in YAML 1.2): write false, or quote"
            ' it ("OFF")',
        ),
        (
            TASK,
            "knowledge: {badge: ",
            "knowledge: {country: no, badge: ",
            "user.knowledge.country",
            "no reads as false in YAML 1.1",
        ),
    ],
)
def test_a_bare_yes_no_on_or_off_is_refused_with_its_field(
    rooms: Path, file: str, old: str, new: str, field: str, reason: str
) -> None:
    """`country: no` (Norway) was stored as false, a fixture's `badge: OFF` as 0, without a
    word: YAML 1.1 reads them as booleans, YAML 1.2 and a reader as text."""
    edit(rooms, file, old, new)
    code, lines = errors("check", str(rooms))
    assert code == 2
    assert lines[0].startswith(f"{rooms / file}:{line(rooms, file, new)}: {field}: {reason}")


def test_true_false_and_quoted_words_still_load(rooms: Path) -> None:
    edit(rooms, TASK, "knowledge: {badge: ", 'knowledge: {country: "no", answer: "Yes", badge: ')
    edit(rooms, TASK, "nothing_else_changed: true", "nothing_else_changed: True")
    task = load_suite(rooms).tasks["book-room-a"]
    assert task.user.knowledge["country"] == "no"
    assert task.user.knowledge["answer"] == "Yes"


@pytest.mark.parametrize(
    ("new", "reason"),
    [
        ("source: !!binary aGVsbG8=", "!!binary is not allowed: write the text itself"),
        (
            "source: !!python/name:os.system",
            "invalid YAML: the tag !!python/name:os.system is not allowed: a file holds text,",
        ),
        ("source: !custom x", "invalid YAML: the tag !custom is not allowed"),
    ],
)
def test_a_tag_is_refused_naming_its_field(rooms: Path, new: str, reason: str) -> None:
    """`!!binary aGVsbG8=` loaded as the text "hello" (pydantic takes bytes for text); another
    tag was `could not determine a constructor for the tag 'tag:yaml.org,2002:python/...'`,
    with no field."""
    edit(rooms, TASK, "source: newcomer audit", new)
    code, lines = errors("check", str(rooms))
    assert code == 2
    assert lines[0].startswith(f"{rooms / TASK}:{line(rooms, TASK, new)}: source: {reason}")


# --- names of suite files in another spelling -------------------------------------------------

SET = """constraint_sets:
  house:
    - id: no-double-set
      check: {ref}
"""


def test_a_set_check_outside_the_suite_is_one_line_not_a_traceback(rooms: Path) -> None:
    """A constraint set's check leading out of the suite was reported, and then every task
    including the set crashed `check` with `KeyError: '../checks.py'` (its digest looked up
    among the suite's files)."""
    shutil.copy(rooms / "checks.py", rooms.parent / "checks.py")
    (rooms / "suite.yaml").write_text(
        (rooms / "suite.yaml").read_text() + SET.format(ref="../checks.py:no_double_booking")
    )
    edit(
        rooms,
        TASK,
        "hard_process_constraints:",
        "constraint_sets: [house]\nhard_process_constraints:",
    )
    code, lines = errors("check", str(rooms))
    at = line(rooms, "suite.yaml", "../checks.py")
    outside = rooms.parent / "checks.py"
    assert (code, lines) == (
        2,
        [
            f"{rooms / 'suite.yaml'}:{at}: constraint_sets.house[0].check: '../checks.py' leads"
            f" outside the suite folder (to {outside})"
        ],
    )


@pytest.mark.parametrize("ref", ["./checks.py", "tasks/../checks.py", ".//checks.py"])
def test_a_check_named_in_another_spelling_is_followed_as_its_file(rooms: Path, ref: str) -> None:
    """`./checks.py:fn` crashed `check` (`KeyError: './checks.py'`); in a set it was worse
    where it loaded: the grader revision left the file out, so an edited check kept the
    task's revision (and its cached validity)."""
    edit(rooms, TASK, "check: checks.py:", f"check: {ref}:")
    before = load_suite(rooms).tasks["book-room-a"]
    assert before.outcome_assertions[1].check == "checks.py:no_double_booking"
    edit(rooms, "checks.py", "return len(rows) == 0", "return len(rows) < 2")
    after = load_suite(rooms).tasks["book-room-a"]
    assert after.grader_revision != before.grader_revision


def test_a_fixture_named_through_dot_dot_is_locked_by_its_digest(rooms: Path) -> None:
    """`initial_state_fixture: ../fixtures/rooms.yaml` loads (it stays inside the suite), but
    the lock named it `fixtures/../fixtures/rooms.yaml` and found no digest for it: a changed
    fixture went unnoticed by `lock --check`."""
    edit(
        rooms,
        TASK,
        "initial_state_fixture: rooms.yaml",
        "initial_state_fixture: ./../fixtures/rooms.yaml",
    )
    entry = lock_data(load_suite(rooms))["tasks"]["book-room-a"]["fixture"]
    assert entry["path"] == FIXTURE
    assert entry["sha256"] is not None


# --- an MCP program's command line ------------------------------------------------------------

MCP_SYSTEM = """name: probe
harness:
  system_prompt: probe
  orchestration_loop:
    entry: mcp-command
    params:
      command: {command}
      sandbox: none
"""


@pytest.mark.parametrize(
    ("command", "item", "reason"),
    [
        (
            '["{pyhton}", agent.py]',
            0,
            "'{pyhton}' is no placeholder (did you mean '{python}'?): the only one is {python}",
        ),
        ('["{python3}", agent.py]', 0, "'{python3}' is no placeholder (did you mean '{python}'?)"),
        ('[env, "{python}", agent.py]', 1, "'{python}' is no placeholder here: the only one is"),
        ('["{python} agent.py"]', 0, "a command list has one argument per item"),
        ('["{python}", agnet.py]', 1, "'agnet.py': no file agnet.py (from "),
        ('["{python}", "agnet.py:run"]', 1, "'agnet.py:run': no file agnet.py (from "),
    ],
)
def test_an_mcp_command_that_cannot_start_is_refused_by_check(
    rooms: Path, tmp_path: Path, command: str, item: int, reason: str
) -> None:
    """Each passed `check --system` and failed every attempt of a batch as the agent's fault
    (a script that is no file: Python exits 2) or as a harness failure (a placeholder
    passed as written, a program named with its arguments), the reason only in the
    program's stderr artifact."""
    (tmp_path / "agent.py").write_text("print('hi')\n")
    system = tmp_path / "mcp.yaml"
    system.write_text(MCP_SYSTEM.format(command=command))
    code, lines = errors("check", str(rooms), "--system", str(system))
    at = line(tmp_path, "mcp.yaml", "command:")
    field = f"harness.orchestration_loop.params.command[{item}]"
    assert code == 2
    assert len(lines) == 1
    assert lines[0].startswith(f"{system}:{at}: {field}: ")
    assert reason in lines[0]


def test_an_mcp_command_that_can_start_passes(rooms: Path, tmp_path: Path) -> None:
    (tmp_path / "agent.py").write_text("print('hi')\n")
    system = tmp_path / "mcp.yaml"
    system.write_text(MCP_SYSTEM.format(command='["{python}", agent.py, "{\\"a\\": 1}", -x]'))
    code, lines = errors("check", str(rooms), "--system", str(system))
    assert (code, lines[1:]) == (0, [])


# --- a model's decoding settings ---------------------------------------------------------------

MODEL_SYSTEM = """name: probe
model:
  revision: m-1
  decoding: {decoding}
harness:
  orchestration_loop: {{entry: openai-chat}}
"""


@pytest.mark.parametrize(
    ("decoding", "reason"),
    [
        ("{temperature: hot}", "temperature: a number, at least 0, not 'hot'"),
        ("{temperature: true}", "temperature: a number, at least 0, not True"),
        ("{top_p: 7}", "top_p: a number from 0 to 1, not 7"),
        ("{max_tokens: -5}", "max_tokens: a whole number, at least 1, not -5"),
        ("{seed: 1.5}", "seed: a whole number, not 1.5"),
        ("{stop: [END, 3]}", "stop: text or a list of texts, not ['END', 3]"),
        ("{temperatur: 0}", "'temperatur' is not a decoding setting (did you mean 'temperature'?)"),
    ],
)
def test_a_documented_decoding_setting_of_the_wrong_type_is_refused(
    tmp_path: Path, decoding: str, reason: str
) -> None:
    """Each loaded, and was sent to the API as written: every request of the batch refused
    (or a misspelt setting ignored by a lenient server), found one attempt at a time."""
    path = tmp_path / "system.yaml"
    path.write_text(MODEL_SYSTEM.format(decoding=decoding))
    with pytest.raises(SpecError) as caught:
        load_system(path)
    assert caught.value.field == "model.decoding"
    assert caught.value.reason.startswith(reason)


def test_other_decoding_keys_are_sent_as_they_are(tmp_path: Path) -> None:
    path = tmp_path / "system.yaml"
    decoding = "{temperature: 0.5, top_p: 1, max_tokens: 9, seed: 3, stop: END, top_k: 5}"
    path.write_text(MODEL_SYSTEM.format(decoding=decoding))
    assert load_system(path).model.decoding["top_k"] == 5


def test_a_model_judges_decoding_is_checked_alike() -> None:
    with pytest.raises(ValidationError, match="seed: a whole number, not 'x'"):
        JudgeModel(adapter="openai-chat", revision="m", decoding={"seed": "x"})


def test_a_suite_yaml_given_for_its_suite_says_to_give_the_folder(rooms: Path) -> None:
    """`validate rooms/suite.yaml` said `rooms/suite.yaml: not a suite folder (no suite.yaml)`,
    as if the file the user gave were missing."""
    given = rooms / "suite.yaml"
    code, lines = errors("validate", str(given), "--no-cache")
    reason = f"is a file, not a suite folder: give its folder ({rooms})"
    assert (code, lines) == (2, [f"error: {given}: {reason}"])


def test_a_bare_off_where_a_choice_of_words_is_expected_is_the_word(rooms: Path) -> None:
    """`mutation_testing: off`, as docs/validation.md writes it, is the word; `on` there is
    no flag either (it is not one of the words)."""
    suite = rooms / "suite.yaml"
    suite.write_text(suite.read_text() + "mutation_testing: off\ntool_robustness: report\n")
    assert load_suite(rooms).config.mutation_testing == "off"
    suite.write_text(suite.read_text().replace("tool_robustness: report", "tool_robustness: on"))
    code, lines = errors("check", str(rooms))
    at = line(rooms, "suite.yaml", "tool_robustness")
    reason = "tool_robustness: Input should be 'required', 'report' or 'off'"
    assert (code, lines) == (2, [f"{suite}:{at}: {reason}"])
