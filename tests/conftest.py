from __future__ import annotations

import inspect
import multiprocessing
import os
import shutil
import sqlite3
import stat
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ProcessPoolExecutor
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import CliRunner, Result
from hypothesis import settings

from groundstate.bindings import HARNESS
from groundstate.exitcause import TRY, WATCHED
from groundstate.spec.suite import Suite, grader_shape, load_suite
from groundstate.validation import SuiteValidity, TaskValidity, validate_suite

# The model adapters' tests share these fixtures (the retail suite, one provider's harness).
from tests.model_harness import anthropic_harness, openai_harness, retail  # noqa: F401

# Property tests assert behaviour, not speed: Hypothesis's per-example deadline (200 ms) fails
# examples at random on a shared, loaded machine. Speed targets live in bench/.
settings.register_profile("groundstate", deadline=None)
settings.load_profile("groundstate")

# Wall time on a shared machine at load 10 says nothing about speed: a test that checks a limit
# fired asserts the terminal reason it recorded, and bounds wall time only to catch a hang, with
# HANG seconds. Code that must be cut short blocks for BLOCK seconds (or until the test's end),
# so that a bound of HANG still proves it was not waited for.
HANG = 30.0
BLOCK = 120.0
HANG_SOURCE = f"""

def hang():
    # Blocks until the test ends (it writes "released" beside this file), {BLOCK:.0f} s at most.
    import os, time
    released = os.path.join(os.path.dirname(os.path.abspath(__file__)), "released")
    for _ in range({BLOCK * 50:.0f}):
        if os.path.exists(released):
            return
        time.sleep(0.02)
"""
"""Python source of ``hang()``, for a suite's check file: a check that must be cut short calls
it; the test's fixture writes ``released`` beside the file when the test ends."""

# Under PYTHONDONTWRITEBYTECODE, each `python -m groundstate` a test starts (and each spawned
# pool worker) compiled all of groundstate again: a quarter of its start-up's CPU, and the
# malformed-input tests start hundreds. The processes the tests start share compiled code in a
# folder of this session's own (PYTHONPYCACHEPREFIX: nothing written beside any source), and
# this process honours the setting as it was given.
_PYCACHE = None
if sys.flags.dont_write_bytecode and "PYTHONPYCACHEPREFIX" not in os.environ:
    _PYCACHE = tempfile.mkdtemp(prefix="groundstate-tests-pycache-")
    os.environ["PYTHONPYCACHEPREFIX"] = _PYCACHE
    os.environ.pop("PYTHONDONTWRITEBYTECODE", None)


def pytest_unconfigure(config: pytest.Config) -> None:
    if _PYCACHE is not None:
        shutil.rmtree(_PYCACHE, ignore_errors=True)


HERE = Path(__file__).parent
BANK = HERE / "suites" / "bank"
BANK_SYSTEM = HERE / "suites" / "bank_system.yaml"
ROOMS = HERE / "suites" / "rooms"
EXAMPLES = HERE.parent / "examples"


_ABSENT = object()


class _DeclaredPatch(pytest.MonkeyPatch):
    """pytest's ``monkeypatch``, each change (and its undoing) declared to the harness's watch
    on its own code (:mod:`groundstate.bindings`): a test's instrumentation is no agent's
    tampering, and the watch must not put it back."""

    # A rebase reads every watched namespace again (a fifth of a second with the suite's
    # modules loaded): a hypothesis test that patched the same value in each of its hundred
    # examples spent most of its time there. A rebase is skipped only where the watch
    # finds nothing rebound (a cheap look: the namespaces' dict versions).

    def setattr(self, *args: Any, **kwargs: Any) -> None:
        super().setattr(*args, **kwargs)
        target, name, old = self._setattr[-1]
        if old is not inspect.getattr_static(target, name, _ABSENT) or HARNESS.rebound():
            HARNESS.rebase()  # else bound as it was, and as the watch holds it

    def delattr(self, *args: Any, **kwargs: Any) -> None:
        super().delattr(*args, **kwargs)
        HARNESS.rebase()

    def undo(self) -> None:
        patched = bool(self._setattr or self._setitem)
        super().undo()
        if patched or HARNESS.rebound():  # what the test changed otherwise, taken as before
            HARNESS.rebase()


@pytest.fixture
def monkeypatch() -> Iterator[pytest.MonkeyPatch]:
    patch = _DeclaredPatch()
    yield patch
    patch.undo()


@pytest.fixture
def release() -> Iterator[threading.Event]:
    """Set when the test ends: agent code blocked on it returns, and its thread with it."""
    event = threading.Event()
    yield event
    event.set()


@pytest.fixture
def bank() -> Suite:
    return load_suite(BANK)


EditTask = Callable[[Callable[[dict[str, Any]], None]], Suite]


@pytest.fixture
def demo(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A starter suite ``demo`` (``groundstate init demo``) in the working folder, named
    relatively: the working folder is *tmp_path*, which is returned."""
    from groundstate.cli import main

    monkeypatch.chdir(tmp_path)
    result = CliRunner().invoke(main, ["init", "demo"])
    assert result.exit_code == 0, result.stderr
    return tmp_path


@pytest.fixture
def rooms(tmp_path: Path) -> Path:
    """A copy of the rooms suite to edit (the loading audits' hostile files)."""
    root = tmp_path / "rooms"
    shutil.copytree(ROOMS, root)
    return root


@pytest.fixture
def edited_bank(tmp_path: Path) -> EditTask:
    """A copy of the bank suite whose transfer task has been edited by a function."""

    def edit(change: Callable[[dict[str, Any]], None]) -> Suite:
        root = tmp_path / "bank"
        if not root.exists():
            shutil.copytree(BANK, root)
        task_file = root / "tasks" / "transfer.yaml"
        data = yaml.safe_load(task_file.read_text())
        change(data)
        task_file.write_text(yaml.safe_dump(data))
        return load_suite(root)

    return edit


@contextmanager
def time_limit(suite: Suite, task_id: str, seconds: float) -> Iterator[Suite]:
    """*suite* with *task_id*'s time limit at least *seconds* while the block runs (its
    loaded grader shape too: the harness takes a task changed in memory for an agent's
    tampering): an attempt that must finish gets the time a loaded machine needs."""
    task, shape = suite.tasks[task_id], suite.graders.get(task_id)
    roomy = task.model_copy(update={"time_limit": max(task.time_limit, seconds)})
    suite.tasks[task_id], suite.graders[task_id] = roomy, grader_shape(roomy)
    try:
        yield suite
    finally:
        suite.tasks[task_id] = task
        if shape is None:
            suite.graders.pop(task_id, None)
        else:
            suite.graders[task_id] = shape


def without_keys(value: Any, keys: set[str]) -> Any:
    """*value* (JSON-like) with every dict entry named in *keys* dropped, at any depth: a
    record's fields that vary from run to run (times, ids, paths) left out of a comparison."""
    if isinstance(value, dict):
        return {k: without_keys(v, keys) for k, v in value.items() if k not in keys}
    if isinstance(value, list):
        return [without_keys(v, keys) for v in value]
    return value


def stored_runs(store: Path) -> int:
    """Rows in a run store's runs table (0 while it is not there yet), read without the store
    class so that a test can watch a store another process is writing."""
    if not store.exists():
        return 0
    try:
        with sqlite3.connect(store) as db:
            return int(db.execute("SELECT COUNT(*) FROM runs").fetchone()[0])
    except sqlite3.OperationalError:
        return 0


def resume_bank(store: Path, batch_id: str, system: Path = BANK_SYSTEM) -> Result:
    """``groundstate run BANK --resume BATCH_ID --json`` through the CLI."""
    from groundstate.cli import main

    args = ["run", str(BANK), "--system", str(system), "--resume", batch_id, "--json"]
    return CliRunner().invoke(main, [*args, "--store", str(store)])


def validate_on_two_cores(suite: Suite) -> SuiteValidity:
    """``validate_suite(suite)``, its tasks shared with a second process that loads the suite
    from its folder: a test run uses one core of CI's two, and proving a large suite is one
    test's minute. This process takes the tasks from the first on, the other from the last
    on, until they meet. The suite must be as on disk (its hash is compared)."""
    ids = sorted(suite.tasks)
    found = []
    with ProcessPoolExecutor(1, mp_context=multiprocessing.get_context("spawn")) as pool:
        theirs = {task_id: pool.submit(_validated, suite.root, task_id) for task_id in ids[::-1]}
        for task_id in ids:
            if not theirs[task_id].cancel():  # the other process has it, and all after it
                break
            del theirs[task_id]
            found.extend(validate_suite(suite, tasks=[task_id]).tasks)
        for suite_hash, validity in (future.result() for future in theirs.values()):
            assert suite_hash == suite.suite_hash, "the suite changed on disk since it loaded"
            found.append(validity)
    found.sort(key=lambda v: v.task_id)
    assert [v.task_id for v in found] == ids
    return SuiteValidity(suite=suite.name, suite_hash=suite.suite_hash, tasks=found)


def in_a_fresh_process(fn: Callable[..., Any], *args: Any) -> Any:
    """``fn(*args)`` in a new (spawned) interpreter, its result returned: for a test that
    lowers a process-wide limit (descriptors, memory). In the suite's own process, threads
    earlier tests left working, and their garbage, would share what the limit leaves.
    *fn* must be a module-level function; its arguments and result must pickle."""
    with ProcessPoolExecutor(1, mp_context=multiprocessing.get_context("spawn")) as pool:
        return pool.submit(fn, *args).result(timeout=600)


_LOADED: dict[Path, Suite] = {}


def _validated(root: Path, task_id: str) -> tuple[str, TaskValidity]:
    suite = _LOADED.get(root) or _LOADED.setdefault(root, load_suite(root))
    return suite.suite_hash, validate_suite(suite, tasks=[task_id]).tasks[0]


# --- what a test leaves behind: threads still working, swapped sys.stdout/sys.stderr -----------
#
# A thread a test leaves running (an agent past its limit, a helper blocked in a tool) may act
# during a later test; one that replaced sys.stdout/sys.stderr under a later CliRunner command
# emptied that command's capture (the rare "assert ... in ''" failure the Makefile reruns).
# Each test is checked: streams it leaves replaced fail it; threads it started that are still
# working once it has ended, and a CliRunner command whose streams were replaced under it
# (with the threads working then, each named with the test that started it), are listed at
# the end of the session (under pytest-xdist, each worker's list goes to the controller, which
# prints them all). GROUNDSTATE_LEAK_LOG=FILE also logs, per test, every replacement of
# the streams made by groundstate.capture (put back, or a router installed over the wrong
# stream), with the thread that made it.

_POOL_IDLE = (
    "groundstate-loop-idle",
    "groundstate-idle",
    "groundstate-alarms",
    "groundstate-turn-lease",
)
_STARTED_BY: dict[int, str] = {}
_LEFT: list[str] = []
_LEFT_KEY = "groundstate_left_behind"
_TEST = ["(collection)"]


def _real(stream: Any) -> Any:
    """*stream* without the routers groundstate.capture put in front of it."""
    from groundstate.capture import _Router

    while type(stream) is _Router:
        stream = stream._stream
    return stream


def _real_streams() -> tuple[Any, Any]:
    import sys

    return _real(sys.stdout), _real(sys.stderr)


def _working(threads: list[threading.Thread]) -> list[threading.Thread]:
    return [t for t in threads if t.is_alive() and t.name not in _POOL_IDLE]


def _named(threads: list[threading.Thread]) -> str:
    return ", ".join(f"{t.name} (from {_STARTED_BY.get(t.ident or 0, '?')})" for t in threads)


_isolation = CliRunner.isolation


@contextmanager
def _watched_isolation(self: CliRunner, *args: Any, **kwargs: Any) -> Iterator[Any]:
    with _isolation(self, *args, **kwargs) as streams:
        own = _real_streams()
        try:
            yield streams
        finally:
            now = _real_streams()
            if now[0] is not own[0] or now[1] is not own[1]:
                others = [t for t in threading.enumerate() if t is not threading.current_thread()]
                _LEFT.append(
                    f"{_TEST[0]}: a CliRunner command's sys.stdout/sys.stderr were replaced "
                    f"under it; threads working then: {_named(_working(others)) or 'none'}"
                )


CliRunner.isolation = _watched_isolation  # type: ignore[method-assign]


def _forget_unreadable_modules(before: dict[str, Any]) -> None:
    """Drop the modules a test imported whose file it then made a named pipe (or another
    file that is not a regular one: a suite's agent.py replaced to test the message):
    Hypothesis reads the source of every loaded local module for constants, and reading a
    pipe waits for ever (a later property test in the same worker hung the run)."""
    for name, module in list(sys.modules.items()):
        if before.get(name) is module:
            continue  # loaded before the test (or the same object since)
        file = getattr(module, "__file__", None)
        if not isinstance(file, str):
            continue
        try:
            regular = stat.S_ISREG(os.stat(file).st_mode)
        except (OSError, ValueError):
            continue  # gone: read as nothing
        if not regular:
            sys.modules.pop(name, None)


@pytest.fixture(autouse=True)
def _leaves_nothing_behind(request: pytest.FixtureRequest) -> Iterator[None]:
    _TEST[0] = request.node.nodeid
    before = set(threading.enumerate())
    streams = _real_streams()
    modules = dict(sys.modules)
    marks = {var: var.get() for var in (TRY, WATCHED)}
    yield
    for var, value in marks.items():  # a test that marked its own context as a try's
        var.set(value)  # (ExitWatch.started called outside a task) leaves it as it found it
    _forget_unreadable_modules(modules)
    new = [t for t in threading.enumerate() if t not in before]
    for thread in new:
        _STARTED_BY.setdefault(thread.ident or 0, request.node.nodeid)
    working = _working(new)
    for _ in range(50):  # a released agent or helper returns within moments
        if not working:
            break
        time.sleep(0.02)
        working = _working(working)
    if working:
        _LEFT.append(f"{request.node.nodeid}: threads still working after it: {_named(working)}")
    now = _real_streams()
    if now[0] is not streams[0] or now[1] is not streams[1]:
        pytest.fail(f"the test left sys.stdout/sys.stderr replaced: {now!r}, not {streams!r}")


def pytest_sessionfinish(session: pytest.Session) -> None:
    """In a pytest-xdist worker (``make test`` runs two), hand what its tests left behind to
    the controller, which lists every worker's at the end (:func:`pytest_testnodedown`)."""
    output = getattr(session.config, "workeroutput", None)
    if output is not None:
        output[_LEFT_KEY] = list(_LEFT)


@pytest.hookimpl(optionalhook=True)  # pytest-xdist's hook: unknown when it is not installed
def pytest_testnodedown(node: Any, error: Any) -> None:
    _LEFT.extend(getattr(node, "workeroutput", {}).get(_LEFT_KEY, []))


def pytest_terminal_summary(terminalreporter: Any) -> None:
    if _LEFT:
        terminalreporter.section("left behind by tests")
        for line in _LEFT:
            terminalreporter.write_line(line)


def _log_stream_changes(log: str) -> None:
    """Diagnosis: log each replacement of the streams groundstate.capture makes."""
    import groundstate.capture as capture
    import groundstate.loopthreads as loopthreads

    put_back, install = capture.put_back_streams, capture._install

    def write(line: str) -> None:
        with open(log, "a") as out:
            out.write(f"{_TEST[0]} [{threading.current_thread().name}] {line}\n")

    def logged_put_back(saved: tuple[Any, ...]) -> None:
        before = capture.streams()
        put_back(saved)
        if capture.streams() != before:
            write(f"put back {saved!r} over {before!r}")

    def logged_install() -> None:
        before = capture.streams()
        install()
        for old, new in zip(before, capture.streams(), strict=True):
            if new is not old and getattr(new, "_stream", None) is not old:
                write(f"router over {new._stream!r} replaced {old!r}")

    capture.put_back_streams = loopthreads.put_back_streams = logged_put_back  # type: ignore[attr-defined]
    capture._install = logged_install
    HARNESS.rebase()


if os.environ.get("GROUNDSTATE_LEAK_LOG"):
    _log_stream_changes(os.environ["GROUNDSTATE_LEAK_LOG"])
