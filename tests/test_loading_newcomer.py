"""Mistakes a newcomer makes in task, suite, solution and system files, through `check`.

The first loading audit (test_loading_adversarial.py, test_fuzz_loading.py) covered files
that are not files, paths out of the suite, alias bombs and bounds. This one covers the
mistakes of someone writing their first suite from the docs: a misspelt field at any depth
(named, with the field they meant), a wrong type in a field that pydantic would quietly
coerce, and text files as editors save them (a byte order mark, CRLF, tabs, UTF-16, an empty
file, two documents, a control character). Each case asserts the exact line a user sees;
near misses that must keep loading sit beside them.
"""

from __future__ import annotations

import codecs
import shlex
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest
from click.testing import CliRunner

from groundstate.cli import main
from groundstate.spec.files import fields_at
from groundstate.spec.suite import load_suite
from groundstate.spec.system import SystemSpec, load_system
from groundstate.spec.task import AgentTask

from .conftest import BANK_SYSTEM
from .test_check import ORACLE, TASK, bank, edit, line
from .test_loading_adversarial import errors

__all__ = ["bank"]  # the fixture: a copy of the bank suite to edit

SUITE = "suite.yaml"

# (file, the text as written, the same text misspelt, the field path reported, the field meant)
MISSPELT = [
    (TASK, "user_request:", "user_requst:", "user_requst", "user_request"),
    (TASK, "slice_labels:", "slice_label:", "slice_label", "slice_labels"),
    (TASK, "  knowledge:", "  knowlege:", "user.knowlege", "knowledge"),
    (TASK, "  tables:", "  tabels:", "permissions.tabels", "tables"),
    (TASK, "      first:", "      frist:", "hard_process_constraints[0].before.frist", "first"),
    (
        TASK,
        "at_most: {n: 1, match:",
        "at_most: {n: 1, mach:",
        "hard_process_constraints[1].at_most.mach",
        "match",
    ),
    (
        TASK,
        "    expect_rows:",
        "    expect_row:",
        "outcome_assertions[0].expect_row",
        "expect_rows",
    ),
    (
        TASK,
        "        changed:",
        "        chaged:",
        "outcome_assertions[1].state_diff.accounts.chaged",
        "changed",
    ),
    (
        TASK,
        "{id: state, weight: 3",
        "{id: state, wieght: 3",
        "partial_credit_rubric[0].wieght",
        "weight",
    ),
    (ORACLE, "kind: oracle", "knd: oracle", "knd", "kind"),
    (ORACLE, "  - call: check_pin", "  - cal: check_pin", "steps[1].cal", "call"),
    (ORACLE, "    args: {account: A", "    arg: {account: A", "steps[1].arg", "args"),
    (SUITE, "canary: transfer", "canery: transfer", "canary_x", "canary"),
    (
        SUITE,
        "mutation_testing: report",
        "mutation_test: report",
        "mutation_test",
        "mutation_testing",
    ),
]


@pytest.mark.parametrize(("file", "old", "new", "field", "meant"), MISSPELT, ids=lambda v: str(v))
def test_a_misspelt_field_is_named_with_the_field_meant(
    bank: Path, file: str, old: str, new: str, field: str, meant: str
) -> None:
    edit(bank, file, old, new)
    field = field.replace("canary_x", "canery")
    code, lines = errors("check", str(bank))
    assert code == 2
    expected = (
        f"{bank / file}:{line(bank, file, new)}: {field}: unknown field (did you mean {meant!r}?)"
    )
    assert expected in lines, lines


@pytest.mark.parametrize(
    ("old", "new", "field", "hint"),
    [
        (
            "    before:",
            "    befor:",
            "hard_process_constraints[0]",
            "'befor' is not a field (did you mean 'before'?)",
        ),
        (
            "    at_most:",
            "    atmost:",
            "hard_process_constraints[1]",
            "'atmost' is not a field (did you mean 'at_most'?)",
        ),
        (
            "    sql:",
            "    sqll:",
            "outcome_assertions[0]",
            "'sqll' is not a field (did you mean 'sql'?)",
        ),
        (
            "    state_diff:",
            "    state_dif:",
            "outcome_assertions[1]",
            "'state_dif' is not a field (did you mean 'state_diff'?)",
        ),
        (
            "    check: checks",
            "    chek: checks",
            "outcome_assertions[2]",
            "'chek' is not a field (did you mean 'check'?)",
        ),
    ],
)
def test_a_misspelt_kind_says_which_kind_was_meant(
    bank: Path, old: str, new: str, field: str, hint: str
) -> None:
    """The kind picks the union member, so pydantic reports "needs exactly one of", not the
    unknown key: the hint names the key and the kind it resembles."""
    edit(bank, TASK, old, new)
    code, lines = errors("check", str(bank))
    assert code == 2
    (found,) = [text for text in lines if f": {field}: " in text]
    assert "needs exactly one of" in found and found.endswith(hint), found


def test_an_unknown_field_like_no_field_gets_no_guess(bank: Path) -> None:
    edit(bank, TASK, "step_limit: 6", "step_limit: 6\nowner_team: payments")
    code, lines = errors("check", str(bank))
    assert code == 2
    assert lines == [f"{bank / TASK}:{line(bank, TASK, 'owner_team')}: owner_team: unknown field"]


def test_fields_at_follows_models_lists_dicts_and_union_tags() -> None:
    assert "user_request" in fields_at(AgentTask, ())
    assert fields_at(AgentTask, ("hard_process_constraints", 0, "before", "before")) >= {
        "first",
        "then",
        "where",
    }
    assert "from" in fields_at(
        AgentTask, ("hard_process_constraints", 0, "provenance", "provenance")
    )
    assert fields_at(AgentTask, ("outcome_assertions", 1, "state_diff", "state_diff", "t")) >= {
        "added",
        "changed",
        "removed",
    }
    assert fields_at(SystemSpec, ("budgets",)) >= {"step_limit", "max_cost"}
    assert fields_at(AgentTask, ("no_such_field",)) == set()


@pytest.fixture
def system(tmp_path: Path) -> Path:
    """A copy of the bank system file, beside the agent it names."""
    folder = tmp_path / "systems"
    folder.mkdir()
    shutil.copy(BANK_SYSTEM.parent / "bank_agent.py", folder)
    shutil.copy(BANK_SYSTEM, folder / "system.yaml")
    return folder / "system.yaml"


@pytest.mark.parametrize(
    ("old", "new", "section", "key", "meant"),
    [
        ("  max_turns: 5", "  max_turn: 5", "user_simulator", "max_turn", "max_turns"),
        ("  system_prompt:", "  sytem_prompt:", "harness", "sytem_prompt", "system_prompt"),
        ("  revision: rule-based-1", "  revison: rule-based-1", "model", "revison", "revision"),
        ("    params:", "    param:", "harness.orchestration_loop", "param", "params"),
        ("  revision: task", "  revison: task", "grader", "revison", "revision"),
    ],
)
def test_a_misspelt_field_in_an_open_system_section_is_refused(
    bank: Path, system: Path, old: str, new: str, section: str, key: str, meant: str
) -> None:
    """Sections keep extra keys for the record, so `budgets: {step_limt: 10}` loaded and ran
    with no step limit from the system; a key that resembles a field is refused now."""
    edit(system.parent, system.name, old, new)
    code, lines = errors("check", str(bank), "--system", str(system))
    assert code == 2
    assert lines == [
        f"{system}:{line(system.parent, system.name, section.split('.')[-1] + ':')}: {section}:"
        f" {key!r} is not a field (did you mean {meant!r}?): extra keys are kept for the record"
        " but never read, so a misspelt field would have no effect"
    ]


def test_extra_keys_unlike_any_field_are_still_kept_and_hashed(system: Path) -> None:
    plain = load_system(system)
    edit(system.parent, system.name, "  max_turns: 5", "  max_turns: 5\n  owner: evals-team")
    extra = load_system(system)
    assert extra.user_simulator.max_turns == 5
    assert (extra.user_simulator.model_extra or {})["owner"] == "evals-team"
    assert extra.system_spec_hash != plain.system_spec_hash


def test_check_lists_every_problem_of_a_system_file(bank: Path, system: Path) -> None:
    edit(system.parent, system.name, "  step_limit: 10", "  step_limit: 0")
    edit(system.parent, system.name, "  max_turns: 5", "  max_turns: five")
    code, lines = errors("check", str(bank), "--system", str(system))
    assert code == 2
    assert [text.split(": ")[1] for text in lines] == [
        "user_simulator.max_turns",
        "budgets.step_limit",
    ]


@pytest.mark.parametrize(
    "number", ["2026", "1767261600", "1500000000.5", "0", '"1767261600"', "-3.5"]
)
def test_a_number_as_the_clock_is_refused_not_read_as_1970(bank: Path, number: str) -> None:
    edit(bank, TASK, 'clock: "2026-01-15T10:00:00+00:00"', f"clock: {number}")
    code, lines = errors("check", str(bank))
    assert code == 2
    assert lines == [
        f"{bank / TASK}:{line(bank, TASK, 'clock:')}: clock: {number.strip(chr(34))}"
        ' is a number: write a timestamp, such as "2026-01-15T10:00:00+00:00"'
    ]


@pytest.mark.parametrize(
    "clock",
    ['"2026-01-15T10:00:00+00:00"', "2026-01-15T10:00:00Z", "2026-01-15 10:00:00 +0"],
)
def test_timestamps_quoted_or_not_are_clocks(bank: Path, clock: str) -> None:
    edit(bank, TASK, 'clock: "2026-01-15T10:00:00+00:00"', f"clock: {clock}")
    task = load_suite(bank).tasks["transfer"]
    assert (task.clock.year, task.clock.month, task.clock.day) == (2026, 1, 15)


@pytest.mark.parametrize(
    ("file", "old", "new", "field"),
    [
        (
            TASK,
            "initial_state_fixture: bank.sql",
            'initial_state_fixture: ""',
            "initial_state_fixture",
        ),
        (SUITE, "tools: tools.py", 'tools: ""', "tools"),
        (SUITE, "policy: policy.md", 'policy: ""', "policy"),
    ],
)
def test_an_empty_file_name_is_refused_in_its_field(
    bank: Path, file: str, old: str, new: str, field: str
) -> None:
    """An empty name resolved to a folder: "fixtures: does not build: [Errno 21] Is a
    directory" or "bank: file not found", naming no field."""
    edit(bank, file, old, new)
    code, lines = errors("check", str(bank))
    assert code == 2
    assert lines == [
        f"{bank / file}:{line(bank, file, new)}: {field}: String should have at least 1 character"
    ]


@pytest.mark.parametrize(
    ("old", "new", "field"),
    [
        ('  knowledge: {pin: "1234"}', "  knowledge: pin", "user.knowledge"),
        ("  tables: {audit: none}", "  tables: audit", "permissions.tables"),
        ("reset_check:", "reset_check: none\nx:", "reset_check"),
    ],
)
def test_a_scalar_where_a_mapping_goes_names_no_class(
    bank: Path, old: str, new: str, field: str
) -> None:
    """pydantic says "a valid dictionary or instance of UserScenario": no file names a class."""
    if old == "reset_check:":
        edit(bank, TASK, "step_limit: 6", "step_limit: 6\nreset_check: none")
    else:
        edit(bank, TASK, old, new)
    code, lines = errors("check", str(bank))
    assert code == 2
    assert any(f": {field}: Input should be a valid dictionary" in text for text in lines), lines
    assert not any("instance of" in text for text in lines), lines


# Text files as editors save them: each form of the same task must load as the same task.
SAME_TASK = {
    "utf-8 with a byte order mark": lambda data: codecs.BOM_UTF8 + data,
    "CRLF line ends": lambda data: data.replace(b"\n", b"\r\n"),
    "CR line ends": lambda data: data.replace(b"\n", b"\r"),
    "no final newline": lambda data: data.rstrip(b"\n"),
}


@pytest.mark.parametrize("form", SAME_TASK)
def test_editor_encodings_of_a_task_load_as_the_same_task(bank: Path, form: str) -> None:
    before = load_suite(bank).tasks["transfer"]
    for file in (TASK, ORACLE, SUITE):
        (bank / file).write_bytes(SAME_TASK[form]((bank / file).read_bytes()))
    after = load_suite(bank)
    assert after.tasks["transfer"] == before
    code, lines = errors("check", str(bank))
    assert (code, lines) == (0, [f"{bank}: 1 task, no errors"])


@pytest.mark.parametrize(
    ("encode", "reason"),
    [
        (lambda text: text.encode("utf-16"), "UTF-16 text, not UTF-8: save the file as UTF-8"),
        (lambda text: text.encode("utf-16-be"), None),
        (lambda text: text.encode("utf-32"), "UTF-32 text, not UTF-8: save the file as UTF-8"),
        (lambda text: text.replace("Please", "Pléase").encode("latin-1"), "not UTF-8 text"),
    ],
)
def test_a_task_in_another_encoding_says_which(
    bank: Path, encode: Callable[[str], bytes], reason: str | None
) -> None:
    (bank / TASK).write_bytes(encode((bank / TASK).read_text()))
    code, lines = errors("check", str(bank))
    assert code == 2 and len(lines) == 1 and lines[0].startswith(f"{bank / TASK}: ")
    assert reason is None or reason in lines[0], lines


@pytest.mark.parametrize(
    ("old", "new", "reason"),
    [
        (
            "\n  knowledge:",
            "\n\tknowledge:",
            ":9: invalid YAML: found character '\\t' that cannot start any token"
            " (YAML indents with spaces: replace the tab)",
        ),
        (
            "source: groundstate tests",
            "source:\tgroundstate tests",
            ":3: invalid YAML: found character '\\t'",
        ),
        ("Please move", "Ple\x00ase move", ": invalid YAML: character U+0000 at offset "),
        ("Please move", "Ple\x1base move", ": invalid YAML: character U+001B at offset "),
        (
            "step_limit: 6",
            "step_limit: 6\n---\ntask_id: other",
            ":21: invalid YAML: a second YAML document (a '---' line) in the file;"
            " a file holds one",
        ),
    ],
)
def test_text_yaml_cannot_read_says_what_to_do(bank: Path, old: str, new: str, reason: str) -> None:
    edit(bank, TASK, old, new)
    code, lines = errors("check", str(bank))
    assert code == 2
    assert len(lines) == 1 and lines[0].startswith(f"{bank / TASK}{reason}"), lines


@pytest.mark.parametrize("content", ["", "\n\n", "# only a comment\n", "---\n", "~\n"])
def test_an_empty_task_file_says_it_is_empty(bank: Path, content: str) -> None:
    (bank / TASK).write_text(content)
    code, lines = errors("check", str(bank))
    assert code == 2
    assert lines == [f"{bank / TASK}: the file is empty (or only comments): expected its fields"]


def test_a_merge_key_that_brings_a_misspelt_field_is_named(bank: Path) -> None:
    """A merge (`<<: *base`) copies keys in: one misspelt in the anchor is reported where it
    lands, with the field meant."""
    edit(bank, TASK, "task_id: transfer", "task_id: transfer\nx: &limits {step_limt: 6}")
    edit(bank, TASK, "user:\n", "<<: *limits\nuser:\n")
    code, lines = errors("check", str(bank))
    assert code == 2
    assert lines == [
        f"{bank / TASK}: step_limt: unknown field (did you mean 'step_limit'?)",
        f"{bank / TASK}:2: x: unknown field",
    ]


def test_a_merge_of_constraint_parts_loads_like_the_spelled_out_task(bank: Path) -> None:
    before = load_suite(bank).tasks["transfer"]
    edit(
        bank,
        TASK,
        "      first: {tool: check_pin, ok: true}",
        "      first: &pin {tool: check_pin, ok: true}",
    )
    edit(
        bank,
        TASK,
        "      then: {tool: transfer}",
        "      then: {<<: *pin, tool: transfer, ok: null}",
    )
    after = load_suite(bank).tasks["transfer"]
    assert after == before


@pytest.mark.parametrize(
    ("header", "field", "column"),
    [
        ("task_id,atempt,success", "attempt", "atempt"),
        ("task_id,attempt,sucess", "success", "sucess"),
        ("taskid,attempt,success", "task_id", "taskid"),
    ],
)
def test_a_misspelt_required_column_of_an_import_is_named(
    tmp_path: Path, header: str, field: str, column: str
) -> None:
    results = tmp_path / "results.csv"
    results.write_text(f"{header}\nt1,0,true\n")
    code, lines = errors(
        "import-results", str(results), "--name", "x", "--store", str(tmp_path / "r.db")
    )
    assert code == 2
    assert lines == [
        f"error: {results}:2: {field}: required, and missing or blank"
        f" (the column {column!r} is no field)"
    ]


def test_a_misspelt_optional_column_is_a_warning_naming_the_column_meant(tmp_path: Path) -> None:
    results = tmp_path / "results.csv"
    results.write_text("task_id,attempt,success,weigth,notes\nt1,0,true,2,seen\n")
    result = CliRunner().invoke(
        main, ["import-results", str(results), "--name", "x", "--store", str(tmp_path / "r.db")]
    )
    assert result.exit_code == 0, result.output
    assert (
        f"warning: {results}: ignored columns no field reads: notes,"
        " weigth (did you mean 'weight'?)" in result.stderr.splitlines()
    )


def test_a_missing_field_of_an_open_section_names_the_key_that_was_meant(
    bank: Path, system: Path
) -> None:
    """The system's sections keep unknown keys, so `entri:` has no error of its own: the
    missing `entry` names it. (In strict files the unknown key has its own line instead.)"""
    edit(system.parent, system.name, "    entry:", "    entri:")
    code, lines = errors("check", str(bank), "--system", str(system))
    assert code == 2
    assert lines == [
        f"{system}:{line(system.parent, system.name, 'orchestration_loop:')}:"
        " harness.orchestration_loop.entry: required field is missing;"
        " 'entri' is not a field (did you mean 'entry'?)"
    ]


@pytest.mark.parametrize("name", ["my suite: x", "#x", "yes", "null", "[x]", "a'b\"c"])
def test_init_makes_a_suite_that_loads_whatever_the_folder_is_called(
    tmp_path: Path, name: str
) -> None:
    folder = tmp_path / name
    result = CliRunner().invoke(main, ["init", str(folder)])
    assert result.exit_code == 0, result.output
    assert load_suite(folder).config.name == name
    assert load_system(folder / "system.yaml").name == f"{name}-rules"
    assert f"  groundstate validate {shlex.quote(str(folder))}" in result.output.splitlines()


def test_runs_refuses_a_reason_that_is_none(tmp_path: Path) -> None:
    """A misspelt --reason matched nothing: "no run matches", read as "nothing failed so"."""
    code, lines = errors(
        "runs", "abc", "--reason", "agent_failur", "--store", str(tmp_path / "r.db")
    )
    assert code == 2
    assert (
        "Error: Invalid value for '--reason': 'agent_failur' is not a terminal reason (did you"
        " mean 'agent_failure'?); the classes are success, agent_failure,"
        " harness_compatibility_failure, environment_failure, grader_failure"
    ) in lines


def test_resuming_a_batch_that_does_not_exist_offers_no_resume(bank: Path, tmp_path: Path) -> None:
    store = tmp_path / "runs.db"
    CliRunner().invoke(
        main, ["import-results", str(_results(tmp_path)), "--name", "x", "--store", str(store)]
    )
    code, lines = errors(
        "run", str(bank), "--system", str(BANK_SYSTEM), "--resume", "nope", "--store", str(store)
    )
    assert code == 2
    assert lines == [f"error: no batch nope in the run store {store}"]


def _results(folder: Path) -> Path:
    results = folder / "results.csv"
    results.write_text("task_id,attempt,success\nt1,0,true\n")
    return results


@pytest.mark.parametrize(
    ("section", "key"),
    [("user_simulator", "persona_id"), ("tools", "registry"), ("model", "provider_name")],
)
def test_a_record_key_that_merely_resembles_a_field_is_kept(
    system: Path, section: str, key: str
) -> None:
    """Refusing is for near-certain typos (similarity 0.85 or more); these read as names."""
    text = system.read_text().replace(f"{section}:\n", f"{section}:\n  {key}: kept\n", 1)
    system.write_text(text if f"{key}: kept" in text else text + f"{section}: {{{key}: kept}}\n")
    spec = load_system(system)
    assert (getattr(spec, section).model_extra or {})[key] == "kept"


@pytest.mark.parametrize(
    ("old", "new", "field", "reason"),
    [
        (
            "bank_agent.py:bank_agent",
            "bank_agent.py:bank_agnet",
            "harness.orchestration_loop.entry",
            "'bank_agent.py:bank_agnet' names no callable (did you mean 'bank_agent'?)",
        ),
        (
            "bank_agent.py:bank_agent",
            "openai-chta",
            "harness.orchestration_loop.entry",
            "expected 'file.py:name', 'module:name' or a built-in adapter (openai-chat,"
            " anthropic-messages, mcp-command), got 'openai-chta' (did you mean 'openai-chat'?)",
        ),
    ],
)
def test_a_misspelt_agent_entry_or_parameter_names_what_was_meant(
    bank: Path, system: Path, old: str, new: str, field: str, reason: str
) -> None:
    edit(system.parent, system.name, old, new)
    code, lines = errors("check", str(bank), "--system", str(system))
    assert code == 2
    assert len(lines) == 1 and lines[0].endswith(f": {field}: {reason}"), lines


def test_a_misspelt_parameter_of_an_async_agent_names_the_one_meant(
    bank: Path, system: Path
) -> None:
    (system.parent / "agent.py").write_text(
        "async def agent(session, fault_rate: float = 0.1) -> str:\n    return 'done'\n"
    )
    edit(system.parent, system.name, "bank_agent.py:bank_agent", "agent.py:agent")
    edit(system.parent, system.name, "{fault_rate: 0.5}", "{fault_rat: 0.5}")
    code, lines = errors("check", str(bank), "--system", str(system))
    assert code == 2
    assert lines == [
        f"{system}:{line(system.parent, system.name, 'params:')}:"
        " harness.orchestration_loop.params: got an unexpected keyword argument 'fault_rat'"
        " (did you mean 'fault_rate'?)"
    ]


@pytest.mark.parametrize(
    ("file", "old", "new", "reason"),
    [
        (
            SUITE,
            "canary: transfer",
            "canary: transfr",
            "no task 'transfr' (did you mean 'transfer'?)",
        ),
        (
            TASK,
            "checks.py:money_conserved",
            "checks.py:money_conservd",
            "checks.py has no function 'money_conservd' (did you mean 'money_conserved'?)",
        ),
        (
            ORACLE,
            "call: check_pin",
            "call: check_ping",
            "'check_ping' is not a tool of tools.py (did you mean 'check_pin'?)",
        ),
    ],
)
def test_a_misspelt_reference_names_what_exists(
    bank: Path, file: str, old: str, new: str, reason: str
) -> None:
    edit(bank, file, old, new)
    code, lines = errors("check", str(bank))
    assert code == 2
    assert len(lines) == 1 and lines[0].endswith(reason), lines


def test_a_misspelt_fails_by_reason_names_the_reason_meant(bank: Path) -> None:
    edit(bank, "solutions/transfer/bad_no_pin.yaml", "constraint:pin-first", "agent_failure/gaveup")
    code, lines = errors("check", str(bank))
    assert code == 2
    assert len(lines) == 1 and lines[0].endswith("(did you mean 'agent_failure/gave_up'?)"), lines
