"""The trace: the ordered ``observation_action_log`` of one attempt."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable, Sequence
from typing import Annotated, Any, Literal, TypeVar

from pydantic import BaseModel, Field, GetCoreSchemaHandler, TypeAdapter
from pydantic_core import CoreSchema, core_schema

from groundstate.copies import Copies, Guard
from groundstate.environments.base import RowWrite
from groundstate.returned import stable_repr

ErrorClass = Literal[
    "invalid_arguments", "unknown_tool", "permission_denied", "tool_error", "environment_error"
]
"""Who caused a failed call: the agent (the first four) or the environment (the last)."""


def recordable(value: Any) -> Any:
    """*value* with every string made encodable as UTF-8, so that any record can be stored.

    An agent can produce text no encoder accepts (a lone surrogate such as ``"\\ud800"`` is
    legal in JSON and in a Python ``str``). Such a string is kept with each unencodable code
    point written as its escape (``\\ud800``: Python's ``backslashreplace``), so the evidence
    survives in records, artifacts and reports; encodable strings are left as they are.
    Dictionary keys, lists and tuples are walked; a set or frozenset becomes a list sorted by
    each item's text (so a record is the same in every process, whatever ``PYTHONHASHSEED``);
    other values are returned unchanged.

    The exact types a trace and its evidence are made of (``str``, ``dict``, ``list``, the
    JSON scalars) are told apart by ``type`` first: a record's evidence walks hundreds of
    them, and each ``isinstance`` that misses costs more than the one ``type`` lookup.
    Subclasses go the ``isinstance`` way, as before.
    """
    kind = type(value)
    if kind is str:
        return value if value.isascii() or _encodable(value) else _escaped(value)
    if kind is dict:
        return {recordable(key): recordable(item) for key, item in value.items()}
    if kind is list:
        return [recordable(item) for item in value]
    if kind is int or kind is float or kind is bool or value is None:
        return value
    if isinstance(value, str):
        return value if value.isascii() or _encodable(value) else _escaped(value)
    if isinstance(value, dict):
        return {recordable(key): recordable(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [recordable(item) for item in value]
    if isinstance(value, set | frozenset):  # its order is PYTHONHASHSEED's: sorted by its text
        return [recordable(item) for item in sorted(value, key=stable_repr)]
    return value


class _MadeRecordable:
    """Marks a field (``Annotated[str, RECORDABLE]``) whose Python input is passed through
    :func:`recordable` once its type is checked. Input parsed from JSON is kept as it is, with
    no call into Python: pydantic's JSON parser refuses a lone surrogate, escaped
    (``"\\ud800"``) or raw, so every string it yields is encodable already (tests pin the
    refusal: ``tests/test_records.py``). Reading a stored record back skipped this walk and
    these calls: they were most of the cost of parsing it."""

    def __get_pydantic_core_schema__(
        self, source: Any, handler: GetCoreSchemaHandler
    ) -> CoreSchema:
        checked = handler(source)
        return core_schema.json_or_python_schema(
            json_schema=checked,
            python_schema=core_schema.no_info_after_validator_function(recordable, checked),
        )


RECORDABLE = _MadeRecordable()


def _encodable(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _escaped(text: str) -> str:
    return text.encode("utf-8", "backslashreplace").decode("utf-8")


class MessageEvent(BaseModel):
    kind: Literal["message"] = "message"
    step: int
    role: Literal["user", "agent"]
    text: Annotated[str | None, RECORDABLE]
    """None: the user has left the conversation."""
    final: bool = False
    """The agent's final reply (the message it returned when it finished)."""
    at: float
    """Seconds since the attempt started."""
    requested_at: int | None = Field(default=None, exclude=True)
    """As :attr:`ToolCallEvent.requested_at`, for an agent message a recorded model response
    asked for (its ``talk_to_user``): where the response came, before the message."""


class ToolCallEvent(BaseModel):
    kind: Literal["tool_call"] = "tool_call"
    step: int
    tool: Annotated[str, RECORDABLE]
    args: Annotated[Any, RECORDABLE]
    ok: bool
    output: Annotated[Any, RECORDABLE] = None
    error: Annotated[str | None, RECORDABLE] = None
    error_class: ErrorClass | None = None
    duration_ms: float
    changed_tables: list[str] = Field(default_factory=list)
    denied: list[str] = Field(default_factory=list)
    writes: list[RowWrite] = Field(default_factory=list)
    """The rows the call changed, before and after (empty if it changed nothing, was denied or
    was rolled back). Traces stored before format 2 have none."""
    at: float
    requested_at: int | None = Field(default=None, exclude=True)
    """Set on the copies Python checks get (never stored): the index, in the trace the check
    got, of the first event after the model response that asked for this call; None where no
    recorded model response did (imported traces, agents whose model calls are not recorded).
    Read it through :func:`groundstate.grading.constraints.decided_at`."""


class ModelToolCall(BaseModel):
    """A tool call as the model wrote it (arguments as raw text, possibly malformed JSON)."""

    id: Annotated[str, RECORDABLE]  # a model may write anything
    name: Annotated[str, RECORDABLE]
    arguments: Annotated[str, RECORDABLE]


class ModelResponse(BaseModel):
    text: Annotated[str | None, RECORDABLE] = None
    """The model's text (None when it wrote none)."""
    tool_calls: list[ModelToolCall] = Field(default_factory=list)
    stop_reason: str | None = None
    """As the API reported it (``tool_calls``, ``end_turn``...)."""
    refusal: Annotated[str | None, RECORDABLE] = None
    """The refusal the API reported apart from the text (Chat Completions' ``refusal``)."""


class ModelUsage(BaseModel):
    """Tokens of one model call, as the API reported them."""

    input_tokens: int | None = 0
    """All prompt tokens, cached ones included; ``None`` when the API did not count them (no
    usage, or 0 prompt tokens, which no request has), never 0 for that."""
    cached_input_tokens: int = 0
    """Prompt tokens read from the provider's cache."""
    output_tokens: int | None = 0
    """All generated tokens, reasoning ones included; ``None`` as ``input_tokens``."""
    reasoning_tokens: int = 0
    cost: float | None = 0.0
    """From the price table in the system's ``model.prices`` (0 without one); ``None`` when
    the tokens are not known."""

    @property
    def known(self) -> bool:
        """Whether the API reported the call's tokens."""
        return self.input_tokens is not None and self.output_tokens is not None


RETRIED_KINDS = frozenset({"rate_limited", "server_error", "timeout", "connection"})
"""The kinds of :class:`ModelCallError` a model adapter retries: the serving infrastructure's
failures, not the request's (``rejected``) nor the account's (``auth``)."""


class ModelCallError(BaseModel):
    """Why a model call failed: the evidence for the terminal reason."""

    kind: Literal[
        "rate_limited",
        "server_error",
        "timeout",
        "connection",
        "rejected",
        "auth",
        "context_window",
    ]
    """``context_window``: a request refused for the conversation's length (not retried)."""
    status_code: int | None = None
    request_id: str | None = None
    message: Annotated[str, RECORDABLE]


class ModelCall(BaseModel):
    """One request to the model, as a model adapter reports it (see ``record_model_call``)."""

    provider: str
    """The adapter's API: ``openai-chat`` or ``anthropic-messages``."""
    model: str
    served_model: Annotated[str | None, RECORDABLE] = None
    """The model the answer says it came from (its ``model`` field): a router's fallback, the
    dated snapshot an alias stood for; None when it named none (or the call failed)."""
    try_number: int = 1
    """1 for the first request of a turn, 2 for its first retry..."""
    request_digest: str
    """sha256 of the canonical JSON of what was sent (messages, tools, settings)."""
    request_id: str | None = None
    response: ModelResponse | None = None
    """None when the call failed."""
    usage: ModelUsage = Field(default_factory=ModelUsage)
    latency_ms: float
    error: ModelCallError | None = None


class ModelCallEvent(ModelCall):
    """A model call in the trace (every retry is its own event). Not an action of the agent:
    constraints, step counts and regression scripts ignore it."""

    kind: Literal["model_call"] = "model_call"
    step: int
    """Steps the agent had taken when the call returned."""
    at: float
    """Seconds since the attempt started."""


TraceEvent = Annotated[MessageEvent | ToolCallEvent | ModelCallEvent, Field(discriminator="kind")]
AgentEvent = Annotated[MessageEvent | ToolCallEvent, Field(discriminator="kind")]
"""The agent's actions and the user's answers: the trace without its model calls."""


def agent_events(events: Iterable[TraceEvent]) -> list[AgentEvent]:
    """The trace without its model calls: what constraints and replays look at."""
    return [e for e in events if not isinstance(e, ModelCallEvent)]


E = TypeVar("E", bound=BaseModel)
T = TypeVar("T")


class TraceCopies(Copies[list[E]]):
    """Deep copies of one trace for user code (Python checks, judges): what a check edits in
    its copy reaches neither the record nor the next check.

    One pickled image of the trace, unpickled for each copy (:class:`~groundstate.copies.
    Copies`); the events must not change after the first copy (grading runs after the
    episode has ended). :meth:`lend` hands the next check the copy the last one had, when a
    :class:`~groundstate.copies.Guard` shows it exactly as it was made.
    """

    def __init__(self, events: Sequence[E]) -> None:
        super().__init__(list(events))
        self._spare: tuple[Guard[list[E]], list[int]] | None = None
        """The copy given back, and its parts' reference counts when it was given back."""
        self._lending = True
        self._lock = threading.Lock()

    def lend(self, check: Callable[[list[E]], T]) -> T:
        """``check(copy)``, on a copy of the trace of its own while it runs.

        Unpickling a copy costs several times what proving one untouched does, so the copy
        the last check had is lent to the next one when its :class:`~groundstate.copies.
        Guard` shows it exactly as it was made (no list item, dict entry, model field or set
        field written, replaced or put back since), which is what a fresh copy would be. A
        copy is taken back only from a check that returned (not one that raised; one
        abandoned at its time limit keeps its copy while it runs, and the checks after it
        get fresh ones) and left no reference to any part of it behind (a global, a thread
        still running, an iterator, a weak reference): nothing can edit it while the next
        check reads it. The counts a check must leave are those the copy had when it was
        made or last given back, not when the check began: a reference taken meanwhile
        (by a thread still running) keeps the copy from being lent again, and the counts are
        not read twice per check. Once a check has edited its copy, every check after it
        gets a fresh one, as without lending."""
        with self._lock:
            spare, self._spare = self._spare, None
        if spare is not None and not spare[0].untouched():
            spare, self._lending = None, False  # a check edits its copy: a fresh one each
        if spare is None:
            copy = self.fresh()
            guard = _guarded(copy) if self._lending else None
            if guard is None:
                return check(copy)
            del copy  # the counts are the guard's alone, as when the copy is given back
            referenced = guard.references()
        else:
            guard, referenced = spare
        result = check(guard.value)
        left = guard.references()
        if left == referenced:
            with self._lock:
                self._spare = (guard, left)
        return result


def _guarded(copy: list[E]) -> Guard[list[E]] | None:
    try:
        return Guard(copy)
    except Exception:  # Unguardable: a tool's own object, say; a fresh copy for every check
        return None


_EVENTS: TypeAdapter[list[TraceEvent]] = TypeAdapter(list[TraceEvent])


_OWN_JSON = {
    kind: kind.__pydantic_serializer__.to_json
    for kind in (MessageEvent, ToolCallEvent, ModelCallEvent)
}
"""Each trace event class's own serializer, taken at import: what a record's trace holds."""
_AS_EVENT = TypeAdapter(TraceEvent).serializer.to_json


def event_json(event: Any) -> str:
    """*event*'s JSON line, as a record's trace holds it (the record's own serializer, not a
    method of the event's: an object of another class, a subclass of an event class whose
    ``model_dump_json`` wrote the line logged while its fields said otherwise, is written
    from its fields as the record writes them)."""
    own = _OWN_JSON.get(type(event))
    return (own(event) if own is not None else _AS_EVENT(event)).decode()


def genuine(events: Iterable[Any]) -> bool:
    """Whether every event is of a trace event class itself (no subclass, nothing else): an
    object of another class can read otherwise than its JSON says (a subclass overriding a
    field with a property, ``__getattr__``...), so its JSON vouches for nothing."""
    return all(type(event) in _OWN_JSON for event in events)


def trace_lines(events: Iterable[Any]) -> list[str]:
    """Each event's JSON line (:func:`event_json`), oldest first."""
    return [event_json(event) for event in events]


def dump_jsonl(events: Iterable[Any]) -> str:
    """The ``trace.jsonl`` artifact: one :func:`event_json` line per event."""
    return "".join(line + "\n" for line in trace_lines(events))


def load_jsonl(text: str) -> list[TraceEvent]:
    # Split on "\n" only: str.splitlines() also splits on U+0085 and U+2028, which JSON
    # leaves unescaped inside strings.
    lines = [line for line in text.split("\n") if line]
    return _EVENTS.validate_json("[" + ",".join(lines) + "]")
