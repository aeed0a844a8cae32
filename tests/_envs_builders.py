"""The builders the environments rounds' tests share (``test_envs_round*``): the bank suite
copied with one more tool of a test's own, offered by its ``transfer`` task.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import yaml

from groundstate.spec.suite import Suite, load_suite

from .conftest import BANK


def bank_with_a_tool(tmp_path: Path, name: str, source: str) -> Suite:
    """The bank suite copied into *tmp_path*, its ``tools.py`` ending with *source* (a
    ``@tool`` function called *name*) and its ``transfer`` task offering that tool."""
    root = tmp_path / "bank"
    shutil.copytree(BANK, root, ignore=shutil.ignore_patterns("__pycache__"))
    tools = root / "tools.py"
    tools.write_text(tools.read_text() + "\n\n" + source)
    task_file = root / "tasks" / "transfer.yaml"
    task = yaml.safe_load(task_file.read_text())
    task["available_tools"].append(name)
    task_file.write_text(yaml.safe_dump(task))
    return load_suite(root)
