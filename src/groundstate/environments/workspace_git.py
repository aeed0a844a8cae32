"""Git plumbing for repository workspaces: the base commit, checkouts, listings and diffs.

A workspace's git directory lives *outside* the work tree the agent sees, so nothing the agent
runs can move the base commit or rewrite history: the diff graded is always against the
fixture's own base. Git runs with no user or system configuration and fixed identities and
dates, so the same fixture gives the same commit on every machine.
"""

from __future__ import annotations

import os
import shutil
import stat
import subprocess
import threading
from collections.abc import Sequence
from pathlib import Path

from groundstate.errors import EnvironmentFailure
from groundstate.spec.canonical import hash_value, sha256_bytes
from groundstate.workdirs import process_dir

BASE_REF = "refs/heads/base"
DEFAULT_EXCLUDES = ("__pycache__/", "*.pyc", ".pytest_cache/", ".mypy_cache/", ".ruff_cache/")
"""Never part of a workspace's state or diff (caches a test run leaves behind)."""
_FIXED_DATE = "2000-01-01T00:00:00Z"
_GIT_ENV = {
    "GIT_CONFIG_NOSYSTEM": "1",
    "GIT_CONFIG_GLOBAL": os.devnull,
    "GIT_AUTHOR_NAME": "groundstate",
    "GIT_AUTHOR_EMAIL": "groundstate@localhost",
    "GIT_COMMITTER_NAME": "groundstate",
    "GIT_COMMITTER_EMAIL": "groundstate@localhost",
    "GIT_AUTHOR_DATE": _FIXED_DATE,
    "GIT_COMMITTER_DATE": _FIXED_DATE,
    "GIT_TERMINAL_PROMPT": "0",
}
_BASES: dict[str, Path] = {}
_BUILDING = threading.Lock()


class GitFailed(Exception):
    """A git command exited non-zero; ``stderr`` says why."""

    def __init__(self, args: list[str], stderr: str) -> None:
        super().__init__(f"git {' '.join(args[:2])}: {stderr.strip()[-500:]}")
        self.stderr = stderr


def git(
    git_dir: Path,
    *args: str,
    work_tree: Path | None = None,
    index: Path | None = None,
    input_text: str | None = None,
) -> str:
    """Run ``git`` on *git_dir* (and *work_tree*, with *input_text* on its stdin); its stdout.
    Raises :class:`GitFailed`."""
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), **_GIT_ENV, "GIT_DIR": str(git_dir)}
    if work_tree is not None:
        env["GIT_WORK_TREE"] = str(work_tree)
    if index is not None:
        env["GIT_INDEX_FILE"] = str(index)
    cwd = work_tree or git_dir
    try:
        done = subprocess.run(
            ["git", "-c", "core.autocrlf=false", "-c", "core.symlinks=true", *args],
            cwd=cwd,
            env=env,
            input=None if input_text is None else _bytes(input_text),
            capture_output=True,
        )
    except OSError as exc:
        raise EnvironmentFailure(f"workspace: cannot run git ({exc}); install git") from exc
    if done.returncode != 0:
        raise GitFailed(list(args), _text(done.stderr))
    return _text(done.stdout)


def _text(output: bytes) -> str:
    """Git's output as text, every byte kept: ``text=True`` reads it with universal newlines,
    which turned a diff's CRLF into LF and a lone CR into a line break (the hidden tests'
    checkout then held other bytes than the state, or the patch did not apply)."""
    return output.decode("utf-8", "surrogateescape")


def _bytes(text: str) -> bytes:
    return text.encode("utf-8", "surrogateescape")


def base_repository(fixture: Path) -> tuple[Path, str]:
    """The bare repository holding *fixture*'s base commit, and that commit; built once per
    process and fixture content.

    A folder with its own ``.git`` is taken at its ``HEAD`` commit (uncommitted changes are
    left out); any other folder is committed as it is, in a private repository (the fixture
    itself is never written).
    """
    fixture = fixture.resolve()
    if not fixture.is_dir():
        raise EnvironmentFailure(f"workspace fixture {fixture}: not a folder")
    is_repo = (fixture / ".git").exists()
    key = hash_value([str(fixture), _head(fixture) if is_repo else folder_digest(fixture)])
    with _BUILDING:
        if key not in _BASES:
            target = process_dir() / "workspace-bases" / key[:20]
            shutil.rmtree(target, ignore_errors=True)
            target.parent.mkdir(parents=True, exist_ok=True)
            try:
                _build_base(fixture, target, is_repo)
            except GitFailed as exc:
                raise EnvironmentFailure(f"workspace fixture {fixture}: {exc}") from exc
            _BASES[key] = target
    base = _BASES[key]
    return base, git(base, "rev-parse", BASE_REF).strip()


def _head(repo: Path) -> str:
    try:
        return git(repo / ".git", "rev-parse", "HEAD").strip()
    except GitFailed as exc:
        raise EnvironmentFailure(f"workspace fixture {repo}: no HEAD commit: {exc}") from exc


def _build_base(fixture: Path, target: Path, is_repo: bool) -> None:
    if is_repo:
        subprocess.run(
            ["git", "clone", "--quiet", "--bare", "--no-hardlinks", str(fixture), str(target)],
            env={"PATH": os.environ.get("PATH", "/usr/bin:/bin"), **_GIT_ENV},
            check=True,
            capture_output=True,
        )
        commit = git(target, "rev-parse", "HEAD").strip()
    else:
        target.mkdir()
        git(target, "init", "--quiet", "--bare")
        _write_excludes(target)
        index = target / "base-index"
        git(target, "add", "--all", ".", work_tree=fixture, index=index)
        tree = git(target, "write-tree", index=index).strip()
        commit = git(target, "commit-tree", tree, "-m", "base").strip()
        index.unlink()
    _write_excludes(target)
    git(target, "update-ref", BASE_REF, commit)


_CONVERSIONS = "* -text -eol -crlf -ident -filter -working-tree-encoding\n"
"""Unsets every attribute that makes ``git add`` store other bytes than the file's."""


def pin_attributes(git_dir: Path, commit: str) -> None:
    """Make the base commit's root ``.gitattributes`` the only conversion rules of *git_dir*
    (its ``info/attributes``, which outranks every ``.gitattributes`` of a work tree): a
    ``.gitattributes`` a command writes (``*.txt text eol=lf``) must not change the bytes
    the diff stages, so that the diff and the hidden tests' checkout hold the state's."""
    try:
        rules = git(git_dir, "show", f"{commit}:.gitattributes")
    except GitFailed:  # the fixture has none
        rules = ""
    (git_dir / "info").mkdir(exist_ok=True)
    (git_dir / "info" / "attributes").write_text(_CONVERSIONS + rules, errors="surrogateescape")


def _write_excludes(git_dir: Path) -> None:
    (git_dir / "info").mkdir(exist_ok=True)
    (git_dir / "info" / "exclude").write_text("\n".join(DEFAULT_EXCLUDES) + "\n")


def folder_digest(folder: Path) -> str:
    """A hash of a folder's files (paths, content, modes, links), ``.git`` and caches left
    out: what decides the base commit of a plain-folder fixture."""
    entries = []
    for root, dirs, files in os.walk(folder):
        dirs[:] = sorted(d for d in dirs if d not in {".git", "__pycache__"})
        for name in sorted(files):
            path = Path(root) / name
            if name.endswith(".pyc"):
                continue
            entries.append([str(path.relative_to(folder)), *file_record(path).values()])
    return hash_value(entries)


def file_record(path: Path) -> dict[str, str | int]:
    """A file as state: the sha256 of its bytes (a link's: its target), size and git mode."""
    info = path.lstat()
    if stat.S_ISLNK(info.st_mode):
        target = os.readlink(path).encode("utf-8", "surrogateescape")
        return {"sha256": sha256_bytes(target), "size": len(target), "mode": "120000"}
    data = path.read_bytes()
    mode = "100755" if info.st_mode & stat.S_IXUSR else "100644"
    return {"sha256": sha256_bytes(data), "size": len(data), "mode": mode}


def checkout(git_dir: Path, commit: str, work_tree: Path, index: Path) -> None:
    """Make *work_tree* (empty or not) hold exactly *commit*'s files."""
    work_tree.mkdir(parents=True, exist_ok=True)
    git(git_dir, "read-tree", commit, index=index)
    git(git_dir, "checkout-index", "--all", "--force", work_tree=work_tree, index=index)


def tracked_paths(git_dir: Path, commit: str) -> frozenset[str]:
    """Every file path of *commit*."""
    out = git(git_dir, "ls-tree", "-r", "-z", "--name-only", commit)
    return frozenset(name for name in out.split("\0") if name)


def listed_files(
    git_dir: Path, work_tree: Path, tracked: frozenset[str], rules: Path | None = None
) -> list[str]:
    """The work tree's files as git sees them: the base's own, and new ones git would not
    ignore. Walked in Python; git is asked only about new files (rarely: a call per listing
    that finds some), which keeps a listing, and so every tool call's snapshot, cheap.

    *rules* is the folder whose ``.gitignore`` files decide what is ignored (the base
    commit's checkout): an agent that writes ``*`` into a ``.gitignore`` must not hide its
    new files, the ``.gitignore`` among them, from the state hash and the diff."""
    found: list[str] = []
    for folder, dirs, files in os.walk(work_tree):
        here = Path(folder)
        links = [d for d in dirs if (here / d).is_symlink()]  # a link to a folder is a file
        dirs[:] = sorted(d for d in dirs if not git_name(d) and d not in links)
        for name in [*files, *links]:
            if git_name(name):
                continue  # git can hold no such path: not state, never in a diff
            found.append((here / name).relative_to(work_tree).as_posix())
    new = [name for name in found if name not in tracked and not _cache_file(name)]
    ignored = _ignored(git_dir, rules or work_tree, new) if new else set()
    return sorted(
        name for name in found if name in tracked or (name in new and name not in ignored)
    )


def git_name(part: str) -> bool:
    """Whether one path component is a name git refuses to track (``.git`` in any case, with
    trailing dots or spaces, or its short name ``git~1``): adding one would fail the diff."""
    lower = part.lower()
    return lower.rstrip(". ") == ".git" or lower == "git~1"


def _cache_file(name: str) -> bool:
    parts = name.split("/")
    return name.endswith(".pyc") or any(
        part in {"__pycache__", ".pytest_cache", ".mypy_cache", ".ruff_cache"} for part in parts
    )


def _ignored(git_dir: Path, work_tree: Path, names: list[str]) -> set[str]:
    """The *names* git's ignore rules (the tree's ``.gitignore`` files, the excludes) match."""
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), **_GIT_ENV, "GIT_DIR": str(git_dir)}
    env["GIT_WORK_TREE"] = str(work_tree)
    done = subprocess.run(
        ["git", "check-ignore", "--no-index", "--stdin", "-z"],
        input=_bytes("".join(f"./{name}\0" for name in names)),  # './': ':(glob)x' is no magic
        cwd=work_tree,
        env=env,
        capture_output=True,
    )
    if done.returncode not in (0, 1):  # 1: nothing is ignored
        raise GitFailed(["check-ignore"], _text(done.stderr))
    return {name.removeprefix("./") for name in _text(done.stdout).split("\0") if name}


def diff_against(
    git_dir: Path, commit: str, work_tree: Path, index: Path, files: Sequence[str]
) -> str:
    """The work tree's change from *commit* as a binary-safe unified diff (empty: none).

    *files* are the work tree's files as state counts them (:func:`listed_files`): exactly
    these are staged, into a fresh index, so the diff is the state's change whatever the
    work tree's own ignore rules say, and names git refuses never reach ``git add``."""
    index.unlink(missing_ok=True)
    for start in range(0, len(files), 500):
        chunk = files[start : start + 500]
        git(git_dir, "--literal-pathspecs", "add", "--force", "--", *chunk, work_tree=work_tree,
            index=index)  # fmt: skip
    staged = git(git_dir, "ls-files", "-z", work_tree=work_tree, index=index).split("\0")
    skipped = [p for p in sorted(set(files) - set(staged)) if _file_or_link(work_tree / p)]
    if skipped:
        _stage(git_dir, work_tree, index, skipped)
    return git(git_dir, "diff", "--cached", "--binary", "--full-index", commit, index=index)


def _file_or_link(path: Path) -> bool:
    """Whether *path* is state (a FIFO or a socket is not; reading a FIFO would block)."""
    return path.is_symlink() or path.is_file()


def _stage(git_dir: Path, work_tree: Path, index: Path, paths: list[str]) -> None:
    """Stage *paths* blob by blob: ``git add`` skips, exit status 0, the files of a folder
    holding its own ``.git`` (a nested repository a command made with ``git init``), which
    are state all the same; left out, the diff and the hidden tests' checkout lacked them."""
    entries = []
    for path in paths:
        record = file_record(work_tree / path)
        if record["mode"] == "120000":  # hash the link's target, not the file it leads to
            target = os.readlink(work_tree / path)
            blob = git(git_dir, "hash-object", "-w", "--stdin", input_text=target)
        else:
            blob = git(git_dir, "hash-object", "-w", "--no-filters", "--", path,
                       work_tree=work_tree)  # fmt: skip
        entries.append(f"{record['mode']} {blob.strip()}\t{path}\0")
    git(git_dir, "update-index", "-z", "--add", "--index-info", work_tree=work_tree,
        index=index, input_text="".join(entries))  # fmt: skip


def apply_patch_file(work_tree: Path, patch: Path) -> None:
    """Apply *patch* to a plain folder (no repository), all or nothing."""
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        **_GIT_ENV,
        "GIT_CEILING_DIRECTORIES": str(work_tree.parent),  # never a repository around it
    }
    done = subprocess.run(
        ["git", "apply", "--whitespace=nowarn", "--binary", str(patch)],
        cwd=work_tree,
        env=env,
        capture_output=True,
        text=True,
    )
    if done.returncode != 0:
        raise GitFailed(["apply", str(patch)], done.stderr)
