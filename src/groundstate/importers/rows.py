"""One imported attempt, whatever file it came from, and the verdict rules every reader shares.

Readers turn their format into :class:`ImportedRow` values; :mod:`groundstate.importers.batch`
turns rows into a stored batch. A row keeps the attempt label exactly as the file gave it
(``0``, ``"trial-a"``); the attempt number it is stored under is decided for the whole file.
"""

from __future__ import annotations

import json
import math
import uuid
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any, Literal, Protocol, TypeVar

from groundstate.errors import SpecError, value_problem
from groundstate.importers.compressed import DAMAGED, damaged, open_bytes, read_bytes
from groundstate.rounding import counted, inflected

T = TypeVar("T")

TERMINAL_PREFIXES = (
    "success",
    "agent_failure",
    "harness_compatibility_failure",
    "environment_failure",
    "grader_failure",
)
REWARD_TOLERANCE = 1e-6
"""A reward within this of 1 is a success (τ²-bench's own tolerance)."""

ErrorPolicy = Literal["agent", "environment"]
"""Whose fault an attempt is that ended in an exception the file does not attribute
(τ-bench's ``info.error``, an Inspect sample's ``error``): ``agent`` (the default, as those
harnesses score it: a failure of the system) or ``environment`` (invalid, rerun)."""
ERROR_REASONS: dict[str, str] = {
    "agent": "agent_failure/crashed",
    "environment": "environment_failure/harness_error",
}
UNGRADED: dict[str, str] = {
    "agent": "agent_failure/ungraded",
    "environment": "grader_failure",
}
"""An error the grader raised on the final state (Harbor's verifier, an Inspect scorer): an
agent can provoke one (a state the tests hang on) as easily as a broken grader can, so it
follows ``--errors`` too, as a state that could not be graded rather than a crash."""


def respelled(value: str, known: Iterable[str]) -> str | None:
    """The name of *known* that *value* is another spelling of (``"MAX_STEPS"``, ``"Max
    Steps "`` for ``max_steps``), or ``None``: a harness writes its own names one way, so
    another spelling is a file it did not write, which read as a name not known here would
    be decided as no stop."""
    spelled = value.strip().lower().replace("-", "_").replace(" ", "_")
    names = set(known)
    return spelled if value not in names and spelled in names else None


def raised(error: Any) -> bool:
    """An error field (τ-bench's ``info.error``, an Inspect sample's ``error``) says the attempt
    raised: any value but null. An exception without a message is still one: τ-bench writes
    ``str(e)``, which is ``""`` for ``TimeoutError()``; read as no error, the attempt was
    decided by its reward of 0 whatever ``--errors`` said."""
    return error is not None and error is not False


Tokens = tuple[int | None, int | None]
"""(input, output) tokens; either ``None`` when not known."""


@dataclass(frozen=True, slots=True)
class ImportedRow:
    """One attempt read from another harness's results."""

    line: int
    """Where it was read: the file line (CSV, JSONL) or the 1-based position in the file's
    list of results (τ-bench, τ²-bench, Inspect samples)."""
    task_id: str
    label: int | str
    """The attempt label as the file gave it (τ-bench trials are 0-based, Inspect epochs
    1-based; text labels are kept as text)."""
    success: bool
    terminal_reason: str
    cost: float | None = None
    """Dollars; ``None`` when the file gives none (not known: never stored as 0)."""
    latency: float | None = None
    """Seconds; ``None`` when the file gives none."""
    tokens: Tokens | None = None
    """(input, output) tokens of the system's model calls, when the file counts them; either
    ``None`` when the file leaves that count out (not known: never stored as 0)."""
    partial_score: float | None = None
    """A partial reward in [0, 1], kept beside ``success``, never instead of it."""
    reward: float | None = None
    """The reward or score behind the verdict, when the file grades the attempt with one. In a
    file with any partial reward, every graded attempt keeps its reward as its partial score
    (a success 1, a failure 0): the batch's partial score is then the mean reward the other
    harness reports, not a mean over the partially rewarded attempts only."""
    retry: int = 0
    task_revision: int | None = None
    weight: float | None = None
    horizon: int | None = None
    slice_labels: tuple[str, ...] | None = None
    invalid_task: bool | None = None
    """The task failed validation and ran anyway (a batch's ``invalid_tasks``, as an export
    writes it): reported apart, in no figure."""
    judge_errors: int = 0
    """Judged assertions whose judge could not judge (:attr:`AgentRun.judge_errors`, as an
    export writes it): stored as that many judged results with an error, so that every
    report counts them as it counted them in the batch exported."""
    origin: dict[str, Any] | None = None
    """What the file said that has no field of ours (the original terminal value, an error
    message); stored in the run's ``infrastructure_status``."""
    mapped: str | None = None
    """How a foreign verdict or end was mapped, e.g. ``"max_steps -> agent_failure/step_limit"``
    (counted in the import report)."""
    unmapped: str | None = None
    """A value that could not be mapped (counted and printed as a warning)."""
    ignored: tuple[str, ...] = ()
    """Columns of this row that no field reads (named once in a warning)."""


class ResultSource(Protocol):
    """A results file in one format, read row by row."""

    @property
    def path(self) -> Path: ...

    @property
    def format(self) -> str:
        """The format's name (``csv``, ``tau2-bench`` ...), kept with the batch."""
        ...

    def rows(self) -> Iterator[ImportedRow]: ...

    def place(self, line: int) -> str:
        """Where the row read at *line* (:attr:`ImportedRow.line`) sits, for a message about
        it: ``file:line``, a list position, an archive member or a file of its own."""
        ...

    def system(self) -> dict[str, Any]:
        """What the file says about the system that produced it (model, agent, harness)."""
        ...

    def warnings(self) -> list[str]:
        """What the file says about itself that the numbers should be read with (an
        unfinished log), one line each; asked after every row is read."""
        ...


@dataclass(frozen=True, slots=True)
class Verdict:
    """Success, terminal reason and partial score decided from a reward."""

    success: bool
    terminal_reason: str
    partial_score: float | None = field(default=None)


def reward_verdict(reward: float, failure: str = "agent_failure/incorrect_state") -> Verdict:
    """reward == 1 (within :data:`REWARD_TOLERANCE`) is a success; anything else a failure
    whose reward, when strictly between 0 and 1, is kept as the partial score."""
    if abs(reward - 1.0) <= REWARD_TOLERANCE:
        return Verdict(True, "success")
    partial = reward if 0.0 < reward < 1.0 else None
    return Verdict(False, failure, partial)


SHOWN = 5
"""How many attempts a warning names before it counts the rest."""


@dataclass
class StoppedRewards:
    """Attempts a stop decided (a limit hit, an error raised) that their file still gives a
    non-zero reward. A limit hit is a failure with its terminal reason, never a success and
    never partly one (the reference chapter: an agent that "stops, times out" fails): such an
    attempt is read by its end, its reward as 0 (the reward given is kept in its origin), and
    the file's attempts so read are named in one warning. Read by its reward, a ``max_steps``
    end of 0.8 was a failure kept with a partial score of 0.8, and one of 1 a failure scoring
    1 in the batch's mean reward.

    Two kinds of harness: one that scores such an end 0 itself (τ² every end but
    ``agent_stop`` and ``user_stop``, τ-bench an attempt that raised or ran out of steps), where
    the reward is none the harness wrote (τ²'s own ``recombine_rewards`` sets it back to 0 as a
    corrupted one); and one whose own figures count it (*counts*: Harbor grades the state an
    agent timeout or a non-zero exit left, and its mean and pass@k read the reward alone),
    where the warning says the batch's figures differ from the harness's by these
    attempts."""

    harness: str
    """The harness, and what it does with such a reward (for the warning)."""
    counts: bool = False
    """The harness's own figures count the reward (a difference, not an edited file)."""
    places: list[str] = field(default_factory=list)

    def reward(self, where: str, end: str, reward: float | None) -> float | None:
        """The reward a stop at *where* (its *end*) counts: 0 for any non-zero one."""
        if not reward:
            return reward
        self.note(where, f"{end}, reward {reward!r}")
        return 0.0

    def note(self, where: str, what: str) -> None:
        """A stop at *where* that its file credits (*what*: its end and the credit given)."""
        self.places.append(f"{where} ({what})")

    def warnings(self, path: Path | str) -> list[str]:
        if not self.places:
            return []
        shown = "; ".join(self.places[:SHOWN])
        more = f" and {len(self.places) - SHOWN} more" if len(self.places) > SHOWN else ""
        why = (
            "here the stop decides, so the batch's figures leave out what that harness counts "
            "for them"
            if self.counts
            else "the file was edited, or rescored by a script that ignored the end?"
        )
        return [
            f"{path}: {counted(len(self.places), 'attempt')} that a limit or an error ended "
            f"{inflected(len(self.places), 'carries', 'carry')} a non-zero reward "
            f"({shown}{more}), which {self.harness}: read as failures "
            f"by their end with reward 0, never as successes or partial scores ({why})"
        ]


def reward_kind(reward: float) -> str:
    """``1``, ``0`` or ``partial``: a reward as the import report counts it."""
    if reward_verdict(reward).success:
        return "1"
    return "0" if reward == 0 else "partial"


def check_reason(where: str, reason: str, success: bool) -> str:
    """*reason* if it is in the taxonomy and agrees with *success*; else a named error."""
    if not reason.isascii():
        checked(where, "terminal_reason", as_text, reason)
    if reason.split("/")[0] not in TERMINAL_PREFIXES:
        raise SpecError(where, "terminal_reason", f"unknown terminal reason {reason!r}")
    if (reason == "success") != success:
        raise SpecError(
            where, "terminal_reason", f"success={success} contradicts terminal_reason {reason!r}"
        )
    return reason


def _not_text(value: Any, what: str = "number") -> None:
    """Refuse *value* given as text: every harness whose JSON these importers read writes its
    numbers as JSON numbers (pydantic ``model_dump``, ``json.dump`` of ints and floats), so a
    ``"1"`` there is an edited or hand-made file, and read as 1 it would pass a task no run
    passed. The row format's readers (:func:`lax`) take text, as a CSV holds nothing else."""
    if not isinstance(value, str):
        return
    article = "an" if what[0] in "aeiou" else "a"
    try:
        float(value)
    except ValueError:
        raise ValueError(f"must be {article} {what}, got {value!r}") from None
    raise ValueError(
        f"must be {article} {what} written as a JSON {what}, got text {value!r} (the harness "
        f"writes it unquoted: a quoted {what} is from a file it did not write)"
    )


def lax(parse: Callable[[Any], T]) -> Callable[[Any], T]:
    """*parse* that also reads a number written as text (``" 1 "``, ``"0.5"``, ``"3.0"``):
    for the row format (CSV and JSON Lines rows), whose cells may be text."""

    def read(value: Any) -> T:
        if isinstance(value, str):
            text = value.strip()
            number: float | None = _integer_text(text)
            if number is None:
                number = _number_text(text)
            if number is None:
                raise ValueError(f"must be a number, got {value!r}")
            value = number
        return parse(value)

    return read


def as_number(value: Any) -> float:
    """A finite JSON number (not its text: see :func:`_not_text`); ``ValueError`` says why
    not."""
    _not_text(value)
    if isinstance(value, bool):
        raise ValueError(f"must be a number, got {value!r}")
    try:
        result = float(value)
    except (TypeError, ValueError):
        raise ValueError(f"must be a number, got {value!r}") from None
    if not math.isfinite(result):
        raise ValueError(f"must be a finite number, got {value!r}")
    return result


def as_reward(value: Any) -> float:
    """A reward or score: a finite number in [0, 1] (within :data:`REWARD_TOLERANCE` of its
    ends, as float sums leave them). Another number is no reward these harnesses give: a 1.5
    was a failure kept with a partial score of 1, a -1 lowered the batch's mean reward. A JSON
    ``true``/``false`` or text is refused, as :func:`as_number` does: τ-bench, τ² and Harbor
    dump their ``float`` rewards as numbers (pydantic turns a ``True`` given it into ``1.0``
    before it writes), so neither is in a file they wrote. Inspect's score values, which may be
    booleans, are read apart."""
    result = as_number(value)
    if not -REWARD_TOLERANCE <= result <= 1.0 + REWARD_TOLERANCE:
        raise ValueError(f"must be a reward in [0, 1], got {value!r}")
    return result


def as_amount(value: Any) -> float:
    """A cost or a duration: a finite number, not negative (a negative one would lower the
    batch's mean cost or latency below what was spent)."""
    result = as_number(value)
    if result < 0:
        raise ValueError(f"must not be negative, got {value!r}")
    return result


INTEGER_LIMIT = 2**53
"""The largest integer magnitude read: what a JSON number holds exactly in every reader, and
so that attempt numbers made from labels stay within the store's 64-bit integers."""


def as_integer(value: Any) -> int:
    """An integer (a JSON integer, also written as a float: ``3.0``, as data-frame libraries
    write an integer column with gaps; not its text) within :data:`INTEGER_LIMIT`; ``ValueError``
    says why not."""
    _not_text(value, "integer")
    result = None
    if isinstance(value, int) and not isinstance(value, bool):
        result = value
    elif isinstance(value, float) and value.is_integer():
        result = int(value)
    if result is None:
        raise ValueError(f"must be an integer, got {value!r}")
    if abs(result) > INTEGER_LIMIT:
        raise ValueError(f"must be an integer between -2^53 and 2^53, got {value!r}")
    return result


def as_text(value: Any) -> str:
    """Text that can be stored: a lone surrogate (``"\\ud800"``, legal in JSON) is refused."""
    if not isinstance(value, str):
        raise ValueError(f"must be text, got {value!r}")
    if value.isascii():  # the usual case, and quick
        return value
    try:
        value.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise ValueError(
            f"not valid Unicode text: {value[exc.start : exc.end]!r} at position {exc.start}"
        ) from None
    return value


def as_label(value: Any) -> int | str:
    """An attempt label as given: an integer not below 0 (``0``, ``"3"``, and ``1.0`` or
    ``"1.0"``, as a writer that keeps integers as floats gives them) or a text label that is
    no number. Harnesses count attempts from 0 or 1, so a ``-1`` is a mistake (the label rule
    would have shifted it into attempt 1 unseen), and a ``"1.5"`` no attempt (as a JSON
    ``1.5`` is not; ``"1e400"`` and ``"nan"`` stay text labels); a JSON ``true`` is no label."""
    if isinstance(value, str) and value.strip():
        text = value.strip()
        number = _integer_text(text)
        if number is None:
            if math.isfinite(_number_text(text) or math.inf):  # "1e400", "nan": text labels
                raise ValueError(f"must be a whole attempt number or a text label, got {value!r}")
            return as_text(text)
        return _not_negative(as_integer(number), value)
    if isinstance(value, int | float) and not isinstance(value, bool):
        return _not_negative(as_integer(value), value)
    raise ValueError(f"must be an integer or a text label, got {value!r}")


def _not_negative(label: int, given: Any) -> int:
    if label < 0:
        raise ValueError(f"must not be negative (attempts count from 0 or 1), got {given!r}")
    return label


def _number_text(text: str) -> float | None:
    """The number *text* writes as a CSV cell holds one (``"3"``, ``"-0.5"``, ``"1e3"``,
    ``"nan"``), else ``None``. Python's own readers also take ``"1_0"`` (as 10) and digits of
    other scripts (Arabic-Indic one as 1), which no other reader of the file takes for a number."""
    if not text.isascii() or "_" in text:
        return None
    try:
        return float(text)
    except ValueError:
        return None


def _integer_text(text: str) -> int | None:
    """The integer *text* writes (``"3"``, and ``"3.0"`` or ``"3e0"`` as a float), else
    ``None``: :func:`_number_text`'s rules."""
    if not text.isascii() or "_" in text:
        return None
    try:
        return int(text)  # the usual case first: one call per row of a large file
    except ValueError:
        number = _number_text(text)
    if number is not None and math.isfinite(number) and number.is_integer():
        return int(number)
    return None


def checked(where: str, name: str, parse: Callable[[Any], T], value: Any) -> T:
    """``parse(value)``, its ``ValueError`` turned into an error naming *where* and *name*."""
    try:
        return parse(value)
    except ValueError as exc:
        raise SpecError(where, name, str(exc)) from None


def number(where: str, name: str, value: Any) -> float:
    return checked(where, name, as_number, value)


def integer(where: str, name: str, value: Any) -> int:
    return checked(where, name, as_integer, value)


def amount(where: str, name: str, value: Any) -> float:
    return checked(where, name, as_amount, value)


def duration(where: str, name: str, start: Any, end: Any) -> float | None:
    """The seconds from *start* to *end* (ISO 8601 times); ``None`` when either is missing
    (the phase did not finish)."""
    if start is None or end is None:
        return None
    try:
        seconds = (datetime.fromisoformat(end) - datetime.fromisoformat(start)).total_seconds()
    except (TypeError, ValueError):
        raise SpecError(
            where, name, f"times must be ISO 8601, both with or both without a time zone, "
            f"got {start!r} and {end!r}",
        ) from None  # fmt: skip
    return amount(where, name, seconds)


def count(where: str, name: str, value: Any) -> int | None:
    """A token count: an integer not below 0; a count the file leaves out (``None``) is not
    known, ``None``: stored as 0 it would read as an attempt that used no tokens and pull
    every mean of the counts down."""
    if value is None:
        return None
    result = integer(where, name, value)
    if result < 0:
        raise SpecError(where, name, f"must not be negative, got {value!r}")
    return result


def total(counts: Iterable[int | None]) -> int | None:
    """The sum of *counts*; ``None`` when any is not known (the sum of the others would
    understate it)."""
    result = 0
    for each in counts:
        if each is None:
            return None
        result += each
    return result


def token_lists(where: str, name: str, value: Any) -> int | None:
    """A token count given as one integer or, as τ-bench's first agents kept it, a list of
    one per model call."""
    if isinstance(value, list):
        return total(count(where, f"{name}[{i}]", v) for i, v in enumerate(value))
    return count(where, name, value)


@dataclass
class OnceEach:
    """A record's own id (a τ² simulation's ``id``, an Inspect sample's ``uuid``, a Terminal-Bench
    or Harbor trial's ``id``: unique to one attempt as its harness writes it) met once: the
    same record given again under another label (two files merged, a record pasted and its
    trial number or epoch edited) is one attempt read twice, which would double its weight."""

    what: str
    """What the id names, for the error ("simulation")."""
    seen: dict[str, tuple[str, str | None]] = field(default_factory=dict)
    """Each id met: where, and the label it came with."""

    def check(self, where: str, name: str, value: Any, label: Any = None) -> None:
        """*value* (the record's field *name*, at *where*) not met before; an id not given (or
        not text) says nothing. With the attempt's *label* as the file gives it, an id met again
        under the same label is left to the batch's check, which names it more plainly
        (``attempt 1 appears twice``); without one (Harbor, checked before any row), any id
        met twice is refused."""
        if not isinstance(value, str) or not value.strip():
            return
        given = None if label is None else repr(label)
        key = _spelled_once(value)
        if key in self.seen and (given is None or self.seen[key][1] != given):
            raise SpecError(
                where, name, f"{self.what} {value} is also at {self.seen[key][0]}: one "
                f"{self.what} is one attempt (given twice, it would count twice)",
            )  # fmt: skip
        self.seen.setdefault(key, (where, given))


def _spelled_once(value: str) -> str:
    """One spelling of a record's id: without surrounding spaces, and a UUID (what Harbor,
    Terminal-Bench and τ² write) in its canonical form, as ``A1B2...`` and ``a1b2...``, with or
    without hyphens, braces or ``urn:uuid:``, name one record. Any other id (an Inspect
    ``uuid`` is a case-sensitive short UUID) is kept as given."""
    value = value.strip()
    try:
        return str(uuid.UUID(value))
    except ValueError:
        return value


def read_json(path: Path) -> Any:
    """A whole JSON file (decompressed, if it is compressed), or one named error (unreadable,
    damaged, not UTF-8, not JSON)."""
    try:
        data = read_bytes(path)
    except DAMAGED as exc:
        raise SpecError(path, None, damaged(path, exc)) from None
    except ValueError as exc:  # a compressed file holding too much
        raise SpecError(path, None, str(exc)) from None
    try:
        text = data.decode("utf-8-sig")  # a byte-order mark is not JSON
    except UnicodeDecodeError:
        raise SpecError(path, None, not_utf8(path)) from None
    return parse_json(text, str(path))


def read_json_object(path: Path, what: str) -> dict[str, Any]:
    """A whole JSON file that must hold an object (*what* names what it is, for the error
    when it does not: "a SWE-bench run report")."""
    data = read_json(path)
    if not isinstance(data, dict):
        raise SpecError(path, None, f"{what} is a JSON object, not a {type(data).__name__}")
    return data


UTF16_MARKS = (b"\xff\xfe", b"\xfe\xff")
"""Byte-order marks of UTF-16 (and UTF-32) text: what Windows PowerShell's ``>`` writes."""


def not_utf8(path: Path) -> str:
    """Why *path* could not be read as UTF-8 text, naming UTF-16 when its first bytes say so,
    else the line of the first byte that is not UTF-8 (in a file of a million rows, "not
    UTF-8" alone leaves the row to find)."""
    try:
        with open_bytes(path) as handle:
            if handle.read(2) in UTF16_MARKS:
                return "UTF-16 text, not UTF-8: save it as UTF-8"
            handle.seek(0)
            offset = 0
            for number, line in enumerate(handle, start=1):  # no UTF-8 sequence holds "\n"
                try:
                    line.decode("utf-8")
                except UnicodeDecodeError as exc:
                    byte, at = line[exc.start], offset + exc.start
                    return f"not UTF-8 text (byte 0x{byte:02x} on line {number}, at offset {at})"
                offset += len(line)
    except DAMAGED:
        pass
    return "not UTF-8 text"


def parse_json(text: str | bytes, where: str, *, at_line: bool = True) -> Any:
    """*text* as JSON, or one error naming *where* (and the line of a syntax error when
    *at_line*). An object that gives a key twice is refused, naming the key and where it sits
    (``samples[3].scores``): which of the two counts is the writer's guess, not the file's;
    nesting too deep to read is refused, not a ``RecursionError``."""
    try:
        return json.loads(text, object_pairs_hook=_unique_keys)
    except json.JSONDecodeError as exc:
        place = f"{where}:{exc.lineno}" if at_line else where
        reason = f"{exc.msg}{located(exc.colno, exc.pos)}{_nul(exc)}"
        raise SpecError(place, None, f"not valid JSON: {reason}") from None
    except UnicodeDecodeError:
        raise SpecError(where, None, "not UTF-8 text") from None
    except RecursionError:
        raise SpecError(where, None, "not readable JSON: nested too deeply") from None
    except MemoryError:  # a document under the size read whole that parses into more
        raise SpecError(where, None, "too large to read: out of memory parsing it") from None
    except ValueError as exc:  # an integer of more than 4,300 digits
        raise SpecError(where, None, f"not valid JSON: {value_problem(exc)}") from None
    except DoubledKey:
        field = doubled_field(json.loads(text, object_pairs_hook=_Doubled.mark))
        raise SpecError(where, field, "the key appears twice in one object") from None


NUL_RUN = 4
"""NULs in a row that make text no text: a value may hold a NUL or two (an id kept as
written), never such a run."""


def nul_reason(text: str) -> str | None:
    """Why *text* (a line, the start of a file, what follows where a parse stopped) is not
    UTF-8 text, when its NULs say so, else ``None``: a run of NULs (the zeros a crash leaves
    where the end of a file was being written, or a file that is no text), or a NUL between
    every two characters (UTF-16 without a byte-order mark). Read on, either gave a message
    about something else: a blank cell, "Expecting value", or no format at all."""
    if "\x00" * NUL_RUN in text:
        return (
            "a run of NUL bytes: the end of a file a crash cut short (zeros where it was "
            "being written), or no text; nothing is imported from a damaged file"
        )
    head = text[:NUL_RUN]
    if len(head) == NUL_RUN and ("\x00" == head[0] == head[2] or "\x00" == head[1] == head[3]):
        return (
            "a NUL between every two characters: UTF-16 text without a byte-order mark, "
            "not UTF-8: save it as UTF-8"
        )
    return None


def located(column: int, offset: int) -> str:
    """Where on its line a syntax error is, and where in the text: a results file is often
    one line of megabytes (a list dumped without breaks), whose line alone says nothing."""
    return f" (column {column}, character {offset})"


def _nul(exc: json.JSONDecodeError) -> str:
    """:func:`nul_reason` for where a parse stopped, as a note to its error."""
    after = exc.doc[exc.pos : exc.pos + 64] if isinstance(exc.doc, str) else ""
    reason = nul_reason(after) if after.startswith("\x00") else None
    return "" if reason is None else f" ({reason})"


class DoubledKey(Exception):
    """A key given twice in one JSON object (raised to stop parsing; then located)."""


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    result = dict(pairs)
    if len(result) < len(pairs):
        raise DoubledKey
    return result


def doubled_field(value: Any, prefix: str = "") -> str | None:
    """Where in *value* (parsed with :data:`MARKING`) an object gave a key twice, as a field
    (``samples[3].scores.match``; *prefix* the path to *value* itself), or ``None``."""
    found = _doubled(value)
    return f"{prefix}{found[0]}.{found[1]}".lstrip(".") if found else None


class _Doubled(dict[str, Any]):
    """An object that gave :attr:`key` twice, marked on a second parse to find where it sits
    (the error path only)."""

    key = ""

    @classmethod
    def mark(cls, pairs: list[tuple[str, Any]]) -> dict[str, Any]:
        result = dict(pairs)
        if len(result) == len(pairs):
            return result
        marked = cls(result)
        seen: set[str] = set()
        for key, _ in pairs:
            if key in seen:
                marked.key = key
                break
            seen.add(key)
        return marked


UNIQUE = json.JSONDecoder(object_pairs_hook=_unique_keys)
"""A decoder that raises :class:`DoubledKey` on an object giving a key twice."""
MARKING = json.JSONDecoder(object_pairs_hook=_Doubled.mark)
"""A decoder that marks such an object, for :func:`doubled_field` (the error path only)."""


def _doubled(value: Any) -> tuple[str, str] | None:
    """(path, key) of the first object in *value* that gave a key twice, the path as
    ``.simulations[2].reward_info``."""
    if isinstance(value, _Doubled):
        return "", value.key
    steps: Iterator[tuple[str, Any]]
    if isinstance(value, dict):
        steps = ((f".{key}", child) for key, child in value.items())
    elif isinstance(value, list):
        steps = ((f"[{index}]", child) for index, child in enumerate(value))
    else:
        return None
    for step, child in steps:
        found = _doubled(child)
        if found is not None:
            return step + found[0], found[1]
    return None


def mapping(where: str, name: str, value: Any) -> dict[str, Any]:
    """*value* if it is a JSON object (``None`` as empty), else a named error."""
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise SpecError(where, name, f"must be an object, got {type(value).__name__}")
    return value


class IntegerKey(str):
    """A task id a file gave as a JSON integer, kept as its text (``1`` as ``"1"``), marked
    so that the import can refuse a file that also gives ``"1"`` as text: the two are two ids
    to the harness that wrote them (Inspect's sample ids are ``int | str``), and read as one
    task their attempts would merge. The import stores it as plain text."""

    __slots__ = ()


def as_task_id(value: Any) -> str:
    """A task id: text or an integer, kept as text (an integer's as an :class:`IntegerKey`).
    Blank text is refused. Text with a space at either end is kept as written, as other
    characters that do not show (a NUL, a line break, an escape) are: our own exports carry
    such ids, and an import must give back exactly the batch exported."""
    if isinstance(value, bool) or not isinstance(value, str | int):
        raise ValueError(f"must be a task id (text or integer), got {value!r}")
    if isinstance(value, int):
        return IntegerKey(value)
    if not value.strip():
        raise ValueError(f"must not be blank, got {value!r}")
    return as_text(value)


def task_key(where: str, name: str, value: Any) -> str:
    """A task id from a foreign file (:func:`as_task_id`)."""
    if isinstance(value, bool) or not isinstance(value, str | int) or value == "":
        raise SpecError(where, name, f"required: a task id (text or integer), got {value!r}")
    return checked(where, name, as_task_id, value)


def planned(
    where: str, count_field: str, given_count: Any, ids_field: str, given_ids: Any,
    *, repeated: str | None = None,
) -> tuple[int | None, list[str] | None]:  # fmt: skip
    """A plan a foreign file gives: each task's attempts (*count_field*: Terminal-Bench's
    ``n_attempts``, Inspect's ``config.epochs``), an integer of 1 or more, and the tasks (its
    *ids_field*: a list of task ids), each ``None`` when not given. *repeated*, when given,
    says why a task listed twice is refused (its harness runs a task its count's times,
    whatever the list says); without it a repeat is left to the caller."""
    each = None if given_count is None else integer(where, count_field, given_count)
    if each is not None and each < 1:
        raise SpecError(where, count_field, f"must be 1 or more, got {given_count!r}")
    if given_ids is None:
        return each, None
    if not isinstance(given_ids, list):
        raise SpecError(where, ids_field, f"must be a list of task ids, got {given_ids!r}")
    ids = [task_key(where, f"{ids_field}[{i}]", v) for i, v in enumerate(given_ids)]
    if repeated is not None:
        twice = sorted(task for task, n in Counter(ids).items() if n > 1)
        if twice:
            raise SpecError(where, ids_field, f"lists {twice[0]!r} twice: {repeated}")
    return each, ids
