"""Sixteenth environments and task validation audit: the reset check probes every file of a
workspace and every AUTOINCREMENT counter on PostgreSQL, and a fixture PostgreSQL cannot
build is refused naming the task file, the table or column and the reason."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest

from groundstate.spec.suite import load_suite, with_environment
from groundstate.validation import validate_task

from .conftest import BANK
from .test_validation_round15 import _postgres

CLOCK = datetime(2026, 1, 15, 9, 30)


# --- the postgres reset check bumps every AUTOINCREMENT counter -------------------------------


def test_postgres_reset_check_catches_a_reset_that_keeps_a_counter(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The probe bumped a counter only by copying a row, so the counter of a table the fixture
    leaves empty (the bank's transfers) went unprobed, and a reset that left the counters as
    the attempt had them passed. It now inserts a row of harmless values first, as the SQLite
    kind's probe does."""
    _postgres()
    from groundstate.environments import postgres

    suite = with_environment(load_suite(BANK), "postgres")
    reset = validate_task(suite, "transfer").check("reset")
    assert reset.passed, reset.detail
    assert "bumped the AUTOINCREMENT counter of transfers" in reset.detail

    def keeps_counters(db: Any, fixture: Any) -> None:
        with db.pipeline(), db.cursor() as cursor:
            cursor.execute(f"TRUNCATE {postgres.INTERNAL}.writes")
            cursor.executemany(
                f"INSERT INTO {postgres.INTERNAL}.meta VALUES (%s, %s)", fixture.meta
            )

    monkeypatch.setattr(postgres, "_fill_internal", keeps_counters)
    reset = validate_task(suite, "transfer").check("reset")
    assert not reset.passed
    assert "AUTOINCREMENT counter of transfers is 1, not None" in reset.detail
