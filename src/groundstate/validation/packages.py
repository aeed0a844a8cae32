"""The versions of the third-party distributions a suite's Python code imports.

A check that calls ``dateutil`` or ``numpy``, a tool built on ``requests``, an environment
kind built on ``psycopg``: another version of one may give another verdict on unchanged task
files, so a cached validity must not outlive it. The imports are read from the files' text
(every ``import`` statement, also one inside a function), with the sibling modules they import;
each top-level name maps to the distributions that provide it, and each distribution brings
the ones it requires, transitively. A name no distribution provides is keyed by its source
(a module on ``sys.path``: the application code a suite's tools wrap), or as ``None`` where
there is none, so installing it later changes the key too; so is a distribution installed
editable (``pip install -e``), whose code changes under one version. An
``importlib.import_module("x")`` with a name computed at run time is not seen.
"""

from __future__ import annotations

import json
import re
import sys
from collections.abc import Iterable
from functools import cache
from importlib import metadata, util
from pathlib import Path

from groundstate.spec.canonical import SettledFileCache, hash_file, hash_value
from groundstate.spec.code import code_files, imported_names, sibling_modules

_OURS = frozenset({"groundstate", "groundstate_user", "__future__"})
"""Names whose code the key holds otherwise (groundstate's own files are hashed)."""
_REQUIREMENT_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*")
_EXTRA = re.compile(r"\bextra\s*==")


def distribution_versions(files: Iterable[Path]) -> dict[str, str | None]:
    """``name -> version`` of every distribution the Python *files* (and the sibling modules
    they import) import, and of every distribution those require; ``module:name -> digest``
    of the source of a top-level module no installed distribution provides (None: there is
    none), and ``source:name -> digest`` of one an editable distribution provides.

    Keyed by name alone, an edit of such code (a tool wrapping the application's own
    ``refund`` function) kept the proof of the code before it."""
    found: dict[str, str | None] = {}
    for name in sorted(_third_party_names(files)):
        providers = _providers(name)
        if not providers:
            found[f"module:{name}"] = source_digest(name)
        for distribution in providers or ():
            found.update(with_requirements(distribution))
            if _editable(distribution):
                found[f"source:{name}"] = source_digest(name)
    return dict(sorted(found.items()))


def source_digest(name: str) -> str | None:
    """The hash of the top-level module *name*'s Python files as the import system finds them
    (a package: every ``.py`` file under it), without importing it; None when it is not
    found."""
    try:
        spec = util.find_spec(name)
    except (ImportError, ValueError):  # a broken finder or a bad __spec__: as not found
        return None
    if spec is None:
        return None
    folders = [Path(folder) for folder in spec.submodule_search_locations or ()]
    if not folders:
        origin = Path(spec.origin) if spec.origin else None
        return _FILE_DIGESTS.get(origin) if origin and origin.is_file() else spec.origin
    return hash_value(
        {
            f"{index}/{file.relative_to(folder).as_posix()}": _FILE_DIGESTS.get(file)
            for index, folder in enumerate(folders)
            for file in sorted(folder.rglob("*.py"))
            if "__pycache__" not in file.parts
        }
    )


_FILE_DIGESTS = SettledFileCache(hash_file)
"""Source digests, read again only when a file's stat changed (every task's key reads them)."""


@cache
def _editable(distribution: str) -> bool:
    """Whether *distribution* was installed editable (its code is a working copy)."""
    try:
        text = metadata.distribution(distribution).read_text("direct_url.json")
        return bool(json.loads(text or "{}").get("dir_info", {}).get("editable"))
    except (metadata.PackageNotFoundError, ValueError, AttributeError):
        return False


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
