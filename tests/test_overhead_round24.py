"""The rebinding check of the twenty-fourth round reads its words in one gather, and skips
the modules' entries only while ``sys.modules`` is unwritten.

Each look of the rebinding check (three per attempt) read three words of each of some 2,750
watched function objects through a ctypes view per function (``view.raw``, a bytes object
each), and each of some 600 namespaces' dict versions through a ``c_uint64`` per dict: 0.3-0.7
ms a look. The words are now gathered in one call in C
(:func:`groundstate.bindings._gather`, read by :func:`groundstate.bindings._read`). And a look
looked up each of some 190 watched modules in ``sys.modules`` even when no namespace had been
written since the last look; ``sys.modules``'s own version is now read with the namespaces',
and the entries are looked up only when it moved (an import), or ``sys.modules`` is another
dict, since the last look that found everything as first seen.

Compared here: the gather with the words read one by one (ctypes, the attributes); the
row's versions with ``sys.modules``'s last, moved by an import (the next look looks the
entries up again) and not by a look; and the controls, which must keep passing: a module
swapped in ``sys.modules`` after a quiet look, ``sys.modules`` replaced by a dict with one
module changed (a fresh process), and in attempts, an agent that swaps a harness module in
``sys.modules`` or sets a function's code is stopped at stage ``harness_code``.
"""

from __future__ import annotations

import ctypes
import gc
import json
import os
import subprocess
import sys
import types
from collections.abc import Callable
from pathlib import Path

import pytest

import groundstate.episode
import groundstate.grading.outcome
from groundstate.bindings import Bindings, _Flat, _gather, _read, _versions
from groundstate.spec.suite import Suite

from .conftest import in_a_fresh_process
from .test_agents_round22 import _prohibited_and_put_back

_HEADER = object.__basicsize__


def _version(space: dict[str, object]) -> int:
    """A dict's version, read alone (``ma_version_tag``, after the header and ``ma_used``)."""
    return ctypes.c_uint64.from_address(id(space) + _HEADER + 8).value


def _row() -> tuple[Bindings, _Flat]:
    bindings = Bindings()
    return bindings, bindings._row()


# --- the gather ------------------------------------------------------------------------------


def test_the_gather_reads_each_word_as_ctypes_reads_it() -> None:
    """Words of objects made apart (an early module's dict, new ones, a function, a big list,
    objects the collector tracks) come back in the order given, as a ``c_uint64`` each. The
    words read do not move while the test runs: each object's type, and the sizes of the
    test's own dict and list (a reference count could, in another thread)."""
    big = [0] * 100_000
    mine: dict[str, object] = {"a": 1, "b": 2}
    objects: list[object] = [vars(types), mine, test_the_gather_reads_each_word_as_ctypes_reads_it]
    objects += [big, object(), *gc.get_objects()[:50]]
    addresses = [id(o) + 8 for o in objects] + [id(mine) + 16, id(big) + 16]
    addresses += list(reversed(addresses))
    gather = _gather(addresses)
    words = [ctypes.c_uint64.from_address(a).value for a in addresses]
    assert _read(gather).tolist() == words
    assert words[: len(objects)] == [id(type(o)) for o in objects]
    assert words[len(objects) : len(objects) + 2] == [2, 100_000]
    assert _read(_gather([])).tolist() == []


def test_the_gather_sees_a_word_written_after_it_was_made() -> None:
    space: dict[str, object] = {"a": 1}
    gather = _gather([id(space) + _HEADER + 8])
    (before,) = _read(gather).tolist()
    space["a"] = 2
    (after,) = _read(gather).tolist()
    assert after != before and after == _version(space)


def test_the_gather_cannot_be_edited_in_place() -> None:
    """What it compares through is immutable: the indices and the first words are bytes (an
    agent cannot write into them, nor make an array over them writeable), the reader numpy's
    builtin, and the arrays are made anew at each read."""
    import numpy as np

    _, flat = _row()
    assert flat.states is not None and flat.looked is not None
    for gather in (flat.states[0], flat.looked):
        frombuffer, _, word, index, at = gather
        assert frombuffer is np.frombuffer and type(index) is bytes
        assert word == np.dtype(np.uint64) and at == np.dtype(np.intp)
        view = np.frombuffer(index, at)
        with pytest.raises(ValueError):
            view.flags.writeable = True
        assert _read(gather) is not _read(gather)
    assert type(flat.states[1]) is bytes


def test_the_row_gathers_every_functions_code_and_defaults() -> None:
    """The words are the function objects' code, defaults and keyword defaults (0 where a
    function has none), in the order of the row's functions."""
    _, flat = _row()
    assert flat.states is not None
    gather, first = flat.states
    functions = flat.rows[0][1]
    assert len(functions) > 1000
    expected = []
    for fn in functions:
        parts = (fn.__code__, fn.__defaults__, fn.__kwdefaults__)
        expected += [0 if part is None else id(part) for part in parts]
    assert _read(gather).tolist() == expected
    assert _read(gather).tobytes() == first


def test_the_versions_read_as_one_by_one() -> None:
    spaces: list[dict[str, object]] = [{"a": 1}, dict(vars(sys)), {}]
    versions = _versions(spaces)
    assert versions is not None
    assert versions() == [_version(space) for space in spaces]
    spaces[2]["b"] = 2
    assert versions() == [_version(space) for space in spaces]


# --- sys.modules's version with the looks -------------------------------------------------------


def _a_look_and_an_import() -> list[bool]:
    """In a fresh process (no thread of an earlier test importing meanwhile): what a look
    keeps of ``sys.modules``'s version, and what an import does to it."""
    import groundstate.episode  # noqa: F401  (the harness's modules, as in a run)

    _, flat = _row()
    facts = [flat.unchanged(), flat.unchanged()]
    seen = flat.seen
    assert seen is not None
    facts += [flat.registry is sys.modules, seen[-1] == _version(sys.modules)]
    facts += [flat.unchanged(), flat.seen is seen]  # a quiet look: nothing looked up again
    name = "groundstate_round24_imported"
    sys.modules[name] = types.ModuleType(name)
    facts += [_read(flat.looked).tolist() != seen, flat.unchanged()]
    facts += [
        flat.seen is not seen,
        flat.seen is not None and flat.seen[-1] == _version(sys.modules),
    ]
    return facts


def test_a_look_holds_sys_modules_version_last_and_an_import_moves_it() -> None:
    """The cache of a look (the versions when everything was last found as first seen)
    includes ``sys.modules``'s; a module added (an import) moves it, so the next look looks
    the entries up again (and finds nothing: a new module is no change)."""
    assert in_a_fresh_process(_a_look_and_an_import) == [True] * 10


def test_a_module_swapped_in_sys_modules_after_a_quiet_look_is_found() -> None:
    bindings, flat = _row()
    assert flat.unchanged() and flat.unchanged()
    name = "groundstate.grading.outcome"
    real = sys.modules[name]
    sys.modules[name] = types.ModuleType(name)
    try:
        assert not flat.unchanged()
        assert bindings.put_back() == [f"sys.modules[{name!r}]"]
        assert sys.modules[name] is real
    finally:
        sys.modules[name] = real
    assert bindings.put_back() == []


def _sys_modules_replaced() -> tuple[bool, bool, list[str]]:
    """In a fresh process: after quiet looks, ``sys.modules`` replaced by an equal dict (no
    change), then by one with a harness module swapped (found, though the first dict's version
    never moved)."""
    import groundstate.episode  # noqa: F401  (the harness's modules, as in a run)

    bindings = Bindings()
    flat = bindings._row()
    assert flat.unchanged() and flat.unchanged()
    first = sys.modules
    try:
        sys.modules = dict(first)
        equal = flat.unchanged()
        swapped = dict(first)
        swapped["groundstate.episode"] = types.ModuleType("groundstate.episode")
        sys.modules = swapped
        found = flat.unchanged()
        named = bindings.rebound()
    finally:
        sys.modules = first
    return equal, found, named


def test_sys_modules_replaced_with_a_module_swapped_is_found() -> None:
    equal, found, named = in_a_fresh_process(_sys_modules_replaced)
    assert equal is True
    assert found is False
    assert named == ["sys.modules['groundstate.episode']"]


# --- in attempts (controls) ---------------------------------------------------------------------


def test_an_agent_that_swaps_a_harness_module_in_sys_modules_is_stopped(bank: Suite) -> None:
    name = "groundstate.grading.outcome"

    def change() -> Callable[[], None]:
        real = sys.modules[name]
        sys.modules[name] = types.ModuleType(name)
        return lambda: sys.modules.__setitem__(name, real)

    _prohibited_and_put_back(bank, change, f"sys.modules[{name!r}]")
    assert sys.modules[name] is groundstate.grading.outcome


def test_an_agent_that_sets_a_harness_functions_code_is_stopped(bank: Suite) -> None:
    fn = groundstate.episode.classify

    def change() -> Callable[[], None]:
        code = fn.__code__
        fn.__code__ = (lambda *args: "success").__code__
        return lambda: setattr(fn, "__code__", code)

    _prohibited_and_put_back(bank, change, ".classify.__code__")


# --- numpy's threads start before a pool worker counts its own ---------------------------------

_WORKER_START = """
import json, sys
import groundstate.executors._job as job  # what a pool worker (or its fork server) imports
from groundstate.bindings import HARNESS

numpy_first = "numpy" in sys.modules
baseline = job.native_threads()  # as serve() notes before any attempt
HARNESS.seal(); HARNESS.mark()  # an attempt's start (episode): the first row built and looked at
print(json.dumps([numpy_first, job._unlisted_beyond(baseline)]))
"""


def test_the_first_look_starts_no_thread_a_pool_worker_would_count() -> None:
    """numpy's import starts native threads (OpenBLAS's, on a machine of several cores);
    imported when the first row was built (inside an attempt), they were more threads than
    the worker counted before its first attempt, taken for threads the agent left (the
    worker retired after each attempt, a death while grading laid at the agent's door).
    In a clean interpreter: the test's own process (and a spawned one, which imports this
    module) has numpy loaded already."""
    root = Path(__file__).parents[1]
    done = subprocess.run(
        [sys.executable, "-c", _WORKER_START], cwd=root, capture_output=True, text=True,
        env={**os.environ, "PYTHONPATH": str(root / "src")}, timeout=120,
        check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    numpy_first, started = json.loads(done.stdout)
    assert numpy_first
    assert not started
