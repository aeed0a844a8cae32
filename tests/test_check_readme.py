"""The README's examples are true: every command parses (and the first runs), every YAML block
loads into the suite or system it belongs to, and every Python block runs."""

from __future__ import annotations

import re
import shlex
import shutil
from pathlib import Path
from typing import Any

import click
import jsonschema
import pytest
import yaml
from click.testing import CliRunner
from pydantic import TypeAdapter

from groundstate.cli import main
from groundstate.spec.constraints import HardConstraint
from groundstate.spec.schemas import json_schema
from groundstate.spec.suite import load_suite
from groundstate.spec.system import SystemSpec
from groundstate.testing import FunctionAgent, attempt
from groundstate.tools import Tool, declaration_problems
from groundstate.validation.static import check_suite

from .conftest import BANK

ROOT = Path(__file__).resolve().parent.parent
README = (ROOT / "README.md").read_text()
BLOCK = re.compile(r"^```(\w+)\n(.*?)^```", re.MULTILINE | re.DOTALL)


def blocks(language: str) -> list[str]:
    return [body for lang, body in BLOCK.findall(README) if lang == language]


def one_block(language: str, marker: str) -> str:
    found = [body for body in blocks(language) if marker in body]
    assert len(found) == 1, f"{len(found)} {language} blocks contain {marker!r}"
    return found[0]


def commands() -> list[list[str]]:
    """Every `groundstate ...` line of the sh and text blocks, as arguments after the name."""
    found = []
    for body in blocks("sh") + blocks("text"):
        for line in body.splitlines():
            line = line.removeprefix("$ ").removeprefix(".venv/bin/").split(" #")[0].strip()
            if line.startswith("groundstate "):
                found.append(shlex.split(line)[1:])
    return found


def test_the_readme_has_the_examples_this_file_checks() -> None:
    assert len(commands()) >= 8
    assert len(blocks("yaml")) >= 5 and len(blocks("python")) >= 2


@pytest.mark.parametrize("args", commands(), ids=" ".join)
def test_every_readme_command_parses_and_names_files_that_exist(args: list[str]) -> None:
    filled = ["x" if re.fullmatch(r"<[\w-]+>", arg) else arg for arg in args]
    command: Any = main
    while isinstance(command, click.Group):
        name, filled = filled[0], filled[1:]
        command = command.get_command(click.Context(main), name)
        assert command is not None, f"no command {name!r}"
    command.make_context(command.name, list(filled))  # raises a UsageError if wrong
    for arg in filled:
        if "/" in arg and not arg.startswith(("-", "http")):
            assert (ROOT / arg).exists(), f"{arg} does not exist"


def test_the_quick_start_check_runs(monkeypatch: pytest.MonkeyPatch) -> None:
    first = commands()[0]
    assert first == ["check", "examples/retail"]
    monkeypatch.chdir(ROOT)
    result = CliRunner().invoke(main, first)
    assert result.exit_code == 0, result.output
    assert "examples/retail: 18 tasks, no errors" in result.stderr


@pytest.fixture
def bank(tmp_path: Path) -> Path:
    root = tmp_path / "bank"
    shutil.copytree(BANK, root)
    return root


def test_the_task_and_solution_examples_pass_check_in_the_bank_suite(bank: Path) -> None:
    task = one_block("yaml", "task_id: transfer")
    solution = one_block("yaml", "kind: known_bad")
    (bank / "tasks" / "transfer.yaml").write_text(task)
    (bank / "solutions" / "transfer" / "bad_readme.yaml").write_text(solution)
    result = check_suite(bank)
    assert result.errors == []
    loaded = load_suite(bank)
    assert loaded.tasks["transfer"].hard_process_constraints[0].id == "pin-first"
    for name, text in (("task", task), ("solution", solution)):
        jsonschema.validate(yaml.safe_load(text), json_schema(name))


def test_the_constraint_examples_are_valid() -> None:
    body = one_block("yaml", "own-orders-only")
    constraints = yaml.safe_load(body)["hard_process_constraints"]
    parsed = TypeAdapter(list[HardConstraint]).validate_python(constraints)
    assert [c.id for c in parsed][:2] == ["own-orders-only", "confirm-refund"]


@pytest.mark.parametrize("marker", ["name: retail-careful", "base_url_env:"])
def test_the_system_examples_are_valid(marker: str) -> None:
    data = yaml.safe_load(one_block("yaml", marker))
    SystemSpec.model_validate(data)
    jsonschema.validate(data, json_schema("system"))


def test_the_tool_example_declares_a_clean_tool() -> None:
    namespace: dict[str, Any] = {}
    exec(one_block("python", "@tool"), namespace)
    balance = namespace["balance"]
    assert isinstance(balance, Tool)
    assert declaration_problems(balance) == []
    assert balance.parameters["required"] == ["account"]


def test_the_agent_example_solves_the_bank_task() -> None:
    namespace: dict[str, Any] = {}
    exec(one_block("python", "async def agent(session"), namespace)
    output = attempt(load_suite(BANK), "transfer", FunctionAgent(namespace["agent"]))
    assert output.run.terminal_reason == "success"
