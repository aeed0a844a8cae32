from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml

from groundstate.spec.suite import Suite, load_suite

HERE = Path(__file__).parent
BANK = HERE / "suites" / "bank"
BANK_SYSTEM = HERE / "suites" / "bank_system.yaml"
EXAMPLES = HERE.parent / "examples"


@pytest.fixture
def bank() -> Suite:
    return load_suite(BANK)


EditTask = Callable[[Callable[[dict[str, Any]], None]], Suite]


@pytest.fixture
def edited_bank(tmp_path: Path) -> EditTask:
    """A copy of the bank suite whose transfer task has been edited by a function."""

    def edit(change: Callable[[dict[str, Any]], None]) -> Suite:
        root = tmp_path / "bank"
        if not root.exists():
            shutil.copytree(BANK, root)
        task_file = root / "tasks" / "transfer.yaml"
        data = yaml.safe_load(task_file.read_text())
        change(data)
        task_file.write_text(yaml.safe_dump(data))
        return load_suite(root)

    return edit
