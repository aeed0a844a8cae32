"""A suite's or system's Python file and the sibling modules it imports.

An agent file, ``tools.py`` or ``checks.py`` may import a module beside it (``import helpers``,
``from prompts import SYSTEM``). Such a file is imported with its folder first on ``sys.path``
(:func:`siblings_importable`), and the siblings it loaded are then taken out of
``sys.modules``, so another folder's ``helpers.py`` is never mistaken for this one. Import
siblings at the top of the file: a function that imports one when it is called runs after the
folder has left ``sys.path``. A sibling named like a standard-library module (or
``groundstate``) is not imported from the folder: it would shadow the real one.

What a file imports from its folder is part of its code: :func:`hash_code` hashes the file
with every sibling module it imports, directly or through another sibling.
"""

from __future__ import annotations

import ast
import importlib.abc
import importlib.machinery
import sys
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from functools import lru_cache
from pathlib import Path
from types import ModuleType
from typing import Any

from groundstate.spec.canonical import hash_file, hash_value
from groundstate.switches import HARNESS_ENTRIES


def sibling_modules(folder: Path) -> dict[str, Path]:
    """The modules a file in *folder* can import from it, by name: ``x.py`` files and
    ``x/__init__.py`` packages, standard-library names left out."""
    found: dict[str, Path] = {}
    for path in sorted(folder.iterdir()) if folder.is_dir() else []:
        if path.suffix == ".py" and path.stem.isidentifier():
            found[path.stem] = path
        elif path.is_dir() and (path / "__init__.py").is_file() and path.name.isidentifier():
            found[path.name] = path / "__init__.py"
    return {n: p for n, p in found.items() if n not in _NEVER_SIBLINGS}


_NEVER_SIBLINGS = sys.stdlib_module_names | {"groundstate", "groundstate_user"}
"""Names a folder's module may not take over while it is imported: the standard library's and
ours (the file being imported needs the real ones)."""


def imported_siblings(path: Path) -> list[Path]:
    """The sibling module files *path* imports, directly or through one another, sorted."""
    siblings = sibling_modules(path.parent)
    seen: set[Path] = set()
    pending = [path]
    while pending:
        for name in imported_names(pending.pop()):
            found = siblings.get(name)
            if found is not None and found != path and found not in seen:
                seen.add(found)
                pending.append(found)
    return sorted(seen)


_MISMATCH = "AST constructor recursion depth mismatch"
_PARSE_TRIES = 5


def parse_python(source: str) -> ast.Module:
    """``ast.parse``, immune to a CPython 3.11 race (python/cpython#106905): the AST builder's
    recursion counter is shared by every thread, so another thread's ``ast.parse`` (the
    standard ``traceback`` module's, formatting a crash while an attempt runs) can make a
    sound parse fail with a ``SystemError``. That error says nothing about *source*: parse
    again."""
    for _ in range(_PARSE_TRIES - 1):
        try:
            return ast.parse(source)
        except SystemError as exc:
            if _MISMATCH not in str(exc):
                raise
    return ast.parse(source)


def imported_names(path: Path) -> frozenset[str]:
    """Top-level names in the file's ``import`` statements (a file that does not parse: none;
    importing it will say why)."""
    try:
        return _names_imported_by(path.read_text(encoding="utf-8"))
    except (OSError, SyntaxError, UnicodeDecodeError, ValueError):
        return frozenset()


@lru_cache(maxsize=256)
def _names_imported_by(source: str) -> frozenset[str]:
    """Keyed by the text: a suite's checks share a few files, each parsed once per process
    (a retail load parsed the same files 34 times, 40% of its time)."""
    tree = parse_python(source)
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names |= {alias.name.partition(".")[0] for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names.add(node.module.partition(".")[0])
    return frozenset(names)


def code_files(path: Path) -> list[Path]:
    """*path* and the files of the siblings it imports (a package: every module in it)."""
    files = [path]
    for sibling in imported_siblings(path):
        if sibling.name == "__init__.py":
            files += sorted(p for p in sibling.parent.rglob("*.py") if "__pycache__" not in p.parts)
        else:
            files.append(sibling)
    return files


def hash_code(path: Path) -> str:
    """The file's sha256 when it imports no sibling (as before siblings were supported);
    otherwise the hash of the file's and each imported sibling's sha256, by relative name."""
    files = code_files(path)
    if len(files) == 1:
        return hash_file(path)
    return hash_value({str(f.relative_to(path.parent)): hash_file(f) for f in files})


@contextmanager
def siblings_importable(folder: Path) -> Iterator[None]:
    """While a file of *folder* is imported: its siblings, and not another folder's modules
    of the same names, answer its imports; afterwards ``sys.modules`` is as it was.

    ``sys.modules`` is copied (in one step, under the GIL) before it is searched: another
    thread importing meanwhile (an agent still running past its attempt) changed its size
    during the search, and the file failed to load ("dictionary changed size")."""
    names = set(sibling_modules(folder))
    hidden = {n: m for n, m in sys.modules.copy().items() if n.partition(".")[0] in names}
    for name in hidden:
        sys.modules.pop(name, None)
    entry = str(folder)
    finder = _FromSource(entry, frozenset(names))
    HARNESS_ENTRIES.extend((entry, finder))  # kept by a put back meanwhile (groundstate.switches)
    sys.path.insert(0, entry)
    sys.meta_path.insert(0, finder)
    try:
        yield
    finally:
        if finder in sys.meta_path:
            sys.meta_path.remove(finder)
        if entry in sys.path:
            sys.path.remove(entry)
        for mine in (entry, finder):
            HARNESS_ENTRIES.remove(mine)
        for name in [n for n in sys.modules.copy() if n.partition(".")[0] in names]:
            sys.modules.pop(name, None)
        sys.modules.update(hidden)


class SourceOnly(importlib.machinery.SourceFileLoader):
    """Compiles a file's source at each import, never a cached ``.pyc``: Python trusts one
    whose source has the same size and modification time (to the second), so a file edited
    within a second to the same size, or copied in with its time kept, ran the code before
    (under the new version's hash, which :func:`hash_code` takes of the sources). Nor is a
    ``.pyc`` written beside the suite."""

    def get_code(self, fullname: str) -> Any:
        return self.source_to_code(self.get_data(self.path), self.path)


class _FromSource(importlib.abc.MetaPathFinder):
    """The sibling modules of a folder (and their submodules), found as ``sys.path`` finds
    them and loaded by :class:`SourceOnly`, while :func:`siblings_importable` holds."""

    def __init__(self, folder: str, names: frozenset[str]) -> None:
        self.folder, self.names = folder, names

    def find_spec(
        self, fullname: str, path: Sequence[str] | None, target: ModuleType | None = None
    ) -> importlib.machinery.ModuleSpec | None:
        if fullname.partition(".")[0] not in self.names:
            return None
        where = [self.folder] if path is None else list(path)
        spec = importlib.machinery.PathFinder.find_spec(fullname, where, target)
        if spec is not None and type(spec.loader) is importlib.machinery.SourceFileLoader:
            spec.loader = SourceOnly(fullname, str(spec.origin))
        return spec


_UNSEEN_BINDINGS = frozenset(
    {"globals", "vars", "locals", "exec", "eval", "setattr", "__import__", "__dict__", "modules"}
)
"""Names (and attributes: ``sys.modules``, ``__dict__``) through which a module can bind a name
its text does not show: where one is used, no name is said to be missing."""


def top_level_names(tree: ast.Module) -> frozenset[str] | None:
    """The names a module binds at its top level, read from its text without running it (an
    agent entry naming none of them is refused before anything runs); ``None`` when it may
    bind others unseen (``from x import *``, a module ``__getattr__``, ``globals()``,
    ``setattr``, ``sys.modules``). Names bound in an ``if``, ``try``, ``with`` or loop count,
    whichever branch runs: a name missing here is missing however the module runs."""
    names: set[str] = set()
    pending: list[ast.AST] = list(tree.body)
    while pending:  # the module's own statements, not the bodies of its functions or classes
        node = pending.pop()
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
            continue
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            if any(alias.name == "*" for alias in node.names):
                return None
            names |= {alias.asname or alias.name.partition(".")[0] for alias in node.names}
        elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            names.add(node.id)
        elif isinstance(node, (ast.ExceptHandler, ast.MatchAs, ast.MatchStar)) and node.name:
            names.add(node.name)
        elif isinstance(node, ast.MatchMapping) and node.rest:
            names.add(node.rest)
        if not isinstance(node, ast.Lambda):
            pending.extend(ast.iter_child_nodes(node))
    for part in ast.walk(tree):
        if isinstance(part, ast.Global):
            names |= set(part.names)
        elif (isinstance(part, ast.Name) and part.id in _UNSEEN_BINDINGS) or (
            isinstance(part, ast.Attribute) and part.attr in _UNSEEN_BINDINGS
        ):
            return None
    return None if "__getattr__" in names else frozenset(names)
