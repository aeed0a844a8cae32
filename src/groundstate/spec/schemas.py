"""JSON Schemas of the files a user writes, generated from the models that read them.

The schemas ship inside the package (``groundstate/schemas/*.schema.json``) so that editors can
check and complete suite, task, solution and system files as they are typed, e.g. with the
YAML language server::

    # yaml-language-server: $schema=<site-packages>/groundstate/schemas/task.schema.json

The models are the source of truth: a test fails when a shipped schema differs from what
:func:`json_schema` generates, and ``python -m groundstate.spec.schemas`` rewrites them.
Loading adds checks a schema cannot express (tool names, fixtures, ids; see
``groundstate check``).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from groundstate.spec.solution import Solution
from groundstate.spec.suite import SuiteConfig
from groundstate.spec.system import SystemSpec
from groundstate.spec.task import AgentTask

MODELS: dict[str, type[BaseModel]] = {
    "suite": SuiteConfig,
    "task": AgentTask,
    "solution": Solution,
    "system": SystemSpec,
}
"""Each file format, by the name of its schema file (``<name>.schema.json``)."""

FOLDER = Path(__file__).resolve().parent.parent / "schemas"
"""Where the package keeps its schemas."""

_TITLES = {
    "suite": "groundstate suite.yaml",
    "task": "groundstate task file (tasks/<task_id>.yaml)",
    "solution": "groundstate solution file (solutions/<task_id>/<name>.yaml)",
    "system": "groundstate system file (system.yaml)",
}


def json_schema(name: str) -> dict[str, Any]:
    """The JSON Schema (draft 2020-12) of the file format *name* (a key of :data:`MODELS`)."""
    schema = MODELS[name].model_json_schema(mode="validation")
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$id": f"urn:groundstate:schema:{name}",
        **schema,
        "title": _TITLES[name],
    }


def schema_text(name: str) -> str:
    """The schema as the package stores it: sorted keys, two-space indents, a final newline."""
    return json.dumps(json_schema(name), indent=2, sort_keys=True, ensure_ascii=False) + "\n"


def write_schemas(folder: Path = FOLDER) -> list[Path]:
    """Write every schema into *folder*; the paths written."""
    folder.mkdir(parents=True, exist_ok=True)
    written = []
    for name in MODELS:
        path = folder / f"{name}.schema.json"
        path.write_text(schema_text(name), encoding="utf-8")
        written.append(path)
    return written


if __name__ == "__main__":  # python -m groundstate.spec.schemas [FOLDER]
    for path in write_schemas(Path(sys.argv[1]) if len(sys.argv) > 1 else FOLDER):
        print(path)
