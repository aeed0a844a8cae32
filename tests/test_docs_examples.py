"""The docs cannot drift from the code: every example in README.md and docs/ is exercised.

test_check_readme.py runs the README's own examples in depth; this file covers every page:
each YAML block loads through groundstate's loader and validates as the file it is part of,
each `groundstate ...` command (in a block or inline) names a real command and real options,
every option of every command is in the README's command table, the reference tables list
every field of the task, suite and solution models, and the Python blocks import what exists
and run where they can run alone.
"""

from __future__ import annotations

import ast
import importlib
import json
import re
import shlex
import shutil
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import click
import pytest
import yaml
from click.testing import CliRunner
from pydantic import BaseModel, TypeAdapter

from groundstate.cli import main
from groundstate.diagnosis.taxonomy import FailureTaxonomy
from groundstate.environments.sqlite import fixture_image
from groundstate.spec.constraints import HardConstraint
from groundstate.spec.files import read_yaml
from groundstate.spec.schemas import MODELS
from groundstate.spec.solution import Solution
from groundstate.spec.suite import SuiteConfig, load_suite
from groundstate.spec.task import AgentTask
from groundstate.testing import FunctionAgent, attempt
from groundstate.tools import Tool, declaration_problems

from .conftest import BANK, BANK_SYSTEM

ROOT = Path(__file__).resolve().parent.parent
PAGES = [
    ROOT / "README.md",
    *sorted((ROOT / "docs").glob("*.md")),
    *sorted((ROOT / "docs" / "reference").glob("*.md")),
]
BLOCK = re.compile(r"^```(\w*)\n(.*?)^```", re.MULTILINE | re.DOTALL)
SPAN = re.compile(r"`(groundstate [^`]+)`")


def where(page: Path, text: str, offset: int) -> str:
    return f"{page.relative_to(ROOT)}:{text[:offset].count(chr(10)) + 1}"


def blocks(language: str) -> list[tuple[str, str]]:
    """(page:line, body) of every fenced block in *language* on every page."""
    found = []
    for page in PAGES:
        text = page.read_text()
        for match in BLOCK.finditer(text):
            if match.group(1) == language:
                found.append((where(page, text, match.start()), match.group(2)))
    return found


# --- YAML -------------------------------------------------------------------------------

BANK_TASK: dict[str, Any] = yaml.safe_load((BANK / "tasks" / "transfer.yaml").read_text())
del BANK_TASK["partial_credit_rubric"]  # names the bank's own ids, which fragments replace
BASES: dict[str, dict[str, Any]] = {
    "task": BANK_TASK,
    "suite": {"name": "docs"},
    "solution": {"kind": "oracle", "steps": []},
    "system": {"harness": {"orchestration_loop": {"entry": "agent.py:agent"}}},
}
ASSERTION_KINDS = {"sql", "state_diff", "check", "judge", "tests", "changed_paths"}


def as_document(data: Any) -> Any:
    """A fragment the docs show (a list of constraints, a `writes:` match, an
    `orchestration_loop:`) as the smallest whole document it belongs to."""
    if isinstance(data, list):
        if all(isinstance(item, dict) and ASSERTION_KINDS & set(item) for item in data):
            return {"outcome_assertions": data}
        return {"hard_process_constraints": data}
    if set(data) == {"writes"}:
        return {"hard_process_constraints": [{"id": "docs", "never": data}]}
    if set(data) == {"never"}:
        return {"hard_process_constraints": [{"id": "docs", **data}]}
    if set(data) == {"orchestration_loop"}:
        return {"harness": data}
    return data


def validates_as(data: dict[str, Any]) -> str:
    """The name of the file format *data* is (part of); raises if it is none of them."""
    if {"schema"} <= set(data) <= {"schema", "rows"}:
        return "fixture"  # built below, by the fixture code itself
    if {"name", "version", "labels"} <= set(data):
        FailureTaxonomy.model_validate(data)
        return "taxonomy"
    errors = {}
    for name, model in MODELS.items():
        if set(data) <= set(model.model_fields):
            try:
                model.model_validate({**BASES[name], **data})
            except ValueError as exc:
                errors[name] = exc
            else:
                return name
    raise AssertionError(f"no file format takes {sorted(data)}: {errors or 'no model has them'}")


YAML_BLOCKS = blocks("yaml")


def test_the_pages_have_the_examples_this_file_checks() -> None:
    assert len(YAML_BLOCKS) >= 45
    assert len(blocks("python")) >= 12
    assert len(commands()) >= 60


@pytest.mark.parametrize(("at", "body"), YAML_BLOCKS, ids=[at for at, _ in YAML_BLOCKS])
def test_every_yaml_example_loads_as_the_file_it_belongs_to(
    tmp_path: Path, at: str, body: str
) -> None:
    file = tmp_path / "example.yaml"
    file.write_text(body)
    data = as_document(read_yaml(file))  # the hardened loader: what a suite file goes through
    kind = validates_as(data)
    if kind == "fixture":
        image, state_hash = fixture_image(file, datetime(2026, 1, 15, tzinfo=UTC))
        assert image and state_hash


# --- commands ---------------------------------------------------------------------------


def commands() -> list[tuple[str, list[str]]]:
    """(page:line, arguments) of every `groundstate ...` in a code block or an inline span."""
    found = []
    for page in PAGES:
        text = page.read_text()
        for match in SPAN.finditer(text):
            for part in match.group(1).split("&&"):
                found.append((where(page, text, match.start()), part.strip()))
        for block in BLOCK.finditer(text):
            for i, line in enumerate(block.group(2).splitlines()):
                line = line.removeprefix("$ ").removeprefix(".venv/bin/").split(" #")[0].strip()
                if line.startswith("groundstate "):
                    at = where(page, text, block.start())
                    found.append((f"{at}+{i + 1}", line.rstrip("\\").strip()))
    return [(at, shlex.split(line.replace("\\|", "|"))[1:]) for at, line in found]


def resolve(words: list[str]) -> tuple[click.Command, list[str]]:
    command: click.Command = main
    while isinstance(command, click.Group) and words and not words[0].startswith("-"):
        name = words[0].split("/")[0]  # "labels import/adjudicate": each is a command
        found = command.get_command(click.Context(main), name)
        assert found is not None, f"no command {name!r} under {command.name!r}"
        command, words = found, words[1:]
    return command, words


def options(command: click.Command) -> set[str]:
    return {name for param in command.params for name in (*param.opts, *param.secondary_opts)} | {
        "--help"
    }


COMMANDS = commands()


@pytest.mark.parametrize(("at", "words"), COMMANDS, ids=[at for at, _ in COMMANDS])
def test_every_documented_command_and_option_exists(at: str, words: list[str]) -> None:
    command, rest = resolve(list(words))
    known = options(command) | ({"--version"} if command is main else set())
    for word in rest:
        flag = word.strip("[]().,;").split("=")[0]
        if flag.startswith("-") and flag.strip("-") and not flag.strip("-").isdigit():
            assert flag in known, f"{at}: {command.name} has no option {flag} ({sorted(known)})"


def every_command(group: click.Group = main, path: tuple[str, ...] = ()) -> list[tuple[str, ...]]:
    found = []
    for name, sub in group.commands.items():
        if isinstance(sub, click.Group):
            found.extend(every_command(sub, (*path, name)))
        else:
            found.append((*path, name))
    return found


README_ROWS = [
    line
    for line in (ROOT / "README.md").read_text().splitlines()
    if line.startswith("| `groundstate ")
]


@pytest.mark.parametrize("path", every_command(), ids=" ".join)
def test_every_option_of_every_command_is_in_the_readme_table(path: tuple[str, ...]) -> None:
    """--store is documented once for every command that reads or writes runs."""
    rows = [row for row in README_ROWS if row.startswith(f"| `groundstate {' '.join(path)} ")]
    assert rows, f"the README's command table has no row for `groundstate {' '.join(path)}`"
    command, _ = resolve(list(path))
    signature = rows[0].split("` |")[0]
    missing = sorted(
        param.opts[0]
        for param in command.params
        if isinstance(param, click.Option)
        and param.opts[0] not in ("--store", "--help")
        and not any(re.search(rf"{re.escape(o)}\b", signature) for o in param.opts)
    )
    assert missing == [], f"`groundstate {' '.join(path)}` row lacks {missing}"


# --- reference tables -------------------------------------------------------------------


def table_names(page: str) -> set[str]:
    """The `names` of the first column of every table row on a reference page."""
    names: set[str] = set()
    for line in (ROOT / "docs" / "reference" / page).read_text().splitlines():
        cells = re.split(r"(?<!\\)\|", line)
        if len(cells) > 2:
            names.update(re.findall(r"`([\w.]+)`", cells[1]))
    return names


def model_fields(model: type[BaseModel], prefix: str = "") -> set[str]:
    """Field names, nested models (but not lists of them) as dotted names."""
    names = set()
    for name, field in model.model_fields.items():
        name = field.alias or name
        nested = isinstance(field.annotation, type) and issubclass(field.annotation, BaseModel)
        if nested and name != "population":  # population has a section of its own
            names |= model_fields(field.annotation, f"{prefix}{name}.")  # type: ignore[arg-type]
            continue
        names.add(prefix + name)
    return names


@pytest.mark.parametrize(
    ("page", "model"),
    [("task.md", AgentTask), ("suite.md", SuiteConfig), ("solution.md", Solution)],
)
def test_each_reference_table_lists_every_field_of_its_model(
    page: str, model: type[BaseModel]
) -> None:
    fields = model_fields(model)
    listed = table_names(page)
    assert fields - listed == set(), f"docs/reference/{page} lacks {sorted(fields - listed)}"


@pytest.mark.parametrize(
    ("page", "model", "field", "default"),
    [
        ("task.md", AgentTask, "step_limit", "`30`"),
        ("task.md", AgentTask, "time_limit", "`60`"),
        ("task.md", AgentTask, "weight", "`1`"),
        ("suite.md", SuiteConfig, "environment", "`sqlite`"),
        ("suite.md", SuiteConfig, "tools", "`tools.py`"),
        ("suite.md", SuiteConfig, "fixtures", "`fixtures`"),
        ("suite.md", SuiteConfig, "mutation_testing", "`required`"),
    ],
)
def test_the_documented_defaults_are_the_models(
    page: str, model: type[BaseModel], field: str, default: str
) -> None:
    row = next(
        line
        for line in (ROOT / "docs" / "reference" / page).read_text().splitlines()
        if line.startswith(f"| `{field}` |")
    )
    assert default in re.split(r"(?<!\\)\|", row)[2], row
    value = model.model_fields[field].default
    shown = f"`{value:g}`" if isinstance(value, float) else f"`{value}`"
    assert shown == default


# --- Python -----------------------------------------------------------------------------

PYTHON_BLOCKS = blocks("python")


@pytest.mark.parametrize(("at", "body"), PYTHON_BLOCKS, ids=[at for at, _ in PYTHON_BLOCKS])
def test_every_python_example_parses_and_imports_what_exists(at: str, body: str) -> None:
    tree = ast.parse(body if "def run(self, session)" not in body else body.rstrip() + ": ...")
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("groundstate"):
            module = importlib.import_module(str(node.module))
            for alias in node.names:
                assert hasattr(module, alias.name), f"{at}: {node.module} has no {alias.name}"


def python_block(marker: str) -> str:
    (body,) = [body for _, body in PYTHON_BLOCKS if marker in body][:1]
    return body


def test_the_tool_reference_example_declares_a_clean_tool() -> None:
    namespace: dict[str, Any] = {}
    exec(python_block("def get_order(ctx"), namespace)
    tool = namespace["get_order"]
    assert isinstance(tool, Tool) and declaration_problems(tool) == []
    assert tool.parameters["required"] == ["order_id"]


def test_the_check_reference_examples_judge_a_real_attempt(tmp_path: Path) -> None:
    """checks.md's money_conserved(s0, sT) and one_customer(trace, s0), put in a copy of the
    bank suite as its outcome check and a constraint, judge the oracle's route."""
    root = tmp_path / "bank"
    shutil.copytree(BANK, root)
    checks = [python_block(marker) for marker in ("def money_conserved(", "def one_customer(")]
    (root / "checks.py").write_text("\n\n".join(checks))
    task = root / "tasks" / "transfer.yaml"
    task.write_text(
        task.read_text().replace(
            "hard_process_constraints:\n",
            "hard_process_constraints:\n  - id: one-customer\n    check: checks.py:one_customer\n",
        )
    )

    async def agent(session: Any) -> str:
        await session.say("What is your PIN?")
        await session.call("check_pin", {"account": "A", "pin": "1234"})
        await session.call("transfer", {"source": "A", "target": "B", "amount": 30})
        return "Done."

    run = attempt(load_suite(root), "transfer", FunctionAgent(agent)).run
    assert run.terminal_reason == "success"
    (conserved,) = [r for r in run.outcome_assertion_results if r.id == "conserved"]
    assert conserved.passed and conserved.evidence == {"before": 150, "after": 150}
    (one,) = [r for r in run.constraint_results if r.id == "one-customer"]
    assert one.passed and one.evidence == {"customers": []}


def test_the_constraint_examples_of_constraints_md_are_constraints() -> None:
    adapter = TypeAdapter(list[HardConstraint])
    for at, body in YAML_BLOCKS:
        data = yaml.safe_load(body)
        if at.startswith("docs/constraints.md") and isinstance(data, list):
            assert adapter.validate_python(data), at


# --- documented JSON shapes ---------------------------------------------------------------


def documented_keys(page: str, lead: str) -> dict[str, set[str]]:
    """The keys of the `{"a", "b": [{"c"}]}` that follows *lead* on *page*, by the key whose
    value holds them: {"": {"a", "b"}, "b": {"c"}}."""
    text = (ROOT / page).read_text()
    start = text.index(lead) + len(lead)
    shape = text[start : text.index("`", start)]
    found: dict[str, set[str]] = {}
    opened_by: list[str] = []
    last = ""
    for token in re.finditer(r'[{}]|"(\w+)"', shape):
        if token.group(0) == "{":
            opened_by.append(last)
        elif token.group(0) == "}":
            opened_by.pop()
        else:
            found.setdefault(opened_by[-1], set()).add(token.group(1))
            last = token.group(1)
    return found


def invoke_json(*args: str) -> Any:
    result = CliRunner().invoke(main, list(args))
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def test_the_documented_json_shapes_are_what_the_commands_print(tmp_path: Path) -> None:
    store = str(tmp_path / "runs.db")
    bank = tmp_path / "bank"  # without the slow proofs: only the shapes are under test here
    shutil.copytree(BANK, bank)
    suite = bank / "suite.yaml"
    text = suite.read_text().replace(": report", ": 'off'")
    suite.write_text(text)
    args = ["--system", str(BANK_SYSTEM), "--attempts", "1", "--json", "--store", store]
    run = invoke_json("run", str(bank), *args)
    for page in ("README.md", "docs/workflow.md"):
        shape = documented_keys(page, "`run --json` prints `")
        assert shape[""] == set(run), page
        assert shape["runs"] == set(run["runs"][0]), page
    batches = invoke_json("batches", "--json", "--store", store)
    assert documented_keys("docs/workflow.md", "`--json` gives\n`[")[""] == set(batches[0])
    runs = invoke_json("runs", run["batch_id"], "--json", "--store", store)
    shape = documented_keys("docs/workflow.md", "a rerun replaced; `--json` gives `")
    assert shape == {"": set(runs), "runs": set(runs["runs"][0])}
    validation = invoke_json("validate", str(bank), "--json", "--store", store)
    shape = documented_keys("README.md", "valid; `--json` prints `")
    assert shape[""] == set(validation)
    assert shape["tasks"] == set(validation["tasks"][0])
    assert shape["checks"] == set(validation["tasks"][0]["checks"][0])


def test_every_session_member_the_session_reference_lists_exists() -> None:
    from groundstate.episode import AgentSession

    text = (ROOT / "docs" / "reference" / "session.md").read_text()
    members = set(re.findall(r"`session\.(\w+)", text))
    assert len(members) >= 8
    assert {m for m in members if not hasattr(AgentSession, m)} == set()


def test_the_check_json_example_has_the_shape_check_prints(tmp_path: Path) -> None:
    (example,) = [b for at, b in blocks("json") if at.startswith("docs/reference/check.md")]
    documented = json.loads(example)
    bank = tmp_path / "bank"
    shutil.copytree(BANK, bank)
    task = bank / "tasks" / "transfer.yaml"
    task.write_text(task.read_text().replace("step_limit: 6", "step_limit: six"))
    result = CliRunner().invoke(main, ["check", str(bank), "--json"])
    assert result.exit_code == 2
    printed = json.loads(result.stdout)
    assert set(printed) == set(documented)
    assert set(printed["problems"][0]) == set(documented["problems"][0])
