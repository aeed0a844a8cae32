from __future__ import annotations

import shutil
import sqlite3
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import CliRunner, Result
from hypothesis import settings

from groundstate.bindings import HARNESS
from groundstate.spec.suite import Suite, load_suite

# The model adapters' tests share these fixtures (the retail suite, one provider's harness).
from tests.model_harness import anthropic_harness, openai_harness, retail  # noqa: F401

# Property tests assert behaviour, not speed: Hypothesis's per-example deadline (200 ms) fails
# examples at random on a shared, loaded machine. Speed targets live in bench/.
settings.register_profile("groundstate", deadline=None)
settings.load_profile("groundstate")

# Wall time on a shared machine at load 10 says nothing about speed: a test that checks a limit
# fired asserts the terminal reason it recorded, and bounds wall time only to catch a hang, with
# HANG seconds. Code that must be cut short blocks for BLOCK seconds (or until the test's end),
# so that a bound of HANG still proves it was not waited for.
HANG = 30.0
BLOCK = 120.0
HANG_SOURCE = f"""

def hang():
    # Blocks until the test ends (it writes "released" beside this file), {BLOCK:.0f} s at most.
    import os, time
    released = os.path.join(os.path.dirname(os.path.abspath(__file__)), "released")
    for _ in range({BLOCK * 50:.0f}):
        if os.path.exists(released):
            return
        time.sleep(0.02)
"""
"""Python source of ``hang()``, for a suite's check file: a check that must be cut short calls
it; the test's fixture writes ``released`` beside the file when the test ends."""

HERE = Path(__file__).parent
BANK = HERE / "suites" / "bank"
BANK_SYSTEM = HERE / "suites" / "bank_system.yaml"
ROOMS = HERE / "suites" / "rooms"
EXAMPLES = HERE.parent / "examples"


class _DeclaredPatch(pytest.MonkeyPatch):
    """pytest's ``monkeypatch``, each change (and its undoing) declared to the harness's watch
    on its own code (:mod:`groundstate.bindings`): a test's instrumentation is no agent's
    tampering, and the watch must not put it back."""

    def setattr(self, *args: Any, **kwargs: Any) -> None:
        super().setattr(*args, **kwargs)
        HARNESS.rebase()

    def delattr(self, *args: Any, **kwargs: Any) -> None:
        super().delattr(*args, **kwargs)
        HARNESS.rebase()

    def undo(self) -> None:
        super().undo()
        HARNESS.rebase()


@pytest.fixture
def monkeypatch() -> Iterator[pytest.MonkeyPatch]:
    patch = _DeclaredPatch()
    yield patch
    patch.undo()


@pytest.fixture
def release() -> Iterator[threading.Event]:
    """Set when the test ends: agent code blocked on it returns, and its thread with it."""
    event = threading.Event()
    yield event
    event.set()


@pytest.fixture
def bank() -> Suite:
    return load_suite(BANK)


EditTask = Callable[[Callable[[dict[str, Any]], None]], Suite]


@pytest.fixture
def rooms(tmp_path: Path) -> Path:
    """A copy of the rooms suite to edit (the loading audits' hostile files)."""
    root = tmp_path / "rooms"
    shutil.copytree(ROOMS, root)
    return root


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


def without_keys(value: Any, keys: set[str]) -> Any:
    """*value* (JSON-like) with every dict entry named in *keys* dropped, at any depth: a
    record's fields that vary from run to run (times, ids, paths) left out of a comparison."""
    if isinstance(value, dict):
        return {k: without_keys(v, keys) for k, v in value.items() if k not in keys}
    if isinstance(value, list):
        return [without_keys(v, keys) for v in value]
    return value


def stored_runs(store: Path) -> int:
    """Rows in a run store's runs table (0 while it is not there yet), read without the store
    class so that a test can watch a store another process is writing."""
    if not store.exists():
        return 0
    try:
        with sqlite3.connect(store) as db:
            return int(db.execute("SELECT COUNT(*) FROM runs").fetchone()[0])
    except sqlite3.OperationalError:
        return 0


def resume_bank(store: Path, batch_id: str, system: Path = BANK_SYSTEM) -> Result:
    """``groundstate run BANK --resume BATCH_ID --json`` through the CLI."""
    from groundstate.cli import main

    args = ["run", str(BANK), "--system", str(system), "--resume", batch_id, "--json"]
    return CliRunner().invoke(main, [*args, "--store", str(store)])
