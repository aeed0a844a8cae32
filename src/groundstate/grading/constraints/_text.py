"""Normalised text, so that message checks see through case, spacing and digit grouping."""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Callable, Iterable, Iterator
from decimal import Context, Decimal, localcontext
from functools import lru_cache, wraps
from typing import Any, ParamSpec, TypeVar

from groundstate.lookalike import FOLDED as _FOLDED
from groundstate.trace import MessageEvent, ModelCallEvent, ToolCallEvent

_P = ParamSpec("_P")
_R = TypeVar("_R")

EXACT = Context()
"""The decimal context amounts are read under: Python's default (28 digits, half even), never
the calling thread's, which code running beside the harness can change (an in-process agent's
``getcontext().prec = 1`` read "twelve dollars and forty-five cents" as ``1E+1``, and a
reading cached under it was served to every grading after)."""


def exact(function: Callable[_P, _R]) -> Callable[_P, _R]:
    """*function* run under :data:`EXACT`; beneath an ``lru_cache``, what the cache keeps is
    read under it whichever thread asked first."""

    @wraps(function)
    def run(*args: _P.args, **kwargs: _P.kwargs) -> _R:
        with localcontext(EXACT):
            return function(*args, **kwargs)

    return run


_SPACES = re.compile(r"\s+")
# Between two digits, a run of spaces, hyphens, slashes or markdown marks (``*``, ``_``, `` ` ``,
# ``~``) is grouping, not content: "4111 1111-1111 1111", "**4111** **1111**..." and
# "4111111111111111" are the same number. (Hyphens are ASCII by then, see _FOLDED.)
DIGIT_SEPARATORS = " /-_*`~\u2013\u2014\u2015"
"""The characters normalised text removes between two digits, wherever they stand (the one
list: ``validation.pattern_spacing`` refuses a pattern needing one there from it)."""
_DIGIT_SEPARATORS = re.compile(rf"(?<=\d)[{re.escape(DIGIT_SEPARATORS)}]+(?=\d)")
# Dots and commas stay (35.00 is not 3500, 1,000.50 is 1000.50's own text), except in a run of
# three or more groups of 3-4 digits that repeats one of them: "4111.1111.1111.1111",
# "1,000,000".
DIGIT_GROUPS = re.compile(r"\d{1,4}([.,])\d{3,4}(?:\1\d{3,4})+(?!\d)")
"""A run of digit groups whose dots or commas normalised text removes (see above)."""
_NON_ASCII_DIGIT = re.compile(r"(?![0-9])\d")


MAX_READ_CHARS = 100_000
"""The most characters of a message a check reads, so that grading costs at most a bounded,
linear scan per message whatever the agent writes (the model judge is shown as many). A
longer *agent* message is not read: every check that would read it fails, the agent's
failure (:class:`Unreadable`); of a longer user message (the simulator's) its start and end
are read (:func:`within_bound`)."""
_CACHED_CHARS = 4096
"""Texts up to this long are normalised once and kept (a question is tested against every
value of every change); longer ones are normalised each time, so the cache stays small."""


class Unreadable(Exception):
    """An agent message over :data:`MAX_READ_CHARS`: a check that must read it cannot judge
    it, and fails (the agent made its output too long to judge; the instrument is healthy)."""

    def __init__(self, message: Any) -> None:
        self.message = message
        """The trace's ``MessageEvent``."""
        self.step: int = message.step
        self.length = len(message.text)
        super().__init__(
            f"the agent's message at step {self.step} has {self.length:,} characters, over "
            f"the {MAX_READ_CHARS:,} a check reads: it cannot be judged"
        )

    def evidence(self) -> dict[str, Any]:
        return {"step": self.step, "characters": self.length, "read_at_most": MAX_READ_CHARS}


def unreadable(events: Iterable[Any]) -> Unreadable | None:
    """The first agent message among trace *events* too long to read, as its error."""
    for event in events:
        text, role = _text_and_role(event)
        if role == "agent" and len(text or "") > MAX_READ_CHARS:
            return Unreadable(event)
    return None


def _text_and_role(event: Any) -> tuple[Any, Any]:
    """``getattr(event, "text", None)`` and ``getattr(event, "role", None)``. A tool call has
    neither: asked of a trace event model, pydantic raises and ``getattr`` catches, about
    4 µs a name, a tenth of what the rest of the grading pass spends on a call. For an event
    of the trace's own classes with no extra values the instance's dict answers as lookup
    would (no class attribute, no private one, has either name)."""
    if type(event) in _EVENT_CLASSES and getattr(event, "__pydantic_extra__", None) is None:
        space = vars(event)
        return space.get("text"), space.get("role")
    return getattr(event, "text", None), getattr(event, "role", None)


_EVENT_CLASSES = frozenset(
    kind
    for kind in (MessageEvent, ToolCallEvent, ModelCallEvent)
    if not kind.__private_attributes__ and not any(hasattr(kind, n) for n in ("text", "role"))
)
"""The trace's event classes whose ``text`` and ``role``, where they have them, are fields
held in the instance's dict (see :func:`_text_and_role`)."""


def message_text(message: Any) -> str:
    """The normalised text of a trace message (a ``MessageEvent``) as checks read it: an
    agent's up to :data:`MAX_READ_CHARS` (longer: :class:`Unreadable`), a user's
    :func:`within_bound`."""
    text = message.text or ""
    role = message.role
    # The usual text (a plain str short enough to be kept), read straight from the memos
    # reply_words and normalise keep: the checks ask for each message's text tens of times
    # per attempt (every constraint, every change and answer it reads), and the calls in
    # between cost more than the lookup.
    if type(text) is str and len(text) <= _CACHED_CHARS:
        return _reply_words(text) if role == "user" else _normalised(text)
    if len(text) > MAX_READ_CHARS and role == "agent":
        raise Unreadable(message)
    if role == "user":
        return reply_words(within_bound(text))
    return normalise(within_bound(text))  # any other role (none today) bounded too


def reply_words(text: str) -> str:
    """A user's *text* normalised as the checks read a reply: what a correction corrects
    left out (:func:`_corrected`), a preference split around what it picks written as one
    (:data:`_RATHER_THAN`, :data:`_PREFERRED`) and answers given item by item ("Refund yes,
    receipt no.") with each yes or no before its item (:func:`_item_answers`).

    Kept per process by the text, as :func:`normalise` is (the ``confirmed`` walk reads
    each reply again for every constraint, and for every answer it may go on)."""
    if type(text) is not str:
        return _read_reply(text)  # a subclass: read every time
    return _reply_words(text) if len(text) <= _CACHED_CHARS else _long_reply_words(text)


@lru_cache(maxsize=4096)
def _reply_words(text: str) -> str:
    return _read_reply(text)


@lru_cache(maxsize=8)
def _long_reply_words(text: str) -> str:
    # A long reply (up to MAX_READ_CHARS) is read tens of times in one attempt too, some 0.05 s
    # each for 99,000 characters: the last few are kept, at most a few megabytes.
    return _read_reply(text)


def _read_reply(text: str) -> str:
    text = _item_answers(_corrected(normalise(text)))
    if "rather" in text:
        text = _RATHER_THAN.sub(r"\g<picked> rather than", text)
    if "sooner" in text or "prefer" in text:
        text = _PREFERRED.sub(_preferred, text)
    return text


# A correction of what was just said ("The gift card, sorry, I meant the Visa", "Visa. No
# wait, the gift card.", "Yes, I mean no."): what comes after it is the answer. Not an "I
# mean" pointing back at what was said, which it affirms ("I meant what I said", "I mean,
# that's the one", "I meant that"): see _MEANT_AS_SAID.
_MEANT_AS_SAID = (
    r"(?!,? (?:what (?:i|i've) (?:said|say|wrote|write|typed|gave|told you)|every word"
    r"|(?:that|this|it)(?:'s| is) (?:the one|it|right|correct|mine|the right one|what i want)"
    r"|(?:exactly )?(?:that|this|it|the same)(?: one| address| email| e-mail| card| thing)?"
    r"(?=[,.;:!?]| ?$)|exactly(?=[,.;:!?]| ?$)"
    r"|the (?:same|one) (?:i|i've) (?:gave|given|said|wrote|sent|typed))\b)"
)
_CORRECTION = re.compile(
    r"(?:^|(?<=[,.!;:]) )(?:(?:sorry|oops|whoops|oh|er|erm|uh|um|my bad|my mistake|actually)"
    r",? ){0,8}i (?:meant|mean)(?: to say)?(?! to\b| it\b)" + _MEANT_AS_SAID + r"\b,?(?=\W*\w)"
    r"|(?:^|(?<=[,.!;:]) )(?:no,? wait|wait,? no)\b[,.!]?(?=\W*\w)"
)
# Words after which a correction is not read as one: a no, a question or a stop in the part
# it would leave out ("Don't refund it. Sorry, I meant the Visa" keeps its "don't").
_NOT_CORRECTED = re.compile(
    r"\?|\b(no|not|nope|nah|never|don|dont|do not|stop|wait|hold|hang|cancel|forget|mind"
    r"|undo|abort|halt|later|instead|rather|sooner|prefer|if|unless|only|provided|long as|first"
    r"|before|after|but|except|without)\b|n't\b"
)


def _corrected(text: str) -> str:
    """Normalised *text* from its last correction on (:data:`_CORRECTION`), when what the
    correction leaves out says no no, asks nothing and stops nothing (:data:`_NOT_CORRECTED`):
    "The gift card, sorry, I meant the Visa" reads "the Visa"."""
    if "mean" not in text and "wait" not in text:
        return text
    last = None
    for last in _CORRECTION.finditer(text):  # noqa: B007 (the last one is wanted)
        pass
    if last is None or _NOT_CORRECTED.search(text, 0, last.start()):
        return text
    return text[last.end() :].lstrip(" ,.!;:")


# An answer given item by item, each a few words and a yes or a no ("Refund yes, receipt
# no."): the whole reply, each clause "<words> yes" or "<words> no".
_ITEM_ANSWER = re.compile(r"([^\W\d_]+(?: [^\W\d_]+){0,3}) (yes|no)")
_CLAUSES = re.compile(r"[,.;!]+(?: (?:and|but) )?\s*|\s+(?:and|but)\s+")


def _item_answers(text: str) -> str:
    """Normalised *text* with answers given item by item ("refund yes, receipt no.") read as
    the yes or no said before each item ("yes refund, no receipt."), which the default
    ``no`` reads as it reads "Yes, no receipt": a no, unless the item is an extra the customer
    may decline (a receipt, an email; "yes refund, no card." is a no). Any other text as it
    is; words of a yes or a no in an item ("yes refund yes") leave the text as it is."""
    if not (" yes" in text and " no" in text):
        return text
    clauses = [c for c in _CLAUSES.split(text) if c]
    found = [_ITEM_ANSWER.fullmatch(clause) for clause in clauses]
    if len(found) < 2 or not all(found):
        return text
    items = [(m[1], m[2]) for m in found if m is not None]
    if any(re.search(r"\b(yes|no|not|don't|never)\b", item) for item, _ in items):
        return text
    said = [f"yes {item}" if answer == "yes" else f"no {item}" for item, answer in items]
    return ", ".join(said) + "."


# A preference of one thing over another ("I'd sooner the Visa than the gift card", "I would
# prefer the Visa over the gift card"): read as "the Visa rather than the gift card". Not
# after a negation ("I wouldn't prefer ...", "I'd not sooner ...").
_PREFERRED = re.compile(
    r"(?P<before>\b\w*n't |\bnot |\bnever )?\b(?:sooner|prefer|prefers|preferred)"
    r" (?:(?:have|get|take|use|keep|go with|to have|to get|to use|to keep|to go with) )?"
    r"(?P<picked>(?!than\b|not\b|over\b)[^,.;:!?]*?) (?P<how>than|over)\b"
)


def _preferred(found: re.Match[str]) -> str:
    if found["before"] is not None or (found["how"] == "than" and "sooner" not in found[0]):
        return found[0]
    return f"{found['picked']} rather than"


# A preference split around what is picked ("Rather the Visa than the gift card", "I'd rather
# have the Visa than the gift card"): a user's message is read as "the Visa rather than the
# gift card", the form the confirmation checks read. "I'd rather not", "rather than X" and a
# "rather" with no "than" in its clause stay as they are.
_RATHER_THAN = re.compile(
    r"\brather (?!than\b|not\b|you\b|i\b|we\b|they\b)(?:(?:have|get|take|use|keep|go with)"
    r" )?(?P<picked>[^,.;:!?]*?) than\b"
)


def within_bound(text: str) -> str:
    """*text*, or its start and end (:data:`MAX_READ_CHARS` together) when it is longer: what
    is read of a message the simulated user wrote, and what the scripted user reads of any
    (the model judge is shown the same, with a note of what was left out)."""
    if len(text) <= MAX_READ_CHARS:
        return text
    half = MAX_READ_CHARS // 2
    return f"{text[:half]} {text[-(MAX_READ_CHARS - half - 1) :]}"


def normalise(text: str) -> str:
    """The form message checks compare: the same for text and for the value searched for.

    NFKC; typographic apostrophes become ``'``, hyphens and minus signs ``-``, Cyrillic and Greek
    letters drawn like Latin ones those letters; then casefold; invisible format characters
    (zero-width spaces, soft hyphens) are dropped and every decimal digit becomes its ASCII
    digit; every run of whitespace becomes one space, leading and trailing space is stripped;
    and separators standing between two digits (runs of spaces, hyphens, slashes and markdown
    marks) are removed. So ``"Card 4111 1111-1111 1111"`` becomes ``"card 4111111111111111"``.
    Dots and commas are kept (``35.00`` stays ``35.00``) except in runs of digit groups that
    repeat one (``4111.1111.1111.1111``, ``1,000,000``).
    """
    return _normalised(text) if len(text) <= _CACHED_CHARS else _normalise(text)


@lru_cache(maxsize=4096)
def _normalised(text: str) -> str:
    return _normalise(text)


def _normalise(text: str) -> str:
    text = _SPACES.sub(" ", fold(text)).strip()
    text = _DIGIT_SEPARATORS.sub("", text)
    return DIGIT_GROUPS.sub(lambda m: m.group().replace(m.group(1), ""), text)


def fold(text: str) -> str:
    """The character-level part of :func:`normalise`, with spacing and digit grouping kept:
    NFKC, typographic apostrophes, hyphens and look-alike letters folded, casefolded,
    invisible format characters dropped, decimal digits made ASCII (``"O\u20111001"`` is
    ``"o-1001"``). For finding names that must keep their digit groups apart ("O-1001 3
    weeks ago" names O-1001, where normalised text reads ``o-10013``)."""
    return _folded(text) if len(text) <= _CACHED_CHARS else _fold(text)


@lru_cache(maxsize=4096)
def _folded(text: str) -> str:
    return _fold(text)


def _fold(text: str) -> str:
    text = unicodedata.normalize("NFKC", text).translate(_FOLDED).casefold()
    if not text.isascii():
        text = "".join(c for c in text if unicodedata.category(c) != "Cf")
        text = _NON_ASCII_DIGIT.sub(lambda m: str(unicodedata.decimal(m.group())), text)
    return text


def rendered(value: Any) -> list[str]:
    """The strings a value is named by: a scalar by ``str()``, a list by each element, an
    object by each of its values (an address is named by its line, city, ...).

    ``None`` names nothing (an absent optional value has nothing to mention). Compare them
    with :func:`mentions`, which normalises both sides.
    """
    if isinstance(value, list | dict):
        elements = value.values() if isinstance(value, dict) else value
        return [text for element in elements for text in rendered(element)]
    if value is None:
        return []
    return [str(value)]


def mentions(normalised_text: str, value: str, *, chosen: bool = False) -> bool:
    """Whether already normalised text names *value*: a normalised substring that does not run
    on into letters or digits (``I-1019-1`` is not named by ``I-1019-12``, nor size ``9`` by
    ``$29.00``), nor through a dot, ``@`` or hyphen into more of them (``a@x.com`` is not
    named by ``a@x.com.au``, ``22`` not by ``22.50``); a number is named with or without
    trailing zeros of its fraction (``$22.00`` by ``$22``, ``1`` by ``1.0``); a comma between
    two of its words, and brackets, may be there or not (an address written on lines, "Wool
    Socks 3-pack" for "Wool Socks (3-pack)").

    *chosen*: only where the text does not turn the value down, as a question confirming a
    change names what it will do: "to your Visa, not your gift card" names no gift card, nor
    does "instead of the gift card" (see :data:`_TURNED_DOWN`)."""
    if len(normalised_text) > _CACHED_CHARS or len(value) > _SPELLED_CHARS:
        return _mentions(normalised_text, value, chosen)
    # A function of its arguments alone, asked again and again: the confirmation checks test
    # each value of each change against every question, once per constraint, and the same
    # questions come back in every attempt of a task.
    return _mentioned(normalised_text, value, chosen)


@lru_cache(maxsize=4096)
@exact
def _mentioned(normalised_text: str, value: str, chosen: bool) -> bool:
    # An lru_cache (as _normalised): its entries are made only by reading, so code running
    # beside the harness cannot write an answer into it. Texts up to _CACHED_CHARS long.
    return _mentions(normalised_text, value, chosen)


def _mentions(normalised_text: str, value: str, chosen: bool) -> bool:
    pattern = _named_by(value) if len(value) <= _SPELLED_CHARS else _as_written(value)
    if not chosen:
        found = pattern.search(normalised_text) is not None
    else:
        spans = (m.span() for m in pattern.finditer(normalised_text))
        found = any(chosen_at(normalised_text, *span) for span in spans)
    return found or _in_other_words(normalised_text, value, chosen)


def _in_other_words(normalised_text: str, value: str, chosen: bool) -> bool:
    """Whether normalised text names the dollar amount *value* (``$22.00``) in the words of
    another language ("veintidós dólares"; see :func:`amounts_in_other_words`)."""
    amount = _DOLLARS.fullmatch(normalise(value)) if len(value) <= 40 else None
    if amount is None:
        return False
    wanted = Decimal(amount.group(1).replace(",", "")).normalize()
    return any(
        said == wanted and (not chosen or chosen_at(normalised_text, at))
        for at, said in amounts_in_other_words(normalised_text)
    )


def mentioned_at(normalised_text: str, value: str) -> int | None:
    """Where already normalised text first names *value* (as :func:`mentions` reads it, not
    turned down there), or None: the order in which a question lists records."""
    pattern = _named_by(value) if len(value) <= _SPELLED_CHARS else _as_written(value)
    for found in pattern.finditer(normalised_text):
        if chosen_at(normalised_text, found.start(), found.end()):
            return found.start()
    return None


def chosen_at(normalised_text: str, start: int, end: int | None = None) -> bool:
    """Whether the thing named at *start* of normalised text is not turned down there ("to
    your Visa, not your gift card": the gift card is; see :data:`_TURNED_DOWN`); given its
    *end*, nor by the words right after it ("PayPal? No thanks", "PayPal, I'd rather not":
    see :data:`_REFUSED_AFTER`), whichever order the sentence puts the refusal in. A value
    the speaker calls old or dead ("my old email was eve@x.com") is turned down too, unless
    the words after it give it to find a record by (:data:`_FOUND_BY_IT`)."""
    before = normalised_text[max(0, start - 40) : start]
    if _TURNED_DOWN.search(before) is not None:
        return False
    if end is None:
        return _DISOWNED_BEFORE.search(before) is None
    if _REFUSED_AFTER.match(normalised_text, end) is not None:
        return False
    named = normalised_text[start:end]
    if _DISOWNED_BEFORE.search(before) is None and not _out_of_use(
        normalised_text, before, named, end
    ):
        return True
    return _FOUND_BY_IT.search(normalised_text[end : end + 120].split("@", 1)[0]) is not None


def _out_of_use(normalised_text: str, before: str, named: str, end: int) -> bool:
    """Whether the words right after a value say, as a fact and not a condition, that it no
    longer works ("eve@x.com is dead", "eve@x.com bounces"; see :data:`_NOT_WORKING`), or,
    after the speaker's old one it is put beside, that it is gone ("my previous address,
    eve@x.com, was closed"; see :data:`_GONE`). Only a value *named* with an ``@`` or a
    digit (an email, a phone, a card): an item said to be broken ("The blender doesn't work
    anymore") is what a customer returns, and stays said."""
    if _CONDITION_BEFORE.search(before) is not None or _REACHED_BY.search(named) is None:
        return False
    if _NOT_WORKING.match(normalised_text, end) is not None:
        return True
    return (
        _OLD_ONE_BESIDE.search(before) is not None and _GONE.match(normalised_text, end) is not None
    )


_TURNED_DOWN = re.compile(
    r"(?:(?:^|[,.;:!?\u2013\u2014-] ?)no(?: to)?(?: the| my| your| that)? $|"
    r"(?:\b(?:not(?! (?:only|just|merely|simply)\b)|never|instead of|rather than|in place of"
    r"|in lieu of|as opposed to|except)|n't)"
    r"(?: (?:to|on|onto|in|into|for|from|with|by|of|the|a|an|your|my|our|its|their|this|that"
    r"|use|using|want|wanna|like|pay|paying|via|through|choose|pick|go|charged"
    r"|full|whole|entire|original|originally|remaining|complete|total|usual|standard|regular"
    r"|initial|outstanding|partial|only|just|merely|amount|price|sum|cost|value|balance"
    r"|charge|purchase))* ?$)"
)
"""Just before a value: "not", "instead of", "as opposed to" and after it at most
prepositions, articles, "use" and the words describing the amount or thing turned down ("not
to your", "instead of the full", "rather than the original price of", "don't use"), and the
verbs of a choice refused ("I don't want to pay with", "I'd rather not go with"); or "no"
right before it, starting its clause ("No PayPal, please"; not "No, PayPal is fine" nor
"order no 1002"). "You don't need the bottle" does not turn the bottle down, nor does "not
only the socks" (but also ...), "I don't mind" or "I don't want anything but"."""

_KIND_OF_VALUE = (
    r"(?:one|(?:email|e-mail) address|email|e-mail|address|card|account|number|phone number)"
)
_DISOWNED_BEFORE = re.compile(
    r"\b(?:(?:my|our) (?:old|former|previous|outdated|wrong) "
    + _KIND_OF_VALUE
    + r"(?:'s| is| was| used to be)|(?:my|our) "
    + _KIND_OF_VALUE
    + r" used to be"
    r"|(?:i|we) (?:no longer (?:use|have)|(?:have )?stopped using|quit using)):? ?$"
)
"""Just before a value, in the speaker's own words, that it is no longer theirs to use: "my
old one was eve@x.com", "my previous email is eve@x.com", "my email used to be eve@x.com",
"I no longer use eve@x.com" (as "eve@x.com is my old one" after it, :data:`_DISOWNED`). In
the first person only: a question telling a customer "your old email was eve@x.com" still
names it. Not "send it to my old email, eve@x.com" (a use of it, no "was"), "my old one is
still eve@x.com" nor "I used to use eve@x.com", which may go on "and still do"."""

_ENDS_A_STATEMENT = r"(?: (?:anymore|any more|any longer|now|either))?(?=[,.;:!\u2013\u2014)-]| ?$)"
"""The end of a statement about a value: its clause ends, and not in a question mark."""
_NOT_WORKING = re.compile(
    r",? (?:(?:is|'s|was|seems|seemed|has been)(?: now| just)? (?:dead|defunct|bouncing"
    r"|not working|no longer working)|(?:no longer works|doesn't work|does not work|dont work"
    r"|(?:has )?stopped working|bounces|bounced|keeps bouncing|isn't working|won't work"
    r"|will not work))" + _ENDS_A_STATEMENT
)
"""Just after a value, that it no longer works: "eve@x.com is dead", "eve@x.com, no longer
works", "eve@x.com bounces", "eve@x.com doesn't work anymore" (not "eve@x.com is not dead",
"... doesn't work for the app", "Has eve@x.com stopped working?"): a contact or a card the
speaker cannot be reached or pay by, whoever says it."""
_GONE = re.compile(
    r"(?:,? (?:is|was|has been|had been|got|'s been) (?:closed|deleted|shut down|cancell?ed"
    r"|deactivated|disconnected|expired|gone|removed)|,? expired)" + _ENDS_A_STATEMENT
)
"""Just after a value, that it is gone: "... was closed", "... has been deleted", "...
expired"; a state a record may be in too ("order #W1 is closed", as an agent's question says):
read only beside the speaker's old one (:data:`_OLD_ONE_BESIDE`)."""
_OLD_ONE_BESIDE = re.compile(
    r"\b(?:my|our) (?:old|former|previous|outdated) " + _KIND_OF_VALUE + r",? ?$"
)
"""Just before a value, the speaker's old one it is put beside: "my previous address,
eve@x.com, was closed"."""
_FOUND_BY_IT = re.compile(
    r"\b(?<!n't )(?<!not )(?<!never )(?:(?:account|profile|login|it|everything|orders?)"
    r"(?:'s| is| was| are| were"
    r"| might be| may be| should be| must be)?(?: still| probably| all)? (?:under|registered"
    r" (?:under|with|to)|linked (?:to|with)|tied to|set up (?:under|with)|created (?:under"
    r"|with)|made (?:under|with)|on file (?:under|with))|(?:look|looking) (?:me|it|my account"
    r"|the account|my orders?) up (?:with|by|using|under)|(?:find|finding|search|searching"
    r"|locate|locating|pull up|pulling up|identify|verify) (?:me|my account|the account|my"
    r" orders?|it) (?:with|by|using|under)) (?:it|that|this|that one|this one|that address"
    r"|that email|the old one|my old one)\b"
)
"""After a value the speaker calls old or dead, within its next 120 characters and before
another email, words giving it to find a record by: "my old email was eve@x.com, my account
is still under it", "I no longer use eve@x.com, look me up with that", "... try finding my
account using that one". The value is said then: the speaker gave it to identify the
account, and a lookup by it is what they asked for (a value only called old is not)."""
_REACHED_BY = re.compile(r"[@\d]")
"""What a value that can stop working holds: an email's ``@``, a phone's or a card's digits."""
_CONDITION_BEFORE = re.compile(r"\b(?:if|in case|when|whenever|unless|whether|until)\b[^.!?;]*$")
"""A condition the value is named in ("if eve@x.com bounces, try maya@x.com"): no fact about
it. Read in the 40 characters before the value only."""

_BACK = (
    r"(?:that|this|it)(?: (?:one|address|email|e-mail|card|account|number|option|method))?"
    r"(?: (?:please|anymore|any more|after all|either))?(?=[,.;:!?\u2013\u2014)-]| ?$)"
)
"""Words pointing back at a value, ending their clause: "that one", "this address", "it
anymore" (not "it for marketing", "that order": a use of it refused, or another thing)."""

_WITHDRAWN = (
    r"(?:(?:please )?(?:don't|do not|dont|let's not|better not|never|no need to"
    r"|(?:(?:i'd|i would|we'd|we would) )?rather not|(?:i|we) (?:don't|do not) want(?: to)?"
    r"|(?:i|we) won't|(?:i|we) will not|(?:you )?(?:can't|cannot|shouldn't|should not))"
    r" (?:(?:use|go with|pay with|charge|bill|send (?:it |them )?to|ship (?:it |them )?to"
    r"|want|pick|choose|take|be using|using|put (?:it|that) on) )?"
    + _BACK
    + r"|not "
    + _BACK
    + r"|(?:scratch|strike|forget|ignore|disregard) "
    + _BACK
    + r"|never mind (?:that|this) (?:one|address|email|e-mail|card|account|number|option)\b"
    r"|that(?: one)?(?:'s| is| was) (?:the wrong one|not the (?:right )?one|not mine"
    r"|(?:my|an) old one)\b|that one(?:'s| is) (?:wrong|old|not mine|outdated)\b"
    r"|i meant(?: to say)? (?:[^ .!?]*[@\d]|(?:the|my) other\b)"
    r"|(?:use|go with|send it to|charge|bill|make it) (?!(?:it|that|this|them|the same|same"
    r"|mine|my (?:email|e-mail|address|card))\b)(?:[^.!?]|\.(?! |$)){1,60}? instead\b(?! of\b))"
)
"""Words taking back a value just given, without naming it again: "don't use that one",
"not that one", "scratch that", "that's my old one", "I meant maya@x.com", "use the Visa
instead" (not "use it instead", "instead of the phone", "don't use it for marketing")."""

_OPENING_WORDS = (
    r"actually|wait|h+m+|sorry|oh|oops|no|nope|nah|hold on|on second thought|ok|okay|um+|uh+"
    r"|correction"
)
_OPENERS = r"(?:(?:" + _OPENING_WORDS + r")\b[,.!:]* ?)*"
"""Words a correction may start with: "Actually, not that one", "Wait, no, scratch that"."""

_ASIDES = (
    r"(?:(?:thanks|thank you|thx|ty|well|so|ah+|ugh+|er+m?|hey|dear"
    r"|let me (?:think|check|see|look)|one (?:sec|second|moment|minute)|just a (?:sec|second"
    r"|moment|minute)|hang on|my (?:bad|mistake)|come to think of it|"
    + _OPENING_WORDS
    + r")\b[,.!?:]* ?)*"
)
"""Sentences standing between a value and the words taking it back, which name nothing, and
the words a correction starts with (:data:`_OPENING_WORDS`): "eve@x.com. Hmm. Thanks.
Actually no, not that one." (not "eve@x.com. My phone is 555-0100. Don't use that one.",
where "that one" is the phone). One word at a time, each read one way only (no "oh no"
beside "oh" and "no"): a run of them is read in time linear in it."""

_DISOWNED = (
    r"(?:,? (?:which|that)(?: is| was|'s)?| (?:is|was|'s)(?: (?:one|the one|an? (?:address"
    r"|email|e-mail|card|account|number|one|option))(?: (?:that|which))?)?) (?:(?:(?:i|we)"
    r"(?:'d| would) rather (?:not|you didn't|you did not|you not|you don't)|(?:i|we) (?:don't"
    r"|do not|dont|no longer|never|won't|will not|can't|cannot)(?: (?:want|need)(?: you)? to)?"
    r"|you (?:shouldn't|should not|can't|cannot|mustn't|must not)) use(?: it| that one)?"
    r"(?: (?:anymore|any more|any longer|now|again|please|either|at all))?"
    r"|(?:my|an|the) (?:old|former|previous|wrong) (?:one|address|email|e-mail|card|account"
    r"|number)|outdated|out of date|obsolete|wrong|incorrect|invalid"
    r"|no longer (?:valid|mine|in use|used|current)"
    r"|not (?:mine|valid|current|right|correct|the right one|in use)"
    r"(?: anymore| any more)?)(?=[,.;:!?\u2013\u2014)-]| ?$)"
    r"| (?:isn't|wasn't) (?:mine|valid|current|right|correct|the right one|in use)"
    r"(?: anymore| any more)?(?=[,.;:!?\u2013\u2014)-]| ?$)"
)
"""Words in a value's own sentence saying it is not to be used, after it: "eve@x.com is one
I'd rather not use", "eve@x.com, which I no longer use", "eve@x.com is my old one",
"eve@x.com isn't valid anymore" (not "eve@x.com is the one I use", "... is one I'd rather
not use for marketing", "... is not my old one": each ends its clause). Not a state a
record is in ("order #W1 is closed", "... inactive"): an agent's question names it."""

_REFUSED_AFTER = re.compile(
    r"(?: (?:one|option|account|card|method|address|email|please))?"
    r"(?:[\s,;:?\u2013\u2014-]*(?:(?:no|nope|nah)\b(?:[,.!]* (?:thanks|thank you"
    r"|(?:(?:i'd|i would|we'd|we would) )?rather not|not (?:that|this|it)\b)|[.!]*\s*$)"
    r"|(?:(?:i'd|i would|we'd|we would) )?rather not\b|not (?:that|this) one\b|no way\b"
    r"|(?:is not|isn't|won't|will not) (?:an option|the one|what i want|do)\b"
    r"|" + _OPENERS + _WITHDRAWN + r")"
    r"|[\s,;:\u2013\u2014-]*[.!?]+ " + _ASIDES + _WITHDRAWN + r"|" + _DISOWNED + r")"
)
"""Just after a value, what turns it down without naming another: "PayPal? No thanks",
"PayPal \u2014 no, I'd rather not", "the PayPal one? Nope.", "PayPal isn't an option", in
the value's sentence; or, there or in the next sentence, words taking it back
(:data:`_WITHDRAWN`: "eve@x.com. No, don't use that one.", "eve@x.com, actually not that
one"). A "no" with more after it is no refusal of the value ("PayPal, no receipt needed",
"PayPal, not the Visa": the Visa is turned down), nor is one after another value ("PayPal;
the Visa? No thanks") or in the next sentence ("My email is eve@x.com. No thanks, that's
all": the answer to "anything else?"; "eve@x.com. Yes, that's right")."""


_SPELLED_CHARS = 500
"""Values up to this long are named in their usual spellings (and their patterns kept); a
longer one (an argument the agent made long) only as written, after normalisation: its
pattern of spellings cost a millisecond to compile per space in it (minutes for an argument
of 100,000 characters), and each would have been kept."""


def _as_written(value: str) -> re.Pattern[str]:
    needle = normalise(value)
    return re.compile(_start(needle) + re.escape(needle) + _end(needle))


@lru_cache(maxsize=4096)
def _named_by(value: str) -> re.Pattern[str]:
    """The pattern :func:`mentions` searches for *value*, made once per value (a confirmation
    tests each value of a change against every question before it)."""
    needle = normalise(value)
    amount = _DOLLARS.fullmatch(needle)
    if amount is not None:
        return _amount_named_by(amount.group(1))
    if _PLAIN_NUMBER.fullmatch(needle) and (len(needle.partition(".")[0]) > 3 or "." in needle):
        # A number (an amount a tool took as 1234.5) is named in the notations of an amount:
        # "$1,234.50", "1234.50", "1.234,50" (not "1,234.55" nor "12,345").
        return re.compile(_start(needle) + _amount_figures(needle) + _end(needle))
    size = _SIZE.fullmatch(needle)
    if size is not None:
        return _size_named_by(size.group(1))
    # A comma or a list bullet between two words of a value, and brackets around one, are
    # punctuation, not content: an address on lines or in a list names "200 W Adams Street,
    # Suite 1400, Chicago, IL 60606" (and the value without its commas the text with them),
    # "Wool Socks 3-pack" names "Wool Socks (3-pack)".
    body = _UNIT.sub(_unit_gap, _number(needle.replace(", ", " ")))
    if "@" not in needle:  # an email's hyphens are its own: a-b@x.com is not ab@x.com
        body = _JOINED_WORDS.sub(r"[ -]?", body)
    spellings, spelled = _spellings(needle)
    body = spelled.sub(lambda m: spellings[m.group(1)], body)
    for mark, optional in _OPTIONAL:
        body = body.replace(mark, optional)
    # The guards look at the value's first and last word, whether or not its brackets are said.
    written = _start(needle.lstrip("(#")) + body + _end(needle.rstrip(")"))
    number = PREFIXED_ID.fullmatch(needle)
    if number is None:
        return re.compile(written)
    # An id of a short prefix and a number is named by its prefix and number with another of
    # the separators an id is written with, or none, and with or without a label of its own
    # ("O1001", "o_1001", "#O-1001" for O-1001; "W-2002", "ORD-W2002", "order #w2002" for
    # #W2002, and "#W2002" for ORD-W2002; "w1" for #W1; not "P1001" nor "W12"); one of three
    # digits or more by its number alone too ("order 1001" for O-1001, "#2002" for #W2002),
    # where it stands as a number of its own (not "$1001", "1001.50", "x1001" nor "1001-2").
    prefix, digits, end = re.escape(number.group("prefix")), number.group("number"), _end(needle)
    spelt = rf"(?<![^\W_])(?<![^\W_][{_JOINERS}])(?:{_ID_LABEL})?#?{prefix}[-_#]?{digits}{end}"
    if len(digits) < 3:
        return re.compile(rf"{written}|{spelt}")
    alone = rf"(?<![\w$\u20ac\u00a3.,@-])#?{digits}(?![\w@]|[.,-]\d)"
    return re.compile(rf"{written}|{spelt}|{alone}")


_ID_LABEL = r"(?:ord|order|id)[-_# ]+"
"""A word an id may be written after, which a label of its own repeats ("ORD-W1", "order
#W1", "order W1" are order ``#W1``)."""
PREFIXED_ID = re.compile(
    rf"(?:{_ID_LABEL})?#?(?P<prefix>[^\W\d_]{{1,4}})(?P<sep>[-_#]?)(?P<number>\d+)"
)
"""An id of a short prefix and a number, in folded or normalised text, with or without a
label (see :func:`_named_by`; ``_spelling`` reads an argument's spelling so)."""


_PLAIN_NUMBER = re.compile(r"\d+(?:\.\d+)?")
_DOLLARS = re.compile(r"\$(\d{1,3}(?:,\d{3})+(?:\.\d+)?|\d+(?:\.\d+)?)")
# In an escaped value, a hyphen, a space or nothing between a number and the letters after it:
# named with a space, a hyphen or nothing there ("1000ml" by "1000 ml", "10-inch" by "10
# inch", "6 ft" by "6ft").
_UNIT = re.compile(r"(?<=\d)(\\-|\\ )?(?=[^\W\d_])")


def _unit_gap(found: re.Match[str]) -> str:
    # A space there may still follow a comma, as any space of a value may ("Suite 1400,
    # Chicago"); see _OPTIONAL.
    return r"(?:,? (?:[-*\u2022] )?|-)?" if found.group(1) == re.escape(" ") else "[ -]?"


# And a hyphen between two letters: "T-shirt" is named by "T shirt" and "tshirt", "Wi-Fi" by
# "WiFi" (not in an email).
_JOINED_WORDS = re.compile(r"(?<=[^\W\d_])\\-(?=[^\W\d_])")


def _amount_named_by(number: str) -> re.Pattern[str]:
    """A dollar amount (``$22.00``, ``$1,234.50``) is named as ``$22``, ``$ 22.00``, ``USD
    22``, ``US$22``, ``22.00 USD``, ``22 dollars`` (``22 dólares``) or ``22,00 $``, its
    thousands grouped or not (``$1234.50``, ``$1,234.50``, ``1.234,50 $``): the same amount in
    the usual notations (not ``122 dollars``, nor ``$22,000``; an amount in English words here,
    in other languages' by :func:`_in_other_words`)."""
    figures, end = _amount_figures(number), _end(number)
    return re.compile(
        rf"(?:\$ ?|\b(?:usd|us\$) ?){figures}{end}"
        rf"|(?<![\w.,$]){figures} ?(?:(?:usd|dollars?|d[oó]lares|d[oó]lar|bucks)\b|\$(?! ?\d))"
        + _amount_in_words(number)
    )


_ONES = [
    "zero",
    "one",
    "two",
    "three",
    "four",
    "five",
    "six",
    "seven",
    "eight",
    "nine",
    "ten",
    "eleven",
    "twelve",
    "thirteen",
    "fourteen",
    "fifteen",
    "sixteen",
    "seventeen",
    "eighteen",
    "nineteen",
]
_TENS = ["twenty", "thirty", "forty", "fifty", "sixty", "seventy", "eighty", "ninety"]
_NUMBER_WORD = "|".join([*_ONES, *_TENS, "hundred", "thousand"])
_CENTS_AFTER = r",? (?:and )?(?:\d{1,2}|[a-z]+(?:[- ][a-z]+)?) cents?\b"
"""Cents said after the dollars: "and fifty cents", "50 cents"."""


_VALUE_OF_WORD = {
    **{word: i for i, word in enumerate(_ONES)},
    **{word: 20 + 10 * i for i, word in enumerate(_TENS)},
}
_IN_WORDS = rf"(?:a (?=hundred|thousand))?(?:(?:{_NUMBER_WORD})(?:,? and |[- ]))*(?:{_NUMBER_WORD})"
_WORDED_AMOUNT = re.compile(
    rf"(?<![\w-])(?P<dollars>{_IN_WORDS}) (?:dollars?|bucks|usd)\b"
    rf"(?:,? (?:and )?(?P<cents>{_IN_WORDS}|\d{{1,2}}) cents?\b)?"
)


def words_value(words: str) -> int:
    """The whole number English *words* say: "one hundred and nineteen" is 119."""
    total = current = 0
    for word in re.split(r"[-, ]+", words):
        if word == "hundred":
            current = max(current, 1) * 100
        elif word == "thousand":
            total, current = total + max(current, 1) * 1000, 0
        else:
            current += _VALUE_OF_WORD.get(word, 0)
    return total + current


_NUMBER_IN_WORDS = re.compile(rf"(?<![\w-]){_IN_WORDS}(?![\w-])")
WORDED_AMOUNT = _WORDED_AMOUNT
"""An amount of money said in English words ("forty dollars", "twenty-two dollars and fifty
cents")."""


def numbers_in_words(normalised_text: str) -> Iterator[tuple[re.Match[str], int]]:
    """Each whole number normalised text says in English words, standing alone ("forty",
    "forty-five", "one hundred and ten"), with its value."""
    for found in _NUMBER_IN_WORDS.finditer(normalised_text):
        yield found, words_value(found.group())


def amounts_in_words(normalised_text: str) -> set[Decimal]:
    """The amounts of money normalised text says in words, in English ("twenty-two dollars",
    "twenty-two dollars and fifty cents") or the other languages of the default yes
    ("veintidós dólares", "vingt-deux dollars", "zweiundzwanzig Dollar", "vinte e dois
    dólares"; see :func:`amounts_in_other_words`)."""
    return {amount for _, amount in amounts_in_words_at(normalised_text)}


def amounts_in_words_at(normalised_text: str) -> list[tuple[int, Decimal]]:
    """:func:`amounts_in_words`, each with where its words start (to read whether the text
    turns it down there: "twenty-two dollars instead of forty dollars"; :func:`chosen_at`).

    A function of the text alone, kept per process as :func:`normalise` is (a plain str up
    to :data:`_CACHED_CHARS`; a subclass is read every time): the confirmation checks read
    the amounts of each question once per change and per answer, the same questions in
    every attempt of a task. The list returned is the caller's own."""
    if type(normalised_text) is str and len(normalised_text) <= _CACHED_CHARS:
        return list(_amounts_kept(normalised_text))
    return _amounts_in_words_at(normalised_text)


@lru_cache(maxsize=4096)
@exact
def _amounts_kept(normalised_text: str) -> tuple[tuple[int, Decimal], ...]:
    # An lru_cache (as _normalised): entries made only by reading; tuples of an int and a
    # Decimal, which nothing can edit.
    return tuple(_amounts_in_words_at(normalised_text))


def _amounts_in_words_at(normalised_text: str) -> list[tuple[int, Decimal]]:
    found = amounts_in_other_words(normalised_text)
    for amount in _WORDED_AMOUNT.finditer(normalised_text):
        cents = amount["cents"] or "0"
        hundredths = int(cents) if cents.isdigit() else words_value(cents)
        value = Decimal(words_value(amount["dollars"])) + Decimal(hundredths) / 100
        found.append((amount.start(), value.normalize()))
    return found


def _counted(words: str, first: int, step: int = 1) -> dict[str, int]:
    """The space-separated number *words*, counted from *first* by *step*."""
    return {word: first + step * i for i, word in enumerate(words.split(" "))}


_NUMBER_WORDS_ELSEWHERE = {
    # Spanish
    **dict.fromkeys(("cero",), 0),
    **dict.fromkeys(("uno", "un", "una"), 1),
    **_counted("dos tres cuatro cinco seis siete ocho nueve diez", 2),
    **_counted("once doce trece catorce quince", 11),
    **_counted("dieciséis diecisiete dieciocho diecinueve", 16),
    **_counted("veinte veintiuno veintidós veintitrés", 20),
    **_counted("veinticuatro veinticinco veintiséis", 24),
    **_counted("veintisiete veintiocho veintinueve", 27),
    "veintiún": 21,
    **_counted("treinta cuarenta cincuenta sesenta", 30, 10),
    **_counted("setenta ochenta noventa", 70, 10),
    **dict.fromkeys(("cien", "ciento"), 100),
    **_counted("doscientos trescientos cuatrocientos", 200, 100),
    **_counted("quinientos seiscientos setecientos", 500, 100),
    **_counted("ochocientos novecientos", 800, 100),
    # French
    **dict.fromkeys(("zéro", "zero"), 0),
    **_counted("deux trois quatre cinq six sept huit neuf dix", 2),
    **_counted("onze douze treize quatorze quinze seize", 11),
    **dict.fromkeys(("vingt", "vingts"), 20),
    **_counted("trente quarante cinquante soixante", 30, 10),
    **dict.fromkeys(("cent", "cents"), 100),
    **dict.fromkeys(("mil", "mille"), 1000),
    # Portuguese
    **dict.fromkeys(("um", "uma"), 1),
    **dict.fromkeys(("dois", "duas"), 2),
    **_counted("três quatro cinco seis sete oito nove dez", 3),
    **_counted("onze doze treze catorze quinze", 11),
    **dict.fromkeys(("quatorze",), 14),
    **dict.fromkeys(("dezesseis", "dezasseis"), 16),
    **dict.fromkeys(("dezessete", "dezassete"), 17),
    **dict.fromkeys(("dezoito",), 18),
    **dict.fromkeys(("dezenove", "dezanove"), 19),
    **_counted("vinte trinta quarenta cinquenta sessenta", 20, 10),
    **_counted("setenta oitenta noventa", 70, 10),
    **dict.fromkeys(("cem", "cento"), 100),
    **_counted("duzentos trezentos quatrocentos", 200, 100),
    **_counted("quinhentos seiscentos setecentos", 500, 100),
    **_counted("oitocentos novecentos", 800, 100),
}
"""The number words of Spanish, French and Portuguese (German's are read by
:func:`_german_number`), each as its value; "cien", "cent", "cem" multiply what comes
before them, "mil" and "mille" too."""
_GERMAN_SMALL = {
    **dict.fromkeys(("null",), 0),
    **dict.fromkeys(("ein", "eins", "eine", "einen"), 1),
    **_counted("zwei drei vier fünf sechs sieben acht neun zehn", 2),
    **_counted("elf zwölf dreizehn vierzehn fünfzehn sechzehn", 11),
    **_counted("siebzehn achtzehn neunzehn", 17),
    **_counted("zwanzig dreissig vierzig fünfzig", 20, 10),
    **_counted("sechzig siebzig achtzig neunzig", 60, 10),
}
"""German number words up to ninety (casefolded: "dreißig" is "dreissig")."""


def _unaccented(word: str) -> str:
    return "".join(c for c in unicodedata.normalize("NFD", word) if not unicodedata.combining(c))


# ... and each written without its accents, as people type them ("veintidos", "funf")
_NUMBER_WORDS_ELSEWHERE |= {_unaccented(w): n for w, n in _NUMBER_WORDS_ELSEWHERE.items()}
_GERMAN_SMALL |= {_unaccented(w): n for w, n in _GERMAN_SMALL.items()}
_CONNECTORS = frozenset(("y", "et", "e", "und"))
"""The "and" between number words: "treinta y dos", "soixante et onze", "vinte e dois"."""
_CURRENCY_WORD = re.compile(
    r"(?<=[^\W\d_]) (?:d[oó]lares|d[oó]lar|dollars?|dollari|euros?|usd)\b(?P<cents> (?:con|et|e"
    r"|und|y) (?P<hundredths>[^\W\d_]+(?:[ -][^\W\d_]+){0,3}) (?:centavos?|c[eé]ntimos?"
    r"|centimes?|cents?|centesimi)\b)?"
)
"""A currency word after a word (in Spanish, French, German, Portuguese and English), and the
cents said after it ("veintidós dólares con cincuenta centavos")."""
_WORDS_BEFORE = re.compile(r"(?<![\w-])[^\W\d_]+(?:[ -][^\W\d_]+){0,7}$")
"""Up to eight words ending a text, joined by spaces or hyphens."""


def amounts_in_other_words(normalised_text: str) -> list[tuple[int, Decimal]]:
    """The amounts of money normalised text says in Spanish, French, German or Portuguese
    words, each with where its words start: "veintidós dólares", "vingt-deux dollars",
    "zweiundzwanzig Dollar", "vinte e dois dólares", "quatre-vingt-dix dollars", "veintidós
    dólares con cincuenta centavos" (22.50). The number is the longest run of number words
    just before the currency word ("un reembolso de veinte dólares" is 20)."""
    found = []
    for currency in _CURRENCY_WORD.finditer(normalised_text):
        before = normalised_text[max(0, currency.start() - 160) : currency.start()]
        said = _WORDS_BEFORE.search(before)
        if said is None:
            continue
        words = re.split(r"[ -]", said.group())
        read = _number_ending(words)
        if read is None:
            continue
        count, value = read
        start = currency.start() - len(" ".join(words[-count:]))
        hundredths = 0
        if currency["hundredths"] is not None:
            said_cents = re.split(r"[ -]", currency["hundredths"])
            cents = _number_ending(said_cents)
            if cents is not None and cents[0] == len(said_cents) and cents[1] < 100:
                hundredths = int(cents[1])
        found.append((start, (value + Decimal(hundredths) / 100).normalize()))
    return found


def _number_ending(words: list[str]) -> tuple[int, Decimal] | None:
    """How many of the last *words* say a number in another language, and the number: the
    longest run of them that does (not starting with "and"); None when the last says none."""
    best = None
    for count in range(1, len(words) + 1):
        run = words[-count:]
        if run[0] in _CONNECTORS:
            continue
        value = _number_of(run)
        if value is None:
            if best is not None or count > 3:
                break
            continue
        best = (count, Decimal(value))
    return best


def _number_of(words: list[str]) -> int | None:
    """The number *words* say (number words and "and" between them), or None."""
    values: list[int] = []
    for at, word in enumerate(words):
        if word in _CONNECTORS:
            continue
        if word in ("vingt", "vingts") and at and words[at - 1] == "quatre":
            values[-1] = 80  # quatre-vingt(s): 4 x 20
            continue
        value = _NUMBER_WORDS_ELSEWHERE.get(word)
        if value is None:
            value = _german_number(word)
        if value is None:
            return None
        values.append(value)
    if not values:
        return None
    total = current = 0
    for value in values:
        if value == 1000:
            total, current = total + max(current, 1) * 1000, 0
        elif value == 100:
            current = max(current, 1) * 100
        else:
            current += value
    return total + current


def _german_number(word: str) -> int | None:
    """The number a German number word says, compounds included ("zweiundzwanzig",
    "einhundertzwanzig", "dreitausendfünfhundert"), or None."""
    if word in _GERMAN_SMALL:
        return _GERMAN_SMALL[word]
    for unit, size in (("tausend", 1000), ("hundert", 100)):
        if unit in word:
            before, _, after = word.partition(unit)
            times = _german_number(before) if before else 1
            rest = _german_number(after) if after else 0
            if times is None or rest is None or rest >= size:
                return None
            return times * size + rest
    if "und" in word:
        ones, _, tens = word.partition("und")
        one, ten = _GERMAN_SMALL.get(ones), _GERMAN_SMALL.get(tens)
        if one is not None and ten is not None and 1 <= one <= 9 and ten in range(20, 100, 10):
            return one + ten
    return None


def _below_hundred(n: int) -> str:
    if n < 20:
        return _ONES[n]
    tens, ones = divmod(n, 10)
    return _TENS[tens - 2] + (f"[- ]?{_ONES[ones]}" if ones else "")


def _number_words(n: int) -> str:
    """A whole number below a million in English words, as a pattern: "twenty-two", "one
    hundred (and) nineteen", "a hundred", "two thousand five hundred"."""
    if n < 100:
        return _below_hundred(n)
    if n < 1000:
        hundreds, rest = divmod(n, 100)
        head = "(?:a|one) hundred" if hundreds == 1 else f"{_ONES[hundreds]} hundred"
        return head + (f",? (?:and )?{_below_hundred(rest)}" if rest else "")
    thousands, rest = divmod(n, 1000)
    head = "(?:a|one) thousand" if thousands == 1 else f"{_number_words(thousands)} thousand"
    return head + (f",? (?:and )?{_number_words(rest)}" if rest else "")


def _amount_in_words(number: str) -> str:
    """An amount below a million in words, as an alternative of its pattern: "twenty-two
    dollars", "twenty-two dollars and fifty cents", "twenty-two fifty" (spoken, for $22.50),
    "22 dollars and 50 cents"; not "one hundred twenty-two dollars" for $22, nor "twenty-two
    dollars and fifty cents" for $22.00."""
    whole, _, fraction = number.replace(",", "").partition(".")
    if len(whole) > 6:
        return ""
    dollars, cents = int(whole), int((fraction + "00")[:2])
    words = _number_words(dollars)
    start = rf"(?<![\w-])(?<!hundred )(?<!thousand )(?<!and )(?:{words}|{dollars})"
    unit = r" (?:dollars?|bucks|usd)\b"
    not_more = rf"(?![- ](?:{_NUMBER_WORD})\b)"
    if not cents:
        return rf"|{start}{not_more}{unit}(?!{_CENTS_AFTER})"
    said = rf"(?:{_below_hundred(cents)}|{cents:02d}|{cents})"
    in_cents = rf"|{start}{not_more}{unit},? (?:and )?{said} cents?\b"
    if cents < 10:  # "twenty-two five" says no cents
        return in_cents
    return in_cents + rf"|{start} {_below_hundred(cents)}\b{not_more}(?! (?:dollars?|bucks|usd)\b)"


def _amount_figures(number: str) -> str:
    """The figures of an amount (``1,234.50``) as a pattern: its whole part with or without a
    comma or dot grouping each three digits, its fraction after a dot or comma with more or
    fewer trailing zeros (a comma only before one or two digits: ``22,000`` is no ``22``)."""
    whole, _, fraction = number.replace(",", "").partition(".")
    groups = [whole[max(0, i - 3) : i] for i in range(len(whole), 0, -3)][::-1]
    grouped = (
        "[,.]?".join(groups)
        if len(groups) <= 2
        else "(?:" + "|".join(separator.join(groups) for separator in ("", ",", r"\.")) + ")"
    )
    digits = fraction.rstrip("0")
    if not digits:
        return grouped + r"(?:\.0+|,00?)?"
    return grouped + rf"(?:\.{digits}0*|,{digits}{'0?' if len(digits) == 1 else ''})"


_SIZE = re.compile(r"size (xs|s|m|l|xl|xxl)")
_SIZE_WORDS = {
    "xs": "extra[ -]small|x-small",
    "s": "small",
    "m": "medium",
    "l": "large",
    "xl": "extra[ -]large|x-large",
    "xxl": "2xl|xx-large|extra extra large|double extra large",
}


def _size_named_by(size: str) -> re.Pattern[str]:
    """A clothing size (``size L``) is also named by its word, with or without "size": "size
    large", "a large" (not "extra large")."""
    return re.compile(
        rf"\bsize {size}{_end(size)}"
        rf"|(?<!extra )(?<!extra-)(?<!x-)(?<!xx-)\b(?:size )?(?:{_SIZE_WORDS[size]})\b"
    )


_OPTIONAL = (
    (re.escape(" "), r"(?:,? (?:[-*\u2022] )?)"),
    (re.escape("("), re.escape("(") + "?"),
    (re.escape(")"), re.escape(")") + "?"),
    (re.escape("#"), re.escape("#") + "?"),
)
"""In a value's pattern: each space may follow a comma and come before a list bullet (the
value's words on the lines of a list), and each bracket or number sign may be left out
("order W0000002" names "#W0000002")."""


_ADDRESS_WORDS = (
    ("street", "st"),
    ("avenue", "ave"),
    ("road", "rd"),
    ("drive", "dr"),
    ("boulevard", "blvd"),
    ("lane", "ln"),
    ("court", "ct"),
    ("place", "pl"),
    ("parkway", "pkwy"),
    ("highway", "hwy"),
    ("suite", "ste"),
    ("apartment", "apt"),
)
"""The usual abbreviations of an address's words: "200 W Adams St" names "200 W Adams
Street" and the other way round (either written with a full stop: "St.")."""
_COMPASS = (
    ("north", "n"),
    ("south", "s"),
    ("east", "e"),
    ("west", "w"),
    ("northeast", "ne"),
    ("northwest", "nw"),
    ("southeast", "se"),
    ("southwest", "sw"),
)
"""Compass words and their letters, read as such only in a street line ("200 W Adams" names
"200 West Adams"): alone, ``S`` and ``E`` are sizes."""
_STATE_NAMES = (
    "AL Alabama|AK Alaska|AZ Arizona|AR Arkansas|CA California|CO Colorado|CT Connecticut|"
    "DE Delaware|DC District of Columbia|FL Florida|GA Georgia|HI Hawaii|ID Idaho|IL Illinois|"
    "IN Indiana|IA Iowa|KS Kansas|KY Kentucky|LA Louisiana|ME Maine|MD Maryland|"
    "MA Massachusetts|MI Michigan|MN Minnesota|MS Mississippi|MO Missouri|MT Montana|"
    "NE Nebraska|NV Nevada|NH New Hampshire|NJ New Jersey|NM New Mexico|NY New York|"
    "NC North Carolina|ND North Dakota|OH Ohio|OK Oklahoma|OR Oregon|PA Pennsylvania|"
    "RI Rhode Island|SC South Carolina|SD South Dakota|TN Tennessee|TX Texas|UT Utah|"
    "VT Vermont|VA Virginia|WA Washington|WV West Virginia|WI Wisconsin|WY Wyoming"
)
_STATES = {
    code.lower(): name.lower() for code, name in (s.split(" ", 1) for s in _STATE_NAMES.split("|"))
}
"""US state codes (USPS) and the states' names."""
_WORDLIKE_STATES = frozenset(
    ("al", "co", "de", "hi", "id", "in", "la", "ma", "me", "ms", "ne", "oh", "ok", "or", "pa")
)
"""Codes that are also words ("in", "or", "me", "order id"): said alone they name the state
only where an address puts it, after a comma or before a zip code ("Indianapolis, IN 46201")."""
_STREET_LINE = re.compile(r"\d+[a-z]? [^\W\d_]")
"""A value that starts as a street line does, a house number and a word: "200 w adams st"."""


def _spelled(words: list[tuple[str, ...]]) -> dict[str, str]:
    """Each word of *words* (groups of words that name each other) -> its pattern."""
    spellings: dict[str, set[str]] = {}
    for group in words:
        for word in group:
            spellings.setdefault(word, set()).update(group)
    return {
        word: "(?:" + "|".join(sorted(_escaped_word(w) for w in group)) + ")"
        for word, group in spellings.items()
    }


def _escaped_word(word: str) -> str:
    # An abbreviation may have its full stop ("St.", "N.").
    return re.escape(word) + (r"\.?" if word in _ABBREVIATIONS else "")


def _phrases(spellings: dict[str, str]) -> re.Pattern[str]:
    """Where a word of *spellings* stands in an escaped pattern, with any full stop after it
    (the spelling allows one); the longest first ("new york" before "ne")."""
    escaped = "|".join(re.escape(re.escape(w)) for w in sorted(spellings, key=len, reverse=True))
    return re.compile(rf"(?<![\w\\])({escaped})(?:\\\.)?(?!\w)")


_ABBREVIATIONS = frozenset(short for _, short in (*_ADDRESS_WORDS, *_COMPASS))
_ENDING = {"ending": r"[(]?(?:(?:card|account) )?(?:ending|that ends|which ends)(?: (?:in|with))?"}
"""A card's label ("Visa ending 4417") as people say it: "Visa ending in 4417", "Visa card
ending with 4417", "Visa (ending 4417)", "the Visa that ends in 4417"."""
_ADDRESS = _spelled(list(_ADDRESS_WORDS)) | _ENDING
_ADDRESS_AT = _phrases(_ADDRESS)
_STREET = _spelled([*_ADDRESS_WORDS, *_COMPASS, *_STATES.items()]) | _ENDING
_STREET_AT = _phrases(_STREET)


def _spellings(needle: str) -> tuple[dict[str, str], re.Pattern[str]]:
    """The spellings that name a value's words, and where they stand in its pattern: an
    address's usual words everywhere; in a street line, compass words and states too; a
    state's code alone, also by its name."""
    if _STREET_LINE.match(needle):
        return _STREET, _STREET_AT
    if needle not in _STATES:
        return _ADDRESS, _ADDRESS_AT
    code, name = re.escape(needle), re.escape(_STATES[needle])
    if needle in _WORDLIKE_STATES:
        code = rf"(?<=, ){code}|{code}(?={_BEFORE_ZIP})"
    if needle in _CITY_STATES:
        name = rf"{name}(?={_BEFORE_ZIP}|\W*$|[.?!;)])"
    spelling = {needle: f"(?:{name}|{code})"}
    return spelling, _phrases(spelling)


_BEFORE_ZIP = r",? \d{5}|,? usa?\b|,? united states\b"
_CITY_STATES = frozenset(("ny", "wa"))
"""States named like a city ("Washington, DC", "New York, NJ"): said alone, the name names the
state only before a zip code or the country, or ending a sentence."""


# A word goes on through one of these into a letter or digit: "x.com.au", "a.b@x", "22.50";
# and a word's ending after an apostrophe is no word of its own: "it's" does not name a size
# "S", nor "I'm" a size "M" (while "John's" names "John").
_JOINERS = ".@-"


def _start(needle: str) -> str:
    if not needle[:1].isalnum():
        return ""
    start = rf"(?<![^\W_])(?<![^\W_]['{_JOINERS}])"
    return start + r"(?<!\d,)" if needle[0].isdigit() else start


def _end(needle: str) -> str:
    if not needle[-1:].isalnum():
        return ""
    end = rf"(?![^\W_])(?![{_JOINERS}][^\W_])"
    return end + r"(?!,\d)" if needle[-1].isdigit() else end


_FRACTION = re.compile(r"(?<=\d)\.(\d+)$")


def _number(needle: str) -> str:
    """The needle as a pattern; one ending in a number also matches it written with more or
    fewer trailing zeros after the point (the same amount)."""
    if not needle[-1:].isdigit():
        return re.escape(needle)
    fraction = _FRACTION.search(needle)
    if fraction is None:
        return re.escape(needle) + r"(?:\.0+)?"
    whole, digits = needle[: fraction.start()], fraction.group(1).rstrip("0")
    if not digits:
        return re.escape(whole) + r"(?:\.0+)?"
    return re.escape(whole) + r"\." + re.escape(digits) + "0*"


_DENIED_BEFORE = re.compile(
    r"(?:\b(?:not|no|never|nothing|hardly|without|nor|neither)|n't)(?: [\w'-]+){0,2} ?$"
)
"""A negation, and at most two words after it, just before a place in normalised text."""


def affirms(pattern: re.Pattern[str], normalised_text: str) -> bool:
    """Whether already normalised text says what *pattern* matches and does not deny it: some
    match has no negation in the two words before it. "It took two weeks" says a delay, "it
    wasn't late at all" and "no delay" deny one; "not by mistake" states no mistake. (A
    pattern whose match holds its own negation, "no longer needed", "didn't arrive until", is
    said by it.)"""
    for found in pattern.finditer(normalised_text):
        before = normalised_text[max(0, found.start() - 60) : found.start()]
        if _DENIED_BEFORE.search(before) is None:
            return True
    return False


def search(pattern: str, text: str) -> bool:
    """A ``matches`` condition: the pattern, case-insensitive, somewhere in normalised text."""
    return re.search(pattern, text, re.IGNORECASE) is not None
