"""The agent's side of a repository workspace: a confined handle and the built-in tools.

A suite gets the tools with ``tools: builtin:workspace`` in ``suite.yaml``; a suite that wants
more writes its own ``tools.py`` and imports these next to its own (``from
groundstate.environments.workspace_tools import read_file, ...``). Their names are fixed:
``list_files``, ``read_file``, ``write_file``, ``search``, ``apply_patch`` and ``run_command``.

Every path is relative to the work tree: absolute paths, ``..`` and symbolic links leading
out of it are refused as a :class:`~groundstate.errors.ToolError` (the agent's doing).
"""

from __future__ import annotations

import os
import re
import shutil
import stat
import sys
import tempfile
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING, Any

from groundstate.alarms import CLOCK
from groundstate.environments.workspace_git import GitFailed, git, git_name
from groundstate.errors import PermissionDenied, TimeLimitReached, ToolError
from groundstate.sandbox import run_sandboxed
from groundstate.tools import Tool, ToolContext, tool

if TYPE_CHECKING:
    from groundstate.environments.base import Row
    from groundstate.environments.workspace import WorkspaceEnvironment

MAX_READ_BYTES = 1_000_000
"""Largest file ``read_file`` returns (and ``search`` reads)."""
MAX_LISTED = 2000
MAX_MATCHES = 200
MAX_LINE = 300
"""Characters of a matching line ``search`` shows."""


def confined(root: Path, path: str, *, must_exist: bool = False) -> Path:
    """*path* inside *root*, or a :class:`ToolError` saying why not: absolute paths, ``..``
    and symbolic links that lead out of *root* are refused."""
    pure = PurePosixPath(path)
    if not path or "\0" in path:
        raise ToolError("a path is needed (relative to the workspace)")
    if pure.is_absolute():
        raise ToolError(f"{path!r}: absolute paths are refused; give one relative to the root")
    if ".." in pure.parts:
        raise ToolError(f"{path!r}: '..' is refused; paths stay inside the workspace")
    if any(git_name(part) for part in pure.parts):
        raise ToolError(f"{path!r}: a '.git' path is refused (git cannot hold it)")
    target = root.joinpath(*pure.parts) if pure.parts else root
    _refuse_too_long(path, pure, target)
    if not Path(os.path.realpath(target)).is_relative_to(root.resolve()):
        raise ToolError(f"{path!r}: a symbolic link leads outside the workspace")
    if must_exist and not target.exists():
        raise ToolError(f"{path!r}: no such file or folder")
    return target


NAME_MAX = 255
PATH_MAX = 4096
"""Linux's limits, in bytes, on one name and on a whole path."""


def _refuse_too_long(path: str, pure: PurePosixPath, target: Path) -> None:
    """A name or path longer than the system allows is the agent's error: every tool
    crashed on it (``ENAMETOOLONG``), an environment failure the agent could cause."""
    longest = max((len(os.fsencode(part)) for part in pure.parts), default=0)
    if longest > NAME_MAX or len(os.fsencode(target)) >= PATH_MAX:
        raise ToolError(
            f"{path[:80]!r}...: too long (a name holds at most {NAME_MAX} bytes, "
            f"a path under {PATH_MAX})"
        )


class WorkspaceHandle:
    """Files and commands, confined to one work tree and checked against the permissions."""

    def __init__(self, env: WorkspaceEnvironment) -> None:
        self._env = env

    @property
    def root(self) -> Path:
        return self._env.root

    # --- confinement -----------------------------------------------------------------------

    def resolve(self, path: str, *, must_exist: bool = False) -> Path:
        """*path* inside the work tree, or a :class:`ToolError` saying why not."""
        return confined(self.root, path, must_exist=must_exist)

    def _allow(self, action: str, write: bool) -> None:
        access = self._env.access
        if access == "none" or (write and access == "read"):
            what = f"{'write' if write else 'read'} files ({action})"
            self._env.denied.append(what)
            raise PermissionDenied(what)

    def _relative(self, path: Path) -> str:
        return path.relative_to(self.root).as_posix()

    # --- files -----------------------------------------------------------------------------

    def listing(self, path: str = ".") -> list[str]:
        """The workspace's files under *path* (a folder or one file), as state counts them."""
        self._allow("list", write=False)
        folder = self.resolve(path, must_exist=True)
        prefix = "" if folder == self.root else self._relative(folder)
        rows = self._env.snapshot().tables["files"].rows.values()
        names = [str(row["path"]) for row in rows]
        return [n for n in names if not prefix or n == prefix or n.startswith(prefix + "/")]

    def read(self, path: str) -> str:
        self._allow("read", write=False)
        target = self.resolve(path, must_exist=True)
        if target.is_dir():
            raise ToolError(f"{path!r} is a folder: list it with list_files")
        if not target.is_file():  # a FIFO would block the harness, a device never end
            raise ToolError(f"{path!r} is not a regular file")
        if target.stat().st_size > MAX_READ_BYTES:
            raise ToolError(f"{path!r} is larger than {MAX_READ_BYTES} bytes")
        return target.read_bytes().decode("utf-8", "replace")

    def write(self, path: str, content: str) -> int:
        self._allow("write", write=True)
        target = self.resolve(path)
        if target == self.root or target.is_dir():
            raise ToolError(f"{path!r} is a folder")
        data = content.encode("utf-8")
        try:
            target.parent.mkdir(parents=True, exist_ok=True)
        except (FileExistsError, NotADirectoryError) as exc:  # the agent's path, not a crash
            raise ToolError(f"{path!r}: a file stands where a folder is needed") from exc
        self.resolve(path)  # the folders just made cannot be links, but check again
        if target.is_symlink() or (target.exists() and not target.is_file()):
            target.unlink()  # write the file, not through a link or into a FIFO (it blocks)
        target.write_bytes(data)
        return len(data)

    def remove(self, path: str) -> None:
        """Delete one file (the tools delete through ``apply_patch`` or ``run_command``)."""
        self._allow("remove", write=True)
        target = self.resolve(path, must_exist=True)
        if target.is_dir() and not target.is_symlink():
            raise ToolError(f"{path!r} is a folder")
        target.unlink()

    def restore(self, row: Row, content: bytes) -> None:
        """Put one file back as *row* records it (the harness undoing a failed call):
        *content* is its bytes, or a link's target. Whatever took its place goes, a folder
        too (a failed call that made one there crashed the undo, an environment failure the
        agent could cause), and a link comes back as a link (it was left removed: a failed
        call that changed a fixture's link changed the state)."""
        target = self.root / str(row["path"])
        # What took a folder's place on its path goes too: a FIFO or a file the state leaves
        # out (an undo that crashed on it was an environment failure the agent caused), or
        # a link (the folders would be made wherever it leads).
        folder = self.root
        for part in Path(str(row["path"])).parts[:-1]:
            folder = folder / part
            if folder.is_symlink() or (folder.exists() and not folder.is_dir()):
                folder.unlink()
        target.parent.mkdir(parents=True, exist_ok=True)
        if target.is_dir() and not target.is_symlink():
            shutil.rmtree(target)
        elif target.is_symlink() or target.exists():
            target.unlink()
        if row["mode"] == "120000":
            os.symlink(content, target)
            return
        target.write_bytes(content)
        target.chmod(0o755 if row["mode"] == "100755" else 0o644)

    def search(self, pattern: str, path: str = ".") -> tuple[list[str], bool]:
        """``path:line:text`` for each line matching *pattern*; whether more were left out."""
        try:
            regex = re.compile(pattern)
        except re.error as exc:
            raise ToolError(f"not a regular expression: {exc}") from None
        hits: list[str] = []
        for name in self.listing(path):
            target = self.root / name
            if target.is_symlink() or target.stat().st_size > MAX_READ_BYTES:
                continue
            data = target.read_bytes()
            if b"\0" in data:
                continue  # binary
            for number, line in enumerate(data.decode("utf-8", "replace").splitlines(), 1):
                if regex.search(line):
                    if len(hits) == MAX_MATCHES:
                        return hits, True
                    hits.append(f"{name}:{number}:{line[:MAX_LINE]}")
        return hits, False

    def apply_patch(self, patch: str) -> list[str]:
        """Apply a unified diff (``git apply`` semantics) atomically; the paths it touches."""
        self._allow("apply_patch", write=True)
        if not patch.strip():
            raise ToolError("the patch is empty")
        with tempfile.NamedTemporaryFile("w", suffix=".diff", delete=False) as handle:
            handle.write(patch if patch.endswith("\n") else patch + "\n")
        try:
            return self._apply(Path(handle.name))
        finally:
            os.unlink(handle.name)

    def _apply(self, patch: Path) -> list[str]:
        git_dir, index = self._env.git_dir, self._env.index
        try:
            stats = git(git_dir, "apply", "--numstat", "-z", str(patch), work_tree=self.root)
        except GitFailed as exc:
            raise ToolError(f"the patch does not parse: {_git_reason(exc)}") from None
        paths = _numstat_paths(stats)
        for name in paths:
            self.resolve(name)  # no absolute path, '..' or link out of the workspace
        try:
            git(
                git_dir,
                "apply",
                "--whitespace=nowarn",
                str(patch),
                work_tree=self.root,
                index=index,
            )
        except GitFailed as exc:
            reason = _git_reason(exc)
            raise ToolError(f"the patch does not apply (nothing changed): {reason}") from None
        return paths

    # --- commands --------------------------------------------------------------------------

    def run(self, command: str, timeout_s: float) -> dict[str, Any]:
        """Run *command* with ``sh -c`` in the work tree, in the sandbox, to its end."""
        self._allow("run_command", write=False)
        if "\0" in command:
            raise ToolError("a command cannot hold a NUL character")
        options = self._env.options
        limit = min(max(timeout_s, 0.1), options.command_timeout_s)
        deadline = self._env.deadline
        if deadline is not None:
            left = deadline - CLOCK()
            if left <= 0:
                raise TimeLimitReached("the attempt's time limit has passed")
            limit = min(limit, left)
        try:
            result = run_sandboxed(
                ["/bin/sh", "-c", command],
                options.policy(),
                cwd=self.root,
                timeout_s=limit,
                writable=[self.root] if self._env.access == "write" else [],
                visible=[] if self._env.access == "write" else [self.root],
                hidden=self._env.hidden_paths,
                env=command_environment(),
            )
        finally:
            owner_access(self.root)
        return result.to_json()


def owner_access(root: Path) -> None:
    """Give the owner back read and write access (and search on folders) a command took away
    with ``chmod``: otherwise the harness, not running as root, could not read the state,
    undo the call or remove the tree. The state keeps only the executable bit, which stays."""
    _add_mode(root, 0o700)  # `chmod 000 .` would hide the whole tree from the walk below
    for folder, dirs, files in os.walk(root):
        for name in dirs:  # before os.walk descends into it
            _add_mode(Path(folder) / name, 0o700)
        for name in files:
            _add_mode(Path(folder) / name, 0o600)


def _add_mode(path: Path, bits: int) -> None:
    mode = path.lstat().st_mode
    if not stat.S_ISLNK(mode) and mode & bits != bits:
        path.chmod(stat.S_IMODE(mode) | bits)


def command_environment() -> dict[str, str]:
    """What a workspace command's environment holds: no secrets of the harness, and no
    ``.pyc`` files written into the work tree."""
    python_bin = str(Path(sys.executable).parent)
    return {
        "PATH": os.pathsep.join([python_bin, "/usr/local/bin", "/usr/bin", "/bin"]),
        "LANG": "C.UTF-8",
        "HOME": "/tmp",
        "TMPDIR": "/tmp",
        "PYTHONDONTWRITEBYTECODE": "1",
    }


def _numstat_paths(stats: str) -> list[str]:
    """Paths named by ``git apply --numstat -z`` (a rename names both)."""
    paths: list[str] = []
    fields = stats.split("\0")
    i = 0
    while i < len(fields):
        entry = fields[i]
        if not entry:
            i += 1
            continue
        name = entry.split("\t", 2)[2] if entry.count("\t") >= 2 else ""
        if name:
            paths.append(name)
            i += 1
        else:  # a rename: the old and new names follow as fields of their own
            paths += [p for p in fields[i + 1 : i + 3] if p]
            i += 3
    return list(dict.fromkeys(paths))


def _git_reason(exc: GitFailed) -> str:
    lines = [line for line in exc.stderr.strip().splitlines() if line.strip()]
    return "; ".join(lines[-3:])[-600:] or "git refused it"


def _handle(ctx: ToolContext) -> WorkspaceHandle:
    handle = ctx.env.agent_db
    if not isinstance(handle, WorkspaceHandle):
        raise ToolError("this tool needs a workspace environment (environment: workspace)")
    return handle


@tool
def list_files(ctx: ToolContext, path: str = ".") -> dict[str, Any]:
    """List the files of the repository under a folder (relative to its root; "." for all)."""
    names = _handle(ctx).listing(path)
    return {"path": path, "files": names[:MAX_LISTED], "truncated": len(names) > MAX_LISTED}


@tool
def read_file(ctx: ToolContext, path: str) -> dict[str, Any]:
    """Read one text file of the repository (path relative to its root)."""
    return {"path": path, "content": _handle(ctx).read(path)}


@tool
def write_file(ctx: ToolContext, path: str, content: str) -> dict[str, Any]:
    """Create or overwrite one file of the repository with the given text."""
    return {"path": path, "bytes": _handle(ctx).write(path, content)}


@tool
def search(ctx: ToolContext, pattern: str, path: str = ".") -> dict[str, Any]:
    """Search file contents for a regular expression (Python syntax); each match is returned
    as "path:line:text". At most 200 matches are returned."""
    matches, truncated = _handle(ctx).search(pattern, path)
    return {"matches": matches, "truncated": truncated}


@tool
def apply_patch(ctx: ToolContext, patch: str) -> dict[str, Any]:
    """Apply a unified diff to the repository, as `git apply` does (paths like a/src/x.py and
    b/src/x.py). A patch that does not apply changes nothing and returns an error."""
    return {"applied": True, "files": _handle(ctx).apply_patch(patch)}


@tool
def run_command(ctx: ToolContext, command: str, timeout_s: float = 30) -> dict[str, Any]:
    """Run a shell command in the repository's root, in a sandbox without network access:
    e.g. "python -m unittest". Returns the exit code and the end of stdout and stderr."""
    return _handle(ctx).run(command, timeout_s)


TOOLS: dict[str, Tool] = {
    t.name: t for t in (list_files, read_file, write_file, search, apply_patch, run_command)
}
"""The built-in workspace tools by name (``tools: builtin:workspace``)."""
