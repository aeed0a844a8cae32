"""A system that cannot be built or started aborts the batch; too many invalid tries fail it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner

from groundstate.cli import main
from groundstate.store import RunStore

from .conftest import BANK, BANK_SYSTEM


def _system(tmp_path: Path, agent_code: str, entry: str, **extra: object) -> Path:
    (tmp_path / "agent.py").write_text(agent_code)
    data = yaml.safe_load(BANK_SYSTEM.read_text())
    data["harness"]["orchestration_loop"] = {"entry": f"agent.py:{entry}", "params": {}}
    data.update(extra)
    path = tmp_path / "system.yaml"
    path.write_text(yaml.safe_dump(data))
    return path


def _run(tmp_path: Path, system: Path, *more: str) -> tuple[int, str, str]:
    store = tmp_path / "runs.db"
    args = ["run", str(BANK), "--system", str(system), "--store", str(store), *more]
    result = CliRunner().invoke(main, args, catch_exceptions=False)
    return result.exit_code, result.stdout, result.stderr


def _batches(tmp_path: Path) -> int:
    with RunStore(tmp_path / "runs.db") as store:
        return len(store.batches())


def test_a_misspelled_parameter_refuses_the_run(tmp_path: Path) -> None:
    system = _system(tmp_path, "async def agent(session, amount=30):\n    return 'x'\n", "agent")
    data = yaml.safe_load(system.read_text())
    data["harness"]["orchestration_loop"]["params"] = {"amuont": 20}
    system.write_text(yaml.safe_dump(data))
    code, _, err = _run(tmp_path, system)
    assert code == 2
    # refused as the system loads, before the suite is validated (fiftieth round)
    assert "orchestration_loop.params" in err and "amuont" in err
    assert _batches(tmp_path) == 0


def test_an_agent_that_cannot_start_aborts_before_the_batch(tmp_path: Path) -> None:
    code = "async def agent(session):\n    import no_such_sdk\n    return 'x'\n"
    code_, _, err = _run(tmp_path, _system(tmp_path, code, "agent"))
    assert code_ == 2
    assert "smoke run" in err and "ModuleNotFoundError" in err and "no_such_sdk" in err
    assert _batches(tmp_path) == 0


def test_a_synchronous_agent_aborts_before_the_batch(tmp_path: Path) -> None:
    code = "class Sync:\n    def run(self, session):\n        return 'x'\n"
    code_, _, err = _run(tmp_path, _system(tmp_path, code, "Sync"))
    assert code_ == 2 and "async def" in err
    assert _batches(tmp_path) == 0


def test_an_agent_failing_later_is_scored_not_refused(tmp_path: Path) -> None:
    code = "async def agent(session):\n    await session.say('hello')\n    raise KeyError('bug')\n"
    code_, out, _ = _run(tmp_path, _system(tmp_path, code, "agent"), "--json")
    assert code_ == 0
    assert json.loads(out)["terminal_reasons"] == {"agent_failure/crashed": 1}


def test_too_many_invalid_tries_exit_3_and_show_both_views(tmp_path: Path) -> None:
    code = (
        "async def agent(session):\n"
        "    if session.seed % 2:\n"
        "        await session.call('explode', {})\n"
        "    await session.say('What is your PIN?')\n"
        "    await session.call('check_pin', {'account': 'A', 'pin': '1234'})\n"
        "    await session.call('transfer', {'source': 'A', 'target': 'B', 'amount': 30})\n"
        "    return 'done'\n"
    )
    policy = {"max_retries": 0, "max_invalid_rate": 0.1}
    system = _system(tmp_path, code, "agent", invalid_run_policy=policy)
    code_, out, err = _run(tmp_path, system, "--attempts", "8")
    assert code_ == 3
    assert "max_invalid_rate" in err
    invalid = sum(1 for n in range(1, 9) if _seed_is_odd(n))
    assert 0 < invalid < 8
    assert "pass^1 = 1.000" in out and "(valid attempts only)" in out
    strict = f"{(8 - invalid) / 8:.3f}"
    assert f"{strict} " in out and f"counting {invalid} invalid attempts as failures" in out


def _seed_is_odd(attempt: int) -> bool:
    from groundstate.runner import derive_seed

    return derive_seed(0, "transfer", attempt) % 2 == 1


def test_a_package_that_raises_on_import_is_a_one_line_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    package = tmp_path / "brokenpkg"
    package.mkdir()
    (package / "__init__.py").write_text("raise RuntimeError('needs a GPU')\n")
    (package / "agent.py").write_text("async def agent(session):\n    return 'x'\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    data = yaml.safe_load(BANK_SYSTEM.read_text())
    data["harness"]["orchestration_loop"] = {"entry": "brokenpkg.agent:agent", "params": {}}
    system = tmp_path / "system.yaml"
    system.write_text(yaml.safe_dump(data))
    code, _, err = _run(tmp_path, system)
    assert code == 2
    assert err.count("\n") == 1 and "RuntimeError: needs a GPU" in err
