"""The base of every spec model, and the discriminator their unions use."""

from __future__ import annotations

import difflib
import inspect
import json
import posixpath
import types
import typing
import unicodedata
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Annotated, Any, Protocol

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, TypeAdapter, ValidationError
from pydantic import Strict as PydanticStrict

JsonScalar = str | int | float | bool | None


class Strict(BaseModel):
    """Unknown fields are errors (a misspelt field must not be ignored); models are frozen."""

    # Field docstrings become the descriptions of the published JSON Schemas (spec.schemas).
    model_config = ConfigDict(extra="forbid", frozen=True, use_attribute_docstrings=True)


def one_key_of(options: tuple[str, ...]) -> Any:
    """A discriminator: the one key of *options* that a mapping has (None: none or several)."""

    def pick(value: Any) -> str | None:
        if isinstance(value, BaseModel):
            value = value.model_dump()
        if not isinstance(value, dict):
            return None
        found = [key for key in options if key in value]
        return found[0] if len(found) == 1 else None

    return pick


class _HasId(Protocol):
    @property
    def id(self) -> str: ...


def ids_defined_once(items: Sequence[_HasId], what: str = "id") -> None:
    """Refuse a list in which two items share an id (which one would a reference mean?)."""
    first_at: dict[str, int] = {}
    for i, item in enumerate(items):
        if item.id in first_at:
            raise ValueError(
                f"{what} {item.id!r} is defined twice, at [{first_at[item.id]}] and [{i}]"
            )
        first_at[item.id] = i


def plain_id(value: str) -> str:
    """*value*, an id (of a constraint, an assertion, a rubric node) or a slice label, unless
    it could be taken for another: blank, with a character that does not show (a line break,
    a zero-width space, a direction mark), one that stands for another (a fullwidth b, the fi
    ligature, an accent written apart), or Latin letters mixed with Cyrillic or Greek ones
    that look alike ("book" written with Cyrillic o's). Reports print it, ``fails_by`` and
    ``--slice`` name it: two that look the same would be told apart by nobody."""
    if not value.strip():
        raise ValueError("is blank: reports, fails_by and --slice name it by this")
    for ch in value:
        if not ch.isprintable() or (ch.isspace() and (ch != " " or ch in (value[0], value[-1]))):
            raise ValueError(
                f"{value!r} holds {_named(ch)}, which does not show: write visible characters"
            )
    normal = unicodedata.normalize("NFKC", value)
    if normal != value:
        ch = next((c for c in value if unicodedata.normalize("NFKC", c) != c), value[0])
        written = unicodedata.normalize("NFKC", ch)
        raise ValueError(
            f"{value!r} holds {_named(ch)}, which stands for {written!r}: write {normal!r}"
        )
    scripts = {ch: unicodedata.name(ch, "").partition(" ")[0] for ch in value if ch.isalpha()}
    if "LATIN" in scripts.values():
        other = next((ch for ch, script in scripts.items() if script in _LOOKALIKE), None)
        if other is not None:
            script = scripts[other].title()
            raise ValueError(
                f"{value!r} mixes Latin letters with {script} ones that look like them"
                f" ({_named(other)}): write it in one script"
            )
    return value


_LOOKALIKE = frozenset({"CYRILLIC", "GREEK"})
"""Scripts whose letters look like Latin ones (Cyrillic and Greek o, a, e, p...)."""


def _named(ch: str) -> str:
    return f"{ch!r} (U+{ord(ch):04X} {unicodedata.name(ch, 'a control character')})"


Id = Annotated[str, AfterValidator(plain_id)]
"""An id or label a person reads and types: see :func:`plain_id`."""


# Numbers and flags as the file states them: YAML's ``true`` is not the number 1, ``"2"`` is
# not a weight and ``1.5`` is not a step count (pydantic's lax mode would coerce all three).
# Bounds keep values in a range where they mean something: ``time_limit: 1e-320`` is not a
# time limit, and a float that overflows is refused by the YAML loader already.

StrictBool = Annotated[bool, PydanticStrict()]
"""``true`` or ``false``; not ``1``, not ``"yes"``."""
Count = Annotated[int, PydanticStrict()]
"""An integer; not ``true``, not ``2.0``, not ``"2"``. Bounded per field."""
Number = Annotated[float, PydanticStrict(), Field(allow_inf_nan=False)]
"""A finite number (an integer is accepted); not ``true``, not ``"2"``. Bounded per field."""

MAX_INTEGER = 2**53
"""Largest count a file may give where nothing smaller bounds it (a task's revision, a
model's token limit): what a JSON number holds exactly in every reader. A record carries it
to other tools (``export``) and back (``import-results`` refuses larger)."""

MAX_SECONDS = 86_400.0
"""Longest time limit or timeout: one day."""
MIN_SECONDS = 0.001
"""Shortest time limit or timeout: one millisecond."""
MAX_STEPS = 10_000
"""Largest step limit (and count in a constraint)."""
MAX_WEIGHT = 1e6
"""Largest weight of a task or rubric node."""

Seconds = Annotated[Number, Field(ge=MIN_SECONDS, le=MAX_SECONDS)]
Steps = Annotated[Count, Field(ge=1, le=MAX_STEPS)]
Weight = Annotated[Number, Field(gt=0, le=MAX_WEIGHT)]


def is_number(text: str) -> bool:
    """Whether *text* reads as a number (a value YAML quoted, or a clock written as one)."""
    return read_number(text) is not None


def read_number(text: str) -> float | None:
    """The number *text* is written as, as ``float`` reads it (``" 2 "``, ``"1e3"``, ``"nan"``,
    ``"\u0662"``), or None: the one reader of a number written as text."""
    try:
        return float(text)
    except ValueError:
        return None


def is_number_value(value: Any) -> bool:
    """Whether *value* is a JSON number (an int or float; not ``true``, not its text)."""
    return isinstance(value, int | float) and not isinstance(value, bool)


def did_you_mean(name: object, known: Iterable[str], *, cutoff: float = 0.75) -> str:
    """`` (did you mean 'x'?)`` when *name* looks like a misspelling of one of *known* (a
    similarity ratio of at least *cutoff*), else ``""``.

    A misspelt field is refused (or, in a system file's open sections, would be kept and never
    read); naming the field the author meant saves a trip to the reference.
    """
    if not isinstance(name, str):
        return ""
    known = sorted(set(known) - {name})  # the name itself is no suggestion: it was refused
    folded = {option.lower().replace("-", "_"): option for option in known}
    close = difflib.get_close_matches(name.lower().replace("-", "_"), folded, n=1, cutoff=cutoff)
    return f" (did you mean {folded[close[0]]!r}?)" if close else ""


def _as_listed(name: str) -> str:
    """*name*, a path from the suite folder, as the suite's list of files writes it.

    The loader finds a named file's digest (what the grader revision, the lock and the cached
    validity follow) under that one spelling: ``./checks.py`` or ``lib/../checks.py`` name
    ``checks.py``, and would miss its digest as written. A name leading out of the suite
    (``..``, ``/``) is kept, for the loader to say where it leads.
    """
    normal = posixpath.normpath(name)
    if not name or name.startswith("/") or normal == ".." or normal.startswith("../"):
        return name
    return normal


def _ref_as_listed(ref: str) -> str:
    """A ``file.py:function`` reference with its file named as :func:`_as_listed` does."""
    file_name, colon, function = ref.partition(":")
    return f"{_as_listed(file_name)}:{function}" if colon and file_name else ref


SuiteName = Annotated[str, Field(min_length=1), AfterValidator(_as_listed)]
"""A file or folder of the suite, named by its path from the suite folder."""
SuiteRef = Annotated[str, AfterValidator(_ref_as_listed)]
"""``file.py:function`` of a Python file of the suite."""


def _whole(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _number(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


_DECODING: dict[str, tuple[str, Callable[[Any], bool]]] = {
    "temperature": ("a number, at least 0", lambda v: _number(v) and v >= 0),
    "top_p": ("a number from 0 to 1", lambda v: _number(v) and 0 <= v <= 1),
    "max_tokens": ("a whole number, at least 1", lambda v: _whole(v) and v >= 1),
    "seed": ("a whole number", _whole),
    "stop": (
        "text or a list of texts",
        lambda v: (
            isinstance(v, str) or (isinstance(v, list) and all(isinstance(s, str) for s in v))
        ),
    ),
}
"""The decoding settings every adapter documents, and the values the APIs take for them."""

SAMPLING_KEYS = frozenset(
    {*_DECODING, "top_k", "frequency_penalty", "presence_penalty", "max_completion_tokens"}
)
"""Request settings that belong in a model's ``decoding`` (written beside it, they are kept
for the record and never sent)."""


def known_decoding(decoding: dict[str, Any]) -> dict[str, Any]:
    """A documented decoding setting of the wrong type (``temperature: hot``, ``seed: 1.5``)
    or a misspelt one (``temperatur``) is refused: sent as it is, the API would refuse every
    request of the batch, or ignore the setting."""
    for key, value in decoding.items():
        if key not in _DECODING:
            hint = did_you_mean(key, _DECODING, cutoff=0.85)
            if hint:
                raise ValueError(
                    f"{key!r} is not a decoding setting{hint}: any other key is sent to the API"
                    " as it is"
                )
            continue
        expected, fits = _DECODING[key]
        if not fits(value):
            raise ValueError(f"{key}: {expected}, not {value!r}")
    return decoding


Decoding = Annotated[dict[str, Any], AfterValidator(known_decoding)]
"""A model's decoding settings: any key, those of :data:`_DECODING` of their type."""


_KINDS: dict[Any, str] = {
    int: "a whole number",
    float: "a number",
    str: "text",
    bool: "true or false",
    list: "a list",
    tuple: "a list",
    dict: "a mapping",
    type(None): "null",
}


def describe_type(hint: Any) -> str:
    """*hint*, a type annotation, in the words a file's author reads (``list[str] | None``:
    "a list of text or null")."""
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if origin is typing.Literal:
        return " or ".join(map(str, args))
    if origin is typing.Union or origin is types.UnionType:
        return " or ".join(map(describe_type, args))
    if origin is Annotated:
        return describe_type(args[0])
    if origin in (list, tuple, set, frozenset, Sequence, Iterable):
        return f"a list of {describe_type(args[0])}" if args else "a list"
    if origin in (dict, Mapping) and len(args) == 2:
        return f"a mapping of {describe_type(args[0])} to {describe_type(args[1])}"
    return _KINDS.get(origin or hint) or str(getattr(hint, "__name__", hint))


def value_problem(hint: Any, value: Any) -> str | None:
    """Why *value*, read from a file, cannot be what the annotation *hint* says, or None.

    Read as JSON strictly: ``"0.1"`` is not a number nor ``1`` text, but a path or a date may
    be written as text. An annotation that is not a type pydantic knows (left as text, or a
    class of the user's) is not checked: the call itself will say."""
    if hint is inspect.Parameter.empty or isinstance(hint, str):
        return None
    try:
        adapter: TypeAdapter[Any] = TypeAdapter(hint)
        text = json.dumps(value, allow_nan=False)
    except Exception:  # a type without a schema, a value that is no JSON: not checked here
        return None
    try:
        adapter.validate_json(text, strict=True)
    except ValidationError:
        shown = repr(value) if len(repr(value)) <= 60 else repr(value)[:57] + "..."
        wanted = describe_type(hint)
        reason = f"must be {wanted}, not {shown}"
        if isinstance(value, bool) and "true or false" not in wanted:
            reason += " (YAML reads a bare no, off or false as false)"
        return reason
    return None


def own_default(default: BaseModel) -> Any:
    """A field whose default is *default*, a copy of it for each model that leaves the field
    out. A model instance written as a default is one object shared by every model that
    leaves the field out (pydantic copies only defaults it cannot hash, and a frozen model
    hashes): setting one of its fields (``object.__setattr__`` passes a frozen model), or a
    dict of it in place, would change every other task or system. The JSON schema still
    shows the default."""
    shown = default.model_dump(mode="json")
    return Field(
        default_factory=lambda: default.model_copy(deep=True),
        json_schema_extra={"default": shown},
    )
