"""Load an agent from a system file's ``harness.orchestration_loop`` entry."""

from __future__ import annotations

import importlib
from typing import Any

from groundstate.agents.base import Agent
from groundstate.errors import SpecError
from groundstate.spec.system import SystemSpec, resolve_entry
from groundstate.tools import load_module


def load_agent(system: SystemSpec) -> Agent:
    """Call the entry's factory with its params; the result must have ``async run(session)``."""
    loop = system.harness.orchestration_loop
    field = "harness.orchestration_loop.entry"
    code_file, module_name, name = resolve_entry(loop.entry, system.base_dir)
    module: Any = load_module(code_file, "agent") if code_file else _import(module_name, field)
    factory = getattr(module, name, None)
    if not callable(factory):
        raise SpecError(system.base_dir, field, f"{loop.entry!r} names no callable")
    try:
        agent = factory(**loop.params)
    except TypeError as exc:
        raise SpecError(system.base_dir, "harness.orchestration_loop.params", str(exc)) from None
    if not callable(getattr(agent, "run", None)):
        raise SpecError(system.base_dir, field, f"{loop.entry!r} returned an object without run()")
    return agent  # type: ignore[no-any-return]


def _import(module_name: str, field: str) -> Any:
    try:
        return importlib.import_module(module_name)
    except ImportError as exc:
        raise SpecError(module_name, field, f"cannot import: {exc}") from None
