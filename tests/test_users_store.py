"""The scripted user's fixed rules, and the run store's refusals."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from groundstate.cli import main
from groundstate.errors import StoreError
from groundstate.spec.system import UserSimulatorSection
from groundstate.spec.task import UserScenario
from groundstate.store import RunStore
from groundstate.users import GOODBYE, NO, UNSURE, YES, ScriptedUser


def _user(confirms: bool = True, max_turns: int = 20) -> ScriptedUser:
    scenario = UserScenario(knowledge={"email": "a@b.c", "zip_code": "94107"}, confirms=confirms)
    return ScriptedUser(UserSimulatorSection(max_turns=max_turns), scenario)


def test_reveals_only_what_is_asked_for_by_name() -> None:
    user = _user()
    assert user.reply("Hello, how can I help?") == UNSURE
    assert user.reply("What is your email?") == "My email is a@b.c."
    assert (
        user.reply("Your email and ZIP code, please") == "My email is a@b.c. My zip code is 94107."
    )


def test_confirmation_follows_the_scenario() -> None:
    assert _user(confirms=True).reply("Please confirm the refund.") == YES
    assert _user(confirms=False).reply("Shall I go ahead?") == NO


def test_the_user_leaves_after_goodbye_or_max_turns() -> None:
    user = _user()
    assert user.reply("Is there anything else?") == GOODBYE
    assert user.left and user.reply("Hello?") is None
    patient = _user(max_turns=2)
    assert patient.reply("one") == UNSURE and patient.reply("two") == UNSURE
    assert patient.reply("three") is None and patient.left


def test_a_store_that_is_not_a_database_is_refused_cleanly(tmp_path: Path) -> None:
    path = tmp_path / "runs.db"
    path.write_text("this is not sqlite\n" * 100)
    with pytest.raises(StoreError, match="cannot open the run store"):
        RunStore(path)
    result = CliRunner().invoke(main, ["report", "--store", str(path)])
    assert result.exit_code == 2 and "Traceback" not in result.output
    assert path.read_text().startswith("this is not sqlite")  # nothing overwritten


def test_a_corrupt_artifact_is_detected(tmp_path: Path) -> None:
    with RunStore(tmp_path / "runs.db") as store:
        location = store.put_artifact("a trace\n")
        assert store.read_artifact(location) == "a trace\n"
        digest = location.removeprefix("sha256:")
        (store.artifacts / digest[:2] / digest[2:]).write_text("tampered\n")
        with pytest.raises(StoreError, match="corrupt"):
            store.read_artifact(location)


def test_an_empty_store_says_so(tmp_path: Path) -> None:
    RunStore(tmp_path / "runs.db").close()
    result = CliRunner().invoke(main, ["report", "--store", str(tmp_path / "runs.db")])
    assert result.exit_code == 2
    assert f"the run store {tmp_path / 'runs.db'} holds no batch yet" in result.stderr
