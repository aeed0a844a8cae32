"""Run store, nineteenth audit: a damaged seal is named (not rebuilt silently); usage a file or
a provider did not report is not known (``null``), never 0, in every reader and writer; other
harnesses' result files, malformed or unusual, are imported exactly or refused by name, and a
refused file stores nothing."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest
from click.testing import CliRunner

from groundstate.cli import main
from groundstate.records import AgentRun, Usage
from groundstate.spec.suite import Suite


def _invoke(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(main, list(args))
    assert result.exception is None or isinstance(result.exception, SystemExit), result.output
    return result.exit_code, result.stdout, result.stderr


def _rows_file(path: Path, rows: list[dict[str, object]]) -> Path:
    path.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    return path


def _imported(tmp_path: Path, rows: list[dict[str, object]], name: str = "sys") -> tuple[Path, str]:
    store = tmp_path / "runs.db"
    source = _rows_file(tmp_path / f"{name}.jsonl", rows)
    code, out, err = _invoke(
        "import-results", str(source), "--name", name, "--json", "--store", str(store)
    )
    assert code == 0, out + err
    return store, json.loads(out)["batch_id"]


ROWS: list[dict[str, object]] = [
    {"task_id": f"t{t}", "attempt": a, "success": (t + a) % 3 == 0, "cost": 0.5}
    for t in range(4)
    for a in (1, 2, 3)
]


# --- a damaged seal is named ----------------------------------------------------------------------

DAMAGES = {
    "record garbage": "UPDATE seals SET record = '{not json'",
    "record of another batch": "UPDATE seals SET record = json_set(record, '$.batch_id', 'zz')",
    "columns cut": "UPDATE seals SET outcomes = substr(outcomes, 1, 20)",
    "columns changed": "UPDATE seals SET outcomes = zeroblob(length(outcomes))",
}


@pytest.mark.parametrize("damage", sorted(DAMAGES))
def test_a_damaged_seal_is_named_by_every_reading_command(tmp_path: Path, damage: str) -> None:
    """Found here: a seal whose record or columns were damaged was recomputed with no word
    (the figures right, from a full check). Each reading command now warns, naming the batch,
    exit 0 (nothing in the records is altered), in text, JSON and HTML alike; the full check
    then seals again, and the next command is silent."""
    store, batch = _imported(tmp_path, ROWS)
    code, clean, err = _invoke("report", batch, "--json", "--store", str(store))
    assert code == 0 and err == "", err
    commands = [
        ("report", batch, "--json"),
        ("report", batch),
        ("report", batch, "--html", str(tmp_path / "r.html")),
        ("runs", batch),
        ("batches",),
        ("compare", batch, batch),
    ]
    for command in commands:
        db = sqlite3.connect(store)
        with db:
            db.execute(DAMAGES[damage])
        db.close()
        code, out, err = _invoke(*command, "--store", str(store))
        assert code == 0 and "Traceback" not in out + err, (command, out + err)
        assert f"warning: batch {batch}: its verification seal is damaged" in err, (command, err)
        if command == ("report", batch, "--json"):
            data, before = json.loads(out), json.loads(clean)
            assert data["integrity"]["verified"] is True
            assert any("seal is damaged" in p for p in data["integrity"]["problems"])
            for key in ("summary", "tries"):
                assert data[key] == before[key]
        if "--html" in command:
            page = (tmp_path / "r.html").read_text(encoding="utf-8")
            assert "verification seal of this batch" in page and "ALTERED" not in page
    code, out, err = _invoke("report", batch, "--json", "--store", str(store))
    assert code == 0 and err == "" and json.loads(out)["integrity"]["check"] == "seal", err


def test_a_stale_seal_of_a_grown_batch_is_not_called_damaged(tmp_path: Path) -> None:
    """A seal the batch no longer matches (a run row edited) is not a damaged seal: the full
    check names the edit, and nothing is said of the seal."""
    store, batch = _imported(tmp_path, ROWS)
    db = sqlite3.connect(store)
    with db:
        db.execute("UPDATE runs SET success = 1 - success WHERE rowid = (SELECT min(rowid) FROM runs)")
    db.close()
    code, out, err = _invoke("report", batch, "--store", str(store))
    assert code == 1 and "seal" not in err and "warning" in err, err


# --- usage not reported is not known, never 0 ---------------------------------------------------


def test_a_failed_model_call_try_records_its_usage_as_not_known(
    monkeypatch: pytest.MonkeyPatch,
    retail: Suite,  # noqa: F811
) -> None:
    """Found here: a try the API answered with an error was recorded with 0 tokens and cost
    0, as if the provider had said it used none (a timed-out request may be billed). It is
    now not known (``null``); the answered calls are counted as before, so a budget still
    applies and the attempt still succeeds."""
    from groundstate.testing import Fail

    from .model_harness import PROVIDERS, _harness
    from .test_models_round18 import _calls, _run
    from .test_models_round17 import _oracle

    for provider in PROVIDERS:
        harness = _harness(provider, monkeypatch, retail)
        run = _run(harness, [Fail(500, "oops"), *_oracle(retail)], max_tokens=10**6)
        assert run.terminal_reason == "success", run.infrastructure_status
        failed = [c for c in _calls(run) if c.error is not None]
        answered = [c for c in _calls(run) if c.error is None]
        assert len(failed) == 1
        usage = failed[0].usage
        assert (usage.input_tokens, usage.output_tokens, usage.cost) == (None, None, None)
        assert run.usage.input_tokens == sum(c.usage.input_tokens or 0 for c in answered) > 0


def _with_usage(run: AgentRun, tokens: tuple[int | None, int | None], cost: float | None) -> AgentRun:
    return run.model_copy(
        update={"usage": Usage(input_tokens=tokens[0], output_tokens=tokens[1]), "cost": cost}
    )


def test_a_replay_reports_usage_the_record_does_not_know_as_not_known(bank: Suite) -> None:
    """Found here: ``observed_trajectory`` (regrade, regression cases) read a usage the record
    does not know as 0, so a replay under a token or cost budget ran on as if nothing was
    spent, where the run itself was stopped (the budget could not be checked)."""
    from groundstate.agents.scripted import RecordedUsage
    from groundstate.testing import attempt, run_solution
    from groundstate.validation.regress import observed_trajectory

    task_id, solutions = next(iter(bank.solutions.items()))
    base = run_solution(bank, task_id, next(iter(solutions)))
    replayed = {
        "unknown": _with_usage(base, (None, None), None),
        "known": _with_usage(base, (120, 30), 0.25),
        "nothing": _with_usage(base, (0, 0), 0.0),
    }
    usage = {
        name: [s for s in observed_trajectory(run) if isinstance(s, RecordedUsage)]
        for name, run in replayed.items()
    }
    assert usage == {
        "unknown": [RecordedUsage(None, None, None)],
        "known": [RecordedUsage(120, 30, 0.25)],
        "nothing": [],
    }
    from groundstate.agents.scripted import ScriptedAgent
    from groundstate.testing import scripted_system

    plain = scripted_system()
    system = plain.model_copy(
        update={"budgets": plain.budgets.model_copy(update={"max_tokens": 10**6})}
    )
    agent = ScriptedAgent(observed_trajectory(replayed["unknown"]))
    again = attempt(bank, task_id, agent, system=system).run
    assert again.terminal_reason == "harness_compatibility_failure", again.infrastructure_status
    assert again.usage.input_tokens is None and again.cost is None


def test_an_attempt_lost_with_its_worker_does_not_claim_it_spent_nothing(bank: Suite) -> None:
    """Found here: an attempt whose worker was killed (or died) was recorded as having used 0
    tokens at cost 0: what it spent went with the worker. Now not known; the reports leave it
    out of the cost and count it as such."""
    from datetime import UTC, datetime

    from groundstate.episode import AttemptInfo, lost_attempt
    from groundstate.testing import scripted_system

    task = next(iter(bank.tasks.values()))
    info = AttemptInfo(run_id="r1", batch_id="b1", attempt=1, seed=0)
    run = lost_attempt(
        task, scripted_system(), info, RuntimeError("worker died"), "agent",
        {"exitcode": -9}, datetime.now(UTC), 1.5,
    ).run  # fmt: skip
    assert (run.usage.input_tokens, run.usage.output_tokens, run.cost) == (None, None, None)
    assert AgentRun.model_validate_json(run.model_dump_json()) == run
