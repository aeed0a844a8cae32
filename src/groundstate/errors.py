"""Exceptions raised by groundstate.

::

    GroundstateError
    ├── SpecError                 a task, suite or system file is malformed
    ├── EnvironmentFailure        an environment could not be built, reset or read
    │   ├── ResetCheckFailed      reset did not restore the declared initial state hash
    │   ├── FixtureNotCarried     a kind cannot build the fixture as SQLite does (its SQL)
    │   └── ModelServingFailure   the model's API kept failing (rate limits, 5xx, timeouts)
    ├── ToolError                 a tool refuses a request; the agent gets it as a normal result
    ├── PermissionDenied          the environment refused an action the agent lacks rights for
    ├── HarnessCompatibilityError the agent cannot use the harness or tool protocol as configured
    │   └── ContextWindowExceeded the API refused the conversation for its length
    ├── AgentStop                 raised inside an episode to end the agent's loop
    │   ├── StepLimitReached
    │   ├── TimeLimitReached      also a TimeoutError
    │   ├── BudgetExceeded
    │   ├── ProhibitedAction
    │   ├── AgentGaveUp
    │   └── ConversationOver      the user has left; the agent's next action ends the episode
    ├── GraderError               an outcome assertion or constraint could not be evaluated
    │   └── JudgeFailure          a model judge's request failed or its answer was malformed
    ├── StoreError                the run store is missing, corrupt or refuses a write
    └── ExecutorError             an executor cannot run attempts (a worker died, a suite
                                  differs on a worker, Ray is not installed)
"""

from __future__ import annotations

import re
from pathlib import Path

from groundstate.paths import as_given


def one_line(text: str) -> str:
    """*text* as one line with nothing hidden: every character that is not printable (line
    breaks and tabs, C0 and C1 controls such as the escape that starts a terminal sequence,
    bidirectional marks and overrides, zero-width and other format characters, separators
    but the space, lone surrogates) is shown escaped (``\\x1b``, ``\\u202e``). Errors print
    through it, and so does every value from a run or a file in the terminal reports."""
    if text.isprintable():  # the usual case, in C
        return text
    return "".join(ch if ch.isprintable() else repr(ch)[1:-1] for ch in text)


LONG_RUN = 200
"""Characters with no space between them that an error line shows whole (a file's path, a
hash); a longer run (a 5,000-digit ``--seed``) is shortened by :func:`shortened`."""

_RUN = re.compile(rf"\S{{{LONG_RUN + 1},}}")

_QUOTED = re.compile(
    rf"""(?<!\w)(?:'((?:[^'\\]|\\.){{{LONG_RUN + 1},}})'"""
    rf"""|"((?:[^"\\]|\\.){{{LONG_RUN + 1},}})")(?!\w)"""
)
"""A quoted value (as ``repr`` quotes it: ``'...'``, or ``"..."`` when it holds a ``'``) of
more than :data:`LONG_RUN` characters, spaces or none: its opening quote not the apostrophe
of a word (``suite's``)."""


def shortened(text: str) -> str:
    """*text* with each quoted value, and each run without a space, of more than
    :data:`LONG_RUN` characters shown by its first 80 and last 30 characters and its length
    between them (the quotes and punctuation around it kept apart):
    ``'9999...9999…(5,000 characters)…9999'``. A refusal quoting a value a user gave names it
    and says why; echoed whole, a value of megabytes (or a task id of 3,000 words) buried
    the reason. The command line's refusals print through it (``groundstate.cli``)."""
    return _RUN.sub(_shorten, _QUOTED.sub(_shorten_quoted, text))


def _shorten_quoted(quoted: re.Match[str]) -> str:
    value = quoted[1] if quoted[1] is not None else quoted[2]
    mark = quoted[0][0]
    return f"{mark}{value[:80]}…({len(value):,} characters)…{value[-30:]}{mark}"


def _shorten(run: re.Match[str]) -> str:
    whole = run[0]
    # a quote or bracket before it, a quote and punctuation after it ("'...':") kept apart
    lead = min(len(whole) - len(whole.lstrip("'\"(")), 2)
    core = whole[lead:]
    value = core[: len(core) - min(len(core) - len(core.rstrip("'\":;,.)")), 3)]
    if len(value) <= LONG_RUN:
        return whole
    after = core[len(value) :]
    return f"{whole[:lead]}{value[:80]}…({len(value):,} characters)…{value[-30:]}{after}"


def printable(text: str) -> str:
    """Multi-line *text* (an agent's message, the output a run printed): each line as
    :func:`one_line` shows it, tabs kept. In a report, print it indented under its
    heading: a line of it must not pass for one of ours."""
    # Tabs kept, as line breaks are: in the middle of a line they cannot pass for one of ours.
    return "\n".join("\t".join(map(one_line, line.split("\t"))) for line in text.split("\n"))


_DIGITS = re.compile(r"Exceeds the limit \((\d+) digits\).*value has (\d+) digits", re.DOTALL)


def named_value(value: str) -> str:
    """*value* (an id or name a user gave) as a message names it: as it is when it is one
    printable word (``no batch nope``), else quoted as ``repr`` quotes it, so that where it
    ends shows and a long one is shortened (:func:`shortened`): ``no batch 'word word ...'``
    echoed 3,000 words whole."""
    plain = value.isprintable() and not any(c.isspace() or c in "'\"" for c in value)
    return value if value and plain else repr(value)


def value_problem(exc: ValueError | OverflowError) -> str:
    """What is wrong with a value Python refused to make, in the file's terms: its advice for
    an integer past 4,300 digits (``sys.set_int_max_str_digits()``) is a call an author
    cannot make."""
    digits = _DIGITS.search(str(exc))
    if digits is not None:
        return f"an integer of {digits[2]} digits: past the limit of {digits[1]} digits"
    return exception_text(exc)


class GroundstateError(Exception):
    """Base class of every error groundstate raises on purpose."""

    listed = False
    """Its message is a line and a list under it, one item a line (the command line prints
    each on its own line, indented; any other message is printed as one line)."""

    several = False
    """Its message is several errors, one a line (the command line prints each as an
    ``error: ...`` line of its own; a suite's problems before ``run``). Whoever builds a
    listed or several message makes each of its lines with :func:`one_line`: a line break in a
    value quoted (a check's detail) must not start a line of its own."""


class SpecError(GroundstateError):
    """A task, suite or system file is malformed."""

    def __init__(
        self, path: object, field: str | None, reason: str, *, line: int | None = None
    ) -> None:
        self.path = str(path)
        self.field = field
        self.reason = reason
        self.line = line
        """1-based line of the file the problem is on, where known."""
        self.every: tuple[SpecError, ...] = ()
        """Each problem of the file on its own, when this error summarises several (a model's
        validation errors); ``groundstate check`` reports them one by one."""
        where = one_line(f"{self.path}:{line}" if line is not None else self.path)
        where = f"{where}: {field}" if field else where
        super().__init__(f"{where}: {reason}")

    def rerooted(self, absolute: Path, given: Path) -> SpecError:
        """The same problem, its file named as :func:`groundstate.paths.as_given` names it;
        itself when the file is elsewhere (or the error is a kind of its own)."""
        where = as_given(self.path, absolute, given)
        if type(self) is not SpecError or where == self.path:
            return self
        moved = SpecError(where, self.field, self.reason, line=self.line)
        moved.every = tuple(e.rerooted(absolute, given) for e in self.every)
        return moved


class EnvironmentFailure(GroundstateError):
    """The environment is broken independently of the agent's decisions."""


class ResetCheckFailed(EnvironmentFailure):
    """Reset did not restore the declared initial state."""


class FixtureNotCarried(EnvironmentFailure):
    """A kind cannot build the fixture as the SQLite kind does: its schema or rows use what
    the kind refuses or would treat otherwise (the postgres kind and SQLite-only SQL). The
    suite's fault, found before any attempt: ``groundstate check`` reports it."""


class ModelServingFailure(EnvironmentFailure):
    """The serving infrastructure of the model failed past its retries: not the agent's doing.

    Raised by a model adapter; the attempt ends as ``environment_failure/model_serving``.
    """

    def __init__(self, message: str, evidence: dict[str, object] | None = None) -> None:
        super().__init__(message)
        self.evidence = evidence or {}
        """Status code, request id, message and tries of the last failure."""


class ToolError(GroundstateError):
    """A tool declines a request (unknown order, wrong password...).

    The message is returned to the agent; it is a normal outcome of a call,
    not a fault of the environment.
    """


class HarnessCompatibilityError(GroundstateError):
    """The system under test cannot use the harness or tool protocol as configured."""


class ContextWindowExceeded(HarnessCompatibilityError):
    """The model's API refused the conversation for its length: it outgrew the model's context
    window (``harness_compatibility_failure/context_window``, as the importers name it)."""


class AgentStop(GroundstateError):
    """Ends the agent's loop from inside a tool call or message."""


class StepLimitReached(AgentStop):
    """The agent used more steps than its budget allows."""


class TimeLimitReached(AgentStop, TimeoutError):
    """The attempt ran past its time limit (whatever the agent was doing)."""


class BudgetExceeded(AgentStop):
    """The agent's reported cost went over the system's budget."""


class ProhibitedAction(AgentStop):
    """The agent attempted an action its permissions forbid."""


class AgentGaveUp(AgentStop):
    """The agent declared that it cannot complete the task."""


class ConversationOver(AgentStop):
    """The simulated user has left: the episode ends normally and is graded."""


class GraderError(GroundstateError):
    """An outcome assertion, constraint or rubric could not be evaluated."""


class JudgeFailure(GraderError):
    """A model judge gave no verdict: its request failed past its retries, or its answer was
    not in the fixed format. The judged assertion is a grader failure."""

    def __init__(self, message: str, evidence: dict[str, object] | None = None) -> None:
        super().__init__(message)
        self.evidence = evidence or {}
        """Status code, request id, tries; the answer when it was malformed."""


class StoreError(GroundstateError):
    """The run store cannot be read or written."""


class PermissionDenied(GroundstateError):
    """The agent's permissions forbid this action; the denial is the agent's doing."""


class ExecutorError(GroundstateError):
    """An executor cannot run attempts: a worker died, the suite a worker loads differs from
    the batch's, an agent cannot be built in a worker, or the executor is not installed."""


def exception_text(exc: BaseException) -> str:
    """``str(exc)``, or a placeholder when the exception cannot say it: an agent's exception
    (or an object in its arguments) may raise from ``__str__``, which must not turn the
    agent's crash into the harness's."""
    try:
        return str(exc)
    except Exception:
        return f"<{type(exc).__name__}: str() failed>"
