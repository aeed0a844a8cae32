"""Hostile files, eleventh round: an agent's params of the wrong type, an empty policy,
defaults shared between loaded tasks and systems.

Each case asserts the one line a user sees (the file, the line or field, and the reason; exit
2), through ``check`` and, where the file loads, the Python API.
"""

from __future__ import annotations

import typing
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import CliRunner
from pydantic import BaseModel

from groundstate.agents.python import load_agent
from groundstate.cli import main
from groundstate.diagnosis.sampling import SheetRow
from groundstate.environments import sqlite as sqlite_env
from groundstate.errors import SpecError
from groundstate.records import AgentRun
from groundstate.spec.files import YamlDumper, read_yaml
from groundstate.spec.schemas import MODELS
from groundstate.spec.suite import load_suite
from groundstate.spec.system import load_system
from groundstate.spec.task import AgentTask, TerminalConditions
from groundstate.store import BatchInfo, Verification
from groundstate.testing import run_solution
from groundstate.validation.regress import regress
from groundstate.validation.static import check_system

from .test_check import edit, line
from .test_loading_adversarial import errors

TASK = "tasks/book-room-a.yaml"
FIXTURE = "fixtures/rooms.yaml"

AGENT_SYSTEM = """name: probe
harness:
  orchestration_loop:
    entry: agent.py:{entry}
    params:
      {params}
"""

AGENT_CODE = """from __future__ import annotations
from pathlib import Path
from typing import TYPE_CHECKING, Literal
if TYPE_CHECKING:
    from decimal import Decimal

async def run(session, fault_rate: float = 0.1, names: list[str] | None = None,
              mode: Literal["fast", "slow"] = "fast", steps: int = 3, data: Path | None = None,
              untyped=0, later: Decimal = None, limit: int = None) -> str:
    return "done"

async def loose(session, **options: int) -> str:
    return "done"

class Agent:
    async def run(self, session):
        return "done"

def factory(rounds: int, tags: dict[str, str] | None = None) -> Agent:
    return Agent()
"""


def agent_system(tmp_path: Path, params: str, entry: str = "run") -> Path:
    (tmp_path / "agent.py").write_text(AGENT_CODE)
    system = tmp_path / "system.yaml"
    system.write_text(AGENT_SYSTEM.format(entry=entry, params=params))
    return system


# --- an agent's params of the wrong type --------------------------------------------------------


@pytest.mark.parametrize(
    ("entry", "params", "name", "reason"),
    [
        ("run", "fault_rate: high", "fault_rate", "must be a number, not 'high'"),
        ("run", 'fault_rate: "0.1"', "fault_rate", "must be a number, not '0.1'"),
        ("run", "names: [a, 3]", "names", "must be a list of text or null, not ['a', 3]"),
        ("run", "names: a", "names", "must be a list of text or null, not 'a'"),
        ("run", "mode: quick", "mode", "must be fast or slow, not 'quick'"),
        ("run", "steps: 2.5", "steps", "must be a whole number, not 2.5"),
        (
            "run",
            "steps: true",
            "steps",
            "must be a whole number, not True (YAML reads a bare no, off or false as false)",
        ),
        ("loose", "depth: deep", "depth", "must be a whole number, not 'deep'"),
        ("factory", "rounds: many", "rounds", "must be a whole number, not 'many'"),
        ("factory", "{rounds: 1, tags: {a: 1}}", "tags", "must be a mapping of text to text"),
    ],
)
def test_a_param_of_the_wrong_type_is_refused_naming_it(
    tmp_path: Path, entry: str, params: str, name: str, reason: str
) -> None:
    """Each passed `check --system`: the agent was given the value as written, and every
    attempt failed on it (`agent_failure/crashed`, the system's error blamed on the agent)."""
    system = agent_system(tmp_path, params, entry)
    problems = list(map(str, check_system(system)))
    field = f"harness.orchestration_loop.params.{name}"
    at = line(tmp_path, "system.yaml", f"{name}:") or line(tmp_path, "system.yaml", "params:")
    assert len(problems) == 1 and problems[0].startswith(f"{system}:{at}: {field}: {reason}")


def test_check_and_the_python_api_refuse_a_param_of_the_wrong_type(
    rooms: Path, tmp_path: Path
) -> None:
    system = agent_system(tmp_path, "fault_rate: high")
    code, lines = errors("check", str(rooms), "--system", str(system))
    at = line(tmp_path, "system.yaml", "fault_rate:")
    field = "harness.orchestration_loop.params.fault_rate"
    assert (code, lines) == (2, [f"{system}:{at}: {field}: must be a number, not 'high'"])
    with pytest.raises(SpecError, match=f"{field}: must be a number"):
        load_agent(load_system(system))


@pytest.mark.parametrize(
    "params",
    [
        "fault_rate: 1",  # a whole number is a number
        "{names: [a, b], mode: slow, steps: 4}",
        "data: ../data.json",  # a path is written as text
        "{names: null, untyped: [any, thing]}",  # no annotation: anything
        "later: 3",  # an annotation only a type checker can read: not checked
        "limit: null",  # `limit: int = None`: None is meant
    ],
)
def test_params_of_the_annotated_type_load(tmp_path: Path, params: str) -> None:
    system = agent_system(tmp_path, params)
    assert load_agent(load_system(system)) is not None


def test_an_mcp_programs_numeric_setting_of_the_wrong_type_is_refused(tmp_path: Path) -> None:
    """`memory_mb: lots` loaded and reached the sandbox's limits as text."""
    (tmp_path / "agent.py").write_text("")
    system = tmp_path / "mcp.yaml"
    system.write_text(
        "harness:\n  orchestration_loop:\n    entry: mcp-command\n    params:\n"
        '      command: ["{python}", agent.py]\n      sandbox: none\n      memory_mb: lots\n'
    )
    at = line(tmp_path, "mcp.yaml", "memory_mb:")
    field = "harness.orchestration_loop.params.memory_mb"
    reason = "must be a whole number, not 'lots'"
    assert list(map(str, check_system(system))) == [f"{system}:{at}: {field}: {reason}"]


# --- the policy ---------------------------------------------------------------------------------


def test_an_empty_policy_is_refused(rooms: Path) -> None:
    """A declared policy that is empty (or blank, or a byte order mark alone) loaded, and every
    agent was given no policy without a word."""
    for text in ("", "\ufeff\n"):
        (rooms / "policy.md").write_text(text, encoding="utf-8")
        with pytest.raises(SpecError, match=r"policy: policy\.md is empty"):
            load_suite(rooms)
    (rooms / "policy.md").write_text("  \n\n\t\n", encoding="utf-8")
    code, lines = errors("check", str(rooms))
    at = line(rooms, "suite.yaml", "policy:")
    reason = "policy.md is empty: write the policy, or remove `policy:`"
    assert (code, lines) == (2, [f"{rooms / 'suite.yaml'}:{at}: policy: {reason}"])


def test_a_policy_file_the_suite_does_not_name_is_a_warning(rooms: Path) -> None:
    """Without `policy:` the suite's policy.md was never given to the agent, without a word."""
    edit(rooms, "suite.yaml", "policy: policy.md\n", "")
    result = CliRunner().invoke(main, ["check", str(rooms)])
    assert result.exit_code == 0
    assert (
        f"warning: {rooms / 'suite.yaml'}: policy: not declared, so policy.md is never given"
        " to the agent: add `policy: policy.md`"
    ) in result.output


# --- defaults shared between loaded tasks and systems -------------------------------------------


def _models() -> list[type[BaseModel]]:
    """Every pydantic model a file format, a run record or a batch is made of."""
    found: set[type[BaseModel]] = set()
    todo: list[Any] = [*MODELS.values(), AgentRun, BatchInfo, Verification, SheetRow]
    while todo:
        hint = todo.pop()
        if isinstance(hint, type) and issubclass(hint, BaseModel):
            if hint not in found:
                found.add(hint)
                todo += [field.annotation for field in hint.model_fields.values()]
        else:
            todo += typing.get_args(hint)
    return sorted(found, key=lambda model: f"{model.__module__}.{model.__qualname__}")


def test_no_model_has_a_default_every_instance_shares() -> None:
    """`terminal_conditions: TerminalConditions = TerminalConditions()` was one object for
    every task that left the field out (pydantic copies only a default it cannot hash)."""
    shared = [
        f"{model.__name__}.{name}"
        for model in _models()
        for name, field in model.model_fields.items()
        if isinstance(field.default, BaseModel | dict | list | set)
    ]
    assert shared == []
    assert len(_models()) > 40  # the walk reaches the nested sections and items


def test_a_change_to_one_tasks_default_section_leaves_the_others(rooms: Path) -> None:
    for name in ("book-room-a", "cancel-other"):
        edit(rooms, f"tasks/{name}.yaml", "reset_check: {initial_state_hash: ", "# ")
    suite = load_suite(rooms)
    first, second = (suite.tasks[name] for name in ("book-room-a", "cancel-other"))
    for section in ("terminal_conditions", "reset_check", "permissions"):
        assert getattr(first, section) is not getattr(second, section), section
    object.__setattr__(first.terminal_conditions, "on_prohibited_action", "continue")
    assert second.terminal_conditions.on_prohibited_action == "end"
    assert (
        AgentTask.model_fields["terminal_conditions"].get_default(call_default_factory=True)
        == TerminalConditions()
    )


def test_a_change_to_one_systems_default_section_leaves_the_others(tmp_path: Path) -> None:
    one, other = (load_system(agent_system(tmp_path, "{}")) for _ in range(2))
    object.__setattr__(one.budgets, "step_limit", 3)
    object.__setattr__(one.invalid_run_policy, "max_retries", 0)
    assert (other.budgets.step_limit, other.invalid_run_policy.max_retries) == (None, 2)
    assert load_system(agent_system(tmp_path, "{}")).budgets.step_limit is None


# --- system settings that load and are never read -----------------------------------------------


@pytest.mark.parametrize(
    ("section", "field", "reason"),
    [
        ("budgets: {cost_limit: 2.0}", "budgets.cost_limit", "unknown field"),
        ("budgets: {max_steps: 5}", "budgets.max_steps", "unknown field"),
        ("budgets: {time: 30}", "budgets.time", "unknown field"),
        (
            "user_simulator: {model: {revision: gpt-4o}}",
            "user_simulator.model",
            "read only for kind: model, and this user is scripted: set kind: model, or remove it",
        ),
        (
            "user_simulator: {kind: person, prompt: 'You are {persona}.'}",
            "user_simulator.prompt",
            "read only for kind: model, and this user is person",
        ),
        ("user_simulator: {kind: scripted, seed: 7}", "user_simulator.seed", "read only for"),
        (
            "user_simulator: {max_turns: 5, time_limit: 30}",
            "user_simulator",
            "'time_limit' belongs in `budgets`: write it there (here it would be kept for the"
            " record and never read)",
        ),
        ("model: {revision: x, budgets: {max_cost: 1}}", "model", "'budgets' belongs at the top"),
        ("environment: {system_prompt: Be brief.}", "environment", "'system_prompt' belongs in"),
    ],
)
def test_a_system_setting_nothing_reads_is_refused(
    tmp_path: Path, section: str, field: str, reason: str
) -> None:
    """Each loaded: a budget under another name (`cost_limit`, as Inspect calls it) was kept
    "for the record" and never enforced; a model user's model, prompt or seed on a user whose
    `kind` was left out (scripted) was never called, the batch run with the scripted user."""
    system = agent_system(tmp_path, "{}")
    system.write_text(system.read_text() + section + "\n")
    at = line(tmp_path, "system.yaml", field.split(".")[-1] + ":")
    problems = list(map(str, check_system(system)))
    assert len(problems) == 1 and problems[0].startswith(f"{system}:{at}: {field}: {reason}")


def test_a_model_users_settings_and_record_keys_still_load(tmp_path: Path) -> None:
    system = agent_system(tmp_path, "{}")
    system.write_text(
        system.read_text()
        + "user_simulator: {kind: model, model: {revision: gpt-4o}, seed: 7, team: evals}\n"
        + "budgets: {max_cost: 2.0, step_limit: 9}\n"
    )
    spec = load_system(system)
    assert (spec.user_simulator.seed, spec.budgets.max_cost, spec.budgets.step_limit) == (7, 2, 9)


# --- a slice label twice ------------------------------------------------------------------------


def test_a_slice_label_listed_twice_is_refused(rooms: Path) -> None:
    """`slice_labels: [booking, booking]` loaded, and the booking slice counted the task twice
    (two tasks, its weight doubled in the slice's average)."""
    edit(rooms, TASK, "slice_labels: [booking]", "slice_labels: [booking, urgent, booking]")
    code, lines = errors("check", str(rooms))
    at = line(rooms, TASK, "slice_labels:")
    assert (code, lines) == (2, [f"{rooms / TASK}:{at}: slice_labels: listed twice: booking"])


def test_regressing_a_regression_task_labels_it_once(rooms: Path, tmp_path: Path) -> None:
    """The new task's labels were the old one's plus `regression`: a second time for a task
    regressed already, which its suite then refused."""
    edit(rooms, TASK, "slice_labels: [booking]", "slice_labels: [booking, regression]")
    suite = load_suite(rooms)
    failed = run_solution(suite, "book-room-a", "bad_no_badge")
    written = regress(failed, suite, into=rooms)
    assert load_suite(rooms).tasks[written.stem].slice_labels == ["booking", "regression"]


# --- a fixture's empty row ----------------------------------------------------------------------


def test_an_empty_fixture_row_is_a_row_of_defaults(rooms: Path) -> None:
    """`- {}` was `rows.rooms[1]: near ")": syntax error` (the SQL `INSERT ... () VALUES ()`)."""
    edit(
        rooms,
        FIXTURE,
        "rows:\n",
        "  CREATE TABLE notes (id INTEGER PRIMARY KEY, n INTEGER DEFAULT 7);\n"
        "rows:\n  notes: [{}, {n: 2}]\n",
    )
    assert errors("check", str(rooms))[0] == 0
    with sqlite_env.SqliteEnvironment(rooms / FIXTURE, clock=datetime(2026, 1, 1)) as env:
        assert env.initial_view().query("SELECT id, n FROM notes") == [(1, 7), (2, 2)]
    edit(rooms, FIXTURE, "- {id: R-B, capacity: 10}", "- {}")
    code, lines = errors("check", str(rooms))
    at = line(rooms, FIXTURE, "- {}")
    assert (code, lines[-1]) == (
        2,
        f"{rooms / FIXTURE}:{at}: rows.rooms[1]: NOT NULL constraint failed: rooms.capacity",
    )


# --- a fixture's cell stored otherwise than written ---------------------------------------------


@pytest.mark.parametrize(
    ("row", "column", "reason"),
    [
        ("{id: R-C, capacity: ten}", "capacity", "'ten' is text but rooms.capacity is INTEGER"),
        (
            '{id: R-C, capacity: "010"}',
            "capacity",
            "'010' is text but rooms.capacity is INTEGER (write 010 without quotes)",
        ),
        ("{id: 7, capacity: 1}", "id", "7 is a number but rooms.id is TEXT (write '7' in quotes)"),
        ("{id: true, capacity: 1}", "id", "True is a boolean but rooms.id is TEXT"),
    ],
)
def test_a_fixture_cell_stored_otherwise_than_written_is_refused(
    rooms: Path, row: str, column: str, reason: str
) -> None:
    """Each built: `"010"` became the number 10, `7` the text '7', `true` the text '1', and
    `ten` was text among numbers (above every one of them in a comparison)."""
    edit(rooms, FIXTURE, "- {id: R-B, capacity: 10}", f"- {row}")
    code, lines = errors("check", str(rooms))
    at = line(rooms, FIXTURE, row)
    assert code == 2 and len(lines) == 1, lines
    assert lines[0].startswith(f"{rooms / FIXTURE}:{at}: rows.rooms[1].{column}: {reason}")


# --- numbers YAML 1.1 reads as text ------------------------------------------------------------


@pytest.mark.parametrize(
    ("old", "new", "field", "reason"),
    [
        (
            "time_limit: 5",
            "time_limit: 1e2",
            "time_limit",
            "1e2 reads as text in YAML 1.1 (and as the number 100.0 in YAML 1.2 and JSON):"
            ' write 100.0, or quote it ("1e2") if it is text',
        ),
        (
            'knowledge: {badge: "4411"}',
            'knowledge: {badge: "4411", note: 2E-4}',
            "user.knowledge.note",
            "2E-4 reads as text in YAML 1.1 (and as the number 0.0002 in YAML 1.2",
        ),
    ],
)
def test_a_number_yaml_reads_two_ways_is_refused(
    rooms: Path, old: str, new: str, field: str, reason: str
) -> None:
    """`time_limit: 1e2` was `Input should be a valid number`; a fixture's `rate: 1e-3` was
    stored as the text '1e-3', which a JSON fixture's 1e-3 is not."""
    edit(rooms, TASK, old, new)
    code, lines = errors("check", str(rooms))
    at = line(rooms, TASK, new)
    assert code == 2 and len(lines) == 1, lines
    assert lines[0].startswith(f"{rooms / TASK}:{at}: {field}: {reason}")


def test_what_groundstate_writes_reads_back_as_written(tmp_path: Path) -> None:
    """Text such as "1e5" (an id) was written plain by the YAML groundstate writes (a
    regression task, an imported suite, a played solution): it would not load back."""
    data = {"args": {"order": "1e5", "rate": 1e-05, "big": 1e20, "word": "no", "zip": "010"}}
    text = yaml.dump(data, Dumper=YamlDumper)
    path = tmp_path / "x.yaml"
    path.write_text(text)
    assert read_yaml(path) == data and "'1e5'" in text


@pytest.mark.parametrize(
    ("section", "where"),
    [
        ("model: {revision: gpt-4o, temperature: 0}", "model"),
        ("model: {revision: gpt-4o, max_tokens: 512, decoding: {seed: 1}}", "model"),
        (
            "user_simulator: {kind: model, model: {revision: gpt-4o, top_p: 0.5}}",
            "user_simulator.model",
        ),
    ],
)
def test_a_decoding_setting_beside_decoding_is_refused(
    tmp_path: Path, section: str, where: str
) -> None:
    """`model: {temperature: 0}` was kept "for the record": the adapters send `decoding`
    alone, so every request was sampled at the API's default temperature."""
    system = agent_system(tmp_path, "{}")
    system.write_text(system.read_text() + section + "\n")
    problems = list(map(str, check_system(system)))
    at = line(tmp_path, "system.yaml", section.split(":")[0] + ":")
    assert len(problems) == 1 and problems[0].startswith(f"{system}:{at}: {where}: '"), problems
    assert "is a decoding setting: write it under `decoding`" in problems[0]


def test_a_weight_for_a_misspelt_task_names_the_one_meant(rooms: Path) -> None:
    edit(
        rooms, "suite.yaml", "canary: book-room-a", "canary: book-room-a\nweights: {book-rom-a: 2}"
    )
    code, lines = errors("check", str(rooms))
    at = line(rooms, "suite.yaml", "weights:")
    reason = "no task 'book-rom-a' (did you mean 'book-room-a'?)"
    assert (code, lines) == (2, [f"{rooms / 'suite.yaml'}:{at}: weights.book-rom-a: {reason}"])
