"""Chance, the wall clock and the environment variables pushed to one end of their range, for
``grader_determinism``; with them, the other things a verdict must not rest on: the order of
unordered rows, the network, what earlier gradings and attempts left in a module, the working
folder (at the end of this module).

A check whose verdict is a draw (``random() < 0.99``) or reads the wall clock at a coarse grain
(``datetime.now().hour < 23``, ``date.today().weekday() < 5``) agrees with itself in three
gradings almost always. Graded once with the ``random`` module drawing near its lowest values
and the clock on 1 January 2000 at midnight, then near its highest values and on 31 December
2099 a second before midnight, such a check gives two verdicts every time, not by luck.

The ``random`` module's functions are replaced process-wide. Code that bound them, or the
clock, before grading (``from random import random``, ``from datetime import datetime``,
``import time``) is reached through the suite's own modules: the checks the suite loaded, and
the suite's modules their globals lead to (a helper imported by name or by module), whose
names are rebound while inside and put back after. The clock keeps moving from its new start,
so a check that waits for it still ends; ``time.monotonic`` and ``perf_counter`` are left
alone (they measure durations, not dates). The environment variables that code reads
(``os.environ``, ``os.getenv``, however bound) are, at the low end, none at all, and at the
high end every name set (its real value, or ``"1"`` where it has none): a verdict that reads a
variable, set or not where validation runs, sees it flipped in one of the two gradings. The
machine (its name, the process, the user, the processors: :func:`_machine`) is another one at
each end.
"""

from __future__ import annotations

import builtins
import copy
import datetime as _datetime
import getpass
import importlib.util
import io
import itertools
import locale
import os
import platform
import random
import re
import secrets
import socket
import subprocess
import sys
import sysconfig
import tempfile
import time as _time
import uuid
import zoneinfo
from collections.abc import Callable, Iterable, Iterator
from contextlib import AbstractContextManager, contextmanager, nullcontext, suppress
from pathlib import Path
from types import FunctionType, ModuleType
from typing import Any

from groundstate.bindings import HARNESS
from groundstate.readwatch import (
    DATED,
    PASSED_OVER,
    WATCHES,
    dated_scandir,
    looking_up,
    reversed_listings,
    suite_calling,
)
from groundstate.spec.canonical import hash_file
from groundstate.spec.code import hash_code, siblings_importable
from groundstate.spec.suite import Suite
from groundstate.tools import declared_tools
from groundstate.trace import TraceEvent
from groundstate.validation.numpy_chance import NumpyChance
from groundstate.workdirs import scratch_dir

SKEW = 0.001
"""How close to one end of its range a skewed random stream stays."""
SKEWED = ("random", "uniform", "randint", "randrange", "choice", "choices", "sample", "shuffle")
"""The functions of the ``random`` module a skewed stream replaces: the ones a check draws a
verdict from. Others (``normalvariate``...) keep the real stream: some loop until it varies."""
CLOCK_ENDS = (_datetime.datetime(2000, 1, 1, 0, 0, 0), _datetime.datetime(2099, 12, 31, 23, 59, 59))
"""Where the skewed wall clock starts (local time), low and high: every field of a date
(year, month, day, weekday, hour, minute, second) differs between the two."""
_CLOCK_FUNCTIONS = ("time", "time_ns", "localtime", "gmtime", "ctime", "asctime", "strftime")
"""The ``time`` module's functions that read the wall clock when given no time."""


class _Skewed(random.Random):
    """A random stream stuck near one end of its range (still varying, so loops end); with
    ``high`` None, the real stream."""

    high: bool | None

    def __init__(self, high: bool) -> None:
        super().__init__(0)
        self.high = high

    def random(self) -> float:
        value = super().random()
        if self.high is None:
            return value
        return 1.0 - value * SKEW if self.high else value * SKEW

    def _randbelow(self, n: int) -> int:
        if self.high is None:  # the real class's draw (``_randbelow_with_getrandbits``)
            k = n.bit_length()
            drawn = self.getrandbits(k)
            while drawn >= n:
                drawn = self.getrandbits(k)
            return drawn
        near = int(super().random() * max(1, int(n * SKEW)))
        return n - 1 - near if self.high else near

    def randbytes(self, n: int) -> bytes:
        """*n* bytes read as a number near one end of its range (about a thousandth of it):
        ``os.urandom``, ``secrets.token_hex`` and ``uuid.uuid4`` draw through it."""
        if self.high is None:
            return super().randbytes(n)
        near = self.getrandbits(max(0, 8 * n - 10))
        return ((1 << 8 * n) - 1 - near if self.high else near).to_bytes(n, "big")


def _stream_classes(high: bool) -> tuple[type[random.Random], type[random.Random]]:
    """``random.Random`` and ``random.SystemRandom`` as the suite's code sees them: a stream
    of its own it makes unseeded (``Random()``, ``SystemRandom()``), whose draws differ in
    every attempt as the module's do, draws near one end of its range; one it seeds
    (``Random(42)``, ``rng.seed(ctx.seed)``) draws as the real one, the same in every
    attempt already."""

    class Random(_Skewed):
        def __init__(self, x: Any = None) -> None:
            random.Random.__init__(self, x)  # which seeds it, through seed below

        def seed(self, a: Any = None, version: int = 2) -> None:
            super().seed(a, version)
            self.high = high if a is None else None

    class SystemRandom(_Skewed):
        def __init__(self, x: Any = None) -> None:
            super().__init__(high)  # the system's draws are never seeded

    return Random, SystemRandom


def _secure_modules(
    stream: random.Random, system_class: type[random.Random], os_module: ModuleType
) -> list[tuple[object, object]]:
    """``(original, skewed)`` for the standard library's other sources of chance that the
    suite's code may draw a verdict or an outcome from: ``os.urandom``, the ``secrets``
    module (its functions and ``SystemRandom``) and ``uuid.uuid4``, each drawing from
    *stream* (``secrets`` from an instance of *system_class*)."""
    shared = dict(vars(secrets))
    shared.update(os=os_module, _sysrand=system_class(), SystemRandom=system_class)
    shared.update(randbits=shared["_sysrand"].getrandbits, choice=shared["_sysrand"].choice)
    for name in ("randbelow", "token_bytes", "token_hex", "token_urlsafe"):
        shared[name] = _rehomed(getattr(secrets, name), shared)
    secrets_module = _module_copy(secrets, **shared)
    uuid4 = _rehomed(uuid.uuid4, {**vars(uuid), "os": os_module})
    uuid_module = _module_copy(uuid, uuid4=uuid4)
    return [
        (os.urandom, stream.randbytes),
        *(
            (getattr(secrets, name), shared[name])
            for name in ("randbelow", "randbits", "choice", "token_bytes", "token_hex")
        ),
        (secrets.token_urlsafe, shared["token_urlsafe"]),
        (secrets, secrets_module),
        (uuid.uuid4, uuid4),
        (uuid, uuid_module),
    ]


def _rehomed(function: Any, namespace: dict[str, Any]) -> Any:
    """A copy of the standard library's *function* whose globals are *namespace*."""
    copied = FunctionType(function.__code__, namespace, function.__name__, function.__defaults__)
    copied.__doc__ = function.__doc__
    return copied


def _own_streams(
    namespaces: list[dict[str, Any]],
    classes: tuple[type[Any], type[Any]],
    numpy_chance: NumpyChance,
) -> dict[int, tuple[object, object]]:
    """``id(stream) -> (stream, skewed)`` for each stream a module of the suite keeps in a
    global (``_RNG = random.Random()``), a function's default (``rng=random.Random()``) or a
    closure: made when it was imported, seeded or not, its draws follow what every earlier
    attempt drew, so they vary between attempts as the module's own do. With them, each class
    of the suite's own derived from ``random.Random`` (``class Dice(random.Random)``) and each
    stream of one: they draw as *classes* (the skewed ``Random`` and ``SystemRandom``) do;
    and each of numpy's streams (``np.random.default_rng()``, *numpy_chance*)."""
    high: bool = classes[0]().high
    swaps: dict[int, tuple[object, object]] = {}
    for value in (v for namespace in namespaces for v in _held(namespace, namespaces)):
        if id(value) in swaps or isinstance(value, _Skewed):
            continue
        if isinstance(value, type) and issubclass(value, random.Random):
            if value not in (random.Random, random.SystemRandom) and not issubclass(value, _Skewed):
                with suppress(TypeError):  # a layout of its own (__slots__): left be
                    swaps[id(value)] = (value, _skewed_class(value, classes, high))
        elif type(value) in (random.Random, random.SystemRandom):
            swaps[id(value)] = (value, classes[0]())
        elif (numpy_stream := numpy_chance.like(value)) is not None:
            swaps[id(value)] = (value, numpy_stream)
        elif isinstance(value, random.Random):
            with suppress(TypeError):
                made = _skewed_class(type(value), classes, high)
                stream: Any = made.__new__(made)
                vars(stream).update(vars(value))
                stream.high = high
                swaps[id(value)] = (value, stream)
    return swaps


def _skewed_class(
    own: type[random.Random], classes: tuple[type[Any], type[Any]], high: bool
) -> type[random.Random]:
    """The suite's stream class *own*, drawing as the skewed class of its kind: its methods
    (``def coin(self): return self.random() < 0.5``) draw near one end of the range, unless
    it is seeded (``super().__init__(42)``)."""
    base = classes[1] if issubclass(own, random.SystemRandom) else classes[0]

    def __init__(self: Any, *args: Any, **kwargs: Any) -> None:
        self.high = high  # before: seeding the stream sets it back to None (the real draws)
        own.__init__(self, *args, **kwargs)

    attributes = {"__init__": __init__, "__module__": own.__module__}
    made = type(own.__name__, (base, own), attributes | {"__qualname__": own.__qualname__})
    return made


def _held(namespace: dict[str, Any], namespaces: list[dict[str, Any]]) -> Iterator[object]:
    """The values *namespace* binds, and those its own functions hold in their defaults and
    closures."""
    for value in list(namespace.values()):
        yield value
        if isinstance(value, FunctionType) and any(value.__globals__ is n for n in namespaces):
            yield from value.__defaults__ or ()
            yield from (value.__kwdefaults__ or {}).values()
            for cell in value.__closure__ or ():
                with suppress(ValueError):  # an empty cell
                    yield cell.cell_contents


class _Real(type):
    """The fake classes' metaclass: a real ``datetime`` is an instance of the fake one, so
    ``isinstance(value, datetime)`` in a check still holds for the values it reads."""

    real: type

    def __instancecheck__(cls, instance: object) -> bool:
        return isinstance(instance, cls.real)

    def __subclasscheck__(cls, subclass: type) -> bool:
        return issubclass(subclass, cls.real)


LOCALES = (("de_DE", "ISO8859-1"), ("ja_JP", "eucJP"))
"""The locale the suite's code is told it runs in (``locale.getlocale()``), low and high."""
_LOCAL_FORMATS = (
    {"x": "%d.%m.%Y", "X": "%H.%M.%S", "c": "%a %d %b %Y %H.%M.%S"},
    {"x": "%Y/%m/%d", "X": "%I:%M:%S %p", "c": "%Y/%m/%d %I:%M:%S %p"},
)
"""How the skewed locales write a date, a time and both (``strftime``'s ``%x``, ``%X``,
``%c``): a day first, then a year first, neither as the C locale (``%m/%d/%y``)."""
_DAYS = (
    ("Montag", "Dienstag", "Mittwoch", "Donnerstag", "Freitag", "Samstag", "Sonntag"),
    tuple(f"{day}\u66dc\u65e5" for day in "\u6708\u706b\u6c34\u6728\u91d1\u571f\u65e5"),
)
_MONTHS = (
    (
        "Januar",
        "Februar",
        "M\u00e4rz",
        "April",
        "Mai",
        "Juni",
        "Juli",
        "August",
        "September",
        "Oktober",
        "November",
        "Dezember",
    ),
    tuple(f"{month}\u6708" for month in range(1, 13)),
)
_HALVES = (("", ""), ("\u5348\u524d", "\u5348\u5f8c"))
"""The names the skewed locales give days, months and the half of the day (``strftime``'s
``%A``, ``%a``, ``%B``, ``%b``, ``%h``, ``%p``; ``calendar.day_name``, ``month_name``):
German, then Japanese, neither the C locale's English."""


def _name(high: bool, directive: str, t: _time.struct_time) -> str:
    """What ``%<directive>`` (one of ``AaBbhp``) writes for *t* in the skewed locale."""
    day, month = _DAYS[high][t.tm_wday], _MONTHS[high][t.tm_mon - 1]
    names = {"A": day, "a": day[: 1 if high else 2], "B": month}
    names["p"] = _HALVES[high][t.tm_hour >= 12]
    return names.get(directive, month[:3])  # b, h


_NAMED = re.compile("(%%|%[AaBbhp])")
_NUMBERS = (
    {"decimal_point": ",", "thousands_sep": ".", "grouping": [3, 3, 0]},
    {"decimal_point": ".", "thousands_sep": ",", "grouping": [3, 3, 0]},
)
_MONEY = (
    {"currency_symbol": "\u20ac", "int_curr_symbol": "EUR ", "mon_decimal_point": ","},
    {"currency_symbol": "\u00a5", "int_curr_symbol": "JPY ", "mon_decimal_point": "."},
)
"""What the skewed locales' ``locale.localeconv()`` changes: a decimal comma and the euro,
then a decimal point, a thousands comma and the yen."""


class _Clock:
    """A wall clock started at *start* that runs at the real clock's pace; its ``strftime``
    writes ``%x``, ``%X`` and ``%c`` as the locale at the low (or *high*) end does."""

    def __init__(self, start: _datetime.datetime, high: bool, asked: dict[str, None]) -> None:
        self.offset = start.timestamp() - _time.time()
        self.high = high
        self.asked = asked  # where a date or time written as the locale does is noted

    def time(self) -> float:
        return _time.time() + self.offset

    def time_ns(self) -> int:
        return _time.time_ns() + int(self.offset * 1e9)

    def localtime(self, secs: float | None = None) -> _time.struct_time:
        return _time.localtime(self.time() if secs is None else secs)

    def gmtime(self, secs: float | None = None) -> _time.struct_time:
        return _time.gmtime(self.time() if secs is None else secs)

    def ctime(self, secs: float | None = None) -> str:
        return _time.ctime(self.time() if secs is None else secs)

    def asctime(self, t: Any = None) -> str:
        return _time.asctime(self.localtime() if t is None else t)

    def strftime(self, format: str, t: Any = None) -> str:
        local = _LOCAL_FORMATS[self.high]
        written = re.sub("%[%xXc]", lambda m: local.get(m[0][1], m[0]), format)
        if written != format:
            self.asked[f"strftime's %x, %X or %c ({format!r})"] = None
        moment = self.localtime() if t is None else _time.struct_time(t)
        pieces = _NAMED.split(written)  # the names written here: not through C's encoding
        if len(pieces) == 1 or all(p == "%%" for p in pieces[1::2]):
            return _time.strftime(written, moment)
        self.asked[f"strftime's names of days, months or %p ({format!r})"] = None
        return "".join(
            ("%" if piece == "%%" else _name(self.high, piece[1], moment))
            if n % 2
            else _time.strftime(piece, moment)
            if piece
            else ""
            for n, piece in enumerate(pieces)
        )

    def classes(self) -> tuple[type, type]:
        """``datetime`` and ``date`` classes whose ``now``/``today``/``utcnow`` read this clock."""
        clock = self

        class Datetime(_datetime.datetime, metaclass=_Real):
            @classmethod
            def now(cls, tz: _datetime.tzinfo | None = None) -> Any:
                return _datetime.datetime.fromtimestamp(clock.time(), tz)

            @classmethod
            def today(cls) -> Any:
                return _datetime.datetime.fromtimestamp(clock.time())

            @classmethod
            def utcnow(cls) -> Any:
                moment = _datetime.datetime.fromtimestamp(clock.time(), _datetime.UTC)
                return moment.replace(tzinfo=None)

        class Date(_datetime.date, metaclass=_Real):
            @classmethod
            def today(cls) -> Any:
                return _datetime.date.fromtimestamp(clock.time())

        Datetime.real, Date.real = _datetime.datetime, _datetime.date
        return Datetime, Date


class _EverySet(dict[Any, Any]):
    """Environment variables in which every name is set: its real value, or ``"1"``
    (``b"1"`` for a name of ``os.environb``)."""

    def __missing__(self, key: object) -> object:
        return b"1" if isinstance(key, bytes) else "1"

    def __contains__(self, key: object) -> bool:
        return True

    def get(self, key: Any, default: object = None) -> Any:
        return self[key]


def _environment(high: bool, of_bytes: bool = False) -> dict[Any, Any]:
    """What the suite's code sees as ``os.environ`` (or, *of_bytes*, ``os.environb``): nothing
    set, or everything set."""
    if not high:
        return {}
    return _EverySet(os.environb if of_bytes and hasattr(os, "environb") else os.environ)


MACHINES = ("groundstate-low", "groundstate-high")
"""The machine's name (host name, ``platform.node()``, the user's name) in the skewed
gradings."""
_MACHINE_OS: tuple[str, ...] = ("getpid", "getppid", "getuid", "geteuid", "getgid", "getegid")
_MACHINE_OS += ("getlogin", "cpu_count", "uname")
"""The functions of ``os`` that :func:`_machine` skews."""


_EXPANDUSER, _LOCALECONV = os.path.expanduser, locale.localeconv
_VARIABLE = re.compile(r"\$(\w+|\{[^}]*\})", re.ASCII)
"""A variable ``os.path.expandvars`` expands (POSIX): ``$NAME`` or ``${NAME}``."""


def _machine(high: bool, temp: str, asked: dict[str, None]) -> dict[str, Callable[..., Any]]:
    """What the suite's code asks of the machine it runs on (its name, the process, the user,
    the processors, the user's home, the variables a path names (``os.path.expandvars``), the
    folder for temporary files, *temp*, the locale), one machine at one end of the range,
    another at the other: a verdict resting on where validation runs
    (``getpass.getuser() == "alice"``, ``os.getpid() % 2``,
    ``socket.gethostname().startswith("ci-")``, ``str(Path.home()).startswith("/root")``,
    ``tempfile.gettempdir() == "/tmp"``, ``locale.localeconv()["decimal_point"] == "."``)
    gives another verdict in one grading. Each, called, is noted in *asked* (``getpass.getuser``):
    a disagreement names what the suite's code read."""
    name, number = MACHINES[high], (1 << 22) - 1 if high else 2
    real = os.uname()
    uname = os.uname_result((real.sysname, name, real.release, real.version, real.machine))
    functions: dict[str, Callable[..., Any]] = {
        "getpid": lambda: number,
        "getppid": lambda: number - 1 if high else number + 1,
        "cpu_count": lambda: 1024 if high else 1,
        "uname": lambda: uname,
        "getlogin": lambda: name,
        "getuser": lambda: name,
        "gethostname": lambda: name,
        "getfqdn": lambda other="": socket.getfqdn(other) if other else name,
        "node": lambda: name,
    }
    for ids in ("getuid", "geteuid", "getgid", "getegid"):
        functions[ids] = lambda: 65534 if high else 0
    home = f"/home/{name}"

    def expanduser(path: Any) -> Any:
        text = os.fspath(path)
        if isinstance(text, bytes):
            return os.fsencode(expanduser(os.fsdecode(text)))
        if text == "~" or text.startswith("~/"):  # not another user's (~bob)
            return home + text[1:]
        return _EXPANDUSER(path)

    variables = _environment(high)

    def expandvars(path: Any) -> Any:
        """``os.path.expandvars`` reading the environment variables the suite's code sees
        (the real one reads ``os.environ`` through its own module, past the skew)."""
        text = os.fspath(path)
        if isinstance(text, bytes):
            return os.fsencode(expandvars(os.fsdecode(text)))

        def value(found: re.Match[str]) -> str:
            name = found.group(1)
            if name.startswith("{") and name.endswith("}"):
                name = name[1:-1]
            return variables[name] if name in variables else found.group(0)

        return _VARIABLE.sub(value, text) if "$" in text else text

    numbers = {**_LOCALECONV(), **_NUMBERS[high], **_MONEY[high]}
    functions |= {
        "expanduser": expanduser,
        "expandvars": expandvars,
        "gettempdir": lambda: temp,
        "gettempdirb": lambda: os.fsencode(temp),
        "getlocale": lambda category=locale.LC_CTYPE: LOCALES[high],
        "getpreferredencoding": lambda do_setlocale=True: LOCALES[high][1],
        "getencoding": lambda: LOCALES[high][1],
        "text_encoding": lambda encoding, stacklevel=2: encoding or LOCALES[high][1],
        "localeconv": lambda: dict(numbers),
    }
    return {
        name: _noting(_LABELS.get(name, f"os.{name}"), function, asked)
        for name, function in functions.items()
    }


def _noting(label: str, function: Callable[..., Any], asked: dict[str, None]) -> Callable[..., Any]:
    def noted(*args: Any, **kwargs: Any) -> Any:
        asked[label] = None
        return function(*args, **kwargs)

    return noted


_LABELS = {
    "getuser": "getpass.getuser",
    "node": "platform.node",
    "gethostname": "socket.gethostname",
    "getfqdn": "socket.getfqdn",
    "expanduser": "os.path.expanduser (Path.home)",
    "expandvars": "os.path.expandvars",
    "gettempdir": "tempfile.gettempdir",
    "gettempdirb": "tempfile.gettempdirb",
    "getlocale": "locale.getlocale",
    "getpreferredencoding": "locale.getpreferredencoding",
    "getencoding": "locale.getencoding",
    "text_encoding": "the encoding a file is read by when given none (io.text_encoding)",
    "localeconv": "locale.localeconv",
}
"""How a disagreement names each function :func:`_machine` skews (``os.<name>`` otherwise)."""


def _machine_modules(machine: dict[str, Callable[..., Any]]) -> list[tuple[object, object]]:
    """``(original, skewed)`` for ``getpass``, ``platform`` and ``socket`` (the module, and
    the functions naming the machine or its user) as :func:`_machine` has them."""
    pairs: list[tuple[object, object]] = []
    for module, name in _machine_names():
        if module is not os and name in machine:  # os (and time) copied with their changes
            pairs.append((getattr(module, name), machine[name]))
    for module in (getpass, platform, socket):
        names = [name for owner, name in _machine_names() if owner is module]
        pairs.append((module, _module_copy(module, **{name: machine[name] for name in names})))
    return pairs


def _replacements(
    high: bool, temp: str, asked: dict[str, None]
) -> tuple[dict[int, tuple[object, object]], NumpyChance]:
    """``id(original) -> (original, skewed)`` for everything a check may have bound (the
    folder for temporary files *temp*), and numpy's chance skewed with them."""
    stream, clock = _Skewed(high), _Clock(CLOCK_ENDS[high], high, asked)
    numpy_chance = NumpyChance(_Skewed(high))
    stream_class, system_class = _stream_classes(high)
    datetime_class, date_class = clock.classes()
    datetime_module = _module_copy(_datetime, datetime=datetime_class, date=date_class)
    time_module = _module_copy(_time, **{name: getattr(clock, name) for name in _CLOCK_FUNCTIONS})
    environ, environb = _environment(high), _environment(high, of_bytes=True)
    machine = _machine(high, temp, asked)
    os_functions: dict[str, object] = {
        name: machine[name] for name in _MACHINE_OS if hasattr(os, name)
    }
    if hasattr(os, "environb"):  # POSIX: the variables as bytes
        os_functions |= {"environb": environb, "getenvb": environb.get}
    os_module = _module_copy(
        os, environ=environ, getenv=environ.get, urandom=stream.randbytes, **os_functions
    )
    random_module = _module_copy(
        random,
        Random=stream_class,
        SystemRandom=system_class,
        **{name: getattr(stream, name) for name in SKEWED},
    )
    pairs: list[tuple[object, object]] = [
        *((getattr(random, name), getattr(stream, name)) for name in SKEWED),
        (random.Random, stream_class),
        (random.SystemRandom, system_class),
        (random, random_module),
        *((getattr(_time, name), getattr(clock, name)) for name in _CLOCK_FUNCTIONS),
        (_datetime.datetime, datetime_class),
        (_datetime.date, date_class),
        (_datetime, datetime_module),
        (_time, time_module),
        (os.environ, environ),
        (sys.argv, list(ARGUMENTS[high])),
        (os.getenv, environ.get),
        (os, os_module),
        *((getattr(os, name), new) for name, new in os_functions.items()),  # environb too
        *_machine_modules(machine),
        *_secure_modules(stream, system_class, os_module),
        *numpy_chance.pairs,
    ]
    return {id(original): (original, skewed) for original, skewed in pairs}, numpy_chance


def _module_copy(module: ModuleType, **changed: object) -> ModuleType:
    copy = ModuleType(module.__name__, module.__doc__)
    copy.__dict__.update(vars(module))
    copy.__dict__.update(changed)
    return copy


def suite_namespaces(modules: Iterable[ModuleType], root: Path) -> list[dict[str, Any]]:
    """The globals of *modules* and of every module of the folder *root* they lead to (a
    module they import, a function they import from one)."""
    return _reached([vars(module) for module in modules], root)


def tool_namespaces(suite: Suite) -> list[dict[str, Any]]:
    """The globals of *suite*'s tools, and of the suite's modules they lead to (none for a
    built-in tool set: its code is not the suite's)."""
    return _reached(
        list(filter(None, (_globals_of(t.fn) for t in suite.tools.values()))), suite.root
    )


def _reached(pending: list[dict[str, Any]], root: Path) -> list[dict[str, Any]]:
    """*pending* and the namespaces they lead to, those of modules in *root* only."""
    found: dict[int, dict[str, Any]] = {}
    while pending:
        namespace = pending.pop()
        if id(namespace) in found or not _within(namespace.get("__file__"), root):
            continue
        found[id(namespace)] = namespace
        pending += filter(None, map(_globals_of, list(namespace.values())))
    return list(found.values())


def _globals_of(value: object) -> dict[str, Any] | None:
    """The namespace a module is, or a function runs in."""
    inner = vars(value) if isinstance(value, ModuleType) else getattr(value, "__globals__", None)
    return inner if isinstance(inner, dict) else None


def _within(file: object, root: Path) -> bool:
    return isinstance(file, str) and Path(file).resolve().is_relative_to(root.resolve())


@contextmanager
def skewed(
    high: bool,
    namespaces: Iterable[dict[str, Any]] = (),
    *,
    process_wide: bool = True,
    asked: dict[str, None] | None = None,
) -> Iterator[None]:
    """The ``random`` module drawing near its lowest (or highest) values, and the wall clock
    and environment variables seen by the code in *namespaces* at the start (or the end) of
    the century, and with no variable (or every variable) set, while inside.

    Process-wide for ``random`` (only for the short gradings of ``grader_determinism``), unless
    not *process_wide*: then only as *namespaces* see it (the module, or its functions, bound
    there), as for a replay, whose attempt would refuse the harness's ``random`` rebound. The
    names rebound in *namespaces* are taken as the harness's own while inside
    (:meth:`~groundstate.bindings.Bindings.replace`), so an attempt replayed inside does not
    take them for an agent's. The machine (:func:`_machine`: its name, the user's home, the
    folder for temporary files, made for the grading, the locale) and ``sys.argv``
    (:data:`ARGUMENTS`) are another one's too, process-wide only; what of it the code asks
    for is noted in *asked*.
    """
    with (
        scratch_dir(f"{MACHINES[high]}-") as temp,
        _skewed(high, list(namespaces), process_wide, temp, asked if asked is not None else {}),
        _argv(high) if process_wide else nullcontext(),  # after: the skew sees the real argv
    ):
        yield


@contextmanager
def _argv(high: bool) -> Iterator[None]:
    """``sys.argv`` as :data:`ARGUMENTS` has it while inside: process-wide (groundstate reads
    it only when it starts), a verdict resting on how ``validate`` was started
    (``"--strict" in sys.argv``) gives another one."""
    real = sys.argv
    sys.argv = list(ARGUMENTS[high])
    try:
        yield
    finally:
        sys.argv = real


ARGUMENTS = (("groundstate-low",), ("groundstate-high", "--groundstate-high"))
"""``sys.argv`` in the skewed gradings, low and high."""


@contextmanager
def _skewed(
    high: bool,
    namespaces: list[dict[str, Any]],
    process_wide: bool,
    temp: str,
    asked: dict[str, None],
) -> Iterator[None]:
    swaps, numpy_chance = _replacements(high, temp, asked)
    stream_class, system_class = (swaps[id(c)][1] for c in (random.Random, random.SystemRandom))
    assert isinstance(stream_class, type) and issubclass(stream_class, _Skewed)
    assert isinstance(system_class, type) and issubclass(system_class, _Skewed)
    swaps |= _own_streams(namespaces, (stream_class, system_class), numpy_chance)
    undo: list[Callable[[], None]] = []
    rebound: dict[int, dict[str, Any]] = {}  # the namespaces written: the watch looks at those
    for name in SKEWED if process_wide else ():
        rebound[id(vars(random))] = vars(random)
        undo.append(_rebind(vars(random), name, swaps[id(getattr(random, name))][1]))
    for module, name in numpy_chance.names() if process_wide else ():
        rebound[id(vars(module))] = vars(module)
        undo.append(_rebind(vars(module), name, swaps[id(getattr(module, name))][1]))
    suite_code = {id(namespace) for namespace in namespaces}
    process: dict[int, tuple[object, object]] = {}
    if process_wide:  # a subprocess the suite's code starts inherits the skewed variables
        popen = _children(subprocess.Popen, high, temp, suite_code, asked)
        swaps[id(subprocess.Popen)] = (subprocess.Popen, popen)
        rebound[id(vars(subprocess))] = vars(subprocess)
        undo.append(_rebind(vars(subprocess), "Popen", popen))
    if process_wide:  # os.system, os.exec*, os.spawn* and the built-in open too
        for owner, name, made in _c_level(high, temp, asked, suite_code):
            real = getattr(owner, name)
            if name != "id":  # id checks its caller itself: suite_calling calls id
                made = _for_suite(real, made, suite_code)
            process[id(real)] = (real, made)
            swaps[id(real)] = process[id(real)]  # bound by name: ``from os import system``
            rebound[id(vars(owner))] = vars(owner)
            undo.append(_rebind(vars(owner), name, process[id(real)][1]))
            if owner is os:  # the copy of os the suite's code is given
                setattr(swaps[id(os)][1], name, process[id(real)][1])
    for module, name in _machine_names() if process_wide else ():
        real, fake = getattr(module, name), swaps[id(getattr(module, name))][1]
        assert callable(fake)
        process[id(real)] = (real, _for_suite(real, fake, suite_code))
        rebound[id(vars(module))] = vars(module)
        undo.append(_rebind(vars(module), name, process[id(real)][1]))
    for namespace in namespaces:
        for name, value in list(namespace.items()):
            swap = swaps.get(id(value))
            if swap is not None and swap[0] is value:
                rebound[id(namespace)] = namespace
                undo.append(_rebind(namespace, name, swap[1]))
            elif isinstance(value, FunctionType) and id(value.__globals__) in suite_code:
                undo += _rebind_held(value, swaps)
    HARNESS.replace(swaps | process, rebound.values())
    try:
        yield
    finally:
        for put_back in reversed(undo):
            put_back()
        back = {id(new): (new, old) for old, new in (swaps | process).values()}
        HARNESS.replace(back, rebound.values())


def _children(
    popen: type[subprocess.Popen[Any]],
    high: bool,
    temp: str,
    suite_code: set[int],
    asked: dict[str, None],
) -> type[subprocess.Popen[Any]]:
    """``subprocess.Popen`` (so ``run``, ``check_output``, ``os.popen``) giving a process the
    code of *suite_code* starts without an ``env`` of its own the variables it is given
    itself: none at the low end, the real ones at the high end (a child cannot be given every
    name), with the home and the folder for temporary files of the skewed machine at both.
    A verdict resting on a variable, or the home, read in a subprocess
    (``subprocess.run(["sh", "-c", "echo $HOME"])``) gives another one."""
    variables = _child_environment(high, temp)

    class Popen(popen):  # type: ignore[valid-type,misc]
        def __init__(self, *args: Any, env: Any = None, **kwargs: Any) -> None:
            if env is None and suite_calling(sys._getframe(1), suite_code, _GROUNDSTATE):
                asked["the environment a subprocess inherits"] = None
                env = dict(variables)
            super().__init__(*args, env=env, **kwargs)

    return Popen


def _child_environment(high: bool, temp: str) -> dict[str, str]:
    """The variables a process the suite's code starts is given (:func:`_children`)."""
    variables = {"HOME": f"/home/{MACHINES[high]}", "TMPDIR": temp}
    return {**os.environ, **variables} if high else variables


def _system(variables: dict[str, str]) -> Callable[[Any], int]:
    """``os.system`` running *command* with *variables* as its environment (the real one is
    C's, reading the process's own): its wait status, as the real one returns it."""

    def system(command: Any) -> int:
        done = subprocess.run(["/bin/sh", "-c", os.fsdecode(command)], env=variables)
        code = done.returncode
        return code << 8 if code >= 0 else -code  # killed by a signal: its number

    return system


def _exec(execve: Callable[..., Any], variables: dict[str, str]) -> Callable[..., Any]:
    """``os.execv`` or ``os.execvp`` (so ``execl``, ``execlp``, and every ``os.spawn*``
    without an environment of its own, which call them in the child) replacing the process
    with *variables* as its environment, through *execve* (``execve`` or ``execvpe``)."""

    def execute(file: Any, args: Any) -> Any:
        return execve(file, args, variables)

    return execute


def _c_level(
    high: bool, temp: str, asked: dict[str, None], suite_code: set[int]
) -> list[tuple[ModuleType, str, Callable[..., Any]]]:
    """What the standard library does in C, past :func:`_children` and ``io.text_encoding``:
    ``os.system``, ``os.execv`` and ``os.execvp`` (so ``os.spawn*``) given the skewed
    machine's variables, the built-in ``open`` its locale's encoding, and (at the high end)
    the built-in ``id`` numbering objects in the reverse order of their addresses."""
    variables = _child_environment(high, temp)
    children = "the environment a subprocess inherits"
    found: list[tuple[ModuleType, str, Callable[..., Any]]] = [
        (builtins, "open", _open(high, asked))
    ]
    if high:
        found.append((builtins, "id", _ids(suite_code, asked)))
    if hasattr(os, "execve"):  # POSIX
        found += [
            (os, "system", _noting(children, _system(variables), asked)),
            (os, "execv", _exec(os.execve, variables)),
            (os, "execvp", _exec(os.execvpe, variables)),
        ]
    return found


def _ids(suite_code: set[int], asked: dict[str, None]) -> Callable[[object], int]:
    """The built-in ``id`` for code calling it directly from a namespace in *suite_code*
    (``sorted(rows, key=id)`` too: ``sorted`` calls it from C), numbering objects in the
    reverse order of their addresses: still one number per living object, so ``id(a) ==
    id(b)`` holds as before, but an order of objects by ``id`` (where the allocator put them,
    which another run changes) is reversed. Everyone else's calls get the real numbers."""
    real = builtins.id

    def numbered(value: object, /) -> int:
        if real(sys._getframe(1).f_globals) in suite_code:
            asked["the order of objects by id() (their addresses)"] = None
            return (1 << 64) - real(value)
        return real(value)

    return numbered


def _open(high: bool, asked: dict[str, None]) -> Callable[..., Any]:
    """The built-in ``open`` reading (or writing) a text file given no encoding in the
    skewed locale's (:data:`LOCALES`): C's ``open`` takes the locale's encoding without
    asking ``io.text_encoding``. Binary files, and text files given an encoding, as before."""
    real = io.open

    def opened(file: Any, mode: str = "r", buffering: int = -1, encoding: Any = None,
               *args: Any, **kwargs: Any) -> Any:  # fmt: skip
        if encoding is None and "b" not in mode:
            asked["the encoding a file is read by when given none (open)"] = None
            encoding = LOCALES[high][1]
        return real(file, mode, buffering, encoding, *args, **kwargs)

    PASSED_OVER.add(opened.__code__)  # the read is the suite's code's, not groundstate's
    return opened


def _machine_names() -> list[tuple[ModuleType, str]]:
    """The functions :func:`_machine` skews, where they live."""
    named = {getpass: ("getuser",), platform: ("node",), socket: ("gethostname", "getfqdn")}
    named |= {os.path: ("expanduser", "expandvars"), tempfile: ("gettempdir", "gettempdirb")}
    named |= {locale: ("getlocale", "getpreferredencoding", "localeconv"), _time: ("strftime",)}
    named |= {locale: (*named[locale], "getencoding")} if hasattr(locale, "getencoding") else {}
    named |= {io: ("text_encoding",)}  # Path.read_text, write_text and open given no encoding
    names = [(os, name) for name in _MACHINE_OS if hasattr(os, name)]
    return names + [(module, name) for module, more in named.items() for name in more]


_GROUNDSTATE = frozenset({"groundstate"})


def _for_suite(
    real: Callable[..., Any], skewed: Callable[..., Any], suite_code: set[int]
) -> Callable[..., Any]:
    """*skewed* for a call from the code of a namespace in *suite_code* (directly, or through
    a library it calls: a module it imports inside a function, ``import getpass`` in a
    check's body, reaches it so), *real* for groundstate's own code and everyone else."""

    def either(*args: Any, **kwargs: Any) -> Any:
        if suite_calling(sys._getframe(1), suite_code, _GROUNDSTATE):
            return skewed(*args, **kwargs)
        return real(*args, **kwargs)

    PASSED_OVER.add(either.__code__)
    return either


def _rebind_held(
    function: FunctionType, swaps: dict[int, tuple[object, object]]
) -> list[Callable[[], None]]:
    """Swap what *function* holds in its defaults and closure cells as *swaps* say; the
    returned functions put each back, unless the code changed it since."""

    def swapped(value: object) -> object:
        swap = swaps.get(id(value))
        return swap[1] if swap is not None and swap[0] is value else value

    undo: list[Callable[[], None]] = []
    for attribute in ("__defaults__", "__kwdefaults__"):
        held = getattr(function, attribute)
        if held is None:
            continue
        values = list(held.values() if isinstance(held, dict) else held)
        news = [swapped(value) for value in values]
        if any(new is not value for new, value in zip(news, values, strict=True)):
            changed = dict(zip(held, news, strict=True)) if isinstance(held, dict) else tuple(news)
            setattr(function, attribute, changed)
            undo.append(_put_back(function, attribute, held, changed))
    for cell in function.__closure__ or ():
        with suppress(ValueError):  # an empty cell
            if (new := swapped(original := cell.cell_contents)) is not original:
                cell.cell_contents = new
                undo.append(_put_back(cell, "cell_contents", original, new))
    return undo


def _put_back(owner: object, attribute: str, original: object, new: object) -> Callable[[], None]:
    def put_back() -> None:
        if getattr(owner, attribute, None) is new:
            setattr(owner, attribute, original)

    return put_back


def _rebind(namespace: dict[str, Any], name: str, value: object) -> Callable[[], None]:
    """Bind *name* to *value*; the returned function binds it back, unless the code changed
    it since (its own change is its own)."""
    original = namespace[name]
    namespace[name] = value

    def put_back() -> None:
        if namespace.get(name) is value:
            namespace[name] = original

    return put_back


@contextmanager
def rows_reversed(env: object) -> Iterator[None]:
    """The rows of every query without ORDER BY that graders make of *env* in reverse order,
    while inside, where the environment's kind can do it (SQLite); elsewhere nothing changes."""
    reverse: Callable[[], AbstractContextManager[object]] | None
    reverse = getattr(env, "unordered_reversed", None)
    with reverse() if reverse is not None else nullcontext():
        yield


@contextmanager
def listings_reversed(namespaces: Iterable[dict[str, Any]], env: object = None) -> Iterator[None]:
    """Folders listed by the code of *namespaces* (``os.listdir``, ``os.scandir``,
    ``Path.iterdir``, ``glob``, ``os.walk``) give their entries in reverse order while inside
    (:func:`groundstate.readwatch.reversed_listings`); groundstate's code and the package of
    *env*'s kind list as before. Process-wide, for the short gradings of
    ``grader_determinism``."""
    harness = frozenset(
        {"groundstate"} | ({type(env).__module__.partition(".")[0]} if env else set())
    )
    namespaces = list(namespaces)
    listdir, scandir = reversed_listings({id(namespace) for namespace in namespaces}, harness)
    real = {"listdir": os.listdir, "scandir": os.scandir}
    os.listdir, os.scandir = listdir, scandir
    swaps: dict[int, tuple[object, object]] = {
        id(real["listdir"]): (real["listdir"], listdir),
        id(real["scandir"]): (real["scandir"], scandir),
    }
    try:
        with _bound_too(namespaces, swaps):  # ``from os import listdir``
            yield
    finally:
        for name, function in real.items():
            if getattr(os, name) in (listdir, scandir):  # else changed since: its own change
                setattr(os, name, function)


TIME_ZONES = ("LOW-13LDT,M10.1.0,M4.1.0", "HIGH+12")
"""The machine's time zone in the skewed gradings (POSIX ``TZ``, no time zone database
needed): UTC+14, then UTC-12, the ends of the range, a day apart. The first is UTC+14 as
summer time (UTC+13 from April to October, as south of the equator), the second has none: a
verdict resting on whether the machine keeps summer time now (``time.localtime().tm_isdst``)
differs too."""


@contextmanager
def time_zone(high: bool) -> Iterator[None]:
    """The process's local time zone at one end of the range while inside (Unix; elsewhere
    nothing changes): a verdict on a local date or hour converted from a timestamp
    (``datetime.fromtimestamp(ts).day``, SQL ``'localtime'``), which the machine's time zone
    changes, gives another verdict. Process-wide: only for the short skewed gradings."""
    tzset = getattr(_time, "tzset", None)
    if tzset is None:
        yield
        return
    before = os.environ.get("TZ")
    os.environ["TZ"] = TIME_ZONES[high]
    tzset()
    try:
        yield
    finally:
        if before is None:
            os.environ.pop("TZ", None)
        else:
            os.environ["TZ"] = before
        tzset()


PACE = 1000.0
"""How much faster the fast skewed grading says the attempt went."""
SLOW = 3600.0
"""Seconds the slow skewed grading adds to every call and model call, and between events."""


def retimed(events: list[TraceEvent], high: bool) -> list[TraceEvent]:
    """*events* as a machine :data:`PACE` times faster would have recorded them, or (*high*)
    one so slow that every call took an hour more and an hour passed between events: their
    order kept. A check resting on how long a call took or how long the agent waited
    (``duration_ms < 5000``, ``b.at - a.at < 60``), which load and hardware change, gives
    another verdict in one of the two."""

    def timed(index: int, event: TraceEvent) -> TraceEvent:
        if not high:
            changes = {
                name: getattr(event, name) / PACE for name in _TIMINGS if hasattr(event, name)
            }
            return event.model_copy(update=changes)
        changes = {"at": event.at * PACE + index * SLOW}
        changes |= {
            name: getattr(event, name) * PACE + SLOW * 1000
            for name in ("duration_ms", "latency_ms")
            if hasattr(event, name)
        }
        return event.model_copy(update=changes)

    return [timed(index, event) for index, event in enumerate(events)]


_TIMINGS = ("at", "duration_ms", "latency_ms")
"""The fields of trace events that measure time, not what happened."""


class NetworkRefused(OSError):
    """A connection the suite's code tried while graded offline."""


@contextmanager
def offline(namespaces: Iterable[dict[str, Any]], env: object = None) -> Iterator[None]:
    """Every connection (and name lookup) made from the code of *namespaces* refused while
    inside, directly or through a library it calls: a verdict fetched from a service, which
    another machine, a firewall or an outage changes, differs from one given offline.

    Process-wide, for the short gradings of ``grader_determinism``. A connection made by
    groundstate's code or by the package of *env*'s kind, nearer the call than any suite code,
    goes out as before: an evaluator view reaching its environment over the network (a
    service, a database driver in Python), a model judge's request.
    """
    suite_code = {id(namespace) for namespace in namespaces}
    harness = frozenset(
        {"groundstate"} | ({type(env).__module__.partition(".")[0]} if env else set())
    )
    owned = [
        (owner, name, vars(owner).get(name))
        for owner, name in ((socket.socket, "connect"), (socket.socket, "connect_ex"))
    ] + [(socket, "getaddrinfo", socket.getaddrinfo)]
    for owner, name, _ in owned:
        setattr(owner, name, _refused(getattr(owner, name), suite_code, harness))
    try:
        yield
    finally:
        for owner, name, own in owned:
            if own is None:  # inherited (socket.socket's connect is _socket.socket's)
                delattr(owner, name)
            else:
                setattr(owner, name, own)


def _refused(
    real: Callable[..., Any], suite_code: set[int], harness: frozenset[str]
) -> Callable[..., Any]:
    """*real*, refused when the code of a namespace in *suite_code* is on the caller's stack
    before (nearer the call than) any code of the packages in *harness*."""

    def guarded(*args: Any, **kwargs: Any) -> Any:
        if suite_calling(sys._getframe(1), suite_code, harness):
            raise NetworkRefused(
                f"{real.__name__}: the network is off for the suite's code while validation grades"
            )
        return real(*args, **kwargs)

    return guarded


@contextmanager
def outside_reads(
    namespaces: Iterable[dict[str, Any]], root: Path, found: dict[str, None], env: object = None
) -> Iterator[None]:
    """While inside, note in *found* each file that the code of *namespaces* opens for reading
    (``open``, ``Path.read_text``, ``json.load``, ``sqlite3.connect``, a file URI too), attaches
    by SQL (``ATTACH DATABASE``), or looks up, found or not (``Path.exists``, ``os.stat``,
    ``os.access``: :func:`groundstate.readwatch.looking_up`), or each folder it lists, outside
    the suite's folder *root* (and what was made while inside), Python's own folders and
    ``/dev``, ``/proc``: a verdict resting on a file no suite ships (``/tmp/expected.json``, a
    path in the author's home) is another verdict on another machine, and editing it proves
    nothing again (the validity cache hashes the suite's files). A file an installed library
    opens for the code (``numpy.loadtxt``) is its read too; one opened by groundstate's code or
    the package of *env*'s kind nearer the call (a view's database), or by the standard library
    for itself (a time zone file, ``mimetypes``' tables), is not
    (:mod:`groundstate.readwatch`). Process-wide, for the short gradings of
    ``grader_determinism``."""
    namespaces = list(namespaces)
    allowed = [
        root.resolve(),
        *_python_folders(),
        *_time_zone_folders(),
        Path("/dev"),
        Path("/proc"),
    ]
    harness = frozenset(
        {"groundstate"} | ({type(env).__module__.partition(".")[0]} if env else set())
    )
    watch = ({id(namespace) for namespace in namespaces}, allowed, found, harness)
    watching = [(owner, name, getattr(owner, name), new) for owner, name, new in looking_up()]
    swaps: dict[int, tuple[object, object]] = {
        id(real): (real, new) for _, _, real, new in watching
    }
    WATCHES.append(watch)
    for owner, name, _, new in watching:
        setattr(owner, name, new)
    try:
        with _bound_too(namespaces, swaps):
            yield
    finally:
        for owner, name, real, new in watching:
            if getattr(owner, name) is new:  # else changed since: its own change
                setattr(owner, name, real)
        WATCHES.remove(watch)


@contextmanager
def _bound_too(
    namespaces: list[dict[str, Any]], swaps: dict[int, tuple[object, object]]
) -> Iterator[None]:
    """Each function of *swaps* (``id(real) -> (real, new)``), replaced in its module, replaced
    too where the code of *namespaces* bound it (``from os import stat``) while inside, as
    the harness's own instrumentation."""
    undo, rebound = [], {}
    for namespace in namespaces:
        for name, value in list(namespace.items()):
            if (swap := swaps.get(id(value))) is not None and swap[0] is value:
                rebound[id(namespace)] = namespace
                undo.append(_rebind(namespace, name, swap[1]))
    HARNESS.replace(swaps, rebound.values())
    try:
        yield
    finally:
        for put_back in reversed(undo):
            put_back()
        HARNESS.replace({id(new): (new, real) for real, new in swaps.values()}, rebound.values())


@contextmanager
def files_dated(
    namespaces: Iterable[dict[str, Any]],
    root: Path,
    high: bool,
    env: object = None,
    asked: dict[str, None] | None = None,
) -> Iterator[None]:
    """Every file and folder in the suite's folder *root* last changed, read and made at
    the moment the skewed wall clock starts (:data:`CLOCK_ENDS`), as the code of
    *namespaces* looks it up (``os.stat``, ``os.path.getmtime``, ``Path.stat()``, ``os.fstat``
    of a file it opened, the ``stat()`` of an ``os.scandir`` entry, directly or through a
    library) while inside: a verdict resting on when the suite was copied or
    checked out (``getmtime(data) > getmtime(__file__)``, the year a file was changed) gives
    another one. It acts through the watch of look-ups, so only inside :func:`outside_reads`
    (for the short gradings of ``grader_determinism``); groundstate's code and the package of
    *env*'s kind see the real times. A file so dated is noted in *asked*."""
    harness = frozenset(
        {"groundstate"} | ({type(env).__module__.partition(".")[0]} if env else set())
    )
    moment = CLOCK_ENDS[high].timestamp()
    noted = {} if asked is None else asked
    namespaces = list(namespaces)
    dating = ({id(n) for n in namespaces}, root.resolve(), moment, harness, noted)
    DATED.append(dating)
    real, dated = os.scandir, dated_scandir(os.scandir)  # a DirEntry's stat() is C's own
    os.scandir = dated
    try:
        with _bound_too(namespaces, {id(real): (real, dated)}):
            yield
    finally:
        if os.scandir is dated:  # else changed since: its own change
            os.scandir = real
        DATED.remove(dating)


def _time_zone_folders() -> list[Path]:
    """Where the time zone database lives (``zoneinfo.TZPATH``): ``ZoneInfo("Europe/Paris")``
    in a check reads it, from C code, as the standard library's own data."""
    return [Path(folder).resolve() for folder in zoneinfo.TZPATH]


def _python_folders() -> list[Path]:
    """Where Python, the installed packages and groundstate itself live."""
    folders = {sys.prefix, sys.base_prefix, sys.exec_prefix, *sysconfig.get_paths().values()}
    return [Path(f).resolve() for f in folders] + [Path(__file__).resolve().parents[1]]


_FRESH = itertools.count(1)


@contextmanager
def fresh_checks(checks: dict[str, Any], root: Path, high: bool = True) -> Iterator[None]:
    """The suite's check files in *checks* (file name -> module) imported anew while inside,
    with the sibling modules they import: a verdict resting on what earlier gradings left in
    a module (a counter, a cache, a flag) differs from one given with nothing remembered. The
    imports see every environment variable set (or, not *high*, none), so a value read when
    the module is imported (``LIMIT = int(os.getenv("LIMIT", "30"))``) varies as one read
    while grading does. A file changed since it was loaded, or that no longer imports, keeps
    its module."""
    kept = dict(checks)
    names: list[str] = []
    for file_name, module in kept.items():
        path = (root / file_name).resolve()  # its __file__ holds wherever the grading runs
        with suppress(Exception):  # it imported when the suite loaded; else it is left be
            if hash_code(path)[:16] in getattr(module, "__name__", ""):
                names.append(name := f"{module.__name__}_fresh{next(_FRESH)}")
                with _environ(_environment(high)):
                    checks[file_name] = _imported(path, name)
    try:
        yield
    finally:
        checks.update(kept)
        for name in names:
            _unimport(name)


@contextmanager
def _environ(variables: dict[str, str]) -> Iterator[None]:
    """``os.environ`` (and so ``os.getenv``) is *variables* while inside: process-wide, only
    for the moment a check file is imported anew (the variables of the process, which
    programs it starts inherit, are untouched)."""
    real = os.environ
    vars(os)["environ"] = variables  # what os.getenv reads too
    try:
        yield
    finally:
        vars(os)["environ"] = real


@contextmanager
def fresh_tools(suite: Suite) -> Iterator[Suite]:
    """A copy of *suite* whose tools file is imported anew (with the sibling modules it
    imports) while inside: a route whose outcome rests on what earlier attempts left in the
    tools' module (a counter, a cache, a flag) reaches another state, or another verdict,
    replayed with nothing remembered, as the first attempt of a batch is. Built-in tools, and
    a file changed since the suite loaded or that no longer imports, are kept as loaded."""
    anew = copy.copy(suite)
    path = (suite.root / suite.config.tools).resolve()
    name = ""
    with suppress(Exception):  # it imported when the suite loaded; else it is left be
        if suite.files.get(suite.config.tools) == hash_file(path):
            name = f"groundstate_user.tools_fresh{next(_FRESH)}"
            fresh = declared_tools(_imported(path, name), path, checked=True)
            anew.__dict__["tools"] = {**suite.tools, **fresh}
    try:
        yield anew
    finally:
        _unimport(name)


def _unimport(name: str) -> None:
    """Take the module *name*, imported anew for one check, out of ``sys.modules``, and out
    of the harness's watch: an attempt after it (a mutant, a later replay) would otherwise
    take its absence for an agent's tampering (``prohibited_action``)."""
    sys.modules.pop(name, None)
    HARNESS.forget(name)


def _imported(path: Path, name: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # what a dataclass defined in it looks up
    with siblings_importable(path.parent):
        spec.loader.exec_module(module)
    return module


@contextmanager
def elsewhere() -> Iterator[None]:
    """The process in an empty folder of its own while inside: a check that opens a file by a
    path relative to where ``validate`` was started (not to its own ``__file__``) fails.
    Process-wide: only for the short gradings of ``grader_determinism``."""
    start = os.getcwd()
    with scratch_dir("groundstate-cwd-") as folder:
        os.chdir(folder)
        try:
            yield
        finally:
            os.chdir(start)
