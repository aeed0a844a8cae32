"""Reading YAML files into models, with errors that name the file, the field and the reason.

Every YAML file groundstate reads goes through :func:`read_yaml`, a hardened loader: a file it
cannot read safely is a :class:`SpecError` (one line), never a traceback or a hang.

- the file is at most :data:`MAX_FILE_BYTES` and is UTF-8 (an error names the byte offset);
- a mapping states each key once (an error names the key and its line): YAML itself lets the
  last one win silently, so a typo'd copy-paste would change a task without a word;
- nesting is at most :data:`MAX_DEPTH` levels (deeper documents overflow the parser's stack);
- aliases may expand the document to at most :data:`MAX_NODES` nodes, counted with every
  alias expanded as the models and the hashes will see it (a "billion laughs" file is a few
  hundred bytes and would otherwise hang hashing); an alias that contains itself is refused;
- ``.inf``, ``.nan`` and numbers too large for a float are refused wherever they appear;
- a bare timestamp (``2026-01-15 10:00:00``) is kept as the text written: it is a value of a
  fixture row, an expected cell or a tool argument (text, as an SQL fixture writes it), and the
  one field that is a moment (a task's ``clock``) reads it with :func:`yaml_timestamp`;
- YAML 1.1's numbers that read other than they look are refused: ``010`` (octal: 8) and
  ``1:30`` (base 60: 90); a zip code or a clock time is text, to be quoted;
- ``1e3`` or ``2E-4`` (text in YAML 1.1, a number in YAML 1.2 and JSON) is refused too;
  :class:`YamlDumper` quotes such text in what groundstate writes;
- a key is the text written (``on:`` is the key ``"on"``, not true; ``1:`` the key ``"1"``);
- a bare ``yes``, ``no``, ``on`` or ``off`` value is refused by :func:`load_model` unless its
  field is a choice of words (``mutation_testing: off``): YAML 1.1 reads it as true or false,
  YAML 1.2 and a reader as text (``country: NO``), so either reading would be wrong for someone;
  ``true``/``false`` is a flag, ``"no"`` is text.

Other text a suite gives the agent (its policy) goes through :func:`read_text`: bounded, and
UTF-8 or a one-line error naming the byte offset. JSON a suite or its data hands groundstate
(fixtures, τ² data) goes through :func:`parse_json`.
"""

from __future__ import annotations

import codecs
import copy
import errno
import json
import math
import os
import re
import stat
import threading
from pathlib import Path
from types import UnionType
from typing import Annotated, Any, Literal, NoReturn, TypeVar, Union, get_args, get_origin

import yaml
from pydantic import BaseModel, Tag, ValidationError

from groundstate.errors import SpecError, one_line, value_problem
from groundstate.paths import LINK_LOOP, dangling_link, not_regular, os_reason
from groundstate.spec.constraints import CONSTRAINT_KINDS
from groundstate.spec.strict import did_you_mean

M = TypeVar("M", bound=BaseModel)

MAX_FILE_BYTES = 10 * 1024 * 1024
"""A task, suite, solution, system or fixture file larger than 10 MiB is refused."""
MAX_DEPTH = 100
"""Deepest nesting of mappings and sequences a file may have."""
MAX_NODES = 1_000_000
"""Most nodes (scalars, mappings, sequences) a file may hold once its aliases are expanded."""
MAX_POLICY_BYTES = 1024 * 1024
"""A suite's policy larger than 1 MiB is refused: it is sent to the agent on every attempt."""

_MERGE_TAG = "tag:yaml.org,2002:merge"


class _Refused(Exception):
    """A document the loader will not build; carries the reason and where."""

    def __init__(self, reason: str, mark: yaml.Mark | None = None) -> None:
        super().__init__(reason)
        self.mark = mark
        self.line = mark.line + 1 if mark is not None else None


class _BareWord(str):
    """A bare ``yes``, ``no``, ``on`` or ``off``: kept as the text written until
    :func:`load_model` knows the field, which refuses it unless the field is a choice of words
    (``mutation_testing: off``)."""

    mark: yaml.Mark
    reason: str
    where: str | None = None


class _SafeLoader(yaml.SafeLoader):
    """PyYAML's safe loader with bounded depth and expansion, unique keys and finite floats."""

    def __init__(self, stream: str) -> None:
        super().__init__(stream)
        self._depth = 0
        self.bare_words: list[_BareWord] = []

    def compose_node(self, parent: yaml.Node | None, index: int) -> yaml.Node | None:
        self._depth += 1
        try:
            if self._depth > MAX_DEPTH:
                raise _Refused(
                    f"nested deeper than {MAX_DEPTH} levels",
                    self.peek_event().start_mark,  # type: ignore[no-untyped-call]
                )
            return super().compose_node(parent, index)
        finally:
            self._depth -= 1

    def construct_object(self, node: yaml.Node, deep: bool = False) -> Any:
        """As PyYAML's, with a value Python cannot make (an integer past its 4,300 digits)
        refused where it is written: the innermost node's line and field, not the file."""
        try:
            return super().construct_object(node, deep=deep)
        except (ValueError, OverflowError) as exc:
            raise _Refused(value_problem(exc), node.start_mark) from None

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
        node.value = [(_key_as_text(key), value) for key, value in node.value]
        seen: set[Any] = set()
        for key_node, _ in node.value:
            if key_node.tag == _MERGE_TAG:
                continue  # merged keys may be overridden: that is what a merge is for
            if not isinstance(key_node, yaml.ScalarNode):  # `? [a, b]`: PyYAML would say
                raise _Refused(_COMPLEX_KEY, key_node.start_mark)  # "unhashable", or take it
            key = self.construct_object(key_node, deep=True)
            if key in seen:
                raise _Refused(f"duplicate key {key!r}", key_node.start_mark)
            seen.add(key)
        return super().construct_mapping(node, deep=deep)

    def construct_yaml_float(self, node: yaml.ScalarNode) -> float:
        _refuse_misread_number(node)
        value = super().construct_yaml_float(node)
        if value != value or value in (float("inf"), float("-inf")):
            raise _Refused(f"{node.value!r} is not a finite number", node.start_mark)
        return value

    def construct_yaml_int(self, node: yaml.ScalarNode) -> int:
        _refuse_misread_number(node)
        return super().construct_yaml_int(node)

    def construct_text_or_number(self, node: yaml.ScalarNode) -> NoReturn:
        text, value = node.value, float(node.value)
        number = repr(value)
        if "e" in number and "." not in number.partition("e")[0]:
            number = number.replace("e", ".0e")  # 1e+20: YAML 1.1 reads a float with a point
        raise _Refused(
            f"{text} reads as text in YAML 1.1 (and as the number {number} in YAML 1.2 and"
            f' JSON): write {number}, or quote it ("{text}") if it is text',
            node.start_mark,
        )

    def construct_written_bool(self, node: yaml.ScalarNode) -> bool | _BareWord:
        value: bool = self.construct_yaml_bool(node)
        if node.value.lower() in ("true", "false"):
            return value
        word = _BareWord(node.value)
        word.mark = node.start_mark
        word.reason = (
            f"{node.value} reads as {str(value).lower()} in YAML 1.1 (and as text in YAML"
            f' 1.2): write {str(value).lower()}, or quote it ("{node.value}") if it is text'
        )
        self.bare_words.append(word)
        return word

    def construct_written_timestamp(self, node: yaml.ScalarNode) -> str:
        return str(self.construct_scalar(node))


_COMPLEX_KEY = "a key that is a list or a mapping: a key is a name (a field, a column, a parameter)"

_TEXT_OR_NUMBER = "tag:groundstate:text-or-number"
"""A plain scalar YAML 1.2 and JSON read as a number, and YAML 1.1 as text: ``1e3``, ``1.5e3``,
``2E-4`` (YAML 1.1 asks a float for a point and a signed exponent)."""
_TEXT_OR_NUMBER_RE = re.compile(r"^[-+]?(?:\.[0-9]+|[0-9]+(?:\.[0-9]*)?)[eE][-+]?[0-9]+$")
_SafeLoader.add_implicit_resolver(_TEXT_OR_NUMBER, _TEXT_OR_NUMBER_RE, list("-+.0123456789"))


class YamlDumper(yaml.SafeDumper):
    """PyYAML's safe dumper, writing text this module would refuse as a number YAML 1.1 and
    1.2 read apart (``1e3``) in quotes: what groundstate writes (a regression task, an
    imported suite) loads back as written."""


YamlDumper.add_implicit_resolver(_TEXT_OR_NUMBER, _TEXT_OR_NUMBER_RE, list("-+.0123456789"))
_SafeLoader.add_constructor(_TEXT_OR_NUMBER, _SafeLoader.construct_text_or_number)
_SafeLoader.add_constructor("tag:yaml.org,2002:bool", _SafeLoader.construct_written_bool)
_SafeLoader.add_constructor("tag:yaml.org,2002:float", _SafeLoader.construct_yaml_float)
_SafeLoader.add_constructor("tag:yaml.org,2002:int", _SafeLoader.construct_yaml_int)
_SafeLoader.add_constructor("tag:yaml.org,2002:timestamp", _SafeLoader.construct_written_timestamp)

_STR_TAG = "tag:yaml.org,2002:str"


def _key_as_text(node: yaml.Node) -> yaml.Node:
    """A plain key is the text written, as in JSON: every key a file gives groundstate is a
    name (a field, a column, a parameter), and YAML 1.1 would read ``on:``, ``no:`` and
    ``yes:`` as true or false, ``1:`` as a number."""
    if not isinstance(node, yaml.ScalarNode) or node.tag in (_STR_TAG, _MERGE_TAG):
        return node
    return yaml.ScalarNode(_STR_TAG, node.value, node.start_mark, node.end_mark, node.style)


_OCTAL = re.compile(r"[-+]?0[0-7_]+")


def _refuse_misread_number(node: yaml.ScalarNode) -> None:
    """YAML 1.1 reads ``010`` as 8 and ``1:30`` as 90; YAML 1.2, JSON and a reader do not."""
    text = node.value
    if _OCTAL.fullmatch(text) and text.strip("+-0_"):
        value = int(text.replace("_", ""), 8)
        raise _Refused(
            f'{text} reads as the octal number {value} in YAML: quote it ("{text}") if it is'
            " text, or write the number without the leading 0",
            node.start_mark,
        )
    if ":" in text:
        raise _Refused(
            f'{text} reads as a base-60 number in YAML: quote it ("{text}") if it is text,'
            " or write the number",
            node.start_mark,
        )


def yaml_timestamp(text: str) -> Any:
    """*text* as YAML reads a bare timestamp (a ``datetime``, or a ``date`` for a day alone),
    or *text* itself when it is not one: what a task's ``clock`` field is given."""
    if not yaml.constructor.SafeConstructor.timestamp_regexp.fullmatch(text):
        return text
    node = yaml.ScalarNode("tag:yaml.org,2002:timestamp", text)
    return yaml.constructor.SafeConstructor().construct_yaml_timestamp(node)


_PLAIN_YAML = "a file holds text, numbers, true/false, null, lists and mappings"


def _refuse_tag(loader: _SafeLoader, node: yaml.Node) -> None:
    """A set's order changes from one process to the next (so would every hash and the tool
    order an agent sees); ordered maps and pairs build tuples no model reads; binary data is
    bytes, which a model would take for the text of their base64 (``!!binary aGk=`` as
    ``"hi"``) and a fixture has no column for."""
    kind = node.tag.rpartition(":")[2]
    instead = "write the text itself" if kind == "binary" else "write a list or a mapping"
    raise _Refused(f"!!{kind} is not allowed: {instead}", node.start_mark)


for _tag in ("set", "omap", "pairs", "binary"):
    _SafeLoader.add_constructor(f"tag:yaml.org,2002:{_tag}", _refuse_tag)


_READ: dict[str, Any] = {}
"""Documents read in this process, by their text (a suite is loaded many times, by ``check``,
``validate`` and ``run`` alike, and parsing its YAML was most of a load): each caller gets its
own copy. Documents that loaded only; the oldest are dropped past :data:`_READ_CHARS`."""
_READ_CHARS = 8 * 1024 * 1024
_READ_LOCK = threading.Lock()


def read_yaml(path: Path) -> Any:
    """The YAML document of *path*, read under the limits above."""
    return parse_yaml(path, read_text(path))


def parse_yaml(path: Path, text: str) -> Any:
    """*text*, read from *path*, as its YAML document (parsed once per text)."""
    with _READ_LOCK:
        known = text in _READ
        document = _READ.get(text)
    if not known:
        document = _parsed(path, text)
        with _READ_LOCK:
            _READ[text] = document
            while sum(map(len, _READ)) > _READ_CHARS:
                del _READ[next(iter(_READ))]
    return copy.deepcopy(document)


def _parsed(path: Path, text: str) -> Any:
    root = None
    try:
        loader = _SafeLoader(text)
        try:
            root = loader.get_single_node()
            if root is None:
                return None
            _check_expansion(root)
            document = loader.construct_document(root)
            for word in loader.bare_words:
                word.where = _written_path(_field_at(root, word.mark.index))
            return document
        finally:
            loader.dispose()
    except _Refused as exc:
        where = _written_path(_field_at(root, exc.mark.index)) if root and exc.mark else None
        raise SpecError(path, where, str(exc), line=exc.line) from None
    except yaml.reader.ReaderError as exc:  # a control character: no mark, an offset
        raise SpecError(
            path,
            None,
            f"invalid YAML: character U+{_code_point(exc.character):04X} at offset"
            f" {exc.position} is not allowed",
        ) from None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        line = mark.line + 1 if mark is not None else None
        where = _written_path(_field_at(root, mark.index)) if root and mark else None
        problem = _plain_problem(getattr(exc, "problem", None) or "not valid YAML")
        raise SpecError(path, where, f"invalid YAML: {problem}", line=line) from None
    except (ValueError, OverflowError) as exc:  # one no constructor above caught
        raise SpecError(path, None, f"invalid YAML: {value_problem(exc)}") from None


def _field_at(node: yaml.Node, index: int, seen: set[int] | None = None) -> tuple[Any, ...]:
    """The path of the deepest key, item or value of the document *node* that starts at
    character *index* (where the loader refused something); empty when none does."""
    seen = set() if seen is None else seen
    if id(node) in seen:  # an alias: its anchor was searched already
        return ()
    seen.add(id(node))
    pairs: list[tuple[Any, yaml.Node, yaml.Node | None]] = []
    if isinstance(node, yaml.MappingNode):
        pairs = [(_key_text(key), value, key) for key, value in node.value]
    elif isinstance(node, yaml.SequenceNode):
        pairs = [(i, item, None) for i, item in enumerate(node.value)]
    for part, child, key in pairs:
        if key is not None and key.start_mark.index == index:
            return (part,) if part is not None else ()  # a list as key: where it is
        found = _field_at(child, index, seen)
        if found or child.start_mark.index == index:
            return (part, *found)
    return ()


def _key_text(key: yaml.Node) -> str | None:
    """The name a mapping's *key* gives, None for a list or mapping as key (refused: a path
    through it would print PyYAML's nodes)."""
    return key.value if isinstance(key, yaml.ScalarNode) else None


def _written_path(parts: tuple[Any, ...]) -> str | None:
    """``a.b[2].c`` of the keys and indexes *parts*, as the file writes them."""
    text = "".join(f"[{part}]" if isinstance(part, int) else f".{part}" for part in parts)
    return one_line(text.removeprefix(".")) or None


def _code_point(character: int | str) -> int:
    return character if isinstance(character, int) else ord(character)


def _plain_problem(problem: str) -> str:
    """PyYAML's wording, with what to do where it is cryptic."""
    if "'\\t'" in problem:
        return f"{problem} (YAML indents with spaces: replace the tab)"
    if problem.startswith("could not determine a constructor for the tag "):
        tag = problem.rpartition(" ")[2].strip("'").replace("tag:yaml.org,2002:", "!!")
        return f"the tag {tag} is not allowed: {_PLAIN_YAML}"
    if problem == "but found another document":
        return "a second YAML document (a '---' line) in the file; a file holds one"
    return problem


def read_text(path: Path, *, max_bytes: int = MAX_FILE_BYTES) -> str:
    """The UTF-8 text of *path*, at most *max_bytes* long; any other is a :class:`SpecError`."""
    return decode_utf8(path, read_limited(path, max_bytes=max_bytes))


def read_limited(path: Path, *, max_bytes: int = MAX_FILE_BYTES) -> bytes:
    """The bytes of *path*, a regular file at most *max_bytes* long, in one read (what is
    hashed and what is built from them are then the same bytes); any other is a
    :class:`SpecError`."""
    regular_file(path)
    try:
        with path.open("rb") as handle:
            data = handle.read(max_bytes + 1)
    except OSError as exc:
        raise SpecError(path, None, f"cannot read: {os_reason(path, exc)}") from None
    if len(data) > max_bytes:
        raise SpecError(path, None, f"larger than {_size(max_bytes)}")
    return data


def regular_file(path: Path) -> None:
    """Refuse *path* unless it is a regular file, saying what it is instead: opening a FIFO
    would wait for a writer for ever, a device never end."""
    try:
        mode = path.stat().st_mode
    except FileNotFoundError:
        raise SpecError(path, None, _not_found(path)) from None
    except OSError as exc:
        raise SpecError(path, None, _unreadable(path, exc)) from None
    except ValueError:  # a NUL byte in the name
        raise SpecError(path, None, "not a valid file name") from None
    if stat.S_ISDIR(mode):
        raise SpecError(path, None, "is a folder, not a file")
    if not stat.S_ISREG(mode):
        raise SpecError(path, None, not_regular(mode))


def optional_file(path: Path) -> bool:
    """Whether *path*, a file a reader may go without (a Harbor trial's ``result.json``, a
    job's ``config.json``, Terminal-Bench's ``run_metadata.json``), is there to read: False
    when nothing of that name is, not even a link; True for a regular file; anything else (a
    link to nowhere, a folder, a named pipe) refused by :func:`regular_file`, naming what it
    is. Read as absent, a trial whose ``result.json`` is a link to nowhere was "unfinished"
    and left out of every count without its target named."""
    try:
        if not os.path.lexists(path):
            return False
    except ValueError:  # a NUL byte in the name
        return False
    regular_file(path)
    return True


def no_file(path: Path, name: str, where: str = "") -> str | None:
    """Why *path*, named *name* in a field, is no regular file, as that field's reason, or
    ``None`` when it is one: ``no file NAME`` (then *where*, such as " in the suite") when
    nothing is there; ``NAME: REASON`` when something is (a folder, a named pipe, a link to
    nowhere), which "no file" would deny."""
    try:
        regular_file(path)
    except SpecError as exc:
        try:
            there = os.path.lexists(path)
        except ValueError:  # a NUL byte in the name
            there = False
        return f"{name}: {exc.reason}" if there else f"no file {name}{where}"
    return None


def _not_found(path: Path) -> str:
    """Why *path* is not found: a link whose target is missing says so and names the target."""
    return dangling_link(path) or "file not found"


def _unreadable(path: Path, exc: OSError) -> str:
    """Why *path* cannot be read: a loop of links is named as one (its errno's "too many
    levels of symbolic links" is the kernel's wording)."""
    if exc.errno == errno.ELOOP:
        return LINK_LOOP
    return f"cannot read: {os_reason(path, exc)}"


def decode_utf8(path: Path, data: bytes) -> str:
    """*data*, read from *path*, as text; bytes that are not UTF-8 are a :class:`SpecError`."""
    for bom, name in _OTHER_ENCODINGS:
        if data.startswith(bom):
            raise SpecError(path, None, f"{name} text, not UTF-8: save the file as UTF-8")
    # The mark some editors put first ("UTF-8 with BOM") is not part of the text: a policy
    # would hand it to the agent, JSON refuse it.
    start = len(codecs.BOM_UTF8) if data.startswith(codecs.BOM_UTF8) else 0
    try:
        return data[start:].decode("utf-8")
    except UnicodeDecodeError as exc:
        raise SpecError(
            path, None, f"not UTF-8 text (invalid byte at offset {start + exc.start})"
        ) from None


def parse_json(path: Path | str, text: str) -> Any:
    """*text*, read from *path*, as JSON; any problem is a :class:`SpecError` naming the file
    (and the line of a syntax error). Besides bad syntax: nesting deeper than Python's stack
    (``json`` raises RecursionError), an integer past Python's 4,300-digit limit, and ``NaN``,
    ``Infinity`` and ``1e999`` (not JSON, and refused in YAML too). Other tools' result files
    have their own reader, which checks numbers field by field
    (:func:`groundstate.importers.rows.parse_json`). An object that states a key twice is
    refused, as in YAML: ``json`` keeps the last one without a word."""
    try:
        return json.loads(
            text,
            parse_constant=_not_finite,
            parse_float=_finite_float,
            object_pairs_hook=_keys_once,
        )
    except json.JSONDecodeError as exc:
        raise SpecError(path, None, f"not valid JSON: {exc.msg}", line=exc.lineno) from None
    except RecursionError:
        raise SpecError(path, None, "not valid JSON: nested too deeply") from None
    except ValueError as exc:  # an integer of more than 4,300 digits; a non-finite number
        raise SpecError(path, None, f"not valid JSON: {value_problem(exc)}") from None


def _keys_once(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    found = dict(pairs)
    if len(found) < len(pairs):
        keys = [key for key, _ in pairs]
        twice = next(key for key in keys if keys.count(key) > 1)
        raise ValueError(f"duplicate key {twice!r}")
    return found


def _not_finite(constant: str) -> float:
    raise ValueError(f"{constant} is not a finite number")


def _finite_float(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise ValueError(f"{text} is not a finite number")
    return value


_OTHER_ENCODINGS = (
    (codecs.BOM_UTF32_LE, "UTF-32"),  # before UTF-16: its byte order mark starts the same way
    (codecs.BOM_UTF32_BE, "UTF-32"),
    (codecs.BOM_UTF16_LE, "UTF-16"),
    (codecs.BOM_UTF16_BE, "UTF-16"),
)
"""Byte order marks of the encodings editors save in when asked for "Unicode"."""


def _size(n_bytes: int) -> str:
    mib = n_bytes / (1024 * 1024)
    return f"{mib:g} MiB" if mib >= 1 else f"{n_bytes:,} bytes"


def _check_expansion(root: yaml.Node) -> None:
    """Count the nodes and levels of the document with its aliases expanded, without expanding.

    An alias is the same node object as its anchor, so each node's expanded size and height
    are computed once (memoised by identity); a chain of aliases can nest deeper than the text
    does, so the depth limit is checked again here. A node met again while its own size is
    being computed is an alias inside itself, which no finite document can expand.
    """
    measured: dict[int, tuple[int, int]] = {}  # id -> (expanded size, expanded height)
    in_progress: set[int] = set()

    def measure(node: yaml.Node, level: int) -> tuple[int, int]:
        key = id(node)
        if level > MAX_DEPTH:
            raise _Refused(
                f"aliases nest the document deeper than {MAX_DEPTH} levels", node.start_mark
            )
        if key in in_progress:
            raise _Refused("an alias refers to a node that contains it", node.start_mark)
        if key not in measured:
            in_progress.add(key)
            children: list[yaml.Node] = []
            if isinstance(node, yaml.SequenceNode):
                children = list(node.value)
            elif isinstance(node, yaml.MappingNode):
                children = [part for pair in node.value for part in pair]
            size, height = 1, 1
            for child in children:
                child_size, child_height = measure(child, level + 1)
                size += child_size
                height = max(height, child_height + 1)
                if size > MAX_NODES:
                    raise _Refused(
                        f"aliases expand the document past {MAX_NODES:,} nodes", node.start_mark
                    )
            in_progress.discard(key)
            measured[key] = (size, height)
        if level + measured[key][1] - 1 > MAX_DEPTH:
            raise _Refused(
                f"aliases nest the document deeper than {MAX_DEPTH} levels", node.start_mark
            )
        return measured[key]

    measure(root, 1)


_UNREAD: Any = object()


def load_model(path: Path, model: type[M], *, data: Any = _UNREAD) -> M:
    """Validate YAML (read from *path* unless *data*, what was read of it, is given: an empty
    document given is not read again) as *model*."""
    if data is _UNREAD:
        data = read_yaml(path)
    if data is None:
        raise SpecError(path, None, "the file is empty (or only comments): expected its fields")
    if not isinstance(data, dict):
        raise SpecError(path, None, f"expected a mapping of fields, found {type(data).__name__}")
    _refuse_bare_words(path, model, data, ())
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        raise _spec_error(path, exc, model) from None


def _refuse_bare_words(path: Path, model: type[BaseModel], data: Any, loc: tuple[Any, ...]) -> None:
    """A bare yes/no/on/off anywhere in *data* is refused, with its line and field, unless the
    model's field there is a choice of words (``mutation_testing: off``): YAML 1.1 reads it as
    true or false, YAML 1.2 and a reader as text, so either reading would be wrong for
    someone."""
    if isinstance(data, _BareWord):  # a choice of words says itself what else it takes
        if not any(get_origin(tp) is Literal for tp in _types_at(model, loc)):
            raise SpecError(path, data.where, data.reason, line=data.mark.line + 1)
    elif isinstance(data, dict):
        for key, value in data.items():
            _refuse_bare_words(path, model, value, (*loc, key))
    elif isinstance(data, list):
        for i, value in enumerate(data):
            _refuse_bare_words(path, model, value, (*loc, i))


def _spec_error(path: Path, exc: ValidationError, model: type[BaseModel]) -> SpecError:
    """The first problem, saying how many more there are; each one is in ``every``."""
    errors = _one_per_union(exc.errors())
    named = {tuple(e["loc"]) for e in errors if e["type"] == "extra_forbidden"}
    each = [_one_error(path, error, model, named) for error in errors]
    first = each[0]
    more = len(each) - 1
    suffix = f" (and {more} more problem{'s' if more > 1 else ''})" if more else ""
    summary = SpecError(path, first.field, first.reason + suffix)
    summary.every = tuple(each)
    return summary


_ALTERNATIVES = {"str": "text", "int": "a number", "float": "a number", "bool": "true/false"}


def _alternative(part: object) -> str | None:
    """What a union branch pydantic names by its type (``str``, ``list[...]``) accepts."""
    if not isinstance(part, str):
        return None
    return _ALTERNATIVES.get(part) or ("a list of them" if part.startswith("list[") else None)


def _one_per_union(errors: list[Any]) -> list[Any]:
    """A value that fits no branch of a union of plain types (a cell: text, a number, true or
    false, null) as one error at the value's own path, not one per branch."""
    merged: list[Any] = []
    at: dict[tuple[Any, ...], Any] = {}
    for error in errors:
        loc = tuple(error["loc"][:-1])
        branch = _alternative(error["loc"][-1]) if error["loc"] else None
        if branch is None or not error["type"].endswith("_type"):
            merged.append(error)
        elif loc in at:
            at[loc]["branches"].append(branch)
        else:
            at[loc] = {**error, "loc": loc, "type": "union_of_types", "branches": [branch]}
            merged.append(at[loc])
    for error in at.values():
        branches = list(dict.fromkeys(error["branches"]))
        if len(branches) > 1:
            expected = ", ".join(branches[:-1]) + f" or {branches[-1]}"
            error["msg"] = f"expected {expected}; found {_kind(error['input'])}"
    return merged


def _kind(value: object) -> str:
    kinds = {dict: "a mapping", list: "a list", str: "text", bool: "true/false"}
    return "null" if value is None else kinds.get(type(value), type(value).__name__)


def _one_error(
    path: Path, error: Any, model: type[BaseModel], named: set[tuple[Any, ...]]
) -> SpecError:
    """One problem; *named* holds the unknown fields that have a problem of their own."""
    reason = one_line(error["msg"])
    if error["type"] == "extra_forbidden":
        known = fields_at(model, error["loc"][:-1])
        reason = "unknown field" + did_you_mean(error["loc"][-1], known)
    elif error["type"] == "model_type":  # pydantic names the class, which no file mentions
        reason = "Input should be a valid dictionary"
    elif error["type"] == "missing":
        reason = "required field is missing"
    elif error["type"] == "value_error":  # a validator's own sentence, without pydantic's prefix
        reason = one_line(str(error["ctx"]["error"]))
    elif error["type"] == "string_pattern_mismatch" and error["loc"][-1:] == ("task_id",):
        reason = (
            f"{error['input']!r} is not a task id: letters, digits, '_', '.' and '-',"
            " starting with a letter or digit (it names the task's file and folders)"
        )
    if isinstance(error["input"], dict) and "did you mean" not in reason:
        # A missing field's input is the mapping that lacks it, one level up.
        loc = error["loc"][:-1] if error["type"] == "missing" else error["loc"]
        given = [key for key in error["input"] if (*loc, key) not in named]
        reason += _misspelt_keys(given, fields_at(model, loc))
    return SpecError(path, _field_path(error["loc"]) or None, reason)


def _misspelt_keys(given: list[Any], known: set[str]) -> str:
    """A hint for each key of *given* that is no field here but looks like one (``befor``, a
    constraint kind misspelt, is why the constraint "needs exactly one of" its kinds)."""
    hints = []
    for key in given:
        if key not in known and (hint := did_you_mean(key, known)):
            hints.append(f"{key!r} is not a field{hint}")
    return "; " + "; ".join(hints) if hints else ""


def fields_at(model: type[BaseModel], loc: tuple[int | str, ...]) -> set[str]:
    """The field names a mapping may have at *loc* (a pydantic error location) in *model*.

    Follows the location through models, lists, dicts and unions; a union's tag, which pydantic
    puts in the location before the member's own fields, is followed as well. Empty when the
    location cannot be followed (then no name is suggested).
    """
    return {name for member in _types_at(model, loc) for name in _names(member)}


def _types_at(model: type[BaseModel], loc: tuple[int | str, ...]) -> list[Any]:
    """The types a value at *loc* in *model* may have (each member of a union apart)."""
    reached: list[Any] = [model]
    for part in loc:
        reached = [step for tp in reached for step in _steps(tp, part)]
    return [member for tp in reached for _, member in _members(tp)]


def _members(tp: Any) -> list[tuple[str | None, Any]]:
    """The alternatives of *tp* (one unless a union), each with its union tag if it has one."""
    if get_origin(tp) is Annotated:
        inner, *meta = get_args(tp)
        tags = [m.tag for m in meta if isinstance(m, Tag)]
        return [(tags[0] if tags else tag, member) for tag, member in _members(inner)]
    if get_origin(tp) in (Union, UnionType):
        return [found for arg in get_args(tp) for found in _members(arg)]
    return [(None, tp)]


def _steps(tp: Any, part: int | str) -> list[Any]:
    found = []
    for tag, member in _members(tp):
        if tag is not None and tag == part:
            found.append(member)
        args = get_args(member)
        if isinstance(part, int) and get_origin(member) in (list, tuple) and args:
            found.append(args[0])
        elif isinstance(part, str) and get_origin(member) is dict and len(args) == 2:
            found.append(args[1])
        elif isinstance(part, str) and isinstance(member, type) and issubclass(member, BaseModel):
            found.extend(
                field.annotation
                for name, field in member.model_fields.items()
                if part in (name, field.alias)
            )
    return found


def _names(tp: Any) -> list[str]:
    if isinstance(tp, type) and issubclass(tp, BaseModel):
        return [field.alias or name for name, field in tp.model_fields.items()]
    return []


_TAGS = frozenset({*CONSTRAINT_KINDS, "sql", "state_diff", "check", "judge"})
_JUDGE_TAGS = frozenset({"python-judge", "model-judge"})
"""Tags of the judge union; no field has these names, so they are left out wherever found."""


def _field_path(loc: tuple[int | str, ...]) -> str:
    text = ""
    for i, part in enumerate(loc):
        if isinstance(part, int):
            text += f"[{part}]"
        elif part in _TAGS and i > 0 and isinstance(loc[i - 1], int) and i + 1 < len(loc):
            continue  # a union tag repeats the field that follows; keep the path readable
        elif part in _JUDGE_TAGS and i + 1 < len(loc):
            continue
        else:
            name = one_line(str(part))
            text += f".{name}" if text else name
    return text


def is_file(path: Path) -> bool:
    """Whether *path* is a file; a name the OS refuses (too long, a NUL byte) is not one."""
    try:
        return path.is_file()
    except (OSError, ValueError):
        return False


def is_dir(path: Path) -> bool:
    """Whether *path* is a folder; a name the OS refuses is not one."""
    try:
        return path.is_dir()
    except (OSError, ValueError):
        return False


_FIELD_PART = re.compile(r"\[(\d+)\]|([^.\[\]]+)")


def line_of(path: Path, field: str | None) -> int | None:
    """The 1-based line where *field* (``steps[2].call``) is written in the YAML file *path*.

    Follows the path as far as the file has it, so a nested field that is missing points at
    its parent; None for a missing top-level field, or a file that cannot be parsed (its own
    error says where).
    """
    composed = _composed(path)
    if composed is None:
        return None
    node, keys = composed
    line = None
    for index, name in _FIELD_PART.findall(field or ""):
        found = _child(node, int(index) if index else name, keys)
        if found is None:
            break
        line, node = found
    return line


def with_line(error: SpecError) -> SpecError:
    """*error* with the line its field is written at in its YAML file, when it names a field
    but no line (a check made after the file was read); else *error* itself."""
    path = Path(error.path)
    if error.line is not None or not error.field or path.suffix not in (".yaml", ".yml"):
        return error
    line = line_of(path, error.field)
    if line is None:
        return error
    located = SpecError(error.path, error.field, error.reason, line=line)
    located.every = error.every
    return located


_Keys = dict[int, dict[str, tuple[int, yaml.Node]]]
"""A composed file's mappings, by the node's id: each key's line and value node."""

_COMPOSED: dict[tuple[str, int, int, int], tuple[yaml.Node, _Keys]] = {}
"""The last YAML file :func:`line_of` composed, by its path and stat (inode, size and
modification time): a file with many errors was composed again for each, and each mapping
searched key by key, so 300,000 unknown keys (3 MB) took hours to report."""


def _composed(path: Path) -> tuple[yaml.Node, _Keys] | None:
    """*path* composed (with its mappings' key index, filled as they are searched), or None
    when it cannot be read or parsed."""
    try:
        stat = path.stat()
        key = (str(path), stat.st_ino, stat.st_size, stat.st_mtime_ns)
        found = _COMPOSED.get(key)
        if found is None:
            node = yaml.compose(read_text(path), Loader=yaml.SafeLoader)
            if node is None:
                return None
            found = (node, {})
            _COMPOSED.clear()  # one file kept: its nodes may be large
            _COMPOSED[key] = found
    except (OSError, SpecError, yaml.YAMLError, ValueError, RecursionError):
        return None
    return found


def _child(node: yaml.Node, part: int | str, keys: _Keys) -> tuple[int, yaml.Node] | None:
    """A child node and the line that names it (a mapping key's line, a list item's line)."""
    if isinstance(part, int) and isinstance(node, yaml.SequenceNode):
        if part < len(node.value):
            item: yaml.Node = node.value[part]
            return item.start_mark.line + 1, item
    elif isinstance(node, yaml.MappingNode):
        if id(node) not in keys:  # the first key written wins, as the search found it
            index: dict[str, tuple[int, yaml.Node]] = {}
            for name, value in node.value:
                if isinstance(name, yaml.ScalarNode):
                    index.setdefault(name.value, (name.start_mark.line + 1, value))
            keys[id(node)] = index
        return keys[id(node)].get(str(part))
    return None
