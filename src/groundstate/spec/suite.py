"""Suites: a folder of task files plus shared fixtures, tools, checks and solutions.

::

    suite/
      suite.yaml              name, description, environment, policy, tools, canary,
                              constraint sets shared by tasks
      policy.md               the written policy the agent is given
      fixtures/*.sql|yaml     initial states (a workspace's: a folder)
      tools.py                the agent's tools (or ``tools: builtin:workspace``)
      checks.py               Python outcome checks (optional)
      tasks/<task_id>.yaml    one AgentTask per file
      solutions/<task_id>/<name>.yaml   oracle, alt_*, bad_* trajectories
"""

from __future__ import annotations

import contextlib
import importlib
import importlib.util
import inspect
import json
import os
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field, replace
from functools import cached_property
from operator import is_
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, Field, field_validator

from groundstate.errors import SpecError
from groundstate.paths import as_given, os_reason
from groundstate.spec.canonical import hash_file, hash_value
from groundstate.spec.code import code_files, hash_code
from groundstate.spec.constraint_sets import (
    SUITE_FILE,
    ConstraintSets,
    include_sets,
    own_constraints,
    sets_first,
)
from groundstate.spec.constraints import (
    HardConstraint,
    PythonConstraint,
    named_args,
    named_tools,
)
from groundstate.spec.files import (
    MAX_POLICY_BYTES,
    is_dir,
    is_file,
    load_model,
    no_file,
    read_text,
    read_yaml,
)
from groundstate.spec.solution import Solution
from groundstate.spec.strict import Id, SuiteName, Weight, did_you_mean
from groundstate.spec.system import BUILTIN_AGENTS
from groundstate.spec.task import (
    AgentTask,
    ChangedPathsAssertion,
    JudgeAssertion,
    ModelJudge,
    PythonAssertion,
    SqlAssertion,
    Strict,
    TestsAssertion,
)
from groundstate.tools import Tool, load_module, load_tools


class Population(Strict):
    """The tasks a decision is about, and how this suite's tasks were drawn from them."""

    description: str = Field(min_length=1)
    """The target population (e.g. "English refund and exchange chats of retail customers")."""
    sampling: str = Field(min_length=1)
    """How the tasks were chosen from it: a random sample, stratified by intent, hand-written
    to cover each policy rule... Read beside the numbers: a hand-picked suite is not an
    estimate of the population's success rate."""


class SuiteConfig(Strict):
    name: Id
    """What reports call the suite (visible characters, not blank)."""
    description: str = ""
    environment: str = "sqlite"
    """The environment kind the tasks run in (``sqlite``, ``postgres`` or a registered
    third-party kind, see :mod:`groundstate.environments.registry`)."""
    environment_options: dict[str, Any] = Field(default_factory=dict)
    """Settings of the environment kind, checked by the kind when the suite loads (the
    ``workspace`` kind's sandbox and limits, see docs/environments.md)."""
    fixtures: SuiteName = "fixtures"
    """The folder ``initial_state_fixture`` is relative to (``.``: the suite folder)."""
    policy: SuiteName | None = None
    """Markdown file given to the agent with the system prompt."""
    tools: SuiteName = "tools.py"
    """The Python file declaring the agent's tools, or ``builtin:workspace`` for a repository
    workspace's file and command tools."""
    canary: str | None = None
    """A task whose oracle runs before every batch."""
    decision: str | None = Field(default=None, min_length=1)
    """The deployment decision the suite's numbers inform (e.g. "may the new prompt replace
    the current one for refund chats?"). ``check`` and ``validate`` warn when it is missing;
    reports show it beside the numbers."""
    population: Population | None = None
    """The target task population and how the suite's tasks were sampled from it."""
    weights: dict[str, Weight] = Field(default_factory=dict)
    """Task weights for suite averages (default 1 each)."""
    mutation_testing: Literal["required", "report", "off"] = "required"
    """Grader mutation testing in ``validate``: ``required`` fails a task with a surviving
    mutant it does not declare equivalent; ``report`` lists survivors without failing; ``off``
    generates no mutants."""
    tool_robustness: Literal["required", "report", "off"] = "required"
    """Property-based tool calls in ``validate``: ``required`` fails a task whose tools crash
    on a schema-valid call; ``report`` lists the crashes without failing; ``off`` skips it."""
    exercised_checks: Literal["required", "report", "off"] = "report"
    """Outcome assertions and hard constraints that no replay of ``validate`` saw fail (not a
    known-bad, a straw agent, a left-out step or a mutant): each may be always true.
    ``report`` (the default) warns of them; ``required`` fails their task (``validate
    --strict`` too); ``off`` does not look."""
    constraint_sets: ConstraintSets = Field(default_factory=dict)
    """Named lists of hard constraints, stated once: a task file that lists a set's name under
    ``constraint_sets`` gets its constraints before its own ``hard_process_constraints``."""

    @field_validator("mutation_testing", "tool_robustness", "exercised_checks", mode="before")
    @classmethod
    def _unquoted_off(cls, value: object) -> object:
        """YAML reads a bare ``off`` as false; it means the word here."""
        return "off" if value is False else value


GraderShape = tuple[tuple[object, ...], tuple[int, ...]]
"""What :func:`grader_shape` gives: the grading objects themselves, and the counts beside them."""


@dataclass
class Suite:
    root: Path
    config: SuiteConfig
    tasks: dict[str, AgentTask]
    solutions: dict[str, dict[str, Solution]]
    files: dict[str, str] = field(default_factory=dict)
    """Every file of the suite (relative path -> sha256)."""
    checks: dict[str, Any] = field(default_factory=dict, compare=False, repr=False)
    """The Python files the tasks' graders call (checks, judges), as imported when the suite
    was loaded, by file name: grading calls these, the code its grader revision hashes, not
    what the file holds when an attempt is graded (an in-process agent may rewrite it)."""
    graders: dict[str, GraderShape] = field(default_factory=dict, compare=False, repr=False)
    """Each task's :func:`grader_shape` when the suite was loaded, by task id."""
    given: Path | None = field(default=None, compare=False, repr=False)
    """The folder as the user named it (``retail``, ``../retail``); :attr:`root` is absolute."""

    def shown(self, path: Path | str | None = None) -> str:
        """*path*, a file of the suite (default: its folder), named as the user named the
        suite, as a problem found while loading it is: ``retail/suite.lock``, not
        ``/home/.../retail/suite.lock``."""
        return as_given(self.root if path is None else path, self.root, self.given or self.root)

    @property
    def name(self) -> str:
        return self.config.name

    @property
    def suite_hash(self) -> str:
        """The hash of every file of the suite and of the environment kind it runs in (its
        ``environment:``, or a ``--environment`` override): a batch run on PostgreSQL and one
        run on SQLite of the same files are not the same evaluation. A suite run on SQLite,
        the default kind, keeps the hash of its files alone, as before kinds were hashed."""
        return files_hash(self.files, self.config.environment)

    @cached_property
    def policy(self) -> str:
        """The policy text, read once: every attempt of a loaded suite sees the same text."""
        if self.config.policy is None:
            return ""
        return read_text(self.root / self.config.policy, max_bytes=MAX_POLICY_BYTES)

    @cached_property
    def tools(self) -> dict[str, Tool]:
        if self.config.tools.startswith(BUILTIN):
            return builtin_tools(self.config.tools, self.root / SUITE_FILE)
        return load_tools(self.root / self.config.tools)

    @property
    def tools_digest(self) -> str | None:
        """The hash of the tools' code: the suite's file with the sibling modules it imports
        (a helper module changes what the tools do as much as tools.py does), or a built-in
        set's module."""
        if not self.config.tools.startswith(BUILTIN):
            path = self.root / self.config.tools
            return hash_code(path) if self.config.tools in self.files else None
        module = _BUILTIN_TOOLS.get(self.config.tools.removeprefix(BUILTIN))
        found = importlib.util.find_spec(module) if module else None
        return hash_file(Path(found.origin)) if found and found.origin else None

    def fixture_path(self, task: AgentTask) -> Path:
        # Without "." or "..", as the suite's files are named: the lock finds its digest.
        return Path(os.path.normpath(self.root / self.config.fixtures / task.initial_state_fixture))

    def weight(self, task_id: str) -> float:
        return self.config.weights.get(task_id, self.tasks[task_id].weight)


BUILTIN = "builtin:"
_BUILTIN_TOOLS = {"workspace": "groundstate.environments.workspace_tools"}
"""Tool sets shipped with groundstate, by the name ``tools: builtin:<name>`` gives."""


def builtin_tools(name: str, file: Path) -> dict[str, Tool]:
    """The tools of ``builtin:<name>``; an unknown name is the suite file's error."""
    module = _BUILTIN_TOOLS.get(name.removeprefix(BUILTIN))
    if module is None:
        known = ", ".join(BUILTIN + key for key in _BUILTIN_TOOLS)
        raise SpecError(file, "tools", f"no built-in tools {name!r} (known: {known})")
    tools: dict[str, Tool] = importlib.import_module(module).TOOLS
    return dict(tools)


Report = Callable[[SpecError], None]
"""Where the loader sends each problem it finds: raised (load) or collected (scan)."""


def load_suite(path: Path) -> Suite:
    """Load and check a suite folder; derive each task's grader revision and test manifest.

    Raises the first problem found as a :class:`SpecError`; :func:`scan_suite` collects them all.
    """
    suite = _walk(Path(path), _raise)
    assert suite is not None  # every problem raised above
    return suite


def scan_suite(path: Path) -> tuple[Suite | None, list[SpecError]]:
    """Every problem of the suite at *path*, and the suite made of the files that loaded.

    A file with a problem is left out (a task without its file, a task without that
    solution) and checking goes on with the rest, so one pass names every problem; the suite
    is None only when ``suite.yaml`` or the tools cannot be read.
    """
    found: list[SpecError] = []
    return _walk(Path(path), found.append), found


def _raise(error: SpecError) -> None:
    raise error


def _as_given(root: Path, report: Report) -> Report:
    """*report*, each problem of a file of the suite named under *root* as given: the suite is
    loaded from its absolute folder, whose files (tools.py, checks.py) were named in full
    while the task files were named as given."""
    absolute = _absolute(root)
    return lambda error: report(error.rerooted(absolute, root))


def _absolute(root: Path) -> Path:
    """*root* in full, without ``..`` (``lock ../retail``: the fixtures' paths, normalised as
    :meth:`Suite.fixture_path` makes them, were not under ``/w/elsewhere/../retail``)."""
    return Path(os.path.normpath(root.absolute()))


def _walk(root: Path, report: Report) -> Suite | None:
    report = _as_given(root, report)
    if not os.path.lexists(root / SUITE_FILE):  # one that is there but no file: said below
        reason = "not a suite folder (no suite.yaml)"
        if is_file(root):  # the suite's own suite.yaml, given for its folder
            reason = "is a file, not a suite folder" + (
                f": give its folder ({root.parent})" if root.name == SUITE_FILE else ""
            )
        report(SpecError(root, None, reason))
        return None
    if outside(root, root / SUITE_FILE):  # as a task file's link out is
        report(_outside_error(root / SUITE_FILE, None, root / SUITE_FILE))
        return None
    try:
        config = load_model(root / SUITE_FILE, SuiteConfig)
        _check_environment_kind(root / SUITE_FILE, config.environment)
        _check_environment_options(root / SUITE_FILE, config)
        _check_suite_paths(root, config)
        files = _hash_files(root)
        # absolute: what grading derives from the root (hidden tests, check files) must not
        # move with the working folder (validate grades once in another: see skew.elsewhere)
        suite = Suite(root=_absolute(root), config=config, tasks={}, solutions={}, files=files,
                      given=root)  # fmt: skip
        suite.tools  # noqa: B018  (imported now: a broken tools.py is a problem of the suite)
        with contextlib.suppress(SpecError):  # read with the files it was hashed with, not at
            suite.policy  # noqa: B018  (the first attempt: a pool worker's, after the preflight)
    except SpecError as exc:
        report(exc)
        return None
    _each(_check_constraint_sets(root, config.constraint_sets), report)
    _each(_check_set_tools(suite), report)
    for task_file in sorted((root / "tasks").glob("*.yaml")):
        _add_task(suite, task_file, report)
    if not suite.tasks and not any((root / "tasks").glob("*.yaml")):
        report(SpecError(root / "tasks", None, "the suite has no task files (tasks/*.yaml)"))
    if config.canary is not None and not _task_named(root, config.canary):
        ids = [path.stem for path in (root / "tasks").glob("*.yaml")]
        hint = did_you_mean(config.canary, ids)
        report(SpecError(root / SUITE_FILE, "canary", f"no task {config.canary!r}{hint}"))
    _each(_check_references(root, config), report)
    _each(_unread_files(root), report)
    _each(_case_collisions(root, files), report)
    _pin_checks(suite)
    return suite


def _case_collisions(root: Path, files: dict[str, str]) -> Iterator[SpecError]:
    """Two files whose names differ only in case (``tasks/Refund.yaml``, ``tasks/refund.yaml``)
    are one file on macOS and Windows: the suite would lose one of them, and its hash change,
    when copied there."""
    first: dict[str, str] = {}
    for name in files:
        other = first.setdefault(name.casefold(), name)
        if other != name:
            yield SpecError(
                root / name,
                None,
                f"differs from {other} only in case: on macOS and Windows they are one file",
            )


def grader_shape(task: AgentTask) -> GraderShape:
    """The objects that grade and bound *task*: its fields, those of its sections
    (``terminal_conditions``, ``permissions``...), its assertion, constraint and rubric lists,
    their items and the items' fields; and beside them the lists' lengths and a hash of its
    table permissions. Models are frozen, but lists are not, and ``object.__setattr__``
    passes: an in-process agent that empties or swaps them, or raises its ``step_limit`` or
    turns ``on_prohibited_action`` to ``continue``, changes this (one that edits a field's own
    list or dict in place does not; a full walk costs about a millisecond per retail task, too
    much for every attempt), and so does a change in place of its table permissions (a few
    items: an agent that loosened them loosened every later attempt's).

    Compared by identity (:func:`same_grader_shape`), not by ``id()``: each ``id`` call runs
    the process's audit hooks (groundstate's own is Python), some 200 per attempt of a retail
    task, and an object freed and another made at its address had the same ``id``."""
    fields = vars(task).values()
    objects: list[object] = [*fields]
    for section in fields:
        if isinstance(section, BaseModel):
            objects += vars(section).values()
    counts = [hash(tuple(task.permissions.tables.items()))]
    for items in (task.outcome_assertions, task.hard_process_constraints):
        objects += (items, *items)
        counts.append(len(items))
        for item in items:
            objects += vars(item).values()
    rubric = task.partial_credit_rubric
    objects += (rubric, *rubric)
    counts.append(len(rubric))
    return tuple(objects), tuple(counts)


def same_grader_shape(now: GraderShape, loaded: object) -> bool:
    """Whether two :func:`grader_shape` results hold the same objects (``is``, never ``==``:
    an equal copy swapped in is a change) and the same counts. A *loaded* shape of another
    form (``suite.graders`` is reachable by an in-process agent) is not the same: compared
    by the harness's own types only, so no code of the agent's runs here."""
    if type(loaded) is not tuple or len(loaded) != 2:
        return False
    (objects, counts), (then, counted) = now, loaded
    if type(then) is not tuple or type(counted) is not tuple:
        return False
    if not all(type(count) is int for count in counted):
        return False
    return len(objects) == len(then) and all(map(is_, objects, then)) and counts == counted


def _pin_checks(suite: Suite) -> None:
    """Keep the graders' Python files as imported now (see :attr:`Suite.checks`), and each
    task's :func:`grader_shape`; a file that does not import has been reported, and is
    left to fail where it is called."""
    suite.graders.update({i: grader_shape(t) for i, t in suite.tasks.items()})
    for name in sorted(set().union(*[grader_code_files(t) for t in suite.tasks.values()])):
        if name not in suite.files:  # outside the suite or missing: reported, never imported
            continue
        with contextlib.suppress(SpecError):
            suite.checks[name] = load_module(suite.root / name, "checks")


def _unread_files(root: Path) -> Iterator[SpecError]:
    """Files the loader would pass over without a word: a task or solution spelt ``.yml`` (or
    a task written as ``.json``), put in a subfolder or straight in ``solutions/``; a file
    where ``solutions/`` or a task's folder in it should be. (A ``solutions/<name>/`` with no
    task is left alone: a suite copied with some tasks removed keeps their solutions, and a
    misspelt id shows as a task without its oracle.)"""
    solutions = root / "solutions"
    if (solutions.exists() or solutions.is_symlink()) and not is_dir(solutions):
        yield SpecError(solutions, None, "not a folder: solutions go in solutions/<task_id>/")
    tasks = {path.stem for path in (root / "tasks").glob("*.yaml")}
    for path in sorted(solutions.glob("*")):
        if path.name in tasks and not is_dir(path):
            yield SpecError(path, None, "not a folder: solutions go in solutions/<task_id>/")
    folders = [root / "tasks", *sorted(p for p in solutions.glob("*") if is_dir(p))]
    for folder in [solutions, *folders]:
        for path in sorted(folder.rglob("*") if folder != solutions else folder.glob("*")):
            if folder != solutions and path.is_symlink() and _holds_yaml(path):
                yield SpecError(
                    path, None, f"not read: a link to a folder of YAML files in {folder.name}/"
                )
            if folder == root / "tasks" and path.parent == folder and _json_task(path):
                yield SpecError(
                    path, None, f"not read: task files end in .yaml (rename it {path.stem}.yaml)"
                )
            if path.suffix.lower() not in {".yml", ".yaml"} or is_dir(path):
                continue
            if folder == solutions:
                yield SpecError(path, None, "not read: solutions go in solutions/<task_id>/")
            elif path.parent != folder:
                yield SpecError(path, None, f"not read: a subfolder of {folder.name}/")
            elif path.suffix != ".yaml":
                yield SpecError(path, None, "not read: task and solution files end in .yaml")


def _json_task(path: Path) -> bool:
    """Whether *path* is a task written in JSON (``tasks/x.json``: a mapping with a
    ``task_id``), which the loader passed over without a word: a suite of tasks a script wrote
    as JSON ran none of them. Another JSON file beside the tasks is a check's data."""
    if path.suffix.lower() != ".json" or not is_file(path):
        return False
    try:
        data = json.loads(read_text(path))
    except (SpecError, ValueError, RecursionError):
        return False
    return isinstance(data, dict) and "task_id" in data


def _holds_yaml(link: Path) -> bool:
    """Whether the link *link* leads to a folder holding a YAML file (at any depth, links in
    it not followed): the scan of ``tasks/`` does not follow links, so such a file, read in a
    subfolder of its own, was passed over without a word."""
    try:
        return is_dir(link) and any(p.suffix.lower() in {".yml", ".yaml"} for p in link.rglob("*"))
    except (OSError, RuntimeError):
        return False


def outside(root: Path, path: Path) -> bool:
    """Whether *path* (a suite file, or a name a field joined to *root*) leads out of the suite
    folder *root*, through ``..``, an absolute name or a link: its hash would not be the
    suite's, nor its lock's."""
    try:
        return not path.resolve().is_relative_to(root.resolve())
    except (OSError, RuntimeError, ValueError):  # a loop of links, a name the OS refuses
        return True


def _outside_error(file: Path, field_name: str | None, path: Path, name: str = "") -> SpecError:
    """*path*, which :func:`outside` found, named *name* by *field_name* of *file* (none: *file*
    is itself a link out of the suite)."""
    try:
        to = str(path.resolve())
    except (OSError, RuntimeError, ValueError):  # it leads nowhere, not out of the folder
        loop = "a loop of symbolic links, leading to no file"
        return SpecError(file, field_name, f"{name!r} is {loop}" if field_name else loop)
    what = f"{name!r} leads" if field_name else "a link leading"
    return SpecError(file, field_name, f"{what} outside the suite folder (to {to})")


def _check_suite_paths(root: Path, config: SuiteConfig) -> None:
    """The folders and files suite.yaml names are the suite's own."""
    named = {"fixtures": config.fixtures, "policy": config.policy, "tools": config.tools}
    for field_name, relative in named.items():
        if relative is None or relative.startswith(BUILTIN):
            continue
        if outside(root, root / relative):
            raise _outside_error(root / SUITE_FILE, field_name, root / relative, relative)
    if not config.tools.startswith(BUILTIN) and (missing := _no_file(root, "tools", config.tools)):
        raise missing


def _no_file(root: Path, field_name: str, relative: str) -> SpecError | None:
    """Why the file suite.yaml's *field_name* names is no file (missing, a folder, a link to
    nowhere), as that field's problem: the file's own name alone does not say where it was
    named."""
    reason = no_file(root / relative, relative)
    return None if reason is None else SpecError(root / SUITE_FILE, field_name, reason)


def _hash_files(root: Path) -> dict[str, str]:
    """Every file of the suite (relative path -> sha256); one it cannot read is its error."""
    files = {}
    for path in sorted(root.rglob("*")):
        if _counts(path, root):
            try:
                files[str(path.relative_to(root))] = hash_file(path)
            except OSError as exc:
                raise SpecError(path, None, f"cannot read: {os_reason(path, exc)}") from None
    return files


def _task_named(root: Path, task_id: str) -> bool:
    """Whether ``tasks/<task_id>.yaml`` is there, whatever it is (a file, a folder, a link to
    nowhere or a loop): a task file that does not load is reported as itself; "no task" then
    would be a second, wrong report of it."""
    return os.path.lexists(root / "tasks" / f"{task_id}.yaml")


def _check_references(root: Path, config: SuiteConfig) -> Iterator[SpecError]:
    """A weight for a misspelt task would be ignored, a missing or unreadable policy file found
    mid-batch."""
    ids = [path.stem for path in (root / "tasks").glob("*.yaml")]
    for task_id in config.weights:
        if not _task_named(root, task_id):
            reason = f"no task {task_id!r}{did_you_mean(task_id, ids)}"
            yield SpecError(root / SUITE_FILE, f"weights.{task_id}", reason)
    if config.policy is None:
        return
    if missing := _no_file(root, "policy", config.policy):
        yield missing
        return
    try:  # read as every attempt will: not UTF-8 or too large is found now, not mid-batch
        text = read_text(root / config.policy, max_bytes=MAX_POLICY_BYTES)
    except SpecError as exc:
        yield exc
        return
    if not text.strip():  # declared, yet every agent would be given no policy at all
        reason = f"{config.policy} is empty: write the policy, or remove `policy:`"
        yield SpecError(root / SUITE_FILE, "policy", reason)


def _add_task(suite: Suite, task_file: Path, report: Report) -> None:
    """Load one task and its solutions into *suite*; a task with a problem is left out."""
    if outside(suite.root, task_file):
        report(_outside_error(task_file, None, task_file))
        return
    try:
        task = _load_task(task_file, suite.config.constraint_sets)
    except SpecError as exc:
        report(exc)
        return
    problems = list(_check_task_file(suite, task, task_file))
    _each(problems, report)
    solutions = _load_solutions(suite, task, report)
    suite.solutions[task.task_id] = solutions  # scanned even for a task left out
    if not problems:
        suite.tasks[task.task_id] = _with_grader_versions(suite, task, solutions)


def _each(problems: Iterable[SpecError], report: Report) -> None:
    for problem in problems:
        report(problem)


def files_hash(files: dict[str, str], environment: str) -> str:
    """:attr:`Suite.suite_hash` of a suite of *files* (path -> sha256) run in *environment*."""
    if environment == "sqlite":
        return hash_value(files)
    return hash_value({"files": files, "environment": environment})


def with_environment(suite: Suite, kind: str) -> Suite:
    """*suite* with its tasks run in environment *kind* (a command line's ``--environment``).
    An unknown kind is the option's error, not suite.yaml's (whose ``environment:`` is fine);
    suite.yaml's ``environment_options`` that do not suit *kind* are named with both."""
    _check_environment_kind("--environment", kind)
    config = suite.config.model_copy(update={"environment": kind})
    try:
        _check_environment_options(suite.root / SUITE_FILE, config)
    except SpecError as exc:
        raise SpecError(exc.path, exc.field, f"{exc.reason} (with --environment {kind})") from None
    return with_config(suite, config)


def with_config(suite: Suite, config: SuiteConfig) -> Suite:
    """*suite* with *config* instead of its suite.yaml's (a command line's override), and the
    policy and tools as read when the suite loaded, not read again now."""
    moved = replace(suite, config=config)
    for read in ("policy", "tools"):
        if read in vars(suite):
            vars(moved)[read] = vars(suite)[read]
    return moved


def _check_environment_options(file: Path, config: SuiteConfig) -> None:
    from groundstate.environments.registry import options_problem

    problem = options_problem(config.environment, config.environment_options)
    if problem is not None:
        raise SpecError(file, "environment_options", problem)


def _check_environment_kind(where: Path | str, kind: str) -> None:
    """*kind* is a registered environment kind, or a SpecError at *where*: suite.yaml's
    ``environment`` field, or the command line's ``--environment``."""
    from groundstate.environments.registry import environment_kinds  # registry imports spec

    known = environment_kinds()
    if kind not in known:
        file, field = (where, "environment") if isinstance(where, Path) else (where, None)
        raise SpecError(
            file, field, f"unknown environment kind {kind!r} (known: {', '.join(known)})"
        )


def _counts(path: Path, root: Path) -> bool:
    """Whether a file is part of the suite: not caches, hidden folders (a run store) or the lock."""
    parts = path.relative_to(root).parts
    return (
        path.is_file()
        and not any(p.startswith(".") or p == "__pycache__" for p in parts)
        and parts != ("suite.lock",)
        and path.suffix != ".pyc"
    )


def _check_constraint_sets(root: Path, sets: ConstraintSets) -> Iterator[SpecError]:
    for name, constraints in sets.items():
        for i, constraint in enumerate(constraints):
            if isinstance(constraint, PythonConstraint):
                field_name = f"constraint_sets.{name}[{i}].check"
                yield from _check_python_ref(
                    root, constraint.check, root / SUITE_FILE, field_name, CONSTRAINT_CALL
                )


def _load_task(task_file: Path, sets: ConstraintSets) -> AgentTask:
    """A task file, its constraint sets expanded in front of its own constraints."""
    data = read_yaml(task_file)
    if not isinstance(data, dict):
        return load_model(task_file, AgentTask, data=data)  # reports what the file holds
    task = load_model(task_file, AgentTask, data=include_sets(data, sets, task_file))
    return sets_first(task, sets)


def _check_task_file(suite: Suite, task: AgentTask, task_file: Path) -> Iterator[SpecError]:
    if task_file.stem != task.task_id:
        yield SpecError(task_file, "task_id", f"must match the file name {task_file.stem!r}")
    fixture = suite.fixture_path(task)
    if outside(suite.root, fixture):
        name = task.initial_state_fixture
        yield _outside_error(task_file, "initial_state_fixture", fixture, name)
    elif not is_dir(fixture) and (
        reason := no_file(fixture, f"{suite.config.fixtures}/{task.initial_state_fixture}")
    ):
        yield SpecError(task_file, "initial_state_fixture", reason)
    yield from _check_assertion_kinds(suite, task, task_file)
    for i, name in enumerate(task.available_tools):
        if name not in suite.tools:
            yield SpecError(
                task_file,
                f"available_tools[{i}]",
                f"{name!r} is not a tool of {suite.config.tools}" + did_you_mean(name, suite.tools),
            )
    for i, constraint in enumerate(own_constraints(task, suite.config.constraint_sets)):
        yield from _check_tools_named(
            constraint,
            task.available_tools,
            task_file,
            f"hard_process_constraints[{i}]",
            "not in the task's available_tools",
        )
        yield from _check_args_named(
            constraint, suite.tools, task_file, f"hard_process_constraints[{i}]"
        )
    for i, assertion in enumerate(task.outcome_assertions):
        if isinstance(assertion, PythonAssertion):
            yield from _check_python_ref(
                suite.root, assertion.check, task_file, f"outcome_assertions[{i}].check", CHECK_CALL
            )
        if isinstance(assertion, JudgeAssertion):
            where = f"outcome_assertions[{i}].judge"
            if isinstance(assertion.judge, str):
                yield from _check_python_ref(
                    suite.root, assertion.judge, task_file, where, JUDGE_CALL
                )
            else:
                yield from _check_model_judge(suite.root, assertion.judge, task_file, where)
            if outside(suite.root, suite.root / assertion.labels):
                where, labels = f"outcome_assertions[{i}].labels", assertion.labels
                yield _outside_error(task_file, where, suite.root / labels, labels)
            elif not is_file(suite.root / assertion.labels):
                yield SpecError(
                    task_file,
                    f"outcome_assertions[{i}].labels",
                    f"no labelled set {assertion.labels!r} in the suite",
                )
            else:  # read now, not found unreadable when validate measures the judge
                yield from _labels_problem(suite.root / assertion.labels)
    # A set's Python checks were checked with suite.yaml; index the task's own as in its file.
    for i, constraint in enumerate(own_constraints(task, suite.config.constraint_sets)):
        if isinstance(constraint, PythonConstraint):
            where = f"hard_process_constraints[{i}].check"
            yield from _check_python_ref(
                suite.root, constraint.check, task_file, where, CONSTRAINT_CALL
            )


def _labels_problem(path: Path) -> Iterator[SpecError]:
    from groundstate.validation.judges import load_labels  # validation imports spec

    try:
        load_labels(path)
    except SpecError as exc:
        yield exc


def _check_model_judge(
    root: Path, judge: ModelJudge, file: Path, field_name: str
) -> Iterator[SpecError]:
    """A model judge's prompt must fill, its SDK import and its decoding leave the adapter's
    own keys alone, all before a batch meets them."""
    from groundstate.grading import model_judge  # grading imports spec

    problem = model_judge.decoding_problem(judge.model)
    if problem is not None:
        yield SpecError(file, f"{field_name}.model.decoding", problem)
    sdk = BUILTIN_AGENTS[judge.model.adapter][1]
    if importlib.util.find_spec(sdk) is None:
        reason = f"{judge.model.adapter} needs the {sdk} SDK: pip install 'groundstate[{sdk}]'"
        yield SpecError(file, f"{field_name}.model.adapter", reason)
    if outside(root, root / judge.prompt):
        yield _outside_error(file, f"{field_name}.prompt", root / judge.prompt, judge.prompt)
        return
    if (missing := no_file(root / judge.prompt, repr(judge.prompt), " in the suite")) is not None:
        yield SpecError(file, f"{field_name}.prompt", missing)
        return
    try:
        problem = model_judge.template_problem(model_judge.load_template(root, judge), judge)
    except SpecError as exc:  # not UTF-8, or too large
        problem = exc.reason
    if problem is not None:
        yield SpecError(file, f"{field_name}.prompt", f"{judge.prompt}: {problem}")


_NEEDS = {SqlAssertion: "sql", TestsAssertion: "commands", ChangedPathsAssertion: "files"}
"""The environment capability each assertion kind reads states through."""


def _check_assertion_kinds(suite: Suite, task: AgentTask, task_file: Path) -> Iterator[SpecError]:
    """An assertion the suite's kind cannot evaluate (SQL on a workspace, hidden tests on a
    database) is refused now, not found as a grader failure mid-batch."""
    from groundstate.environments.registry import environment_capabilities
    from groundstate.grading.workspace import hidden_tests_problem
    from groundstate.grading.workspace_unittest import runner_files_problem

    kind = suite.config.environment
    offers = environment_capabilities(kind)
    for i, assertion in enumerate(task.outcome_assertions):
        need = _NEEDS.get(type(assertion))
        where = f"outcome_assertions[{i}]"
        if need is not None and need not in offers:
            reason = f"a {need} assertion, which the {kind!r} environment cannot evaluate"
            yield SpecError(task_file, where, reason)
        if isinstance(assertion, TestsAssertion):
            spec, fixture = assertion.tests, suite.fixture_path(task)
            problem = hidden_tests_problem(suite.root, fixture, spec.path, spec.into)
            problem = problem or runner_files_problem(suite.root, spec)
            if problem is not None:
                yield SpecError(task_file, f"{where}.tests", problem)


CHECK_CALL = ("s0", "sT")
"""How an outcome assertion's Python check is called."""
CONSTRAINT_CALL = ("trace", "s0")
"""How a Python constraint's check is called."""
JUDGE_CALL = ("s0", "sT", "final_message", "trace")
"""How a Python judge is called."""


def _check_python_ref(
    root: Path, ref: str, file: Path, field_name: str, called_as: tuple[str, ...]
) -> Iterator[SpecError]:
    """A check must name a function of a Python file of the suite, which must import, and
    which can be called as *called_as* and return its verdict (not a coroutine)."""
    file_name, _, function = ref.partition(":")
    if function and outside(root, root / file_name):
        yield _outside_error(file, field_name, root / file_name, file_name)
        return
    if not function or not file_name.endswith(".py"):
        yield SpecError(file, field_name, f"expected 'file.py:function' in the suite, got {ref!r}")
        return
    if (reason := no_file(root / file_name, file_name, " in the suite")) is not None:
        yield SpecError(file, field_name, f"{reason} (for {ref!r})")  # the form is right
        return
    try:
        module = load_module(root / file_name, "checks")
    except SpecError as exc:
        yield exc  # the file's own error, named once however many checks it holds
        return
    if not callable(getattr(module, function, None)):
        defined = [key for key, value in vars(module).items() if callable(value)]
        hint = did_you_mean(function, defined)
        yield SpecError(file, field_name, f"{file_name} has no function {function!r}{hint}")
        return
    problem = _call_problem(getattr(module, function), called_as)
    if problem is not None:
        yield SpecError(file, field_name, f"{ref} {problem}")


def _call_problem(fn: Callable[..., Any], called_as: tuple[str, ...]) -> str | None:
    """Why *fn* cannot give a verdict when called as ``fn(*called_as)``, or None. Found at load
    time: at grading, every attempt would end as a grader failure for the same reason."""
    shown = f"({', '.join(called_as)})"
    if inspect.isclass(fn):
        return f"is a class: a check is a function called as {shown}"
    if inspect.iscoroutinefunction(fn) or inspect.isasyncgenfunction(fn):
        return f"is async: a check is called as {shown} and returns its verdict, not awaited"
    if inspect.isgeneratorfunction(fn):
        return "is a generator (it yields): a check returns its verdict"
    try:
        inspect.signature(fn).bind(*called_as)
    except TypeError as exc:
        return f"cannot be called as {shown}: {exc}"
    except ValueError:  # a builtin without a signature: it is called as it is
        return None
    return None


def _load_solutions(suite: Suite, task: AgentTask, report: Report) -> dict[str, Solution]:
    solutions = {}
    for path in sorted((suite.root / "solutions" / task.task_id).glob("*.yaml")):
        if outside(suite.root, path):
            report(_outside_error(path, None, path))
            continue
        try:
            solution = load_model(path, Solution)
        except SpecError as exc:
            report(exc)
            continue
        problems = [
            SpecError(path, f"steps[{i}].call", _not_callable(suite, task, step.call))
            for i, step in enumerate(solution.steps)
            if step.call is not None and step.call not in task.available_tools
        ]
        _each(problems, report)
        if not problems:
            solutions[path.stem] = solution
    return solutions


def _not_callable(suite: Suite, task: AgentTask, name: str) -> str:
    if name not in suite.tools:
        return f"{name!r} is not a tool of {suite.config.tools}" + did_you_mean(name, suite.tools)
    return f"{name!r} is not in available_tools of tasks/{task.task_id}.yaml"


def _check_set_tools(suite: Suite) -> Iterator[SpecError]:
    """A set's constraints may name any tool of the suite (tasks differ in what they offer)."""
    for name, constraints in suite.config.constraint_sets.items():
        for i, constraint in enumerate(constraints):
            yield from _check_tools_named(
                constraint,
                list(suite.tools),
                suite.root / SUITE_FILE,
                f"constraint_sets.{name}[{i}]",
                "not a tool of the suite",
            )
            yield from _check_args_named(
                constraint, suite.tools, suite.root / SUITE_FILE, f"constraint_sets.{name}[{i}]"
            )


def _check_tools_named(
    constraint: HardConstraint, tools: list[str], file: Path, field_name: str, why: str
) -> Iterator[SpecError]:
    """A match naming a tool that cannot be called would hold vacuously: refuse it."""
    for where, tool in named_tools(constraint):
        if tool not in tools:
            reason = f"{tool!r} is {why}" + did_you_mean(tool, tools)
            yield SpecError(file, f"{field_name}{where}", reason)


def _check_args_named(
    constraint: HardConstraint, tools: dict[str, Tool], file: Path, field_name: str
) -> Iterator[SpecError]:
    """An argument the tool does not declare would make the constraint hold (or fail)
    vacuously: ``provenance`` skips it, ``args`` and ``where`` never match it."""
    for where, tool, path in named_args(constraint):
        declared = _declared_args(tools.get(tool))
        if declared is None or path in declared or path.split(".")[0] in declared:
            continue
        reason = f"{path.split('.')[0]!r} is not an argument of {tool!r}"
        yield SpecError(file, f"{field_name}{where}", reason + did_you_mean(path, declared))


def _declared_args(declared: Tool | None) -> list[str] | None:
    """The tool's argument names, when its schema closes them (None: any name may be given)."""
    if declared is None:
        return None
    properties = declared.parameters.get("properties")
    closed = declared.parameters.get("additionalProperties") is False
    if not isinstance(properties, dict) or not closed:
        return None
    return list(properties)


def _sibling_files(suite: Suite, check_files: list[str]) -> dict[str, str]:
    """The suite files (name -> sha256) of the sibling modules the check files import."""
    names = {
        str(path.relative_to(suite.root))
        for name in check_files
        if is_file(suite.root / name)
        for path in code_files(suite.root / name)[1:]
    }
    return {name: suite.files[name] for name in sorted(names) if name in suite.files}


def _hidden_test_files(suite: Suite, task: AgentTask) -> dict[str, str]:
    """The suite files (name -> sha256) of the task's hidden tests: part of its grader."""
    folders = [
        a.tests.path
        for a in task.outcome_assertions
        if isinstance(a, TestsAssertion) and a.tests.path is not None
    ]
    prefixes = [Path(folder).as_posix().rstrip("/") + "/" for folder in folders]
    return {
        name: digest
        for name, digest in suite.files.items()
        if any(name.startswith(prefix) for prefix in prefixes)
    }


def grader_code_files(task: AgentTask) -> set[str]:
    """The suite's Python files the task's grader calls: checks and judges."""
    checks = [*task.outcome_assertions, *task.hard_process_constraints]
    return {
        check.check.partition(":")[0]
        for check in checks
        if isinstance(check, PythonAssertion | PythonConstraint)
    } | {
        a.judge.partition(":")[0]
        for a in checks
        if isinstance(a, JudgeAssertion) and isinstance(a.judge, str)
    }


def judge_prompt_files(task: AgentTask) -> set[str]:
    """The prompt templates of the task's model judges."""
    return {
        a.judge.prompt
        for a in task.outcome_assertions
        if isinstance(a, JudgeAssertion) and isinstance(a.judge, ModelJudge)
    }


def _with_grader_versions(
    suite: Suite, task: AgentTask, solutions: dict[str, Solution]
) -> AgentTask:
    """The grader is software: its revision hashes everything that decides a verdict."""
    code_files = sorted(grader_code_files(task))
    grader = {
        "outcome_assertions": [a.model_dump(mode="json") for a in task.outcome_assertions],
        "hard_process_constraints": [
            c.model_dump(mode="json") for c in task.hard_process_constraints
        ],
        "partial_credit_rubric": [n.model_dump(mode="json") for n in task.partial_credit_rubric],
        # A name that is no file of the suite (outside it, missing) has been reported.
        "code": {name: suite.files.get(name) for name in code_files},
    }
    hidden = _hidden_test_files(suite, task)
    if hidden:  # only then: other graders keep their revision
        grader["hidden_tests"] = hidden
    siblings = _sibling_files(suite, code_files)
    if siblings:  # only then: a grader without sibling modules keeps its revision
        grader["sibling_code"] = siblings
    prompts = sorted(judge_prompt_files(task))
    if prompts:  # likewise: what a model judge is asked, in the library's fixed format
        from groundstate.grading.model_judge import FORMAT_REVISION

        grader["judge_prompts"] = {name: hash_file(suite.root / name) for name in prompts}
        grader["judge_format"] = FORMAT_REVISION
    manifest = {
        name: hash_value(solution.model_dump(mode="json")) for name, solution in solutions.items()
    }
    return task.model_copy(
        update={"grader_revision": hash_value(grader)[:16], "grader_test_manifest": manifest}
    )
