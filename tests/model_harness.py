"""What the model adapters' tests share: the two example providers, a harness pointing one at
a loopback server, and the fixtures ``retail``, ``openai_harness`` and ``anthropic_harness``
(made available to every test module by ``conftest.py``)."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import pytest

from groundstate.agents.python import load_agent
from groundstate.episode import AttemptOutput
from groundstate.records import AgentRun
from groundstate.spec.suite import Suite, load_suite
from groundstate.spec.system import SystemSpec, load_system
from groundstate.testing import (
    AnthropicCompatibleServer,
    OpenAICompatibleServer,
    ScriptedModelServer,
    attempt,
)

EXAMPLES = Path(__file__).parent.parent / "examples"
RETAIL = EXAMPLES / "retail"
SYSTEMS = EXAMPLES / "systems"
TASK = "refund-socks"
KEYS = {"OPENAI_API_KEY": "sk-test-secret-123", "ANTHROPIC_API_KEY": "sk-ant-test-secret-456"}


@dataclasses.dataclass(frozen=True)
class Provider:
    name: str
    system_file: Path
    server: type[ScriptedModelServer]
    base_url_env: str
    key_env: str


PROVIDERS = [
    Provider(
        "openai",
        SYSTEMS / "openai-compatible.yaml",
        OpenAICompatibleServer,
        "GROUNDSTATE_OPENAI_BASE_URL",
        "OPENAI_API_KEY",
    ),
    Provider(
        "anthropic",
        SYSTEMS / "anthropic.yaml",
        AnthropicCompatibleServer,
        "GROUNDSTATE_ANTHROPIC_BASE_URL",
        "ANTHROPIC_API_KEY",
    ),
]


@dataclasses.dataclass
class Harness:
    """One provider's example system, pointed at a loopback server."""

    provider: Provider
    monkeypatch: pytest.MonkeyPatch
    suite: Suite

    def system(self, server: ScriptedModelServer, **model: Any) -> SystemSpec:
        self.monkeypatch.setenv(self.provider.base_url_env, server.base_url)
        system = load_system(self.provider.system_file)
        fast = {"retries": {"max_retries": 2, "backoff": 0.01, "max_backoff": 0.05}}
        return with_model(system, **(fast | model))

    def run(self, script: Any, *, server_out: list[Any] | None = None, **model: Any) -> AgentRun:
        return self.output(script, server_out=server_out, **model).run

    def output(
        self, script: Any, *, server_out: list[Any] | None = None, **model: Any
    ) -> AttemptOutput:
        with self.provider.server(script) as server:
            system = self.system(server, **model)
            output = attempt(self.suite, TASK, load_agent(system), system=system)
        if server_out is not None:
            server_out.append(server)
        return output


def with_model(system: SystemSpec, **changes: Any) -> SystemSpec:
    """The system with model settings changed, validated as a system file would be."""
    data = system.model_dump(mode="json")
    data["model"] = data["model"] | changes
    changed = SystemSpec.model_validate(data)
    changed._base_dir = system.base_dir
    return changed


def _harness(provider: Provider, monkeypatch: pytest.MonkeyPatch, retail: Suite) -> Harness:
    for name, value in KEYS.items():
        monkeypatch.setenv(name, value)
    return Harness(provider, monkeypatch, retail)


def _one(name: str) -> Provider:
    (provider,) = [p for p in PROVIDERS if p.name == name]
    return provider


@pytest.fixture(scope="module")
def retail() -> Suite:
    return load_suite(RETAIL)


@pytest.fixture
def openai_harness(monkeypatch: pytest.MonkeyPatch, retail: Suite) -> Harness:
    """Raw Chat Completions bodies: the OpenAI-compatible provider only."""
    return _harness(_one("openai"), monkeypatch, retail)


@pytest.fixture
def anthropic_harness(monkeypatch: pytest.MonkeyPatch, retail: Suite) -> Harness:
    """Raw Messages bodies: the Anthropic-compatible provider only."""
    return _harness(_one("anthropic"), monkeypatch, retail)
