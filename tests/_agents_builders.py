"""The builders the agents rounds' tests share (``test_agents_round*``): the bank suite with
its validation stored once per module, copied for each test with an agent program of its own
under a system that runs it, and the runs a batch stored.
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import yaml

from groundstate.spec.suite import load_suite
from groundstate.store import RunStore
from groundstate.validation.suite import ensure_valid

from .conftest import BANK, BANK_SYSTEM


def validated_bank(root: Path) -> Path:
    """*root* holding the bank suite and a store holding its validation (each test copies
    both: validating once per module keeps the tests quick)."""
    shutil.copytree(BANK, root / "bank")
    with RunStore(root / "runs.db") as store:
        ensure_valid(load_suite(root / "bank"), store)
    return root


def bank_world(template: Path, tmp_path: Path, agent: str) -> list[str]:
    """*template*'s suite and store copied into *tmp_path*, ``agent.py`` holding *agent* (an
    ``async def agent(session)``) and a system running it: ``run``'s suite, ``--system`` and
    ``--store`` arguments."""
    shutil.copytree(template / "bank", tmp_path / "bank")
    shutil.copy(template / "runs.db", tmp_path / "runs.db")
    (tmp_path / "agent.py").write_text(agent)
    system = yaml.safe_load(BANK_SYSTEM.read_text())
    system["harness"]["orchestration_loop"] = {"entry": "agent.py:agent", "params": {}}
    (tmp_path / "system.yaml").write_text(yaml.safe_dump(system))
    files = ["--system", str(tmp_path / "system.yaml"), "--store", str(tmp_path / "runs.db")]
    return [str(tmp_path / "bank"), *files]


def stored_runs(store: Path) -> dict[int, Any]:
    """The runs of *store*'s batch by attempt, its records verified first."""
    with RunStore(store) as runs:
        batch = runs.batch().batch_id
        assert runs.verify(batch).ok
        return {run.attempt: run for run in runs.runs(batch)}
