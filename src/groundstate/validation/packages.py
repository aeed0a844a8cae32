"""The versions of the third-party distributions a suite's Python code imports.

A check that calls ``dateutil`` or ``numpy``, a tool built on ``requests``, an environment
kind built on ``psycopg``: another version of one may give another verdict on unchanged task
files, so a cached validity must not outlive it. The imports are read from the files' text
(every ``import`` statement, also one inside a function), with the sibling modules they import;
each top-level name maps to the distributions that provide it, and each distribution brings
the ones it requires, transitively. A name no distribution provides is kept as ``None``, so
installing it later changes the key too. An ``importlib.import_module("x")`` with a name
computed at run time is not seen.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Iterable
from functools import cache
from importlib import metadata
from pathlib import Path

from groundstate.spec.code import code_files, imported_names, sibling_modules

_OURS = frozenset({"groundstate", "groundstate_user", "__future__"})
"""Names whose code the key holds otherwise (groundstate's own files are hashed)."""
_REQUIREMENT_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*")
_EXTRA = re.compile(r"\bextra\s*==")


def distribution_versions(files: Iterable[Path]) -> dict[str, str | None]:
    """``name -> version`` of every distribution the Python *files* (and the sibling modules
    they import) import, and of every distribution those require; ``name -> None`` for a
    top-level module name no installed distribution provides."""
    found: dict[str, str | None] = {}
    for name in sorted(_third_party_names(files)):
        providers = _providers(name)
        if not providers:
            found[f"module:{name}"] = None
        for distribution in providers or ():
            found.update(with_requirements(distribution))
    return dict(sorted(found.items()))


def _third_party_names(files: Iterable[Path]) -> set[str]:
    names: set[str] = set()
    for path in files:
        for file in code_files(path):
            names |= imported_names(file) - set(sibling_modules(file.parent))
    return {n for n in names if n not in sys.stdlib_module_names and n not in _OURS}


@cache
def _providers(name: str) -> list[str]:
    """The distributions providing the top-level module *name*: the one named like it (most
    are: ``pydantic``, ``numpy``), else those the installed distributions' files say
    (``yaml`` is PyYAML's), a scan made at most once per process."""
    try:
        metadata.distribution(name)
    except metadata.PackageNotFoundError:
        return sorted(set(_every_provider().get(name, [])))
    return [name]


@cache
def _every_provider() -> dict[str, list[str]]:
    return dict(metadata.packages_distributions())


@cache
def with_requirements(distribution: str) -> dict[str, str | None]:
    """*distribution*'s version and those of what it requires, transitively (extras left out:
    they are installed only on request)."""
    found: dict[str, str | None] = {}
    pending = [distribution]
    while pending:
        name = _normalised(pending.pop())
        if name in found:
            continue
        try:
            found[name] = metadata.version(name)
            requires = metadata.requires(name) or []
        except metadata.PackageNotFoundError:
            found[name] = None
            continue
        for requirement in requires:
            match = _REQUIREMENT_NAME.match(requirement)
            if match and not _EXTRA.search(requirement):
                pending.append(match.group())
    return found


def _normalised(name: str) -> str:
    """A distribution name as PEP 503 compares them (``Typing_Extensions`` is
    ``typing-extensions``)."""
    return re.sub(r"[-_.]+", "-", name).lower()
