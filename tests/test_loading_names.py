"""A suite's or system's name is what reports call it: blank or invisible names are refused
with the file, the field and the reason, as task ids are."""

from __future__ import annotations

from pathlib import Path

import pytest

from . import test_check
from .test_check import check, edit
from .test_loading_adversarial import errors

bank = test_check.bank  # the fixture: a copy of the bank suite to edit

SYSTEM = """name: {name}
harness:
  orchestration_loop:
    entry: groundstate.agents.scripted:ScriptedAgent
"""


@pytest.mark.parametrize(
    ("written", "reason"),
    [
        ("''", "is blank"),
        ("'  '", "is blank"),
        ('"a\\nb"', "does not show"),
        ('"x\\u200b"', "does not show"),
    ],
)
def test_a_suite_named_blank_or_invisibly_is_refused(bank: Path, written: str, reason: str) -> None:
    edit(bank, "suite.yaml", "name: bank", f"name: {written}")
    code, lines = check(str(bank))
    assert code == 2, lines
    assert any("suite.yaml" in text and "name" in text and reason in text for text in lines), lines


@pytest.mark.parametrize(("written", "reason"), [("''", "is blank"), ('"\\t"', "is blank")])
def test_a_system_named_blank_is_refused(bank: Path, written: str, reason: str) -> None:
    system = bank.parent / "system.yaml"
    system.write_text(SYSTEM.format(name=written))
    code, lines = errors("check", str(bank), "--system", str(system))
    assert code == 2, lines
    assert any("system.yaml" in text and "name" in text and reason in text for text in lines), lines
