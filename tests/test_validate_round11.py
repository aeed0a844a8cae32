"""Eleventh validation audit: verdicts resting on what the machine that validates happens to
have, and cached proofs outliving the packages the suite's code imports.

- A check whose verdict reads an environment variable, the network, or state a tools module
  keeps between attempts disagrees between ``grader_determinism``'s gradings (environment
  variables none, then all set, for the suite's code; its connections refused; the regrade's
  replay imports the tools anew); a check that only reads the state is unaffected.
- The validity cache's key holds the versions of the distributions the suite's Python files
  import (and what they require), so upgrading one proves the tasks again.
"""

from __future__ import annotations

import os
import socket
import time
from importlib.metadata import version
from pathlib import Path

import pytest

from groundstate.spec.suite import Suite, load_suite
from groundstate.validation import checks as validation_checks
from groundstate.validation import packages, skew, validation_key
from groundstate.validation import suite as validation_suite

from .conftest import EditTask
from .test_validation import add_checks, bank_copy


def _determinism(suite: Suite) -> tuple[bool, str]:
    return validation_checks.check_grader_determinism(
        validation_checks.Proof(suite, suite.tasks["transfer"])
    )


def _with_check(tmp_path: Path, edited_bank: EditTask, code: str) -> Suite:
    """The bank suite whose transfer task also asserts ``checks.py:extra`` (given *code*)."""
    add_checks(bank_copy(tmp_path), code)
    return edited_bank(
        lambda task: task["outcome_assertions"].append({"id": "extra", "check": "checks.py:extra"})
    )


# --- environment variables -------------------------------------------------------------------

ENV_READERS = """
import os
from os import environ, getenv


def set_here(s0, sT):
    return os.environ["GS_R11_SET"] == "yes"


def unset_here(s0, sT):
    return os.getenv("GS_R11_UNSET") is None


def not_in(s0, sT):
    return "GS_R11_UNSET" not in os.environ


def from_import(s0, sT):
    return environ.get("GS_R11_SET", "no") == "yes"


def getenv_bound(s0, sT):
    return not getenv("GS_R11_UNSET")


LIMIT = int(os.environ.get("GS_R11_LIMIT", "30"))


def at_import(s0, sT):
    return LIMIT == 30


def other_things(s0, sT):
    os.environ.get("GS_R11_DEBUG")
    return os.path.basename("/a/b") == "b" and bool(sT.query("SELECT 1"))
"""
VARYING = ["set_here", "unset_here", "not_in", "from_import", "getenv_bound", "at_import"]


def test_a_verdict_read_off_an_environment_variable_is_caught(
    tmp_path: Path, edited_bank: EditTask, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Set where validation runs or not, each variable read is flipped in one grading; a
    check that reads one without resting its verdict on it stays deterministic."""
    monkeypatch.setenv("GS_R11_SET", "yes")
    monkeypatch.delenv("GS_R11_UNSET", raising=False)
    monkeypatch.delenv("GS_R11_LIMIT", raising=False)
    add_checks(bank_copy(tmp_path), ENV_READERS)
    suite = edited_bank(
        lambda task: task["outcome_assertions"].extend(
            {"id": name, "check": f"checks.py:{name}"} for name in [*VARYING, "other_things"]
        )
    )
    passed, detail = _determinism(suite)
    assert not passed, detail
    for name in VARYING:
        assert f"{name} gave pass, fail" in detail or f"{name} gave pass, pass, fail" in detail
    assert "other_things gave" not in detail
    assert "environment variable" in detail  # the reader is told what varied
    assert os.environ["GS_R11_SET"] == "yes"  # the real environment is left alone
    assert "GS_R11_UNSET" not in os.environ
    assert type(os.environ) is os._Environ  # put back after the imports


# --- the network -----------------------------------------------------------------------------


def test_a_verdict_fetched_over_the_network_is_caught(
    tmp_path: Path, edited_bank: EditTask, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A check asking a local service (here: one that answers from the test) passes where the
    service runs, and is refused offline."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen()
    port = server.getsockname()[1]
    code = (
        "import socket\n\ndef extra(s0, sT):\n    try:\n"
        f"        socket.create_connection(('127.0.0.1', {port}), timeout=5).close()\n"
        "    except OSError:\n        return False\n    return True\n"
    )
    try:
        passed, detail = _determinism(_with_check(tmp_path, edited_bank, code))
    finally:
        server.close()
    assert not passed, detail
    assert "extra gave pass, fail, fail" in detail
    assert "network off" in detail


def test_the_network_is_refused_only_to_the_suites_code() -> None:
    """Refused to the suite's code and libraries it calls; the code of groundstate and of the
    environment's kind (a view reaching a service, a Python database driver) connects, also
    when a check called it."""
    kind: dict[str, object] = {"__name__": "gsr11kind.views", "socket": socket}
    exec(
        "class Env:\n    pass\n\ndef view_query():\n    socket.getaddrinfo('localhost', 80)\n", kind
    )
    suite: dict[str, object] = {"__name__": "groundstate_user.checks_r11", "socket": socket}
    suite["view_query"] = kind["view_query"]
    exec("def direct():\n    socket.getaddrinfo('localhost', 80)\n", suite)
    exec("def through_view():\n    view_query()\n", suite)
    env = kind["Env"]()  # type: ignore[operator]
    with skew.offline([suite], env):
        with pytest.raises(skew.NetworkRefused):
            suite["direct"]()  # type: ignore[operator]
        suite["through_view"]()  # type: ignore[operator]
        socket.getaddrinfo("localhost", 80)  # groundstate's own (a model judge's): as before
    suite["direct"]()  # type: ignore[operator]
    assert "connect" not in vars(socket.socket)  # put back as it was (inherited)


# --- state a tools module keeps --------------------------------------------------------------

WARM_TOOL = '''

_CALLS: list[int] = []


@tool
def note(ctx: ToolContext) -> int:
    """Counts its calls in this process (a module-level cache outliving the attempt)."""
    _CALLS.append(1)
    ctx.db.execute("UPDATE accounts SET balance = balance + ? WHERE id = 'C'", (len(_CALLS) > 1,))
    return len(_CALLS)
'''


def test_a_route_resting_on_what_earlier_attempts_left_in_the_tools_module_is_caught(
    tmp_path: Path, edited_bank: EditTask
) -> None:
    """Warm (a second attempt in the process) the tool moves C's balance; cold (the first
    attempt of a batch), it does not: the regrade's replay imports the tools anew."""
    root = bank_copy(tmp_path)
    with (root / "tools.py").open("a") as handle:
        handle.write(WARM_TOOL)
    oracle = root / "solutions" / "transfer" / "oracle.yaml"
    oracle.write_text(oracle.read_text().replace("steps:\n", "steps:\n  - call: note\n", 1))

    def offer(task: dict[str, object]) -> None:
        tools = task["available_tools"]
        assert isinstance(tools, list)
        tools.append("note")

    suite = edited_bank(offer)
    proof = validation_checks.Proof(suite, suite.tasks["transfer"])
    proof.run_steps(suite.solutions["transfer"]["oracle"].steps)  # an earlier attempt
    passed, detail = validation_checks.check_grader_determinism(proof)
    assert not passed, detail
    assert "tools imported anew" in detail


def test_reloading_the_tools_keeps_the_suite_as_loaded(tmp_path: Path) -> None:
    suite = load_suite(bank_copy(tmp_path))
    before = dict(suite.tools)
    with skew.fresh_tools(suite) as anew:
        assert set(anew.tools) == set(before)
        assert anew.tools["transfer"].fn is not before["transfer"].fn
        assert anew.checks is suite.checks
    assert suite.tools == before


# --- the packages the suite's code imports, in the cache key ---------------------------------


def _distribution(site: Path, name: str, version: str, requires: str = "") -> None:
    """Install distribution *name* at *version* in *site* (a folder on sys.path), replacing
    any other version of it there, as pip would."""
    for old in site.glob(f"{name}-*.dist-info"):
        (old / "METADATA").unlink()
        old.rmdir()
    info = site / f"{name}-{version}.dist-info"
    info.mkdir(parents=True)
    lines = [f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n"]
    lines += [
        f"Requires-Dist: {requirement}\n" for requirement in requires.split(",") if requirement
    ]
    (info / "METADATA").write_text("".join(lines))


def test_the_cache_key_follows_the_packages_the_checks_import(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    site = tmp_path / "site"
    (site / "gsround11lib").mkdir(parents=True)
    (site / "gsround11lib" / "__init__.py").write_text("LIMIT = 1\n")
    _distribution(site, "gsround11lib", "1.0", 'gsround11dep>=1,gsround11extra; extra == "x"')
    _distribution(site, "gsround11dep", "1.0")
    monkeypatch.syspath_prepend(str(site))
    root = bank_copy(tmp_path)
    (root / "helpers.py").write_text("def limit():\n    import gsround11lib\n    return 1\n")
    add_checks(root, "import helpers\n")  # reached through a sibling, inside a function

    suite = load_suite(root)

    def key() -> str:
        packages._providers.cache_clear()  # a new process: installed versions read again
        packages.with_requirements.cache_clear()
        return validation_key(suite, suite.tasks["transfer"])

    first = key()
    assert key() == first
    _distribution(site, "gsround11lib", "2.0", "gsround11dep>=1")
    second = key()
    assert second != first  # the package the check imports changed
    _distribution(site, "gsround11dep", "1.1")
    assert key() != second  # and what it requires
    found = packages.distribution_versions([root / "checks.py"])
    assert found["gsround11lib"] == "2.0" and found["gsround11dep"] == "1.1"
    assert "gsround11extra" not in found  # an extra is not installed unless asked for
    assert not any(name.startswith(("module:helpers", "module:os")) for name in found)


# --- how long the attempt took ---------------------------------------------------------------

TIMED = """

def quick_calls(trace, s0):
    return all(e.duration_ms < 5000 for e in trace if e.kind == "tool_call")


def in_order(trace, s0):
    times = [e.at for e in trace]
    calls = [e for e in trace if e.kind == "tool_call"]
    return times == sorted(times) and all(e.duration_ms >= 0 for e in calls)
"""


def test_a_verdict_resting_on_how_long_calls_took_is_caught(
    tmp_path: Path, edited_bank: EditTask
) -> None:
    """A constraint that the calls were quick passes on an idle machine and fails under load;
    one on the order of events does not depend on the pace."""
    add_checks(bank_copy(tmp_path), TIMED)
    suite = edited_bank(
        lambda task: task["hard_process_constraints"].extend(
            [
                {"id": "quick", "check": "checks.py:quick_calls"},
                {"id": "ordered", "check": "checks.py:in_order"},
            ]
        )
    )
    passed, detail = _determinism(suite)
    assert not passed, detail
    assert "quick gave pass, pass, fail" in detail
    assert "ordered gave" not in detail
    assert "an hour longer" in detail


def test_retimed_traces_keep_what_happened() -> None:
    from groundstate.trace import MessageEvent, ToolCallEvent

    events = [
        MessageEvent(step=1, role="agent", text="hi", at=0.5),
        ToolCallEvent(step=2, tool="t", args={}, ok=True, duration_ms=2.0, at=1.0),
    ]
    slow = skew.retimed(events, high=True)
    assert [e.at for e in slow] == [500.0, 1000.0 + 3600.0]  # an hour between events
    assert slow[1].duration_ms == 2000.0 + 3600_000.0  # type: ignore[union-attr]
    fast = skew.retimed(events, high=False)
    assert [e.at for e in fast] == [0.0005, 0.001] and fast[1].duration_ms == 0.002  # type: ignore[union-attr]
    assert [e.model_dump(exclude={"at", "duration_ms"}) for e in slow] == [
        e.model_dump(exclude={"at", "duration_ms"}) for e in events
    ]
    assert events[1].duration_ms == 2.0  # the replay's own trace is left as it was


def test_the_cache_key_follows_the_packages_groundstate_grades_with() -> None:
    """Another jsonschema refuses other calls (``solvable`` refuses a route with one), another
    pydantic reads other files: their versions are in the key, as Hypothesis's was."""
    runtime = validation_suite._runtime()
    requires = runtime["requires"]
    assert isinstance(requires, dict)
    for name in ("jsonschema", "pydantic", "pyyaml", "hypothesis"):
        assert requires[name] == version(name), name
    assert "pytest" not in requires  # an extra (test) is not what the library runs with


# --- the machine's time zone -----------------------------------------------------------------

ZONED = """
import time
from datetime import datetime, timezone


def local_day(s0, sT):
    return datetime.fromtimestamp(0).year == 1970


def local_hour(s0, sT):
    return time.localtime(0).tm_hour < 12


def utc_day(s0, sT):
    return datetime.fromtimestamp(0, timezone.utc).year == 1970 and time.gmtime(0).tm_hour == 0
"""


def test_a_verdict_on_the_local_time_of_a_timestamp_is_caught(
    tmp_path: Path, edited_bank: EditTask, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Graded in UTC where validation runs, in UTC+14 and UTC-12 by the skewed gradings."""
    if not hasattr(time, "tzset"):
        pytest.skip("no time zones to switch (Windows)")
    monkeypatch.setenv("TZ", "UTC")
    time.tzset()
    add_checks(bank_copy(tmp_path), ZONED)
    suite = edited_bank(
        lambda task: task["outcome_assertions"].extend(
            {"id": name, "check": f"checks.py:{name}"}
            for name in ("local_day", "local_hour", "utc_day")
        )
    )
    try:
        passed, detail = _determinism(suite)
    finally:
        monkeypatch.undo()
        time.tzset()
    assert not passed, detail
    assert "local_day gave pass, pass, fail" in detail
    assert "local_hour gave pass, fail, fail" in detail
    assert "utc_day gave" not in detail
    assert "UTC+14" in detail
