"""Harness overhead, twentieth round: the checks after grading read the attempt's account once
(each walked it and parsed every line of its own), with the same verdicts; and ``bench/``
measures the per-call checks the nineteenth round added (docs/scale.md, twentieth round)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest

from groundstate.account import Account, AccountClosed
from groundstate.agents.base import Session
from groundstate.episode import _AccountRead
from groundstate.spec.suite import load_suite
from groundstate.testing import FunctionAgent, attempt

from .conftest import BANK
from .test_agents_round19 import (
    _replays_the_call_into_the_real_account,
    _steps_past_the_limit_with_its_own_account,
    _transfers_in_a_transaction_of_its_own,
)
from .test_inprocess_adversarial import _do_the_task

ROOT = Path(__file__).resolve().parent.parent

CALL = {"kind": "tool_call", "tool": "check_pin", "error_class": None}
DENIED = {"kind": "tool_call", "tool": "read_audit", "error_class": "permission_denied"}


def _account(*lines: str, steps: int = 0) -> Account:
    account = Account()
    for line in lines:
        account.keep_line(line)
    for _ in range(steps):
        account.take_step()
    return account


@pytest.fixture
def parsed(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Each text ``json.loads`` parses meanwhile."""
    texts: list[str] = []
    loads = json.loads

    def counting(text: Any, **kwargs: Any) -> Any:
        texts.append(text)
        return loads(text, **kwargs)

    monkeypatch.setattr(json, "loads", counting)
    return texts


def test_each_line_is_parsed_once_for_both_checks(parsed: list[str]) -> None:
    lines = [json.dumps(CALL), json.dumps(DENIED), json.dumps({"kind": "message"})]
    read = _AccountRead(_account(*lines, steps=2))
    assert read.steps() == 2
    first = list(read.events())  # as _outside_session counts the calls
    second = list(read.events())  # as _unlatched looks for a denied one
    assert (
        first
        == second
        == [
            CALL,
            DENIED,
            {"kind": "message"},
        ]
    )
    assert parsed == lines  # once each, in order


def test_the_account_is_read_once() -> None:
    account = _account(json.dumps(CALL), steps=1)
    read = _AccountRead(account)
    assert read.steps() == 1 and list(read.events()) == [CALL]
    account.keep_line(json.dumps(DENIED))
    account.take_step()
    assert read.steps() == 1 and list(read.events()) == [CALL]  # as first read
    assert _AccountRead(account).steps() == 2  # a new read sees what was kept since


def test_a_line_is_parsed_only_when_a_check_reaches_it(parsed: list[str]) -> None:
    """As before: a check that stops at a denied call parses nothing after it, so a line
    that does not parse behind it raises nothing there; reaching it raises as before."""
    read = _AccountRead(_account(json.dumps(DENIED), "not json"))
    assert any(event.get("error_class") == "permission_denied" for event in read.events())
    assert parsed == [json.dumps(DENIED)]
    with pytest.raises(json.JSONDecodeError):
        list(read.events())


def test_a_closed_account_raises_as_the_account_does() -> None:
    account = _account(json.dumps(CALL))
    account._kept.close()
    read = _AccountRead(account)
    with pytest.raises(AccountClosed):
        read.steps()
    with pytest.raises(AccountClosed):
        list(read.events())


# --- controls: the verdicts of the checks that now share one read ----------------------------


def test_an_honest_agent_still_passes() -> None:
    run = attempt(load_suite(BANK), "transfer", FunctionAgent(_do_the_task)).run
    assert run.success, run.terminal_reason


@pytest.mark.parametrize(
    ("agent", "message"),
    [
        (_transfers_in_a_transaction_of_its_own, "called the environment outside the session"),
        (_replays_the_call_into_the_real_account, "with no stop latched"),
        (_steps_past_the_limit_with_its_own_account, "with no stop latched"),
    ],
)
def test_an_account_that_disagrees_still_stops_the_attempt(
    agent: Callable[[Session], Awaitable[str]], message: str
) -> None:
    run = attempt(load_suite(BANK), "transfer", FunctionAgent(agent)).run
    assert run.terminal_reason == "agent_failure/prohibited_action", run.infrastructure_status
    assert message in run.infrastructure_status["exception"]["message"]


# --- bench/call_checks.py ----------------------------------------------------------------------


def test_the_bench_prints_the_per_call_checks_and_skips_postgres_without_a_server() -> None:
    env = {**os.environ, "GROUNDSTATE_POSTGRES_URL": "not a = connection string '"}
    done = subprocess.run(
        [sys.executable, str(ROOT / "bench" / "call_checks.py"), "--quick", "--sizes", "5,20"],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    rows = [line.split() for line in done.stdout.splitlines() if line.strip()[:2] in ("5 ", "20")]
    assert [row[0] for row in rows] == ["5", "20"], done.stdout
    for row in rows:  # the whole call, the two hashes in it: figures, the hashes the smaller
        whole, hashes = float(row[1]), float(row[3])
        assert 0 < hashes < whole, done.stdout
    assert "postgres" in done.stdout and "skipped" in done.stdout, done.stdout
