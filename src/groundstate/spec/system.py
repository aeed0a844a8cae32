"""The system under test (`SystemSpec`) and its canonical hash."""

from __future__ import annotations

import importlib.util
import os
import platform
import sqlite3
import string
from collections.abc import Callable
from importlib import metadata
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    PrivateAttr,
    SerializerFunctionWrapHandler,
    ValidationInfo,
    field_validator,
    model_serializer,
    model_validator,
)

from groundstate.errors import SpecError
from groundstate.rounding import inflected
from groundstate.sandbox import command_digests, command_problem
from groundstate.spec.canonical import hash_file, hash_value
from groundstate.spec.code import hash_code
from groundstate.spec.entry import entry_problem
from groundstate.spec.files import is_file, load_model, no_file
from groundstate.spec.strict import (
    MAX_INTEGER,
    MAX_SECONDS,
    SAMPLING_KEYS,
    Count,
    Decoding,
    Id,
    Number,
    Seconds,
    Steps,
    did_you_mean,
    own_default,
)

Retries = Annotated[Count, Field(ge=0, le=100)]
Price = Annotated[Number, Field(ge=0)]
Wait = Annotated[Number, Field(ge=0, le=MAX_SECONDS)]

KEY_PACKAGES = ("groundstate", "pydantic", "PyYAML", "jsonschema", "numpy", "click")


class Section(BaseModel):
    # Sections accept extra keys: anything a team declares is versioned with the rest.
    model_config = ConfigDict(extra="allow", frozen=True, use_attribute_docstrings=True)

    @model_validator(mode="after")
    def _no_misspelt_field(self) -> Section:
        """An extra key that looks like a misspelt field is refused: kept, it would be hashed
        and never read (``budgets: {step_limt: 5}`` would leave the step limit unset)."""
        for key in self.model_extra or {}:
            if key in SAMPLING_KEYS and "decoding" in type(self).model_fields:
                raise ValueError(
                    f"{key!r} is a decoding setting: write it under `decoding` (here it would"
                    " be kept for the record and never sent)"
                )
            if key in _ENFORCED_ELSEWHERE:
                raise ValueError(
                    f"{key!r} belongs {_ENFORCED_ELSEWHERE[key]}: write it there (here it would"
                    " be kept for the record and never read)"
                )
            # Stricter than a hint: a key kept for the record (persona_id, provider_name) loads.
            hint = did_you_mean(key, type(self).model_fields, cutoff=0.85)
            if hint:
                raise ValueError(
                    f"{key!r} is not a field{hint}: extra keys are kept for the record but never"
                    " read, so a misspelt field would have no effect"
                )
        return self


_ENFORCED_ELSEWHERE = {
    **dict.fromkeys(("step_limit", "time_limit", "max_cost"), "in `budgets`"),
    "max_turns": "in `user_simulator`",
    "system_prompt": "in `harness`",
    "max_invalid_rate": "in `invalid_run_policy`",
    **dict.fromkeys(
        ("budgets", "invalid_run_policy", "user_simulator", "harness"),
        "at the top of the system file",
    ),
}
"""Settings groundstate acts on, by the place they are read: written in another section (an
open one keeps extra keys), they would be kept and never read."""


class Prices(Section):
    """What the model costs, per million tokens, to turn reported usage into ``cost``."""

    input_per_mtok: Price
    """Prompt tokens not read from the cache."""
    output_per_mtok: Price
    """Generated tokens, reasoning tokens included."""
    cached_input_per_mtok: Price | None = None
    """Prompt tokens read from the provider's cache (default: the input price)."""


class RetryPolicy(Section):
    """Retries of a model call after a rate limit, a 5xx answer, a timeout or a lost connection.

    Waits grow exponentially (``backoff``, then twice that...), capped at ``max_backoff``; a
    ``Retry-After`` header is honoured up to the cap. When retries run out the attempt ends as
    ``environment_failure/model_serving`` (invalid, rerun under the batch's policy).
    """

    max_retries: Retries = 2
    backoff: Wait = 1.0
    """Seconds before the first retry."""
    max_backoff: Wait = 20.0


_ADDED_MODEL_FIELDS = frozenset(
    {"provider", "base_url", "base_url_env", "api_key_env", "request_timeout", "retries", "prices"}
)
"""Model settings added after the first format: omitted from the hash while unset, so the
systems written before them keep their hash."""


class ModelSection(Section):
    """The model and how it is served. The built-in adapters (``openai-chat``,
    ``anthropic-messages``) send exactly what is declared here; see docs/models.md."""

    revision: str = "none"
    """The pinned model identifier sent to the API (e.g. ``gpt-4.1-2025-04-14``)."""
    serving_route: str = "none"
    """Free text describing how the model is served (kept for the record)."""
    decoding: Decoding = Field(default_factory=dict)
    """``temperature``, ``top_p``, ``max_tokens``, ``seed``, ``stop``; other keys are sent to the
    API as they are (e.g. ``top_k`` for a vLLM server)."""
    reasoning_budget: Count | str | None = None
    """Anthropic: thinking budget in tokens (an int). OpenAI: ``reasoning_effort`` (a string
    such as ``low``)."""
    provider: str | None = None
    """Who serves the model (e.g. ``openai``, ``vllm``, ``anthropic``); kept for the record."""
    base_url: str | None = None
    """The API's base URL (the SDK's default when unset), e.g. ``http://localhost:8000/v1``."""
    base_url_env: str | None = None
    """An environment variable whose value, when set, replaces ``base_url``; the URL in use is
    recorded in ``resolved.serving`` and so hashed."""
    api_key_env: str | None = None
    """The environment variable holding the API key. Only the name is stored or hashed; the
    key itself is never recorded, logged or shown."""
    request_timeout: Seconds | None = None
    """Seconds one model request may take before it counts as timed out (default 60)."""
    retries: RetryPolicy | None = None
    """Retries on rate limits, 5xx answers and timeouts (default: 2 retries, 1 s backoff)."""
    prices: Prices | None = None
    """Per-million-token prices; without them the cost of a call is 0."""

    @model_serializer(mode="wrap")
    def _omit_unset_additions(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        data: dict[str, Any] = handler(self)
        return {k: v for k, v in data.items() if not (k in _ADDED_MODEL_FIELDS and v is None)}

    def effective_base_url(self) -> str | None:
        """The base URL to call: ``base_url_env``'s value when set, else ``base_url``."""
        if self.base_url_env and os.environ.get(self.base_url_env):
            return os.environ[self.base_url_env]
        return self.base_url


BUILTIN_AGENTS: dict[str, tuple[str, str]] = {
    "openai-chat": ("groundstate.agents.openai_chat:OpenAIChatAgent", "openai"),
    "anthropic-messages": (
        "groundstate.agents.anthropic_messages:AnthropicMessagesAgent",
        "anthropic",
    ),
    "mcp-command": ("groundstate.agents.mcp_command:McpCommandAgent", "mcp"),
}
"""Short names of the built-in model adapters -> (entry, the SDK package they call)."""


class AgentEntry(Section):
    entry: str
    """``file.py:factory`` (relative to the system file), ``package.module:factory``, or a
    built-in adapter: ``openai-chat`` or ``anthropic-messages``. A factory with a
    ``from_system`` class method is given the whole system spec."""
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


class UserModel(Section):
    """The model behind a model-driven simulated user (an OpenAI-compatible Chat Completions
    endpoint, on the official ``openai`` SDK)."""

    revision: str
    """The pinned model identifier."""
    base_url: str | None = None
    base_url_env: str | None = None
    """An environment variable whose value, when set, replaces ``base_url`` (hashed as used)."""
    api_key_env: str | None = None
    """The environment variable holding the API key (only the name is stored)."""
    decoding: Decoding = Field(default_factory=dict)
    """Sent as they are (``temperature``, ``max_tokens``...)."""
    request_timeout: Seconds = 60
    max_retries: Annotated[Count, Field(ge=0, le=10)] = 2
    """The SDK's own retries of rate limits, 5xx answers and timeouts; a malformed answer
    (no answer, no text, a blank one, one past the size bound) is tried again as often."""

    @model_validator(mode="after")
    def _decoding_leaves_the_request_alone(self) -> UserModel:
        """``model`` or ``messages`` in ``decoding`` clash with the request's own (a TypeError
        in every attempt), ``stream`` or ``tools`` change what comes back: each attempt would
        be an invalid run. Refused when the system loads, as the agent adapters refuse them."""
        from groundstate.agents.model_loop import RESERVED_KEYS  # it imports this module

        reserved = sorted(RESERVED_KEYS & set(self.decoding))
        if reserved:
            raise ValueError(f"decoding: {', '.join(reserved)}: set by the user simulator")
        return self

    def effective_base_url(self) -> str | None:
        if self.base_url_env and os.environ.get(self.base_url_env):
            return os.environ[self.base_url_env]
        return self.base_url


_ADDED_USER_FIELDS = frozenset({"model", "prompt", "seed", "stop_token"})
"""User-simulator settings added after the first format: omitted from the hash while unset."""


class UserSimulatorSection(Section):
    kind: Literal["scripted", "model", "person"] = "scripted"
    """``scripted`` (offline rules, see groundstate.users), ``model`` (needs ``model``) or
    ``person`` (someone at the terminal: ``groundstate play --as user``)."""
    persona: str = "a polite customer who answers only what is asked"
    max_turns: Steps = 20
    """The user leaves after this many agent messages."""
    model: UserModel | None = None
    """For ``kind: model``: the model that plays the user."""
    prompt: str | None = None
    """For ``kind: model``: the instructions template (default
    :data:`groundstate.users.DEFAULT_USER_PROMPT`); fields ``{persona}``, ``{scenario}``,
    ``{knowledge}``, ``{confirmation}``, ``{stop_token}``."""
    seed: int | None = None
    """For ``kind: model``: the decoding seed sent with every request (default: the attempt's)."""
    stop_token: str | None = None
    """For ``kind: model``: the text by which the user ends the conversation (default
    ``###STOP###``)."""

    @model_serializer(mode="wrap")
    def _omit_unset_additions(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        data: dict[str, Any] = handler(self)
        return {k: v for k, v in data.items() if not (k in _ADDED_USER_FIELDS and v is None)}

    @field_validator(*_ADDED_USER_FIELDS)
    @classmethod
    def _only_for_model_users(cls, value: object, info: ValidationInfo) -> object:
        """A model user's setting on another kind of user (``kind`` left out is ``scripted``)
        is never read: the author believes a model plays the user, and none does."""
        kind = info.data.get("kind", "model")
        if value is not None and kind != "model":
            raise ValueError(
                f"read only for kind: model, and this user is {kind}: set kind: model, or remove it"
            )
        return value

    @model_validator(mode="after")
    def _model_for_model_users(self) -> UserSimulatorSection:
        if self.kind == "model" and self.model is None:
            raise ValueError("kind: model needs `model` (at least its `revision`)")
        if self.prompt is not None:
            _check_prompt_fields(self.prompt)
        if self.stop_token is not None and not self.stop_token.strip():
            # a blank token would be found in every answer: the user would leave at once
            raise ValueError(f"stop_token {self.stop_token!r} is blank")
        return self


USER_PROMPT_FIELDS = frozenset({"persona", "scenario", "knowledge", "confirmation", "stop_token"})
"""The fields a model user's ``prompt`` template may name."""


def _check_prompt_fields(prompt: str) -> None:
    """Refuse a template that ``str.format`` cannot fill with :data:`USER_PROMPT_FIELDS`
    (an unknown field, a positional one, a lone brace) when the system loads, not mid-attempt."""
    try:
        names = [name for _, name, _, _ in string.Formatter().parse(prompt) if name is not None]
    except ValueError as exc:
        raise ValueError(f"prompt: {exc}; write {{{{ and }}}} for literal braces") from None
    unknown = sorted({n for n in names if n not in USER_PROMPT_FIELDS})
    if unknown:
        known = ", ".join(sorted(USER_PROMPT_FIELDS))
        raise ValueError(
            f"prompt: unknown {inflected(len(unknown), 'field')} {', '.join(map(repr, unknown))}"
            f" (known: {known});"
            " write {{ and }} for literal braces"
        )


class BudgetsSection(Section):
    """Limits enforced on every attempt. Unlike most sections it takes no extra keys: a
    ``cost_limit`` or ``max_steps`` kept "for the record" would read as a budget in force that
    nothing enforces."""

    model_config = ConfigDict(extra="forbid", frozen=True, use_attribute_docstrings=True)

    step_limit: Steps | None = None
    time_limit: Seconds | None = None
    max_cost: Price | None = None
    max_tokens: Annotated[Count, Field(ge=0, le=MAX_INTEGER)] | None = None
    """Input plus output tokens the agent may report per attempt."""


class InvalidRunPolicy(Section):
    """Predeclared handling of environment and grader failures (invalid attempts).

    Unlike other sections it takes no extra keys: the runner applies only these two fields,
    so a key such as ``retry_on`` or ``stop_above`` kept "for the record" would read as a
    policy in force that nothing enforces."""

    model_config = ConfigDict(extra="forbid", frozen=True, use_attribute_docstrings=True)

    max_retries: Retries = 2
    """Reruns of an invalid attempt; every try is kept."""
    max_invalid_rate: Annotated[Number, Field(ge=0, le=1)] = 0.1
    """A batch whose tries are invalid more often than this is flagged in every report."""


class GraderSection(Section):
    revision: str = "task"


class SystemSpec(BaseModel):
    """Everything that can move a score, as declared in ``system.yaml``."""

    model_config = ConfigDict(extra="forbid", frozen=True, use_attribute_docstrings=True)

    name: Id = "system"
    """What reports call the system (visible characters, not blank)."""
    model: ModelSection = own_default(ModelSection())
    harness: HarnessSection
    tools: ToolsSection = own_default(ToolsSection())
    environment: EnvironmentSection = own_default(EnvironmentSection())
    user_simulator: UserSimulatorSection = own_default(UserSimulatorSection())
    budgets: BudgetsSection = own_default(BudgetsSection())
    grader: GraderSection = own_default(GraderSection())
    invalid_run_policy: InvalidRunPolicy = own_default(InvalidRunPolicy())
    resolved: dict[str, Any] = Field(default_factory=dict)
    """Filled when loaded: hashes of referenced code and the versions in use."""
    _base_dir: Path = PrivateAttr(default=Path("."))
    _file: Path | None = PrivateAttr(default=None)

    @property
    def base_dir(self) -> Path:
        """The folder of the system file; relative code references start here."""
        return self._base_dir

    @property
    def source(self) -> Path:
        """The system file, for error messages (its folder when built without one)."""
        return self._file or self._base_dir

    @property
    def system_spec_hash(self) -> str:
        """sha256 of the spec's canonical JSON. Every attempt's record names it, so it is looked
        up by the spec's JSON (pydantic's, several times cheaper than the canonical form) and
        computed only for JSON not seen before: the spec is frozen, but its dicts
        (``decoding``, ``params``, ``resolved``...) can still be changed in place. Kept outside
        the spec, so that reading it changes neither the spec's equality nor its copies."""
        text = self.model_dump_json()
        digest = _SPEC_HASHES.get(text)
        if digest is None:
            digest = hash_value(self.model_dump(mode="json"))
            if len(_SPEC_HASHES) >= _SPEC_HASHES_KEPT:
                _SPEC_HASHES.clear()
            _SPEC_HASHES[text] = digest
        return digest


_SPEC_HASHES: dict[str, str] = {}
"""System spec JSON -> its hash. The JSON determines the hash: both are serialisations of the
same JSON-mode values (pydantic writes a non-finite float as null in either)."""
_SPEC_HASHES_KEPT = 64


def runtime_versions(extra: tuple[str, ...] = ()) -> dict[str, str]:
    """The versions actually in use: Python, SQLite, key packages and the *extra* ones."""
    versions = {"python": platform.python_version(), "sqlite": sqlite3.sqlite_version}
    for name in KEY_PACKAGES + extra:
        try:
            versions[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            versions[name] = "not installed"
    return versions


def resolve_entry(entry: str, base_dir: Path) -> tuple[Path | None, str, str]:
    """Split ``file.py:name`` or ``package.module:name`` (or a built-in adapter's short name)
    into (file or None, module, name)."""
    entry = BUILTIN_AGENTS.get(entry, (entry, ""))[0]
    target, _, name = entry.partition(":")
    if not name:
        raise ValueError(
            f"expected 'file.py:name', 'module:name' or a built-in adapter"
            f" ({', '.join(BUILTIN_AGENTS)}), got {entry!r}{did_you_mean(entry, BUILTIN_AGENTS)}"
        )
    if target.endswith(".py"):
        return (base_dir / target).resolve(), target, name
    if not all(part.isidentifier() for part in target.split(".")):  # ../agents, x.txt, ""
        hint = (
            f" (did you mean '{target}.py:{name}'?)" if is_file(base_dir / f"{target}.py") else ""
        )
        raise ValueError(
            f"{target!r} is neither a .py file nor a module name: expected 'file.py:name' or"
            f" 'package.module:name', got {entry!r}{hint}"
        )
    return None, target, name


def _shown(path: Path) -> str:
    """*path* without ``..`` (``agents/x.py``, not ``systems/../agents/x.py``) where that names
    the same place: not when a folder it passes through is a link."""
    plain = os.path.normpath(path)
    return plain if os.path.realpath(plain) == os.path.realpath(path) else str(path)


def load_system(path: Path) -> SystemSpec:
    """Load ``system.yaml``; record the hash of the agent code and the versions in use."""
    path = Path(path)
    spec = load_model(path, SystemSpec)
    if spec.resolved:
        raise SpecError(path, "resolved", "is filled in by groundstate; remove it")
    try:
        code_file, target, _ = resolve_entry(spec.harness.orchestration_loop.entry, path.parent)
    except (ValueError, OSError) as exc:
        raise SpecError(path, "harness.orchestration_loop.entry", str(exc)) from None
    named = path.parent / target  # as the system file was named, before links are followed
    if code_file is not None and (reason := no_file(named, _shown(named))) is not None:
        raise SpecError(path, "harness.orchestration_loop.entry", reason)
    loop_entry = spec.harness.orchestration_loop.entry
    try:
        source = code_file or _module_file(loop_entry)
        code: dict[str, Any] = {"orchestration_loop": _code_hash(code_file, source)}
    except Exception as exc:  # the user's package may raise anything while it is imported
        what = "" if code_file else f" {target}"  # a module: named as importing it names it
        reason = f"cannot import{what}: {type(exc).__name__}: {exc}"
        raise SpecError(path, "harness.orchestration_loop.entry", reason) from None
    shown, params = (target if code_file else str(source)), spec.harness.orchestration_loop.params
    name = BUILTIN_AGENTS.get(loop_entry, (loop_entry, ""))[0].rpartition(":")[2]
    if source is not None and (problem := entry_problem(source, loop_entry, name, shown, params)):
        raise SpecError(path, *problem)
    if loop_entry == "mcp-command":  # what runs is the program: its files' digests are hashed
        code["command"] = command_file_digests(spec, path)
    sdk = (BUILTIN_AGENTS[loop_entry][1],) if loop_entry in BUILTIN_AGENTS else ()
    found: dict[str, Any] = {"code": code, "versions": runtime_versions(sdk)}
    if spec.model.base_url_env:  # the URL in use comes from the environment: hash it
        found["serving"] = {"base_url": spec.model.effective_base_url()}
    user_model = spec.user_simulator.model
    if user_model is not None and user_model.base_url_env:
        found["user_serving"] = {"base_url": user_model.effective_base_url()}
    if spec.user_simulator.kind == "model":
        found["versions"] |= runtime_versions(("openai",))
    resolved = spec.model_copy(update={"resolved": found})
    resolved._base_dir = path.parent
    resolved._file = path
    return resolved


def command_file_digests(
    spec: SystemSpec, path: Path, digest: Callable[[Path], str] = hash_file
) -> dict[str, str]:
    """The *digest* of each file an ``mcp-command`` system's command names (see
    :func:`~groundstate.sandbox.command_digests`), its files found from the system file at
    *path*; refuses (:class:`SpecError`) a command that cannot run."""
    params = spec.harness.orchestration_loop.params
    command, cwd = params.get("command"), params.get("cwd")
    if isinstance(command, str):
        command = command.split()
    if not command or not command[0] or not all(isinstance(a, str) for a in command):
        field = "harness.orchestration_loop.params.command"
        raise SpecError(path, field, "mcp-command needs a command: a list of strings")
    folder = path.parent / cwd if isinstance(cwd, str) else path.parent
    problem = command_problem(command, folder)
    if problem is not None:
        field = f"harness.orchestration_loop.params.command[{problem[0]}]"
        raise SpecError(path, field, problem[1])
    return command_digests(command, folder, digest)


def _module_file(entry: str) -> Path | None:
    """The source file of a module entry's module (None: one with no file of its own);
    refuses (``ModuleNotFoundError``) a module that is not there, before a batch validates
    its suite. Its packages are imported, not the module."""
    from groundstate import untrusted  # (imports the watch: not at this module's import)

    module_name, _, name = BUILTIN_AGENTS.get(entry, (entry, ""))[0].partition(":")
    untrusted.noted(untrusted.trusted_entry(module_name, name, None))  # imports its package
    found = importlib.util.find_spec(module_name)
    if found is None:
        raise ModuleNotFoundError(f"No module named {module_name!r}")
    if found.origin is None or not Path(found.origin).is_file():
        return None
    return Path(found.origin)


def _code_hash(code_file: Path | None, source: Path | None) -> str:
    """The hash of the agent's source file with the sibling modules it imports (for a module
    entry, the module's file *source*)."""
    if code_file is None:
        return "unknown" if source is None else hash_file(source)
    return hash_code(code_file)
