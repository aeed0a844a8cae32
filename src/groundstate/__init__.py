"""groundstate: evaluate tool-using agents by the state they leave behind.

The public API is small; everything else lives in modules named by concern.
"""

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
