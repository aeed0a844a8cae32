"""``groundstate play``: a person at the terminal as the agent or as the user, driven here by
scripted input through the real CLI."""

from __future__ import annotations

import shutil
from pathlib import Path

import yaml
from click.testing import CliRunner, Result

from groundstate.cli import main
from groundstate.spec.suite import load_suite
from groundstate.store import RunStore
from groundstate.testing import run_solution

from .conftest import BANK, HERE

SOLVE = "\n".join(
    [
        "tools",
        "say What is your PIN?",
        'call check_pin {"account": "A", "pin": "1234"}',
        'call transfer {"source": "A", "target": "B", "amount": 30}',
        "finish Moved 30 from A to B.",
    ]
)


def play(tmp_path: Path, *args: str, given: str) -> Result:
    store = str(tmp_path / "store.db")
    return CliRunner().invoke(main, ["play", *args, "--store", store], input=given + "\n")


def bank_copy(tmp_path: Path) -> Path:
    root = tmp_path / "bank"
    shutil.copytree(BANK, root)
    return root


def test_a_person_solves_a_task_and_the_trajectory_becomes_a_solution(tmp_path: Path) -> None:
    root = bank_copy(tmp_path)
    result = play(tmp_path, str(root), "transfer", "--save", "human", given=SOLVE)
    assert result.exit_code == 0, result.output
    assert "check_pin(account, pin)" in result.output  # `tools` lists the declarations
    assert "user: My pin is 1234." in result.output  # the scripted user answered the person
    assert "\nsuccess · run " in result.output
    saved = root / "solutions" / "transfer" / "human.yaml"
    data = yaml.safe_load(saved.read_text())
    assert data["kind"] == "alternative"
    assert [next(iter(step)) for step in data["steps"]] == ["say", "call", "call", "finish"]
    replay = run_solution(load_suite(root), "transfer", "human")  # it proves the task
    assert replay.success
    with RunStore(tmp_path / "store.db") as store:
        (batch,) = store.batches()
        (run,) = store.runs(batch.batch_id)
    assert batch.attempts == 1 and list(batch.task_revisions) == ["transfer"]
    assert batch.system_spec["harness"]["orchestration_loop"]["entry"].endswith("PersonAgent")
    assert run.success


def test_a_failed_attempt_is_stored_but_not_saved_as_a_solution(tmp_path: Path) -> None:
    root = bank_copy(tmp_path)
    moves = 'call transfer {"source": "A", "target": "B", "amount": 30}\nfinish Done.'
    result = play(tmp_path, str(root), "transfer", "--save", "human", given=moves)
    assert result.exit_code == 0, result.output
    assert "agent_failure/constraint_violation" in result.output  # no PIN check first
    assert "not saved as a solution" in result.output
    assert not (root / "solutions" / "transfer" / "human.yaml").exists()


def test_bad_input_is_explained_and_refused_calls_are_shown(tmp_path: Path) -> None:
    given = "\n".join(
        ["dance", "call transfer {not json", "call read_audit {}", "give up too hard"]
    )
    result = play(tmp_path, str(BANK), "transfer", given=given)
    assert "Commands:" in result.output  # an unknown command gets the help
    assert "arguments must be a JSON object" in result.output
    assert "permission_denied" in result.output or "prohibited" in result.output
    assert "agent_failure/prohibited_action" in result.output  # the task forbids the audit table


def test_leaving_the_terminal_gives_up(tmp_path: Path) -> None:
    result = play(tmp_path, str(BANK), "transfer", given="tools")
    assert "agent_failure/gave_up" in result.output


def test_an_unknown_task_names_the_suite_and_its_tasks(tmp_path: Path) -> None:
    result = play(tmp_path, str(BANK), "nope", given="")
    assert result.exit_code == 2
    assert "no task 'nope' (the suite has: transfer)" in result.output


def test_a_person_plays_the_user_against_a_system(tmp_path: Path) -> None:
    system = tmp_path / "system.yaml"
    data = yaml.safe_load((HERE / "suites" / "bank_system.yaml").read_text())
    data["harness"]["orchestration_loop"]["entry"] = str(HERE / "suites" / "bank_agent.py") + (
        ":bank_agent"
    )
    data["harness"]["orchestration_loop"]["params"] = {"fault_rate": 0.0}
    system.write_text(yaml.safe_dump(data))
    result = play(
        tmp_path,
        str(BANK),
        "transfer",
        "--as",
        "user",
        "--system",
        str(system),
        given="It is 1234.",
    )
    assert result.exit_code == 0, result.output
    assert "agent: What is your PIN?" in result.output
    assert "\nsuccess · run " in result.output
    with RunStore(tmp_path / "store.db") as store:
        (batch,) = store.batches()
        (run,) = store.runs(batch.batch_id)
    assert batch.system_spec["user_simulator"]["kind"] == "person"  # a different instrument
    said = [e.text for e in run.observation_action_log if e.kind == "message"]
    assert "It is 1234." in said


def test_playing_the_user_needs_a_system(tmp_path: Path) -> None:
    result = play(tmp_path, str(BANK), "transfer", "--as", "user", given="")
    assert result.exit_code == 2
    assert "--as user needs the system" in result.output
