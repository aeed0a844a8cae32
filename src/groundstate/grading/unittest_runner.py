"""groundstate's own unittest runner: a test verdict that the code under test cannot forge by
how it exits.

A ``tests`` assertion with ``runner: unittest`` runs this file *by path* inside the sandbox, as
``python -I unittest_runner.py --results FILE [--path DIR]... TEST_FILE...`` with the patched
checkout as the working directory. It imports only the standard library, so it works whatever
Python packages the sandbox sees; never import groundstate here.

Why each step is the way it is (the tricks it defeats):

* ``-I`` keeps the working directory, ``PYTHONPATH`` and the user's site folder off
  ``sys.path``: a ``unittest.py`` (or ``unittest/``) in the checkout cannot shadow the
  standard library, and no ``sitecustomize``/``usercustomize`` of the checkout runs at start.
* ``unittest`` and everything this file needs are imported before any checkout path is on
  ``sys.path``; checkout folders (``--path``) are appended, never prepended.
* A standard library module is only ever found in the standard library
  (:class:`StdlibFinder`, first on ``sys.meta_path``): a hidden test that puts ``src`` first
  on ``sys.path`` and then imports ``datetime`` gets the real one, not a ``src/datetime.py``
  the agent planted to make the expected values lie too.
* The test files are loaded one by one from the paths given (the hidden tests stay in a
  grader folder outside the checkout), so nothing the agent planted beside them (an
  ``__init__.py``, a ``load_tests`` hook) takes part.
* The verdict is the JSON this writes at the very end, counted by its own
  :class:`unittest.TestResult`: a process that exits early (``os._exit(0)`` at import), is
  killed or hangs leaves no results, which the grader reads as failed. Skips, errors, failures,
  unexpected successes and "no test ran" are all recorded, and the grader fails each.
* The attributes of unittest's classes and modules, the builtins, and the trace and profile
  functions are compared before and after the run: code that patches ``TestCase.assertEqual``
  (or the result's methods, or ``BaseTestSuite.__call__``), replaces ``__build_class__`` to
  empty the test classes, or leaves a trace function rewriting the tests' frames is reported.
* This file's own names are watched the same way (run by path, it is ``__main__``, which the
  code under test can import): replacing ``_DUMPS``, ``_OPEN``, ``_tampered`` or
  ``RecordingResult`` is tampering. What the run needs after the tests is taken into local
  variables before any test is loaded, so such a replacement does not even take effect.
* Once the results are written the process ends at once (``os._exit``): an ``atexit`` handler
  or a finalizer of the code under test, which runs after the runner's last line, cannot
  rewrite the file it found through ``sys.argv``.

What it cannot stop: the code under test runs in this process, so code written against this
runner in particular could still lie (a thread of its own writing the results file in the
instant between the runner's write and its exit, the runner's result objects found through
``gc`` and emptied, a return value whose ``__eq__`` is always true). The
sandbox (no network, only the checkout and the results folder writable) bounds the damage.
"""

from __future__ import annotations

import argparse
import builtins
import contextlib
import importlib
import importlib.machinery
import importlib.util
import json
import os
import pkgutil
import sys
import traceback
import types
import unittest
import unittest.case
import unittest.loader
import unittest.result
import unittest.suite
from pathlib import Path
from typing import Any, NoReturn

RESULTS_VERSION = 1
MESSAGE_CHARS = 2000
"""Characters of each failure's traceback kept (the end)."""
WATCHED: tuple[type, ...] = (
    unittest.TestCase,
    unittest.TestLoader,
    unittest.TestSuite,
    unittest.suite.BaseTestSuite,  # its __call__ runs every nested suite
    unittest.TestResult,
    unittest.case._Outcome,  # type: ignore[attr-defined]  # runs each test part
    unittest.case._SubTest,  # type: ignore[attr-defined]
)
"""Classes whose attributes the code under test must leave alone."""
BUILTINS = "builtins."
WATCHED_MODULES = (unittest, unittest.case, unittest.suite, unittest.result, unittest.loader)
"""Modules whose names the code under test must leave alone (``unittest.TestCase = Lenient``,
a helper the suites call)."""


class StdlibFinder:
    """Finds a top-level standard library module in the folders ``sys.path`` held when the
    runner started, never in the checkout's."""

    __slots__ = ("folders",)  # no instance dict to rewrite

    def __init__(self, folders: list[str]) -> None:
        self.folders = tuple(folders)

    def find_spec(
        self, name: str, path: Any = None, target: Any = None
    ) -> importlib.machinery.ModuleSpec | None:
        if path is not None or name not in sys.stdlib_module_names:
            return None  # a submodule (found through its package) or not the stdlib's
        if name in sys.builtin_module_names or importlib.machinery.FrozenImporter.find_spec(name):
            return None  # the importers after this one find it where it is
        # None when this Python lacks it (no tkinter): then the usual search decides.
        return importlib.machinery.PathFinder.find_spec(name, self.folders)


class RecordingResult(unittest.TestResult):
    """A TestResult that also records every test's outcome by id."""

    def __init__(self) -> None:
        super().__init__()
        self.outcomes: dict[str, str] = {}
        self.messages: dict[str, str] = {}

    def _record(self, test: unittest.TestCase, outcome: str, message: str = "") -> None:
        key = test.id()
        # A failed subtest outranks the test's own later outcome.
        if self.outcomes.get(key) not in ("failure", "error"):
            self.outcomes[key] = outcome
        if message:
            self.messages[key] = message[-MESSAGE_CHARS:]

    def addSuccess(self, test: unittest.TestCase) -> None:
        super().addSuccess(test)
        self._record(test, "success")

    def addFailure(self, test: unittest.TestCase, err: Any) -> None:
        super().addFailure(test, err)
        self._record(test, "failure", self.failures[-1][1])

    def addError(self, test: unittest.TestCase, err: Any) -> None:
        super().addError(test, err)
        self._record(test, "error", self.errors[-1][1])

    def addSkip(self, test: unittest.TestCase, reason: str) -> None:
        super().addSkip(test, reason)
        self._record(test, "skipped", reason)

    def addExpectedFailure(self, test: unittest.TestCase, err: Any) -> None:
        super().addExpectedFailure(test, err)
        self._record(test, "expected_failure")

    def addUnexpectedSuccess(self, test: unittest.TestCase) -> None:
        super().addUnexpectedSuccess(test)
        self._record(test, "unexpected_success")

    def addSubTest(self, test: Any, subtest: Any, err: Any) -> None:
        super().addSubTest(test, subtest, err)
        if err is not None:
            kind = "failure" if issubclass(err[0], test.failureException) else "error"
            text = "".join(traceback.format_exception(*err))
            self._record(test, kind, f"{subtest.id()}\n{text}")


def _fingerprint() -> dict[str, int]:
    """The identity of every attribute of the watched classes (and of this result class), and
    of what the watched modules name."""
    marks: dict[str, int] = {}
    for cls in (*WATCHED, RecordingResult, StdlibFinder):
        for name, value in vars(cls).items():
            marks[f"{cls.__module__}.{cls.__qualname__}.{name}"] = id(value)
    for module in WATCHED_MODULES:
        for name, value in vars(module).items():
            if not name.startswith("__"):
                marks[f"{module.__name__}.{name}"] = id(value)
    for name, value in vars(builtins).items():  # __build_class__ makes the test classes
        marks[f"{BUILTINS}{name}"] = id(value)
    for name, value in vars(_RUNNER_MODULE).items():  # _DUMPS, _OPEN, _tampered...
        if not name.startswith("__"):
            marks[f"runner.{name}"] = id(value)
    marks["sys.modules['unittest']"] = id(sys.modules.get("unittest"))
    # StdlibFinder removed or overtaken (a finder appended after it is harmless).
    first = sys.meta_path[0] if sys.meta_path else None
    marks["sys.meta_path[0]"] = id(first)
    marks["sys.meta_path[0].folders"] = id(getattr(first, "folders", None))
    # A trace or profile function left installed can rewrite the tests' frames.
    marks["sys.gettrace()"] = id(sys.gettrace())
    marks["sys.getprofile()"] = id(sys.getprofile())
    return marks


def _tampered(before: dict[str, int], after: dict[str, int]) -> list[str]:
    """The marks that differ; a builtin *added* (``gettext.install()``'s ``_``) is no
    tampering, a builtin replaced or deleted is."""
    names = before.keys() | {k for k in after if not k.startswith(BUILTINS)}
    return sorted(name for name in names if before.get(name) != after.get(name))


def _load(path: Path, loader: unittest.TestLoader) -> unittest.TestSuite:
    """The tests of one file, imported from its location (as part of its package, if its
    folder is one, so relative imports and the package's ``__init__`` behave as usual)."""
    parts = [path.stem]
    folder = path.parent
    while (folder / "__init__.py").is_file():
        parts.insert(0, folder.name)
        folder = folder.parent
    if len(parts) > 1:
        # The top package by location: an installed package of the same name must not win.
        top = folder / parts[0]
        _import_from(parts[0], top / "__init__.py", package=top)
        module = importlib.import_module(".".join(parts))
    else:
        module = _import_from(path.stem, path)
    return loader.loadTestsFromModule(module)


def _import_from(name: str, file: Path, package: Path | None = None) -> types.ModuleType:
    if name in sys.modules and package is not None:
        return sys.modules[name]
    locations = [str(package)] if package is not None else None
    spec = importlib.util.spec_from_file_location(name, file, submodule_search_locations=locations)
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot load {file}")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def _import_unittest_whole() -> None:
    """Import every part of unittest a test may load on first use (``unittest.mock``,
    ``_log`` for ``assertLogs``, ``IsolatedAsyncioTestCase``) before the fingerprint: loading
    one adds a name to the package, which is no tampering."""
    for info in pkgutil.iter_modules(unittest.__path__):
        if info.name not in ("__main__", "test"):
            importlib.import_module(f"unittest.{info.name}")
    getattr(unittest, "IsolatedAsyncioTestCase", None)  # a lazy name of the package


def run(files: list[Path]) -> dict[str, Any]:
    """Load and run the tests of *files*; the results as JSON-ready data."""
    _import_unittest_whole()
    # Taken before any test is imported: the code under test may replace the globals.
    fingerprint, tampered_with, result = _fingerprint, _tampered, RecordingResult()
    before = fingerprint()
    loader = unittest.TestLoader()
    suite = unittest.TestSuite()
    load_errors: dict[str, str] = {}
    for path in files:
        try:
            suite.addTests(_load(path, loader))
        except KeyboardInterrupt:
            raise
        except BaseException:  # SystemExit at import: the agent's code failing
            load_errors[str(path)] = traceback.format_exc()[-MESSAGE_CHARS:]
    load_errors.update({str(e): "" for e in loader.errors})
    collected = suite.countTestCases()
    suite.run(result)
    tampered = tampered_with(before, fingerprint())
    return {
        "version": RESULTS_VERSION,
        "collected": collected,
        "run": result.testsRun,
        "failures": len(result.failures),
        "errors": len(result.errors),
        "skipped": len(result.skipped),
        "expected_failures": len(result.expectedFailures),
        "unexpected_successes": len(result.unexpectedSuccesses),
        "load_errors": load_errors,
        "tampered": tampered,
        "outcomes": result.outcomes,
        "messages": result.messages,
    }


def main(argv: list[str] | None = None) -> NoReturn:
    parser = argparse.ArgumentParser(description="Run unittest files; write JSON results.")
    parser.add_argument("--results", required=True, type=Path)
    parser.add_argument("--path", action="append", default=[], help="appended to sys.path")
    parser.add_argument("files", nargs="*", type=Path)
    args = parser.parse_args(argv)
    results_file: Path = args.results.absolute()
    files = [f.absolute() for f in args.files]
    sys.meta_path.insert(0, StdlibFinder(list(sys.path)))
    sys.path.extend(os.path.abspath(p) for p in args.path)
    dumps, opener, end = _DUMPS, _OPEN, _EXIT  # before the code under test runs
    data = run(files)
    encoded = dumps(data, sort_keys=True)
    with opener(results_file, "w", encoding="utf-8") as out:
        out.write(encoded)
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(Exception):  # a stream the code under test replaced or closed
            stream.flush()
    end(0)  # no atexit handler or finalizer of the code under test runs after the write


# Taken before any test (or code under test) is imported: a module that replaces
# ``json.dumps`` or ``open`` does not change what the runner writes.
_DUMPS = json.dumps
_OPEN = open
_EXIT = os._exit
_RUNNER_MODULE = sys.modules[__name__]


if __name__ == "__main__":
    main()
