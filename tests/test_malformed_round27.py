"""Bad input, twenty-seventh round.

- A suite's Python files were named in full when they failed ("/home/me/demo/tools.py:47:
  importing failed", "/home/me/demo/checks.py:20: ..."; a tool declared without a type hint,
  a solution's bad arguments, suite.yaml's warnings the same), while its task files were
  named as the suite was given ("demo/tasks/a.yaml:36: ..."); so was an agent's file next to
  its system file, beside "demo/system.yaml:7: ...". Every file of the suite, or beside the
  system file, is now named under the folder as given; one given in full stays in full.
- ``report`` of a batch whose every attempt is invalid exited 0 (without ``--fail-under``):
  a batch with no valid attempt has no estimate; it exits 3, as ``run`` does.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from groundstate.spec.suite import scan_suite
from tests.test_stats_round24 import Row, cli, imported

BOOM = "\nraise ValueError('boom')\n"


def _check(suite: str) -> list[str]:
    _, out, err = cli("check", suite)
    return [line for line in (out + err).splitlines() if ": " in line]


@pytest.mark.parametrize("file", ["tools.py", "checks.py"])
def test_a_suite_file_that_does_not_import_is_named_as_the_suite_was(demo: Path, file: str) -> None:
    """Fails on the old code: "/tmp/.../demo/tools.py:47: importing failed: ..."."""
    with (demo / "demo" / file).open("a") as handle:
        handle.write(BOOM)
    (line,) = _check("demo")
    assert line.startswith(f"demo/{file}:") and "importing failed: ValueError: boom" in line
    assert str(demo) not in line
    code, _, err = cli("run", "demo", "--system", "demo/system.yaml", "--store", "s.db")
    assert code == 2 and err.startswith(f"error: demo/{file}:"), err
    _, found = scan_suite(Path("demo"))
    assert [e.path for e in found] == [f"demo/{file}"]


def test_a_tool_declaration_problem_is_named_as_the_suite_was(demo: Path) -> None:
    """A static check's problem (the suite loaded, from its absolute folder): fails on the old
    code."""
    tools = demo / "demo" / "tools.py"
    text = tools.read_text()
    tools.write_text(text.replace("def list_loans(ctx: ToolContext, card: str)",
                                  "def list_loans(ctx: ToolContext, card)"))  # fmt: skip
    assert _check("demo") == [
        "demo/tools.py:24: list_loans: parameter 'card' has no type hint, so its schema is empty"
    ]


def test_a_suite_given_as_the_working_folder_names_its_files_bare(
    demo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with (demo / "demo" / "checks.py").open("a") as handle:
        handle.write(BOOM)
    monkeypatch.chdir(demo / "demo")
    (line,) = _check(".")
    assert line.startswith("checks.py:"), line


def test_a_suite_given_in_full_is_named_in_full(demo: Path) -> None:
    """The control: the path as given, which is the absolute one."""
    with (demo / "demo" / "tools.py").open("a") as handle:
        handle.write(BOOM)
    (line,) = _check(str(demo / "demo"))
    assert line.startswith(f"{demo / 'demo' / 'tools.py'}:"), line


def test_a_warning_of_suite_yaml_is_named_as_the_suite_was(demo: Path) -> None:
    suite_file = demo / "demo" / "suite.yaml"
    suite_file.write_text(suite_file.read_text().replace("policy: policy.md\n", ""))
    assert any(
        line.startswith("warning: demo/suite.yaml: policy: not declared") for line in _check("demo")
    )


def test_an_agent_file_that_does_not_import_is_named_as_its_system_file(demo: Path) -> None:
    """Fails on the old code: "... cannot be built: /tmp/.../demo/agent.py:26: importing
    failed", beside "demo/system.yaml:7: ..." for a misnamed entry."""
    with (demo / "demo" / "agent.py").open("a") as handle:
        handle.write(BOOM)
    code, _, err = cli("run", "demo", "--system", "demo/system.yaml", "--store", "s.db")
    assert code != 0
    assert "cannot be built: demo/agent.py:" in err and str(demo) not in err, err


# --- report of a batch with no valid attempt ---------------------------------------------------


def test_report_of_a_batch_with_no_valid_attempt_exits_3(tmp_path: Path) -> None:
    """Fails on the old code (exit 0): the FLAGGED footer, and no estimate to stand on."""
    rows = [Row("a", 0, "environment_failure/x"), Row("b", 0, "grader_failure")]
    batch = imported(tmp_path, rows, "broken")
    for extra in ([], ["--json"], ["--html", str(tmp_path / "r.html")]):
        code, _, err = cli("report", batch, *extra, "--store", str(tmp_path / "s.db"))
        assert code == 3, (extra, err)
        assert "error: every attempt is invalid (2 attempts): the batch has no estimate" in err
    assert (tmp_path / "r.html").is_file()  # the report is still written and printed
    code, _, err = cli(
        "report", batch, "--fail-under", "success_rate=0.5", "--store", str(tmp_path / "s.db")
    )
    assert code == 3 and "exceed the batch's max_invalid_rate" in err, err


def test_report_of_a_flagged_batch_with_a_valid_attempt_keeps_its_exit(tmp_path: Path) -> None:
    """The control: a batch whose flag trips but which has valid attempts has figures (with
    their flag); report without a gate shows them and exits 0, as documented; a gate makes
    it exit 3, as run does."""
    rows = [Row("a", 0, "success"), Row("b", 0, "environment_failure/x")]
    batch = imported(tmp_path, rows, "half")
    code, out, err = cli("report", batch, "--store", str(tmp_path / "s.db"))
    assert code == 0 and "FLAGGED" in out, err
    code, _, err = cli(
        "report", batch, "--fail-under", "success_rate=0.5", "--store", str(tmp_path / "s.db")
    )
    assert code == 3, err


def test_a_batch_under_max_invalid_rate_1_with_no_valid_attempt_exits_3() -> None:
    """``max_invalid_rate: 1`` flags nothing; ``run`` then exited 0 on a batch with no valid
    attempt. One rule decides it for both commands (``analysis.no_estimate``; since the
    twenty-ninth round, for ``compare`` too)."""
    from groundstate.analysis import OutcomeTable, no_estimate
    from groundstate.cli.runs import _exit_on_verdict

    from .test_reports_round12 import _batch

    def row(task: str, end: str) -> list[object]:
        return [task, 1, 0, end, end == "success", None, None, None]

    broken = OutcomeTable.from_rows([row("t", "environment_failure/x"), row("u", "grader_failure")])
    batch = _batch(invalid_run_policy={"max_invalid_rate": 1})
    missing = no_estimate(batch, broken)
    assert missing == "every attempt is invalid (2 attempts)"
    with pytest.raises(SystemExit) as stopped:
        _exit_on_verdict({"invalid_rate_flagged": False, "no_estimate": missing}, [])
    assert stopped.value.code == 3
    # unfinished (a resume may give it valid attempts): reported as such, no exit here
    assert no_estimate(_batch(attempts=2), broken) is None  # attempts not stored
    retries = {"max_invalid_rate": 1, "max_retries": 1}
    assert no_estimate(_batch(invalid_run_policy=retries), broken) is None  # reruns pending
    assert no_estimate(_batch(running="pid 1 on host"), broken) is None
    # the control: a valid attempt, no exit
    mixed = OutcomeTable.from_rows([row("t", "environment_failure/x"), row("u", "success")])
    assert no_estimate(batch, mixed) is None
    _exit_on_verdict({"invalid_rate_flagged": False, "no_estimate": None}, [])
