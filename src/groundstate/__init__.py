"""groundstate: evaluate tool-using agents by the state they leave behind.

The public API is small; everything else lives in modules named by concern. Names are imported
on first use (PEP 562), so that ``groundstate --help`` does not pay for numpy, pydantic and the
rest.
"""

__version__ = "0.1.0"

from importlib import import_module as _import_module
from typing import TYPE_CHECKING as _TYPE_CHECKING

if _TYPE_CHECKING:
    from groundstate.agents.base import Agent, Session, ToolResult, ToolSpec
    from groundstate.environments.base import Environment
    from groundstate.environments.sqlite import SqliteEnvironment
    from groundstate.errors import GroundstateError, HarnessCompatibilityError, SpecError, ToolError
    from groundstate.records import AgentRun
    from groundstate.runner import BatchConfig, BatchResult, BatchRunner, run_batch
    from groundstate.spec.suite import Suite, load_suite
    from groundstate.spec.system import SystemSpec, load_system
    from groundstate.spec.task import AgentTask
    from groundstate.stats import pass_at_k, pass_hat_k
    from groundstate.store import RunStore
    from groundstate.tools import ToolContext, tool

_MODULES = {
    "Agent": "groundstate.agents.base",
    "AgentRun": "groundstate.records",
    "AgentTask": "groundstate.spec.task",
    "BatchConfig": "groundstate.runner",
    "BatchResult": "groundstate.runner",
    "BatchRunner": "groundstate.runner",
    "Environment": "groundstate.environments.base",
    "GroundstateError": "groundstate.errors",
    "HarnessCompatibilityError": "groundstate.errors",
    "RunStore": "groundstate.store",
    "Session": "groundstate.agents.base",
    "SpecError": "groundstate.errors",
    "SqliteEnvironment": "groundstate.environments.sqlite",
    "Suite": "groundstate.spec.suite",
    "SystemSpec": "groundstate.spec.system",
    "ToolContext": "groundstate.tools",
    "ToolError": "groundstate.errors",
    "ToolResult": "groundstate.agents.base",
    "ToolSpec": "groundstate.agents.base",
    "load_suite": "groundstate.spec.suite",
    "load_system": "groundstate.spec.system",
    "pass_at_k": "groundstate.stats",
    "pass_hat_k": "groundstate.stats",
    "run_batch": "groundstate.runner",
    "tool": "groundstate.tools",
}
"""Where each public name lives."""


def __getattr__(name: str) -> object:
    module = _MODULES.get(name)
    if module is None:
        raise AttributeError(f"module 'groundstate' has no attribute {name!r}")
    value = getattr(_import_module(module), name)
    globals()[name] = value  # later lookups skip this function
    return value


def __dir__() -> list[str]:
    return sorted([*globals(), *_MODULES])


__all__ = [
    "Agent",
    "AgentRun",
    "AgentTask",
    "BatchConfig",
    "BatchResult",
    "BatchRunner",
    "Environment",
    "GroundstateError",
    "HarnessCompatibilityError",
    "RunStore",
    "Session",
    "SpecError",
    "SqliteEnvironment",
    "Suite",
    "SystemSpec",
    "ToolContext",
    "ToolError",
    "ToolResult",
    "ToolSpec",
    "load_suite",
    "load_system",
    "pass_at_k",
    "pass_hat_k",
    "run_batch",
    "tool",
]
