"""Simulated users. A simulated user is part of the instrument, so its behaviour is pinned.

The scripted user answers each agent message by fixed rules, in order:

1. once the agent has sent ``max_turns`` messages, the user has left (reply ``None``);
2. each private fact whose name (underscores read as spaces, e.g. "zip code") appears in the
   message is revealed: "My zip code is 94107.";
3. a message asking to "confirm", "go ahead" or "proceed" gets "Yes, please go ahead." when the
   task's user confirms, else "No, please do not do that.";
4. a message containing "anything else" gets "No, that's all. Thank you!" and the user leaves;
5. a question ("?", or "tell me", "provide", "share"...) that names a private fact by one of its
   distinctive words, as a whole word, reveals it: "What's your PIN?" and "Which zip?" are
   answered (a fact named ``zip_code`` or ``account_pin``); generic words ("code", "number",
   "id", "name", "account", "address") do not count alone;
6. anything else gets "Sorry, I'm not sure what you mean."

Of a message longer than ``MAX_READ_CHARS`` it reads the start and end (as a grader's checks
read the simulated user's).

A model-driven user (``kind: model``, :class:`ModelUser`) plays the user with a pinned model.
"""

from __future__ import annotations

import os
import re
from collections.abc import Sequence
from contextlib import suppress
from typing import Any, Protocol

from groundstate.agents.model_loop import (
    api_message,
    bounded_message,
    error_in_answer,
    hide_secret,
    kind_of_status,
    not_json,
    too_long,
    unreadable,
)
from groundstate.errors import EnvironmentFailure
from groundstate.grading.constraints._text import within_bound
from groundstate.grading.model_judge import shortened
from groundstate.spec.system import UserModel, UserSimulatorSection
from groundstate.spec.task import AgentTask, UserScenario
from groundstate.whole_request import (
    WARM_UP_SECONDS,
    AnswerTooLarge,
    warm_up,
    whole_request_client,
)

CONFIRM_WORDS = ("confirm", "go ahead", "proceed")
YES = "Yes, please go ahead."
NO = "No, please do not do that."
GOODBYE = "No, that's all. Thank you!"
UNSURE = "Sorry, I'm not sure what you mean."
ASKING = re.compile(r"\?|\b(tell me|provide|share|give me|send me|what is|what's|which)\b")
GENERIC_WORDS = frozenset({"code", "number", "id", "name", "account", "address", "the", "my"})
STOP_TOKEN = "###STOP###"
CONTENT_FILTER_CODES = frozenset(
    {"content_filter", "content_policy_violation", "invalid_prompt", "ResponsibleAIPolicyViolation"}
)
"""Error codes with which an API refuses a request for its content (Azure OpenAI's
``content_filter`` and its inner ``ResponsibleAIPolicyViolation``, OpenAI's
``content_policy_violation`` and ``invalid_prompt``)."""
PROBE = "Hello."
"""The agent's side of the conversation when a refused user model is asked with the
instrument's own text alone (see :meth:`ModelUser._refused`)."""
PROBE_REPLY = "OK."
"""The user's own replies when a user model outgrown even with :data:`PROBE` for the agent's
messages is asked with the instrument's prompt and opening alone (see
:meth:`ModelUser._outgrown`)."""
DEFAULT_USER_PROMPT = """\
You are playing a customer talking to a customer service agent, to test the agent. Stay in
character: you are {persona}. Write only what the customer says, one short message at a time.

Your situation and what you want:
{scenario}

Facts you know. Share a fact only when the agent asks for it; never volunteer the others:
{knowledge}

{confirmation}
When your request has been handled, or the agent cannot help, say goodbye and end your message
with {stop_token}."""


class User(Protocol):
    """A simulated user: answers each agent message, or None once it has left. A user may
    say why it left (``left_because``, kept in the run's evidence as ``user_left``)."""

    left: bool
    waits: bool
    """Whether a reply waits on something outside the harness (a model, a person): only such
    a user can be slow independently of the agent (see ``episode.USER_SHARE``)."""

    def reply(self, message: str) -> str | None: ...


def make_user(spec: UserSimulatorSection, task: AgentTask, seed: int) -> User:
    """The user the system file declares, for one attempt of *task*."""
    if spec.kind == "model":
        return ModelUser(spec, task, seed)
    if spec.kind == "person":
        from groundstate.play import PersonUser  # the terminal side lives with `play`

        return PersonUser(spec)
    return ScriptedUser(spec, task.user)


class TurnLimit:
    """What every simulated user shares: it leaves once the agent has sent ``max_turns``
    messages (and stays gone)."""

    def __init__(self, spec: UserSimulatorSection) -> None:
        self._spec = spec
        self._turns = 0
        self.left = False

    def _gone(self) -> bool:
        """Count one agent message; whether the user has left by now."""
        self._turns += 1
        if self._turns > self._spec.max_turns:
            self.left = True
        return self.left


class ScriptedUser(TurnLimit):
    waits = False  # local rules: its time is that of the agent's message

    def __init__(self, spec: UserSimulatorSection, scenario: UserScenario) -> None:
        super().__init__(spec)
        self._scenario = scenario

    def reply(self, message: str) -> str | None:
        if self._gone():
            return None
        # Its rules read as much of a message as a grader's checks do: what it does is bounded
        # whatever the agent sends, so anything it raises is the instrument's own failure.
        text = within_bound(message).lower()
        revealed = [
            f"My {key.replace('_', ' ')} is {value}."
            for key, value in self._scenario.knowledge.items()
            if re.search(rf"\b{re.escape(key.replace('_', ' ').lower())}\b", text)
        ]
        if revealed:
            return " ".join(revealed)
        if any(word in text for word in CONFIRM_WORDS):
            return YES if self._scenario.confirms else NO
        if "anything else" in text:
            self.left = True
            return GOODBYE
        if ASKING.search(text):
            asked = [fact for fact in self._scenario.knowledge if _names(fact, text)]
            if asked:
                return " ".join(self._fact(key) for key in asked)
        return UNSURE

    def _fact(self, key: str) -> str:
        return f"My {key.replace('_', ' ')} is {self._scenario.knowledge[key]}."


class RecordedUser:
    """The user's replies as a run recorded them, given again in order: a regrade judges the
    recorded conversation, whoever played the user (a model or a person is not asked again,
    and the scripted user's rules may answer otherwise). A reply recorded as none (the user
    had left) leaves, as does a message past the recorded conversation."""

    waits = False  # nothing to wait on: the replies are at hand

    def __init__(self, replies: Sequence[str | None]) -> None:
        self._replies = list(replies)
        self._next = 0
        self.left = False

    def reply(self, message: str) -> str | None:
        if self.left or self._next >= len(self._replies):
            self.left = True
            return None
        reply = self._replies[self._next]
        self._next += 1
        self.left = reply is None
        return reply


def _names(fact: str, text: str) -> bool:
    """Whether *text* names *fact* by one of its distinctive words, as a whole word."""
    words = [w for w in re.split(r"[_\W]+", fact.lower()) if w and w not in GENERIC_WORDS]
    return any(re.search(rf"\b{re.escape(word)}\b", text) for word in words)


class ModelUser(TurnLimit):
    """A simulated user played by a model, pinned in the system spec.

    The model gets :data:`DEFAULT_USER_PROMPT` (or the spec's ``prompt``) filled with the
    persona, the task's scenario (``user.instructions``, else the request), its private facts
    and whether it confirms; its own opening message is the task's request. It leaves when
    its reply carries the stop token, or after ``max_turns`` agent messages. Of an agent
    message longer than ``MAX_READ_CHARS`` it is shown the start and end around a note of what
    was left out (what the agent sends is bounded, as for every reader of the instrument's).
    A failing model call raises :class:`EnvironmentFailure`: the attempt is invalid
    (``environment_failure/user_simulator``), never held against the agent, unless the
    agent's own messages made it fail: see :meth:`_refused` (a content filter) and
    :meth:`_outgrown` (the model's window).
    """

    waits = True
    left_because: str | None = None

    def __init__(self, spec: UserSimulatorSection, task: AgentTask, seed: int) -> None:
        assert spec.model is not None  # the spec's validator requires it for kind: model
        super().__init__(spec)
        self._model = spec.model
        self._stop = spec.stop_token or STOP_TOKEN
        self._seed = spec.seed if spec.seed is not None else seed
        scenario = task.user
        facts = "\n".join(f"- {k.replace('_', ' ')}: {v}" for k, v in scenario.knowledge.items())
        confirmation = (
            "When the agent asks you to confirm an action you asked for, agree."
            if scenario.confirms
            else "When the agent asks you to confirm an action, refuse: do not let it go ahead."
        )
        prompt = (spec.prompt or DEFAULT_USER_PROMPT).format(
            persona=spec.persona,
            scenario=scenario.instructions or task.user_request,
            knowledge=facts or "- (none)",
            confirmation=confirmation,
            stop_token=self._stop,
        )
        self.messages: list[dict[str, str]] = [
            {"role": "system", "content": prompt},
            {"role": "assistant", "content": task.user_request},
        ]
        self._client: Any = None
        self._openai: Any = None
        # The SDK imported, the client built and its HTTP stack warmed up now, before the
        # attempt's clock starts: a first reply importing them (a second or more on a loaded
        # machine) spent the agent's time. What fails here (no SDK, no key) fails again, and
        # is said, at the first reply: the attempt is built either way.
        with suppress(Exception):
            self._sdk()
            warm_up("user-model", _warm_up_request)

    def reply(self, message: str) -> str | None:
        if self._gone():
            return None
        # As much of it as every reader of the instrument's is shown (the model judge, the
        # scripted user): the whole of a megabyte message was refused by the user model's
        # API, an invalid attempt at the agent's choosing.
        self.messages.append({"role": "user", "content": shortened(message)})
        try:
            text, said, stopped = self._answer()
        except _Filtered as exc:
            self._refused(str(exc))
            return None
        except _TooLong as exc:
            self._outgrown(str(exc))
            return None
        self.messages.append({"role": "assistant", "content": text})
        if stopped:
            self.left = True
        return said or None

    def _answer(self) -> tuple[str, str, bool]:
        """The model's next answer that is a message or a goodbye: (its text, what the agent
        hears, whether it left). A malformed answer (a body that is not an answer, over
        ``MAX_ANSWER_BYTES``, without text, stopped by a content filter, or empty without the
        stop token) is retried like a failed request, ``max_retries`` times; then the user
        model failed, naming the last answer's fault and the tries. A request that failed
        past the SDK's own retries (an error status, a timeout) is not tried again."""
        tries = self._model.max_retries + 1
        for number in range(1, tries + 1):
            try:
                text = self._ask()
            except _Malformed as exc:
                problem = str(exc)
            else:
                said, stopped = _without_stop(text, self._stop)
                if said or stopped:
                    return text, said, stopped
                # Neither a message nor a goodbye: the instrument broke, not the agent's turn.
                problem = f"its answer is empty ({text!r}), without the stop token"
            if number == tries:
                raise self._failure(f"{problem} ({tries} {'try' if tries == 1 else 'tries'})")
        raise AssertionError("unreachable: the last try raises")

    def _refused(self, reason: str) -> None:
        """The user model's API refused the conversation for its content (an HTTP 400 a
        content filter gave). Whose failure is it? The chapter's environment failure is one
        "independently of the agent's decisions", so the model is asked once more with the
        instrument's own text alone (its prompt, its opening message, and :data:`PROBE` in
        place of the agent's messages). Refused again, the instrument's own text trips the
        filter whatever the agent said: the user model failed
        (``environment_failure/user_simulator``, invalid). Answered, what the agent said
        tripped it: the user leaves the conversation (the reply is ``None``, the reason kept
        as ``left_because``) and the attempt goes on to be graded on its state, as any
        conversation the user ended. Made invalid, an attempt the agent was failing could be
        rerun at its choosing, by writing what the filter refuses."""
        try:
            self._ask([*self.messages[:2], {"role": "user", "content": PROBE}])
        except _Filtered:
            why = f"{reason}; it refuses the user's own prompt too, whatever the agent says"
            raise self._failure(why) from None
        except _Malformed:
            pass  # answered, if badly: what it refused was the agent's
        self.left = True
        self.left_because = f"the user model refused the agent's messages: {reason}"
        return None

    def _outgrown(self, reason: str) -> None:
        """The user model's API refused the conversation for its length (a context-window
        400, or a 413 for its bytes, as :func:`groundstate.agents.model_loop.too_long` reads
        it). Whose failure is it? Each agent message is shortened to what every reader is
        shown, but ``max_turns`` of them fill any window: made invalid, an attempt the agent
        was failing could be rerun at its choosing, by writing long messages. So the model is
        asked once more with every agent message replaced by :data:`PROBE` (the instrument's
        prompt, its opening and the user's own replies kept). Answered, the agent's messages
        made the difference: the user leaves (``left_because``) and the state decides, as for
        a conversation the user ended.

        Refused again, it is asked with the user's own replies replaced by
        :data:`PROBE_REPLY` too: what the user model wrote is written in answer to the agent
        (asked to repeat the policy word for word, it does), so an agent could outgrow the
        window with the user's side as well. Answered then, the user leaves as above.
        Refused again, the instrument's own side (its prompt, its opening, the turns taken)
        outgrows the window whatever the agent says: the user model failed
        (``environment_failure/user_simulator``, invalid: a user model whose window is too
        small for its prompt and ``max_turns``)."""
        agent_out = [{**m, "content": PROBE} if m["role"] == "user" else m for m in self.messages]
        replies_out = agent_out[:2] + [
            {**m, "content": PROBE_REPLY} if m["role"] == "assistant" else m for m in agent_out[2:]
        ]
        whose = ""
        refused = self._refuses(agent_out)
        if refused is not None and replies_out != agent_out:
            refused = self._refuses(replies_out)
            whose = " (the user's own replies, written in answer to the agent's, too)"
        if refused is not None:
            also = ", and the user's own replies" if whose else ""
            why = f"{reason}; with the agent's messages left out too{also}: {refused}"
            raise self._failure(why)
        self.left = True
        self.left_because = f"the conversation outgrew the user model's window{whose}: {reason}"

    def _refuses(self, messages: list[dict[str, str]]) -> str | None:
        """Why the user model refuses *messages* for their length or content, or None when
        it answers them (if badly: a malformed answer is an answer to this question)."""
        try:
            self._ask(messages)
        except (_TooLong, _Filtered) as again:
            return str(again)
        except _Malformed:
            pass
        return None

    def _ask(self, messages: list[dict[str, str]] | None = None) -> str:
        client = self._sdk()  # first: it explains a missing SDK
        openai = self._openai  # imported with the client, before the attempt's clock
        try:
            answer = client.chat.completions.create(
                model=self._model.revision,
                messages=self.messages if messages is None else messages,
                **{"seed": self._seed, **self._model.decoding},
            )
            if isinstance(answer, str):  # a body not labelled JSON, handed back as its text
                raise _Malformed(not_json(answer))
            text = answer.choices[0].message.content
            refusal = getattr(answer.choices[0].message, "refusal", None)
            filtered = answer.choices[0].finish_reason == "content_filter"
            failed = error_in_answer(answer)
        except openai.APIStatusError as exc:
            reason = f"HTTP {exc.status_code} (request {exc.request_id}): {api_message(exc)}"
            if _content_filtered(exc):
                raise _Filtered(bounded_message(hide_secret(reason, self._key()))) from None
            if kind_of_status(exc.status_code) == "rejected" and too_long(exc):
                raise _TooLong(bounded_message(hide_secret(reason, self._key()))) from None
            raise self._failure(reason) from None
        except openai.APIConnectionError as exc:  # a timeout too; the SDK retried it
            if not isinstance(exc.__cause__, AnswerTooLarge):
                raise self._failure(f"{type(exc).__name__}: {exc}") from None
            raise _Malformed(f"AnswerTooLarge: {exc.__cause__}") from None
        except (
            openai.APIError,  # a body the SDK cannot read as an answer
            AttributeError,
            IndexError,
            TypeError,
            ValueError,  # a body that is not JSON, or not UTF-8
            RecursionError,  # JSON nested past what Python parses
            AnswerTooLarge,  # read outside the SDK's retries
        ) as exc:
            raise _Malformed(f"{type(exc).__name__}: {unreadable(exc)}") from None
        if failed is not None:  # a provider's failure mid-answer: what it left is no message
            raise _Malformed(f"an error in a 200 answer: {failed}")
        if filtered:  # what the filter left of it is no message the user chose to send
            raise _Malformed(f"a content filter stopped its answer ({str(text)[:200]!r})")
        refused = refusal if isinstance(refusal, str) and refusal else None
        if not isinstance(text, str) or (refused and not text.strip()):
            # a refusal beside blank content too: said, not read as an empty answer
            why = f" (it refused: {refused!r})" if refused else ""
            raise _Malformed(f"its answer has no text{why}")
        return text

    def _failure(self, reason: str) -> EnvironmentFailure:
        """The user model failed for *reason*, with the key taken out: a server may echo it."""
        reason = bounded_message(hide_secret(reason, self._key()))
        return EnvironmentFailure(f"the user model failed: {reason}")

    def _key(self) -> str:
        return str(getattr(self._client, "api_key", "") or "")

    def _sdk(self) -> Any:
        if self._client is None:
            self._openai, self._client = _openai_client(self._model)
        return self._client


class _Malformed(Exception):
    """A user model's answer that is not one (see :meth:`ModelUser._answer`): retried."""


class _Filtered(Exception):
    """The user model's API refused the request for its content (see
    :meth:`ModelUser._refused`)."""


class _TooLong(Exception):
    """The user model's API refused the request for its length (see
    :meth:`ModelUser._outgrown`)."""


def _content_filtered(exc: Any) -> bool:
    """Whether an SDK status error is a content filter's refusal of the request: a 400 whose
    error (or its ``innererror``) has a code of :data:`CONTENT_FILTER_CODES`."""
    body = getattr(exc, "body", None)
    error = body.get("error", body) if isinstance(body, dict) else None
    if getattr(exc, "status_code", None) != 400 or not isinstance(error, dict):
        return False
    inner = error.get("innererror")
    codes = [error.get("code"), inner.get("code") if isinstance(inner, dict) else None]
    return any(isinstance(code, str) and code in CONTENT_FILTER_CODES for code in codes)


def _without_stop(text: str, stop: str) -> tuple[str, bool]:
    """*text* without its stop tokens, and whether it had one. Models do not keep a token's
    case or spacing (``###stop###``, ``### STOP ###``), so neither counts; a token left in the
    text would reach the agent as something the user said. A token that begins or ends with a
    letter or digit (``DONE``) counts only as a whole word there: "abandoned" or "donee" is not
    a goodbye."""
    parts = re.findall(r"\w+|[^\w\s]+", stop)
    body = r"\s*".join(re.escape(part) for part in parts)
    before = r"(?<!\w)" if re.match(r"\w", parts[0]) else ""
    after = r"(?!\w)" if re.match(r"\w", parts[-1][-1]) else ""
    pattern = re.compile(before + body + after, re.IGNORECASE)
    said, count = pattern.subn("", text)
    return said.strip(), count > 0


def user_model_problem(spec: UserSimulatorSection) -> str | None:
    """Why a model-driven user could be called in no attempt (its key's variable unset, the
    SDK missing), or None: a batch checks it first, rather than run every attempt to an
    invalid ``environment_failure/user_simulator``."""
    if spec.kind != "model" or spec.model is None:
        return None
    name = spec.model.api_key_env
    if name and not os.environ.get(name):
        return f"user_simulator.model.api_key_env: environment variable {name} is unset"
    try:
        import openai  # noqa: F401
    except ImportError:
        return "a model-driven user needs the openai SDK: pip install 'groundstate[openai]'"
    return None


def _warm_up_request(url: str) -> None:
    """One request of the user model's client to *url*, with no key (see ``warm_up``)."""
    model = UserModel(revision="-", base_url=url, max_retries=0, request_timeout=WARM_UP_SECONDS)
    _openai_client(model)[1].chat.completions.create(model="-", messages=[])


def _openai_client(model: UserModel) -> tuple[Any, Any]:
    """The ``openai`` module and a client of *model*'s."""
    try:
        import openai
    except ImportError:
        raise EnvironmentFailure(
            "a model-driven user needs the openai SDK: pip install 'groundstate[openai]'"
        ) from None
    key = os.environ.get(model.api_key_env, "") if model.api_key_env else "unused"
    if not key:
        raise EnvironmentFailure(f"the user model's key: {model.api_key_env} is unset")
    return openai, openai.OpenAI(
        api_key=key,
        base_url=model.effective_base_url(),
        timeout=model.request_timeout,
        max_retries=model.max_retries,
        http_client=whole_request_client(openai, model.request_timeout),
    )
