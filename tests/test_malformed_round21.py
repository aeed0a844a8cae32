"""Bad input, twenty-first round: code the harness runs in its own process that ends it.

An agent (or a check) run in-process that called ``os._exit(0)`` ended ``groundstate run``
with status 0 and no word: a script (``run --fail-under`` in CI) read a batch that stopped
with its tries unstored as a batch run and passed. In the smoke run, which ran outside the
exit watch, nothing said why either. Now such a call, from the harness's own process, says
on stderr who called what, and a status of 0 becomes ``exitcause.ENDED_BY_USER_CODE``; a
non-zero status is kept; a child process the agent forked ends as it says.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from tests.cli_workspace import SYSTEM, TASK, groundstate, spoilable_copy
from tests.conftest import EXAMPLES

ENDED_BY_USER_CODE = 70
"""``groundstate.exitcause.ENDED_BY_USER_CODE`` (``EX_SOFTWARE``), spelt out: the old code
has no such name."""

AGENT = """
import os

async def ender(session, status=0, when="smoke"):
    # the smoke run's seed is 0; a batch's tries have seeds derived from the batch's
    if (session.seed == 0) == (when == "smoke"):
        os._exit(status)
    return "done"
"""


@pytest.fixture(scope="module")
def suite_root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The retail example and a system whose agent ends the process; validated once."""
    root = tmp_path_factory.mktemp("ender")
    shutil.copytree(EXAMPLES / "retail", root / "retail")
    shutil.copytree(EXAMPLES / "agents", root / "agents")
    (root / "agents" / "ender.py").write_text(AGENT)
    (root / "systems").mkdir()
    for name, params in {
        "smoke0": {"status": 0, "when": "smoke"},
        "smoke3": {"status": 3, "when": "smoke"},
        "batch0": {"status": 0, "when": "batch"},
    }.items():
        system = (EXAMPLES / "systems" / "careful.yaml").read_text()
        system = system.replace("../agents/retail_agents.py:careful", "../agents/ender.py:ender")
        system = system.replace("{fault_rate: 0.1}", json.dumps(params))
        assert "ender.py:ender" in system and json.dumps(params) in system
        (root / "systems" / f"{name}.yaml").write_text(system)
    shutil.copy(EXAMPLES / "systems" / "careful.yaml", root / SYSTEM)
    return root


def _run(root: Path, system: str, *more: str) -> tuple[int, str, str]:
    chosen = [] if "--resume" in more else ["--task", TASK]
    done = groundstate(
        "run", "retail", "--system", f"systems/{system}.yaml", *chosen,
        "--store", "s.db", *more, cwd=root,
    )  # fmt: skip
    return done.code, done.out, done.err


def _batches(root: Path) -> list[dict[str, object]]:
    listed = groundstate("batches", "--json", "--store", "s.db", cwd=root)
    assert listed.code == 0, listed.text
    return json.loads(listed.out)  # type: ignore[no-any-return]


@pytest.fixture
def root(suite_root: Path, tmp_path: Path) -> Path:
    return spoilable_copy(suite_root, tmp_path)


def test_an_agent_ending_the_process_with_0_in_the_smoke_run_is_no_success(root: Path) -> None:
    """It exited 0 with nothing printed and nothing stored."""
    code, _, err = _run(root, "smoke0")
    assert code == ENDED_BY_USER_CODE, err
    assert "Traceback" not in err
    said = [line for line in err.splitlines() if line.startswith("error:")]
    assert said and "the agent called os._exit(0)" in said[-1], err


def test_an_agent_ending_the_process_with_its_own_status_keeps_it(root: Path) -> None:
    """Control: a status that says failure already is the agent's, as before; now said."""
    code, _, err = _run(root, "smoke3")
    assert code == 3, err
    assert "the agent called os._exit(3)" in err


def test_an_agent_ending_the_process_in_a_batch_is_no_success_and_resumes_as_its_crash(
    root: Path,
) -> None:
    code, _, err = _run(root, "batch0", "--seed", "7")
    assert code == ENDED_BY_USER_CODE, err
    assert "the agent called os._exit(0)" in err
    (batch,) = _batches(root)
    resumed = _run(root, "batch0", "--resume", str(batch["batch_id"]))
    assert resumed[0] == 0, resumed
    runs = groundstate("runs", str(batch["batch_id"]), "--store", "s.db", cwd=root)
    assert "agent_failure/crashed" in runs.out, runs.text


def test_a_sound_agent_still_exits_0(root: Path) -> None:
    """Control: the careful reference agent's run is unchanged."""
    code, out, err = _run(root, "careful")
    assert code == 0 and "stored in s.db" in out, (out, err)
