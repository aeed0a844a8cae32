"""The system under test (`SystemSpec`) and its canonical hash."""

from __future__ import annotations

import importlib.util
import platform
import sqlite3
from importlib import metadata
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, PrivateAttr

from groundstate.errors import SpecError
from groundstate.spec.canonical import hash_file, hash_value
from groundstate.spec.files import load_model

KEY_PACKAGES = ("groundstate", "pydantic", "PyYAML", "jsonschema", "numpy", "click")


class Section(BaseModel):
    # Sections accept extra keys: anything a team declares is versioned with the rest.
    model_config = ConfigDict(extra="allow", frozen=True)


class ModelSection(Section):
    revision: str = "none"
    serving_route: str = "none"
    decoding: dict[str, Any] = Field(default_factory=dict)
    reasoning_budget: int | str | None = None


class AgentEntry(Section):
    entry: str
    """``file.py:factory`` (relative to the system file) or ``package.module:factory``."""
    params: dict[str, Any] = Field(default_factory=dict)


class HarnessSection(Section):
    system_prompt: str = ""
    tool_descriptions: dict[str, str] = Field(default_factory=dict)
    """Overrides of tool descriptions shown to the agent, by tool name."""
    orchestration_loop: AgentEntry
    context_policy: str = "full"


class ToolsSection(Section):
    implementations: str = "suite"
    permissions: str = "task"
    network_policy: str = "none"


class EnvironmentSection(Section):
    version: str = "sqlite"
    initial_data: str = "suite fixtures"
    reset_procedure: str = "rebuild from fixture"


class UserSimulatorSection(Section):
    kind: Literal["scripted"] = "scripted"
    persona: str = "a polite customer who answers only what is asked"
    max_turns: int = Field(default=20, ge=1)
    """The user leaves after this many agent messages."""


class BudgetsSection(Section):
    step_limit: int | None = Field(default=None, ge=1)
    time_limit: float | None = Field(default=None, gt=0)
    max_cost: float | None = Field(default=None, ge=0)
    max_tokens: int | None = Field(default=None, ge=0)
    """Input plus output tokens the agent may report per attempt."""


class InvalidRunPolicy(Section):
    """Predeclared handling of environment and grader failures (invalid attempts)."""

    max_retries: int = Field(default=2, ge=0)
    """Reruns of an invalid attempt; every try is kept."""
    max_invalid_rate: float = Field(default=0.1, ge=0, le=1)
    """A batch whose tries are invalid more often than this is flagged in every report."""


class GraderSection(Section):
    revision: str = "task"


class SystemSpec(BaseModel):
    """Everything that can move a score, as declared in ``system.yaml``."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str = "system"
    model: ModelSection = ModelSection()
    harness: HarnessSection
    tools: ToolsSection = ToolsSection()
    environment: EnvironmentSection = EnvironmentSection()
    user_simulator: UserSimulatorSection = UserSimulatorSection()
    budgets: BudgetsSection = BudgetsSection()
    grader: GraderSection = GraderSection()
    invalid_run_policy: InvalidRunPolicy = InvalidRunPolicy()
    resolved: dict[str, Any] = Field(default_factory=dict)
    """Filled when loaded: hashes of referenced code and the versions in use."""
    _base_dir: Path = PrivateAttr(default=Path("."))

    @property
    def base_dir(self) -> Path:
        """The folder of the system file; relative code references start here."""
        return self._base_dir

    @property
    def system_spec_hash(self) -> str:
        return hash_value(self.model_dump(mode="json"))


def runtime_versions() -> dict[str, str]:
    """The versions actually in use: Python, SQLite and key packages."""
    versions = {"python": platform.python_version(), "sqlite": sqlite3.sqlite_version}
    for name in KEY_PACKAGES:
        try:
            versions[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            versions[name] = "not installed"
    return versions


def resolve_entry(entry: str, base_dir: Path) -> tuple[Path | None, str, str]:
    """Split ``file.py:name`` or ``package.module:name`` into (file or None, module, name)."""
    target, _, name = entry.partition(":")
    if not name:
        raise ValueError(f"expected 'file.py:name' or 'module:name', got {entry!r}")
    if target.endswith(".py"):
        return (base_dir / target).resolve(), target, name
    return None, target, name


def load_system(path: Path) -> SystemSpec:
    """Load ``system.yaml``; record the hash of the agent code and the versions in use."""
    path = Path(path)
    spec = load_model(path, SystemSpec)
    if spec.resolved:
        raise SpecError(path, "resolved", "is filled in by groundstate; remove it")
    try:
        code_file, _, _ = resolve_entry(spec.harness.orchestration_loop.entry, path.parent)
    except ValueError as exc:
        raise SpecError(path, "harness.orchestration_loop.entry", str(exc)) from None
    if code_file is not None and not code_file.is_file():
        raise SpecError(path, "harness.orchestration_loop.entry", f"no file {code_file}")
    try:
        code = {"orchestration_loop": _code_hash(code_file, spec.harness.orchestration_loop.entry)}
    except ImportError as exc:
        raise SpecError(path, "harness.orchestration_loop.entry", f"cannot import: {exc}") from None
    resolved = spec.model_copy(update={"resolved": {"code": code, "versions": runtime_versions()}})
    resolved._base_dir = path.parent
    return resolved


def _code_hash(code_file: Path | None, entry: str) -> str:
    """The hash of the agent's source file (for a module entry, the module's file)."""
    if code_file is None:
        found = importlib.util.find_spec(entry.partition(":")[0])
        if found is None or found.origin is None or not Path(found.origin).is_file():
            return "unknown"
        code_file = Path(found.origin)
    return hash_file(code_file)
