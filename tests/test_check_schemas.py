"""The published JSON Schemas: generated from the models, up to date, and true to real files."""

from __future__ import annotations

import json
from importlib import resources
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import yaml

from groundstate.spec.schemas import FOLDER, MODELS, json_schema, schema_text

from .conftest import BANK

ROOT = Path(__file__).resolve().parent.parent
SUITES = [ROOT / "examples" / "retail", BANK]


def _shipped(name: str) -> str:
    return (resources.files("groundstate") / "schemas" / f"{name}.schema.json").read_text()


@pytest.mark.parametrize("name", sorted(MODELS))
def test_the_shipped_schema_is_up_to_date(name: str) -> None:
    assert _shipped(name) == schema_text(name), (
        f"{name}.schema.json is stale: run `python -m groundstate.spec.schemas`"
    )
    jsonschema.Draft202012Validator.check_schema(json.loads(_shipped(name)))


def test_the_schemas_are_package_data() -> None:
    assert sorted(p.name for p in FOLDER.glob("*.json")) == sorted(
        f"{name}.schema.json" for name in MODELS
    )
    pyproject = (ROOT / "pyproject.toml").read_text()
    assert '"schemas/*.json"' in pyproject


def _as_an_editor_sees(path: Path) -> Any:
    """The YAML document with timestamps as text, as a YAML language server checks it."""
    return json.loads(json.dumps(yaml.safe_load(path.read_text()), default=str))


def _files() -> list[tuple[str, Path]]:
    files = [("suite", suite / "suite.yaml") for suite in SUITES]
    files += [("task", p) for suite in SUITES for p in sorted((suite / "tasks").glob("*.yaml"))]
    files += [
        ("solution", p) for suite in SUITES for p in sorted((suite / "solutions").rglob("*.yaml"))
    ]
    files += [("system", p) for p in sorted((ROOT / "examples" / "systems").glob("*.yaml"))]
    return files


def test_every_example_file_is_valid_under_its_schema() -> None:
    validators = {name: jsonschema.Draft202012Validator(json_schema(name)) for name in MODELS}
    checked = 0
    for name, path in _files():
        errors = list(validators[name].iter_errors(_as_an_editor_sees(path)))
        assert not errors, f"{path}: {errors[0].message}"
        checked += 1
    assert checked > 100


@pytest.mark.parametrize(
    ("name", "document", "word"),
    [
        ("task", {"messages": [{"never": "refund"}]}, "messages"),
        ("solution", {"kind": "oracle", "steps": [{"cal": "x"}]}, "cal"),
        ("suite", {"name": "s", "mutation_testing": "sometimes"}, "sometimes"),
        ("system", {"harness": {"orchestration_loop": {}}}, "entry"),
    ],
)
def test_mistakes_are_refused_by_the_schema(name: str, document: Any, word: str) -> None:
    validator = jsonschema.Draft202012Validator(json_schema(name))
    errors = [e for e in validator.iter_errors(document) if word in str(e)]
    assert errors, f"{word!r} was not refused"


def test_field_docstrings_are_descriptions() -> None:
    suite = json_schema("suite")
    assert "deployment decision" in suite["properties"]["decision"]["description"]
    task = json_schema("task")
    assert (
        "revealed only when"
        in task["$defs"]["UserScenario"]["properties"]["knowledge"]["description"]
    )
