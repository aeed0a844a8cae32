"""Suite locks: the hashes a suite had when it was proven, to refuse running a drifted copy.

``suite.lock`` (JSON) records the sha256 of every file of the suite and, per task, its file,
fixture (a folder's as :func:`~groundstate.spec.canonical.hash_path` hashes it), solutions and
grader revision. :func:`check_lock` names each task and file that
changed, appeared or disappeared since, so a batch run ``--locked`` cannot silently measure a
different suite from the one that was validated.
"""

from __future__ import annotations

import json
import shlex
from pathlib import Path
from typing import Any

from groundstate.errors import GroundstateError, SpecError
from groundstate.spec.canonical import hash_path
from groundstate.spec.files import parse_json, read_text
from groundstate.spec.suite import Suite

LOCK_FILE = "suite.lock"
LOCK_FORMAT = 1


class SuiteLockMismatch(GroundstateError):
    """The suite differs from its ``suite.lock`` (or has none); ``lines`` say how."""

    def __init__(self, suite: str, lines: list[str]) -> None:
        self.lines = lines
        # One line, as the command line prints an error (a line break would show as "\n").
        super().__init__(f"suite {suite!r} does not match its {LOCK_FILE}: {'; '.join(lines)}")


def lock_data(suite: Suite) -> dict[str, Any]:
    """What a lock records for *suite* (the lock file itself excluded)."""
    return {
        "format": LOCK_FORMAT,
        "suite": suite.name,
        "files": {name: sha for name, sha in suite.files.items() if name != LOCK_FILE},
        "tasks": {task_id: _task_entry(suite, task_id) for task_id in sorted(suite.tasks)},
    }


def lock_suite(suite: Suite) -> Path:
    """Write ``<suite>/suite.lock`` for the suite as loaded; return its path."""
    path = suite.root / LOCK_FILE
    try:
        path.write_text(json.dumps(lock_data(suite), indent=2, sort_keys=True) + "\n", "utf-8")
    except OSError as exc:  # a folder of that name, a read-only suite
        raise SpecError(suite.shown(path), None, f"cannot write: {exc.strerror}") from None
    return path


def check_lock(suite: Suite) -> list[str]:
    """One line per task or file that differs from the lock; empty when the suite matches."""
    path = suite.root / LOCK_FILE
    if not path.is_file():
        again = f"groundstate lock {shlex.quote(suite.shown())}"
        return [f"no {LOCK_FILE}: lock the suite with `{again}`"]
    try:  # as every JSON file a user hands groundstate: bounded, UTF-8, keys stated once
        locked = parse_json(path, read_text(path))
    except SpecError as exc:
        where = LOCK_FILE if exc.line is None else f"{LOCK_FILE} line {exc.line}"
        return [f"{where} is unreadable ({exc.reason}); lock the suite again"]
    if not _is_lock_shape(locked):  # hand-edited, or another tool's file
        return [
            f"{LOCK_FILE} is unreadable (not a suite lock: no mapping of 'tasks' and 'files'"
            " as `groundstate lock` writes them); lock the suite again"
        ]
    locked_tasks, locked_files = locked["tasks"], locked["files"]
    if locked.get("format") != LOCK_FORMAT:  # another version's lock records other hashes
        return [
            f"{LOCK_FILE} has format {locked.get('format')!r}, not {LOCK_FORMAT};"
            " lock the suite again"
        ]
    current = lock_data(suite)
    return _task_lines(locked_tasks, current["tasks"]) + _file_lines(locked_files, current["files"])


def require_lock(suite: Suite) -> None:
    """Raise :class:`SuiteLockMismatch` unless the suite matches its lock exactly."""
    lines = check_lock(suite)
    if lines:
        raise SuiteLockMismatch(suite.name, lines)


def _is_lock_shape(locked: Any) -> bool:
    """Whether a lock and its tables have the shapes :func:`lock_data` writes."""
    if not isinstance(locked, dict):
        return False
    tasks, files = locked.get("tasks"), locked.get("files")
    return (
        isinstance(tasks, dict)
        and isinstance(files, dict)
        and all(
            isinstance(entry, dict) and isinstance(entry.get("solutions", {}), dict)
            for entry in tasks.values()
        )
    )


def _task_entry(suite: Suite, task_id: str) -> dict[str, Any]:
    task = suite.tasks[task_id]
    task_file = f"tasks/{task_id}.yaml"
    # where suite.yaml's ``fixtures`` puts it: a fixture outside fixtures/ is still its task's
    path = suite.fixture_path(task)
    fixture = path.relative_to(suite.root).as_posix()
    return {
        "task_revision": task.task_revision,
        "task_file": suite.files.get(task_file),
        # A file's sha256 (as the file table has it); a folder's hash as the validation key
        # has it: its entry was null, and the file table leaves out what a workspace's state
        # holds besides its visible files (a .gitignore, modes, links, a repository's HEAD).
        "fixture": {"path": fixture, "sha256": hash_path(path)},
        "grader_revision": task.grader_revision,
        "solutions": dict(task.grader_test_manifest),
    }


def _task_lines(locked: dict[str, Any], current: dict[str, Any]) -> list[str]:
    lines = [
        f"task {task_id}: added since the lock"
        for task_id in sorted(current.keys() - locked.keys())
    ]
    lines += [
        f"task {task_id}: removed since the lock"
        for task_id in sorted(locked.keys() - current.keys())
    ]
    for task_id in sorted(locked.keys() & current.keys()):
        lines += [
            f"task {task_id}: {what}" for what in _task_changes(locked[task_id], current[task_id])
        ]
    return lines


def _task_changes(locked: dict[str, Any], current: dict[str, Any]) -> list[str]:
    changes = []
    if locked.get("task_revision") != current["task_revision"]:
        changes.append(f"revision {locked.get('task_revision')} → {current['task_revision']}")
    if locked.get("task_file") != current["task_file"]:
        changes.append("task file changed")
    if locked.get("fixture") != current["fixture"]:
        changes.append(f"fixture {current['fixture']['path']} changed")
    if locked.get("grader_revision") != current["grader_revision"]:
        changes.append(
            f"grader revision {locked.get('grader_revision')} → {current['grader_revision']}"
        )
    return changes + [
        f"solution {line}" for line in _changed(locked.get("solutions", {}), current["solutions"])
    ]


def _file_lines(locked: dict[str, str], current: dict[str, str]) -> list[str]:
    return [f"file {line}" for line in _changed(locked, current)]


def _changed(locked: dict[str, str], current: dict[str, str]) -> list[str]:
    """``name: added|removed|changed`` for each entry that differs, sorted by name."""
    names = sorted(locked.keys() | current.keys())
    return [
        f"{name}: {_how(locked.get(name), current.get(name))}"
        for name in names
        if locked.get(name) != current.get(name)
    ]


def _how(before: str | None, after: str | None) -> str:
    if before is None:
        return "added"
    return "removed" if after is None else "changed"
