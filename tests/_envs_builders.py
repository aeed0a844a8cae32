"""The builders the environments rounds' tests share (``test_envs_round*``): the bank suite
copied with one more tool of a test's own, offered by its ``transfer`` task.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import yaml

from groundstate.spec.suite import Suite, load_suite

from .conftest import BANK

SAVE_NOTE = '''
@tool
def save_note(ctx: ToolContext, account: str, note: str, copies: int) -> int:
    """Keep a note on an account as a transfer of nothing, *copies* times."""
    for _ in range(copies):
        ctx.db.execute(
            "INSERT INTO transfers (source, target, amount, at) VALUES (?, ?, 0, ?)",
            (account, account, note),
        )
    return copies
'''
"""A tool that keeps a note on an account *copies* times (to grow the database)."""


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
