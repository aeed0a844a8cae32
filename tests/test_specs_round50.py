"""Bad input, fiftieth round: agent entries, empty files and dropped tables of a store.

- **An agent entry naming nothing was found after the suite was validated.** ``run`` with a
  system whose entry names no attribute of its file (``retail_agents.py:nope``), a file that
  does not parse, or a module that is not there validated the whole suite first (minutes) and
  only then said so. The entry is read when the system loads now, from the file's text
  (``ast``: none of it runs; a module entry's file found with ``find_spec``): refused naming
  the system file, the field and why. A file that may bind names its text does not show
  (``from x import *``, a module ``__getattr__``, ``globals()``) is not refused so.
- **An empty file was a store to ``import-results`` and ``run``, no store to ``report``.**
  One rule now: an empty file is no run store, for every command (it may be a store emptied,
  and making a new one in it hid that); a command making a store waits briefly for a file
  another process is making. ``run``'s interruption note read the store with ``create`` on
  and made one where there was none.
- **A store's dropped table was made again, empty.** ``seals`` and ``leases`` were made again
  by design, and the newest table (``started_tries``) dropped could not be told from a store
  made before it. A store is stamped with the tables it was given (``PRAGMA
  application_id``); one missing any of them is refused, naming the store and the table, and
  left as it is. A store from before the stamp still migrates.
"""

from __future__ import annotations

import hashlib
import sqlite3
import threading
from pathlib import Path

import pytest

from groundstate.errors import SpecError, StoreError
from groundstate.spec.system import load_system
from groundstate.store import _GENERATIONS, RunStore
from tests.test_imports_formats import Store, cli

# --- agent entries, read before anything runs ---------------------------------------------

AGENT = "async def agent(session, **params):\n    return 'done'\n"
MARK = "import pathlib\npathlib.Path(__file__).with_name('ran').write_text('x')\n"


def _system(tmp_path: Path, entry: str, agent: str | None = AGENT) -> Path:
    if agent is not None:
        (tmp_path / "agent.py").write_text(agent)
    path = tmp_path / "system.yaml"
    path.write_text(f"harness:\n  orchestration_loop:\n    entry: {entry}\n")
    return path


def _refused(system: Path) -> SpecError:
    with pytest.raises(SpecError) as caught:
        load_system(system)
    assert caught.value.path == str(system)
    assert caught.value.field == "harness.orchestration_loop.entry"
    return caught.value


def test_an_entry_naming_nothing_in_its_file_is_refused_unrun(tmp_path: Path) -> None:
    system = _system(tmp_path, "agent.py:agnet", MARK + AGENT)
    error = _refused(system)
    assert error.reason == "'agent.py:agnet' names no callable (did you mean 'agent'?)"
    assert not (tmp_path / "ran").exists()  # the agent's file did not run


def test_a_constant_is_not_suggested_for_a_misspelt_entry(tmp_path: Path) -> None:
    system = _system(tmp_path, "agent.py:nope", "OPEN = 1\n" + AGENT)
    assert _refused(system).reason == "'agent.py:nope' names no callable"


@pytest.mark.parametrize(
    ("text", "line"),
    [("def broken(:\n", 3), ("async def agent(session):\n\treturn 1\n        return 2\n", 5)],
)
def test_an_agent_file_that_does_not_parse_is_refused_at_its_line(
    tmp_path: Path, text: str, line: int
) -> None:
    system = _system(tmp_path, "agent.py:agent", MARK + text)
    error = _refused(system)
    assert error.reason.startswith("cannot import agent.py: ")
    assert "Error: " in error.reason and error.reason.endswith(f"(line {line})"), error.reason
    assert not (tmp_path / "ran").exists()


def test_an_agent_file_not_in_utf8_is_refused_as_what_python_says(tmp_path: Path) -> None:
    (tmp_path / "agent.py").write_bytes(b'NAME = "caf\xe9"\n' + AGENT.encode())
    error = _refused(_system(tmp_path, "agent.py:agent", None))
    assert "cannot import agent.py: SyntaxError" in error.reason


@pytest.mark.parametrize(
    ("entry", "said"),
    [
        ("no_such_module_r50:agent", "No module named 'no_such_module_r50'"),
        ("groundstate.agents.scripted:Nope", "'groundstate.agents.scripted:Nope' names no"),
    ],
)
def test_a_module_entry_naming_nothing_is_refused_as_the_system_loads(
    tmp_path: Path, entry: str, said: str
) -> None:
    assert said in _refused(_system(tmp_path, entry)).reason


@pytest.mark.parametrize(
    "text",
    [
        AGENT,
        "class agent:\n    async def run(self, session):\n        return None\n",
        "from asyncio import sleep as agent\n",
        "try:\n    from nowhere import agent\nexcept ImportError:\n    agent = None\n",
        "import sys\nif sys.version_info > (3,):\n    agent = lambda **p: None\n",
        "from os.path import *\n",  # may bind anything
        "def __getattr__(name):\n    return None\n",
        "globals()['agent'] = None\n",
        "import sys\nsetattr(sys.modules[__name__], 'agent', None)\n",
        "def make():\n    global agent\n    agent = None\n\nmake()\n",
        "if (agent := None) is None:\n    pass\n",
        "for agent in [None]:\n    pass\n",
        "with open(__file__) as agent:\n    pass\n",
        "# -*- coding: latin-1 -*-\n# caf\xe9\n" + AGENT,
    ],
)
def test_an_entry_its_file_binds_or_may_bind_loads(tmp_path: Path, text: str) -> None:
    """Honest: bound in any statement of the module, or in a way its text does not show."""
    if "latin-1" in text:
        (tmp_path / "agent.py").write_bytes(text.encode("latin-1"))
        text = None  # type: ignore[assignment]
    assert load_system(_system(tmp_path, "agent.py:agent", text)).resolved["code"]


def test_a_name_bound_only_inside_a_function_is_not_the_modules(tmp_path: Path) -> None:
    system = _system(tmp_path, "agent.py:agent", "def main():\n    agent = 1\n    return agent\n")
    assert "names no callable" in _refused(system).reason


def _with_params(system: Path, params: str) -> Path:
    system.write_text(system.read_text() + f"    params: {params}\n")
    return system


@pytest.mark.parametrize(
    ("params", "said"),
    [
        ("{fault_rat: 0.5, mode: 1}", "got an unexpected keyword argument 'fault_rat'"
                             " (did you mean 'fault_rate'?)"),
        ("{}", "missing a required argument: 'mode'"),
    ],
)  # fmt: skip
def test_params_an_async_def_cannot_take_are_refused_as_the_system_loads(
    tmp_path: Path, params: str, said: str
) -> None:
    agent = "async def agent(session, fault_rate=0.1, *, mode):\n    return None\n"
    system = _with_params(_system(tmp_path, "agent.py:agent", MARK + agent), params)
    with pytest.raises(SpecError) as caught:
        load_system(system)
    assert caught.value.field == "harness.orchestration_loop.params"
    assert caught.value.reason == said and not (tmp_path / "ran").exists()


@pytest.mark.parametrize(
    "agent",
    [
        "async def agent(session, **params):\n    return None\n",
        "async def agent(session, *, mode, fault_rat=1):\n    return None\n",
        "import functools\n@functools.cache\nasync def agent(session):\n    return None\n",
        "async def agent(session):\n    return None\nagent = lambda **p: None\n",
        "class Base:\n    pass\nclass agent(Base):\n    def __init__(self):\n        pass\n",
    ],
)
def test_params_read_only_where_the_text_shows_the_function_called(
    tmp_path: Path, agent: str
) -> None:
    """Honest: taken by its signature, or a function the text cannot be sure of."""
    system = _with_params(_system(tmp_path, "agent.py:agent", agent), "{fault_rat: 0.5, mode: 1}")
    assert load_system(system).harness.orchestration_loop.params == {"fault_rat": 0.5, "mode": 1}


@pytest.mark.parametrize("entry", ["openai-chat", "anthropic-messages"])
def test_a_built_in_adapter_is_read_under_its_own_name(tmp_path: Path, entry: str) -> None:
    assert load_system(_system(tmp_path, entry, None)).resolved["code"]["orchestration_loop"]


def test_run_refuses_a_bad_entry_before_validating_the_suite(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The suite's validation (minutes for a real one) is never started."""
    from tests.conftest import EXAMPLES

    validated: list[object] = []
    monkeypatch.setattr(
        "groundstate.validation.require_valid", lambda *a, **k: validated.append(a) or []
    )
    system = _system(tmp_path, "agent.py:agnet")
    store = tmp_path / "runs.db"
    code, _, err = cli("run", str(EXAMPLES / "retail"), "--system", str(system),
                       "--store", str(store))  # fmt: skip
    assert code == 2 and "Traceback" not in err
    assert f"{system}" in err and "harness.orchestration_loop.entry" in err, err
    assert "did you mean 'agent'?" in err and not validated and not store.exists()


# --- an empty file is no store, for every command -----------------------------------------


def test_an_empty_file_is_no_store_to_import_into_nor_to_run_with(tmp_path: Path) -> None:
    empty = tmp_path / "runs.db"
    empty.touch()
    rows = tmp_path / "rows.csv"
    rows.write_text("task_id,attempt,success\nt1,0,true\n")
    code, _, err = cli("import-results", str(rows), "--name", "x", "--store", str(empty))
    assert code == 2 and f"{empty} is an empty file, not a run store" in err, err
    for create in (True, False):
        with pytest.raises(StoreError, match="is an empty file, not a run store"):
            RunStore(empty, create=create)
    assert empty.stat().st_size == 0 and not (tmp_path / "artifacts").exists()


def test_a_store_another_process_is_making_is_waited_for(tmp_path: Path) -> None:
    """Honest: SQLite makes the file, then writes it; a second writer opens it once written."""
    made = tmp_path / "made" / "runs.db"
    RunStore(made).close()
    path = tmp_path / "runs.db"
    path.touch()
    later = threading.Timer(0.3, lambda: path.write_bytes(made.read_bytes()))
    later.start()
    try:
        with RunStore(path) as store:
            assert store.batches() == []
    finally:
        later.join()


def test_a_new_store_is_made_where_there_is_no_file(tmp_path: Path) -> None:
    with RunStore(tmp_path / "new" / "runs.db") as store:
        assert store.batches() == []


def test_the_interruption_note_makes_no_store(tmp_path: Path) -> None:
    from groundstate.cli.interrupts import _stored_attempts

    missing = tmp_path / "none.db"
    assert _stored_attempts(missing, "b-1") == "an unknown number of attempts"
    assert not missing.exists()


# --- a store's dropped table -------------------------------------------------------------


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _dropped(path: Path, table: str) -> str:
    with sqlite3.connect(path) as db:
        db.execute(f"DROP TABLE {table}")
        db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    db.close()
    return _digest(path)


@pytest.mark.parametrize("table", [t for names in _GENERATIONS for t in names])
def test_a_store_missing_any_table_it_had_is_refused_as_it_is(tmp_path: Path, table: str) -> None:
    store = Store(tmp_path)
    before = _dropped(store.path, table)
    for create in (True, False):
        with pytest.raises(StoreError, match=f"has no table '{table}'") as caught:
            RunStore(store.path, create=create)
        assert str(store.path) in str(caught.value)
    code, _, err = cli("report", "--store", str(store.path))
    assert code == 2 and f"has no table '{table}'" in err and "Traceback" not in err
    assert _digest(store.path) == before  # nothing made again, nothing written


def test_a_store_from_before_the_stamp_still_gains_its_newer_tables(tmp_path: Path) -> None:
    """Honest: a store of an older groundstate (no stamp, no newest table) migrates."""
    store = Store(tmp_path)
    with sqlite3.connect(store.path) as db:
        db.execute("DROP TABLE started_tries")
        db.execute("PRAGMA application_id = 0")
    db.close()
    with RunStore(store.path) as opened:
        assert opened.verify(store.earlier).ok
    with sqlite3.connect(store.path) as db:
        tables = {r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type='table'")}
        stamp = db.execute("PRAGMA application_id").fetchone()[0]
    db.close()
    assert "started_tries" in tables and stamp == 0x47530000 + len(_GENERATIONS)


def test_a_store_stamped_but_emptied_of_tables_is_refused(tmp_path: Path) -> None:
    store = Store(tmp_path)
    with sqlite3.connect(store.path) as db:
        tables = [r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type='table'")]
        for table in (t for t in tables if not t.startswith("sqlite_")):
            db.execute(f"DROP TABLE {table}")
    db.close()
    with pytest.raises(StoreError, match="has no table 'batches', which it had"):
        RunStore(store.path)
