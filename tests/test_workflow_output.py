"""What suite and system code prints is kept with its run; user code imports its siblings;
the columns that matter fit 80 columns."""

from __future__ import annotations

import io
import json
import shutil
import sys
from datetime import UTC, datetime
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner
from rich.console import Console

from groundstate.capture import MAX_CHARS, captured
from groundstate.cli import main
from groundstate.cli.workflow import _runs_table
from groundstate.report.terminal import Fitted, batch_table
from groundstate.spec.canonical import hash_file
from groundstate.spec.code import hash_code, imported_siblings
from groundstate.spec.suite import Suite
from groundstate.spec.system import load_system
from groundstate.store import BatchInfo, RunStore
from groundstate.testing import run_solution
from groundstate.tools import load_module

from .conftest import BANK, BANK_SYSTEM

PRINTING_AGENT = """
import sys
from helpers import PIN_QUESTION  # a sibling module of this file

async def agent(session):
    print(f"attempt seed {session.seed}")
    print("{not json", file=sys.stderr)
    await session.say(PIN_QUESTION)
    await session.call('check_pin', {'account': 'A', 'pin': '1234'})
    await session.call('transfer', {'source': 'A', 'target': 'B', 'amount': 30})
    return 'Moved 30 from A to B.'
"""


def _system(folder: Path, agent: str, helpers: str = "PIN_QUESTION = 'What is your PIN?'\n"):
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "agent.py").write_text(agent)
    (folder / "helpers.py").write_text(helpers)
    data = yaml.safe_load(BANK_SYSTEM.read_text())
    data["harness"]["orchestration_loop"] = {"entry": "agent.py:agent", "params": {}}
    (folder / "system.yaml").write_text(yaml.safe_dump(data))
    return folder / "system.yaml"


def _invoke(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(main, list(args))
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exception
    return result.exit_code, result.stdout, result.stderr


def _printing_bank(root: Path) -> Path:
    """The bank suite whose Python check prints, and imports a sibling of checks.py."""
    suite = root / "bank"
    shutil.copytree(BANK, suite)
    (suite / "arithmetic.py").write_text("def total(rows):\n    return sum(r[0] for r in rows)\n")
    checks = (suite / "checks.py").read_text()
    checks = checks.replace(
        "from typing import Any\n", "from typing import Any\n\nfrom arithmetic import total\n"
    ).replace(
        '    before = s0.query("SELECT SUM(balance) FROM accounts")[0][0]\n',
        '    before = total(s0.query("SELECT balance FROM accounts"))\n'
        '    print(f"check sees {before} before")\n',
    )
    (suite / "checks.py").write_text(checks)
    tools = (
        (suite / "tools.py")
        .read_text()
        .replace(
            '    """Check an account\'s PIN."""\n',
            '    """Check an account\'s PIN."""\n    print(f"tool checks {account}")\n',
        )
    )
    (suite / "tools.py").write_text(tools)
    return suite


def test_printed_output_goes_to_the_run_not_stdout(tmp_path: Path) -> None:
    suite, store = _printing_bank(tmp_path), tmp_path / "runs.db"
    system = _system(tmp_path / "system", PRINTING_AGENT)
    code, out, err = _invoke(
        "run", str(suite), "--system", str(system), "--attempts", "3", "--concurrency", "3",
        "--json", "--store", str(store),
    )  # fmt: skip
    assert code == 0, err
    data = json.loads(out)  # stdout is the JSON and nothing else
    assert data["terminal_reasons"] == {"success": 3}
    assert "attempt seed" not in out + err and "not json" not in err
    with RunStore(store) as run_store:
        for row in data["runs"]:
            run = run_store.run(row["run_id"])
            printed = run_store.read_artifact(run.artifact_locations["stdout.txt"])
            # each attempt keeps its own lines, though three ran at once
            assert printed.splitlines() == [
                f"attempt seed {run.seed}",
                "tool checks A",
                "check sees 150 before",
            ]
            errors = run_store.read_artifact(run.artifact_locations["stderr.txt"])
            assert errors == "{not json\n"
    code, shown, _ = _invoke("show", data["runs"][0]["run_id"], "--store", str(store))
    assert code == 0
    assert "stdout.txt" in shown and "check sees 150 before" in shown and "{not json" in shown


def test_a_run_that_prints_nothing_has_no_output_artifacts(tmp_path: Path) -> None:
    store = tmp_path / "runs.db"
    code, out, _ = _invoke("run", str(BANK), "--system", str(BANK_SYSTEM), "--json",
                           "--store", str(store))  # fmt: skip
    assert code == 0
    with RunStore(store) as run_store:
        run = run_store.run(json.loads(out)["runs"][0]["run_id"])
    assert set(run.artifact_locations) == {"trace.jsonl", "state_diff.json"}


def test_output_outside_an_attempt_is_untouched(capsys: pytest.CaptureFixture[str]) -> None:
    with captured() as output:
        print("inside")
        sys.stderr.write("err inside\n")
    print("outside")
    assert output.artifacts() == {"stdout.txt": "inside\n", "stderr.txt": "err inside\n"}
    assert capsys.readouterr() == ("outside\n", "")


def test_a_flood_of_output_is_capped() -> None:
    with captured() as output:
        for _ in range(3):
            print("x" * (MAX_CHARS // 2), end="")
    text = output.artifacts()["stdout.txt"]
    assert text.startswith("x" * MAX_CHARS)
    assert text.endswith(f"\n[{MAX_CHARS // 2} more characters not kept]\n")


def test_validation_replays_keep_checks_quiet(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from groundstate.spec.suite import load_suite

    suite = load_suite(_printing_bank(tmp_path))
    run = run_solution(suite, "transfer", "oracle")
    assert run.success
    assert capsys.readouterr().out == ""  # the tool's print and the check's included


# --- sibling imports -------------------------------------------------------------------------


def test_two_folders_with_the_same_sibling_name_each_get_their_own(tmp_path: Path) -> None:
    for name, value in (("one", 1), ("two", 2)):
        folder = tmp_path / name
        folder.mkdir()
        (folder / "helpers.py").write_text(f"VALUE = {value}\n")
        (folder / "main.py").write_text("from helpers import VALUE\n")
    first = load_module(tmp_path / "one" / "main.py", "agent")
    second = load_module(tmp_path / "two" / "main.py", "agent")
    assert (first.VALUE, second.VALUE) == (1, 2)
    assert "helpers" not in sys.modules and str(tmp_path / "one") not in sys.path


def test_a_sibling_cannot_shadow_the_standard_library(tmp_path: Path) -> None:
    (tmp_path / "json.py").write_text("raise RuntimeError('shadowed')\n")
    (tmp_path / "main.py").write_text("import json\nDUMPED = json.dumps([1])\n")
    assert load_module(tmp_path / "main.py", "agent").DUMPED == "[1]"
    assert imported_siblings(tmp_path / "main.py") == []


def test_the_agent_hash_covers_the_siblings_it_imports(tmp_path: Path) -> None:
    system_file = _system(tmp_path, PRINTING_AGENT)
    (tmp_path / "unrelated.py").write_text("X = 1\n")
    before = load_system(system_file).system_spec_hash
    (tmp_path / "unrelated.py").write_text("X = 2\n")  # not imported: same hash
    assert load_system(system_file).system_spec_hash == before
    (tmp_path / "helpers.py").write_text("PIN_QUESTION = 'Your PIN, please?'\n")
    assert load_system(system_file).system_spec_hash != before


def test_an_agent_without_sibling_imports_keeps_its_hash(tmp_path: Path) -> None:
    agent = tmp_path / "agent.py"
    agent.write_text("import json\nfrom groundstate import Session\n")
    (tmp_path / "helpers.py").write_text("X = 1\n")
    assert hash_code(agent) == hash_file(agent)


def test_siblings_are_followed_through_one_another(tmp_path: Path) -> None:
    (tmp_path / "agent.py").write_text("import a\n")
    (tmp_path / "a.py").write_text("from b import thing\n")
    (tmp_path / "b.py").write_text("thing = 1\nimport agent\n")  # a cycle back: no loop
    (tmp_path / "c.py").write_text("")
    assert imported_siblings(tmp_path / "agent.py") == [tmp_path / "a.py", tmp_path / "b.py"]


# --- 80 columns ------------------------------------------------------------------------------

LONG_TASK = "refund-hoodie-two-orders"
REASONS = ["agent_failure/constraint_violation", "harness_compatibility_failure"]


def _render(renderable: object, width: int) -> list[str]:
    console = Console(width=width, record=True, file=io.StringIO())
    console.print(renderable)
    return console.export_text().splitlines()


def _batch_with_reasons(tmp_path: Path) -> tuple[BatchInfo, list]:
    store = tmp_path / "runs.db"
    code, out, _ = _invoke("run", str(BANK), "--system", str(BANK_SYSTEM), "--attempts", "2",
                           "--json", "--store", str(store))  # fmt: skip
    assert code == 0
    with RunStore(store) as run_store:
        batch = run_store.batch(json.loads(out)["batch_id"])
        runs = run_store.runs(batch.batch_id)
    renamed = [
        r.model_copy(update={"task_id": LONG_TASK, "terminal_reason": REASONS[n % 2]})
        for n, r in enumerate(runs)
    ]
    batch = batch.model_copy(
        update={
            "task_revisions": {LONG_TASK: 1, "short": 1},
            "task_slices": {LONG_TASK: ["refunds", "policy"], "short": []},
            "created_at": datetime.now(UTC),
        }
    )
    return batch, renamed


def test_at_80_columns_task_ids_and_reasons_are_whole(tmp_path: Path) -> None:
    batch, runs = _batch_with_reasons(tmp_path)
    lines = _render(batch_table(batch, runs), 80)
    assert all(len(line) <= 80 for line in lines)
    assert any(LONG_TASK in line for line in lines)
    for reason in REASONS:
        assert any(f"{reason} x1" in line for line in lines), reason
    assert not any("…" in line for line in lines)
    wide = "\n".join(_render(batch_table(batch, runs), 140))
    assert "refunds, policy" in wide  # the slices column is there when there is room
    rows = [
        {"run_id": r.run_id, "task_id": r.task_id, "attempt": r.attempt, "retry": 1,
         "success": False, "terminal_reason": r.terminal_reason, "counted": False}
        for r in runs
    ]  # fmt: skip
    lines = _render(Fitted(lambda w: _runs_table("b", rows, w)), 80)
    assert any(LONG_TASK in line and REASONS[0] in line and " 1 r1*" in line for line in lines)
    caption = " ".join(" ".join(lines).split())  # the caption whole, wherever it wraps
    assert "; * not counted: an invalid try a rerun replaced" in caption


def test_too_narrow_a_terminal_folds_and_loses_nothing(tmp_path: Path) -> None:
    batch, runs = _batch_with_reasons(tmp_path)
    lines = _render(batch_table(batch, runs), 40)
    text = "\n".join(lines)
    assert all(len(line) <= 40 for line in lines) and "…" not in text
    for whole in (LONG_TASK, *REASONS):  # folded: its start and its end are both shown
        assert whole[:4] in text and whole[-4:] in text, whole


def test_the_reset_probe_names_the_tables_it_could_not_change(bank: Suite) -> None:
    from groundstate.validation import validate_task

    reset = validate_task(bank, "transfer").check("reset").detail
    assert "deleted a row of accounts" in reset
    assert "could not delete a row of audit (the task's permissions or the schema refuse it)" in (
        reset
    )
    assert "could not delete a row of transfers" not in reset  # empty: nothing to delete


def test_a_checks_sibling_is_part_of_the_grader_revision(tmp_path: Path) -> None:
    from groundstate.spec.suite import load_suite

    plain = tmp_path / "plain"
    shutil.copytree(BANK, plain)
    (plain / "notes.py").write_text("X = 1\n")  # a module no check imports
    revision = load_suite(BANK).tasks["transfer"].grader_revision
    assert load_suite(plain).tasks["transfer"].grader_revision == revision
    suite = _printing_bank(tmp_path)
    before = load_suite(suite).tasks["transfer"].grader_revision
    helper = suite / "arithmetic.py"
    helper.write_text(helper.read_text().replace("for r in rows)", "for r in rows) + 1"))
    assert load_suite(suite).tasks["transfer"].grader_revision != before


def test_a_sibling_package_is_hashed_whole(tmp_path: Path) -> None:
    (tmp_path / "agent.py").write_text("from prompts import SYSTEM\n")
    (tmp_path / "prompts").mkdir()
    (tmp_path / "prompts" / "__init__.py").write_text("from prompts.text import SYSTEM\n")
    (tmp_path / "prompts" / "text.py").write_text("SYSTEM = 'be kind'\n")
    before = hash_code(tmp_path / "agent.py")
    assert load_module(tmp_path / "agent.py", "agent").SYSTEM == "be kind"
    (tmp_path / "prompts" / "text.py").write_text("SYSTEM = 'be brief'\n")
    assert hash_code(tmp_path / "agent.py") != before
    assert "prompts" not in sys.modules and "prompts.text" not in sys.modules
