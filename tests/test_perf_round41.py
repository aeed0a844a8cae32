"""Round 41: an attempt's CPU broken down by phase (issue 10), and the watch for a task
changed in memory made cheaper and stricter.

``grader_shape`` took the ``id`` of some 200 objects per retail task at every attempt
(``_regraded``); each ``id`` call runs the process's audit hooks, groundstate's own in
Python. It now keeps the objects themselves and compares them by identity: no ``id`` call,
and an object the agent freed whose address a new one took is no longer taken for the one
loaded (``id`` compared equal; the shape held only numbers, so nothing kept the old object
alive).
"""

from __future__ import annotations

import importlib
import importlib.util
import json
import os
import signal
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from types import ModuleType, SimpleNamespace
from typing import Any

import pytest

from groundstate import episode
from groundstate.spec.suite import Suite, grader_shape, load_suite
from groundstate.spec.task import AgentTask

ROOT = Path(__file__).resolve().parent.parent
RETAIL = ROOT / "examples" / "retail"
BENCH = ROOT / "bench" / "attempt_phases.py"


@pytest.fixture(scope="module")
def retail() -> Suite:
    return load_suite(RETAIL)


def _fresh(task: AgentTask) -> AgentTask:
    """A copy of *task* whose values are its own objects (parsed anew from its JSON)."""
    return AgentTask.model_validate_json(task.model_dump_json())


def _regraded(task: AgentTask, shape: Any) -> bool:
    """Whether the episode's watch takes *task* for changed since *shape* was taken (the
    suite and session stand-ins carry what ``_regraded`` reads)."""
    suite = SimpleNamespace(graders={task.task_id: shape}, tasks={task.task_id: task})
    latched: list[BaseException] = []
    session = SimpleNamespace(latch=lambda error, stage: latched.append(error))
    found = episode._regraded(task, suite, session)  # type: ignore[arg-type]
    assert found == bool(latched)
    return bool(found)


def test_the_shape_is_taken_without_id_calls(retail: Suite) -> None:
    """Counted by an audit hook of a fresh process (this one's may refuse new hooks): no
    ``builtins.id`` event while every retail task's shape is taken and compared."""
    script = f"""
import sys
from pathlib import Path
from groundstate.spec import suite as s
loaded = s.load_suite(Path({str(RETAIL)!r}))
shapes = [s.grader_shape(t) for t in loaded.tasks.values()]
same = getattr(s, "same_grader_shape", lambda a, b: a == b)
counted = []
sys.addaudithook(lambda event, args: counted.append(event) if event == "builtins.id" else None)
for task in loaded.tasks.values():
    assert same(s.grader_shape(task), loaded.graders[task.task_id])
print(len(counted))
"""
    src = str(Path(episode.__file__).resolve().parent.parent)
    env = {**os.environ, "PYTHONPATH": src}
    out = subprocess.run(
        [sys.executable, "-c", script], env=env, capture_output=True, text=True, check=True
    )
    assert int(out.stdout.split()[-1]) == 0


def test_an_object_freed_and_another_made_at_its_address_is_a_change(retail: Suite) -> None:
    """The agent drops a task's request and sets another of the same length: the new text
    is often made where the old one was freed, and the ``id`` the shape held matched it
    (11 of the 18 retail tasks passed unseen). Now the shape holds the old object: every one
    is seen."""
    for task in retail.tasks.values():
        mine = _fresh(task)
        shape, length = grader_shape(mine), len(mine.user_request)
        mine.__dict__["user_request"] = None
        mine.__dict__["user_request"] = "x" * length
        assert _regraded(mine, shape), task.task_id


def _copied_list(task: AgentTask) -> None:
    object.__setattr__(task, "outcome_assertions", list(task.outcome_assertions))


def _copied_assertion(task: AgentTask) -> None:
    task.outcome_assertions[0] = task.outcome_assertions[0].model_copy()


def _copied_constraint_id(task: AgentTask) -> None:
    constraint = task.hard_process_constraints[-1]
    constraint.__dict__["id"] = "".join(list(constraint.id))  # equal, another object


def _copied_section(task: AgentTask) -> None:
    object.__setattr__(task, "terminal_conditions", task.terminal_conditions.model_copy())


def _loosened_in_place(task: AgentTask) -> None:
    tables = task.permissions.tables
    tables[next(iter(tables))] = "write"


def _emptied_in_place(task: AgentTask) -> None:
    task.hard_process_constraints.clear()


CHANGES: list[Callable[[AgentTask], None]] = [
    _copied_list,
    _copied_assertion,
    _copied_constraint_id,
    _copied_section,
    _emptied_in_place,
]


@pytest.mark.parametrize("change", CHANGES, ids=lambda c: c.__name__.strip("_"))
def test_an_equal_copy_swapped_in_is_a_change(
    retail: Suite, change: Callable[[AgentTask], None]
) -> None:
    """Identity, never equality: a copy equal to what it replaced (a list, a model, a string)
    is an agent's change all the same, as the ``id`` comparison had it."""
    for task in retail.tasks.values():
        mine = _fresh(task)
        if not mine.outcome_assertions or not mine.hard_process_constraints:
            continue
        shape = grader_shape(mine)
        change(mine)
        assert _regraded(mine, shape), (change.__name__, task.task_id)


def test_table_permissions_loosened_in_place_are_a_change(retail: Suite) -> None:
    checked = 0
    for task in retail.tasks.values():
        mine = _fresh(task)
        tables = mine.permissions.tables
        if not tables or all(level == "write" for level in tables.values()):
            continue
        shape = grader_shape(mine)
        name = next(n for n, level in tables.items() if level != "write")
        tables[name] = "write"
        assert _regraded(mine, shape), task.task_id
        checked += 1
    if not checked:
        pytest.skip("no retail task limits a table")


def test_an_untouched_task_is_not_taken_for_changed(retail: Suite) -> None:
    """False-positive guard: the suite's own tasks against the shapes taken at load, and a
    task's shape taken twice (its lists' lengths, the permissions' hash: the same)."""
    for task in retail.tasks.values():
        assert not _regraded(task, retail.graders[task.task_id])
        mine = _fresh(task)
        assert not _regraded(mine, grader_shape(mine))


def test_a_shape_taken_from_another_suite_load_is_not_this_ones(retail: Suite) -> None:
    """Two loads of one suite hold equal tasks of different objects: each load's attempts
    compare with their own shapes only."""
    again = load_suite(RETAIL)
    task_id = sorted(retail.tasks)[0]
    assert not _regraded(again.tasks[task_id], again.graders[task_id])
    assert _regraded(again.tasks[task_id], retail.graders[task_id])


def _bench() -> ModuleType:
    spec = importlib.util.spec_from_file_location("_bench_attempt_phases", BENCH)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_every_phase_the_bench_names_is_in_the_code() -> None:
    """The breakdown leaves out a phase it cannot find (so that it runs on an older tree):
    on this tree, each must be found, or a renamed function would drop out of it unseen."""
    for module_name, owner_name, name, label in _bench().PHASES:
        module = importlib.import_module(module_name)
        owner = getattr(module, owner_name) if owner_name else module
        held = vars(owner) if isinstance(owner, type) else vars(module)
        assert name in held, (label, module_name, owner_name, name)


def test_the_bench_compares_two_trees_side_by_side(tmp_path: Path) -> None:
    """``--against``'s table reads each child's JSON: a phase one tree lacks is shown as
    missing there, not dropped, and the totals come from both."""
    bench = _bench()
    fake = {
        "phases": {"a [attempt]": (1.0, 1.0)},
        "attempt": 10.0,
        "storing": 1.0,
        "floor": 2.0,
        "over_floor": 6.0,
    }
    other = json.loads(json.dumps({**fake, "phases": {"b": (2.0, 1.0)}}))
    calls: list[str] = []

    def child(src: str, repeats: int) -> dict[str, Any]:
        calls.append(src)
        return fake if src == "this" else other

    bench._child = child
    printed: list[str] = []
    bench.print = lambda *args, **kwargs: printed.append(" ".join(map(str, args)))
    bench.compare("this", "other", 1, 2)
    assert calls == ["other", "this", "other", "this"]
    rows = {line[:48].strip(): (line[48:65].strip(), line[65:].strip()) for line in printed}
    assert rows["a [attempt]"] == ("-", "1.000 (  1.0)")
    assert rows["b"] == ("2.000 (  1.0)", "-")
    assert rows["whole attempt, process CPU"] == ("10.000", "10.000")


# --- reading /proc/self/status ----------------------------------------------------------------

STATUS = Path("/proc/self/status")


def _fields() -> dict[str, str]:
    """Each field of ``/proc/self/status``, as a plain parse of its text reads it."""
    found = {}
    for line in STATUS.read_bytes().decode("ascii", "replace").splitlines():
        name, _, value = line.partition(":")
        found.setdefault(name, value.strip())
    return found


@pytest.mark.skipif(not STATUS.exists(), reason="Linux /proc")
def test_proc_status_reads_each_field_as_the_file_says() -> None:
    from groundstate.loopthreads import proc_status

    fields = _fields()
    for name in ("Umask", "SigIgn", "SigBlk", "Pid", "PPid"):
        assert proc_status(name) == fields[name], name
    assert proc_status("No such field") is None
    assert proc_status("") is None


@pytest.mark.skipif(not STATUS.exists(), reason="Linux /proc")
def test_the_umask_is_read_without_setting_it(monkeypatch: pytest.MonkeyPatch) -> None:
    """Setting the mask to read it races with threads creating files meanwhile: read from
    /proc, the mask is never set, whatever it is."""
    from groundstate import loopthreads

    before = os.umask(0o027)
    try:
        calls: list[int] = []
        real = os.umask
        monkeypatch.setattr(os, "umask", lambda mask: calls.append(mask) or real(mask))
        assert loopthreads.umask() == 0o027
        assert calls == []
    finally:
        monkeypatch.undo()
        os.umask(before)


@pytest.mark.skipif(not Path("/proc/self/comm").exists(), reason="Linux /proc")
def test_a_process_named_in_other_than_ascii_is_read(monkeypatch: pytest.MonkeyPatch) -> None:
    """An agent renames its process (``/proc/self/comm``, ``prctl``) with a non-ASCII byte:
    reading the status as ASCII text raised ``UnicodeDecodeError`` on its ``Name:`` line. The
    umask was then read by setting it (the race above), and a pool worker's look for what an
    attempt left (``SigIgn``, the ignored signals) raised."""
    from groundstate import loopthreads

    comm = Path("/proc/self/comm")
    name = comm.read_bytes().rstrip(b"\n")
    mask = os.umask(0o022)
    try:
        comm.write_bytes("gs-\u00e9".encode())
        calls: list[int] = []
        real = os.umask
        monkeypatch.setattr(os, "umask", lambda m: calls.append(m) or real(m))
        assert loopthreads.proc_status("SigIgn") == _fields()["SigIgn"]
        assert loopthreads.umask() == 0o022
        assert calls == []
    finally:
        monkeypatch.undo()
        comm.write_bytes(name)
        os.umask(mask)


class _Liar(tuple):  # type: ignore[type-arg]
    def __eq__(self, other: object) -> bool:
        return True

    __hash__ = tuple.__hash__


@pytest.mark.parametrize(
    "stored",
    [
        5,
        (),
        ((), ()),
        "shape",
        _Liar(((), ())),
        ((), _Liar((1, 2))),
    ],
    ids=["int", "empty", "empty-parts", "text", "lying-tuple", "lying-counts"],
)
def test_a_stored_shape_of_another_form_is_a_change_not_a_crash(
    retail: Suite, stored: object
) -> None:
    """``suite.graders`` is the suite's, which an in-process agent reaches: one it set to
    something else (or to an object that says it equals anything) is a change of the task,
    found without raising and without running its code."""
    task = retail.tasks[sorted(retail.tasks)[0]]
    assert _regraded(task, stored)


# --- signal handlers read around the agent's thread -------------------------------------------


def test_the_handlers_are_read_without_signal_getsignal(monkeypatch: pytest.MonkeyPatch) -> None:
    """``signal.getsignal`` makes an enum of ``SIG_DFL``/``SIG_IGN`` (ten times the read, 13
    signals as each attempt's agent starts and again after): the handlers are read as set,
    each the handler ``signal.getsignal`` names."""
    from groundstate import loopthreads

    expected = {number: signal.getsignal(number) for number in loopthreads._HANDLED}
    calls: list[int] = []
    real = signal.getsignal
    monkeypatch.setattr(signal, "getsignal", lambda n: calls.append(n) or real(n))
    read = dict(loopthreads._shared_hooks().handlers)
    assert calls == []
    assert read.keys() == expected.keys()
    for number, handler in read.items():
        if isinstance(expected[number], signal.Handlers):
            assert handler == expected[number] and type(handler) is int, number
        else:
            assert handler is expected[number], number


@pytest.mark.skipif(not hasattr(signal, "SIGUSR2"), reason="POSIX")
def test_a_handler_changed_meanwhile_is_put_back_as_it_was() -> None:
    """A handler set (``SIG_IGN``, a function) over one read as ``SIG_DFL``, or over a
    function, is put back as read; one left as read is not set again."""
    from groundstate import loopthreads

    number = signal.SIGUSR2
    before = signal.getsignal(number)
    try:
        for first, meanwhile in (
            (signal.SIG_DFL, signal.SIG_IGN),
            (signal.SIG_IGN, signal.SIG_DFL),
            (lambda *a: None, signal.SIG_IGN),
            (signal.SIG_DFL, lambda *a: None),
        ):
            signal.signal(number, first)
            shared = loopthreads._shared_hooks()
            signal.signal(number, meanwhile)
            loopthreads._put_back_settings(shared)
            now = signal.getsignal(number)
            assert now == first if isinstance(first, int) else now is first
    finally:
        signal.signal(number, before)
