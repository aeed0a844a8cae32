"""The harness's code as bound in this process, so that an in-process agent that rebinds it
(``groundstate.episode.classify = lambda *a: "success"``, a grading method replaced on its
class, ``json.dumps`` or ``hashlib.sha256`` swapped) is found, named and put back before its
attempt is graded (see :func:`groundstate.episode.run_attempt`).

Python cannot keep code in one interpreter from rebinding another's names; it can notice
afterwards. :data:`HARNESS` holds, from before the first user file (agent, tools, checks)
is imported, every name of the :data:`WATCHED` modules (but numpy's, math's and fractions':
their functions and classes) and of groundstate's classes, the attributes and class of the
objects the standard library's watched modules keep (``json._default_decoder``), the code
and defaults of each function those modules and classes define (set on the function
itself, unseen by its namespace), and the functions of a suite's check and tool files
(:data:`SUITE_CODE`). A module first imported later is
taken in when next seen (:meth:`Bindings.refresh`, before a user file is imported and at
each attempt's start), with what it names from elsewhere (``os``, ``uuid``, ``pathlib.Path``:
see :meth:`Bindings._take_named`): its import is no change, so a module an agent imports and patches
before that is not caught. Audit hooks, which cannot be taken out, are refused once an
in-process agent has run (:func:`refuse_audit_hooks`).
"""

from __future__ import annotations

import builtins
import sys
import threading
from collections.abc import Callable, Iterable, Iterator
from functools import cache, lru_cache
from itertools import chain, compress
from operator import attrgetter, is_, is_not, itemgetter, ne
from types import CodeType, FunctionType, ModuleType
from typing import Any, NamedTuple

# numpy gathers the words the looks read (see :func:`_gather`). Imported with this module, not
# when the first row is built: its import starts native threads (OpenBLAS's), and a pool
# worker notes its threads before its first attempt (``executors._job.native_threads``):
# unlisted by ``threading`` and started during an attempt, they were taken for the
# agent's. ``groundstate --help`` does not import this module.
import numpy as np

from groundstate.readwatch import WATCHES as _READ_WATCHES
from groundstate.readwatch import audit as _seen_read

WATCHED = frozenset({"groundstate", "pickle", "copyreg", "json", "hashlib", "sqlite3"})
"""The modules (and their submodules) whose functions and classes an agent must not rebind:
the harness's own and those it serialises, hashes and stores with (not every module: the
check runs twice per attempt, and must stay around a millisecond). Not ``builtins``:
they are put back as the agent's run returns, before this looks
(:func:`groundstate.loopthreads.put_back_builtins`)."""

WATCHED_ALONE = frozenset({"math", "fractions", "numpy"})
"""Modules whose functions and classes are watched without their submodules: those the
statistics compute with (``np.expm1``, ``math.comb``, ``Fraction``), which ``run`` computes
in the process its agents ran in, for its summary and its ``--fail-under`` gates: an agent
that set ``numpy.expm1`` to a lie of its own passed a gate with every attempt failed (exit
0). Not their submodules: numpy's are a hundred namespaces, and the statistics reach none
of them."""

NAMED_NOT_WATCHED = frozenset(
    {"builtins", "sys", "time", "warnings", "threading", "_thread", "atexit", "gc"}
    | {"typing", "inspect", "logging"}
)
"""Modules the harness names that are not watched with the others named (see
:meth:`Bindings._take_named`): the process-wide settings put back as an agent's run ends
(:mod:`groundstate.loopthreads`: the builtins, ``time``'s functions, the hooks of ``sys``,
``threading`` and ``warnings``), which the harness and a test runner also set lawfully
(``atexit.register`` by :mod:`groundstate.leftovers`, ``threading.excepthook`` by pytest
around each test), and ``typing``, ``inspect`` and ``logging``, which grade nothing and which
libraries patch as they are imported, after the harness's modules (``typing_extensions``
``typing._check_generic``, Ray ``inspect.isgenerator`` and the log record factory)."""

WATCHED_CLASSES = frozenset({"asyncio"})
"""Named modules whose classes' methods are watched too (the classes the module names, with
those they inherit from), not only their namespace: ``asyncio``'s, which the harness waits
and schedules with. Before, ``asyncio.wait_for`` rebound was named, but not
``asyncio.BaseEventLoop.call_at`` set to drop its timer, nor ``asyncio.Event.wait`` set to
return at once: a ``success``, and every later attempt in the process ran with it."""

SUITE_CODE = ("groundstate_user.checks_", "groundstate_user.tools_")
"""The modules of a suite's own code that grade and act (its check and tool files, as
:func:`groundstate.tools.load_module` names them), watched for their functions and classes
and the code those run, not their data. An agent that set the check its task is graded by to
``lambda s0, sT: True`` (found in ``sys.modules`` or through ``gc``) passed, doing nothing;
one that gave a tool other code acted past the tool's own rules. Not an agent's file: its
code is its own to change."""

REBOUND = frozenset(
    {
        "groundstate.exitcause._owner",
        "groundstate.environments.postgres_server._SHARED",
    }
)
"""The harness's module globals that its own code rebinds (``global``): not held."""

_OWN = "groundstate"
_BUILTIN_NAMES = frozenset(vars(builtins))
_MISSING = object()


def _watched(name: str) -> bool:
    """Whether the module named *name* is watched (see :data:`WATCHED`)."""
    return name.partition(".")[0] in WATCHED or name in WATCHED_ALONE or name.startswith(SUITE_CODE)


class _Watched:
    """A namespace's bindings as first seen: names, their values, and the namespace's size (a
    class grows a non-code entry now and then, ``__slotnames__`` when first pickled).

    With *data*, every name is held, not only code: the harness's module globals and class
    attributes are what its code reads (an agent that put a watch of its own in
    ``groundstate.episode.HARNESS`` that found nothing, then rebound a grading function,
    passed; one that set ``AgentRun.__pydantic_serializer__`` to one of its own had its record
    stored as a success; one that added reads to the SQLite authorizer's set of harmless
    actions read a table its task forbids, in every later attempt too), but for the names in
    *free* (globals the harness rebinds itself: :data:`REBOUND`).

    A name added later counts on a class (it overrides what the class inherits) and, on a
    module, only over a builtin (``groundstate.episode.isinstance = ...`` changes what the
    module calls): modules gain other names lawfully (``groundstate.__getattr__`` keeps each
    public name it imports)."""

    def __init__(
        self,
        namespace: dict[str, object],
        *,
        module: bool,
        data: bool = False,
        free: frozenset[str] = frozenset(),
        home: str | None = None,
    ) -> None:
        self.namespace = namespace
        self.shadows = _BUILTIN_NAMES if module else None
        found = {
            name: value
            for name, value in list(namespace.items())
            if (data and name not in free) or _code(value)
        }
        self.names, self.values = tuple(found), tuple(found.values())
        self.size = len(namespace)
        self.functions = tuple(
            [
                (label, fn, _state(fn))
                for name, value in list(namespace.items())
                for label, fn in _functions(name, value)
                if fn.__module__ == home
            ]
        )  # by way of a list, as every tuple built here (see _items)
        """Each function of the module *home* it binds, held with its state as first seen
        (see :func:`_state`; not every function bound: that is thousands, each read at every
        look, where the dicts' versions spare reading the names)."""
        self.tools = tuple(
            [
                (f"{name}.fn", value, value.fn)  # type: ignore[attr-defined]
                for name, value in list(namespace.items())
                if _tool(value) and value.fn.__module__ == home  # type: ignore[attr-defined]
            ]
        )
        """A suite's ``Tool`` objects with the function each calls (frozen: but
        ``object.__setattr__`` sets it)."""

    def changed(self) -> list[str]:
        """Names rebound, removed or added (code over a name first seen without) since."""
        namespace = self.namespace
        if len(namespace) == self.size and all(
            map(is_, map(namespace.get, self.names), self.values)
        ):
            return []
        rebound = [
            n
            for n, v in zip(self.names, self.values, strict=True)
            if namespace.get(n, _MISSING) is not v
        ]
        known = set(self.names)
        added = [
            n
            for n, v in list(namespace.items())
            if n not in known and _code(v) and (self.shadows is None or n in self.shadows)
        ]
        if not added:
            self.size = len(namespace)
        return rebound + added

    def put_back(self, names: list[str], owner: object) -> None:
        first = dict(zip(self.names, self.values, strict=True))
        for name in names:
            if name in first:
                setattr(owner, name, first[name])
            else:
                delattr(owner, name)
        self.size = len(self.namespace)

    def altered(self) -> list[tuple[str, FunctionType, _FunctionState]]:
        """The functions held whose code or defaults were changed in place since (the same
        function object: ``episode.run_checks.__code__ = lie.__code__``), with their state
        as first seen."""
        return [
            (label, fn, state) for label, fn, state in self.functions if _altered(_state(fn), state)
        ]


class Mark(NamedTuple):
    """The watched namespaces at a moment (see :meth:`Bindings.mark`). Tuples only, read
    through ``tuple`` after the mark is given this class again: an agent that found the mark
    (``gc.get_objects()``) and set its ``seen`` to the versions after its own writes, or an
    entry of a copy to something else, had code it rebound for a while and put back go
    unnamed (``written_back``)."""

    wheres: tuple[str, ...]
    spaces: tuple[dict[str, object], ...]
    copies: tuple[tuple[tuple[str, object], ...], ...]
    """Each namespace's entries as they were (its items, as a tuple)."""
    versions: Callable[[], list[int]]
    seen: tuple[int, ...]
    cache: tuple[Any, ...] = ()
    """The row, what its cache of copies (``_Flat.marked``) was left as by this mark, and
    the row's count of marks then: the next mark reuses those copies for the namespaces
    unwritten since, so an agent that set the cache to copies of its own (empty ones,
    differing from every namespace as a lawful change does) had the next attempt's code
    rebound for a while go unnamed."""


class Bindings:
    """The watched bindings as first seen: :meth:`put_back` finds and undoes later changes."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._watched: dict[object, tuple[str, _Watched]] = {}
        self._typed: list[tuple[str, object, type]] = []
        """The objects of :meth:`_take_instance` with their classes (``__class__`` swapped)."""
        self._modules: set[str] = set()
        self._entries: dict[str, ModuleType] = {}
        """Each watched module's entry in ``sys.modules``: replaced there (``sys.modules[
        "groundstate.gates"] = fake``), the harness's next import of it (functions import
        lazily: the exit status's gates after a batch) took the agent's module."""
        self._loaded = 0
        self._flat: _Flat | None = None
        self.refresh()

    def refresh(self) -> None:
        """Take in the watched modules loaded since the last look (their first import is no
        change)."""
        with self._lock:
            if len(sys.modules) == self._loaded:
                return
            self._loaded = len(sys.modules)
            for name, module in sys.modules.copy().items():
                if name in self._modules or not isinstance(module, ModuleType):
                    continue
                if not _watched(name):
                    continue
                if getattr(module.__spec__, "_initializing", False):  # half-defined: next time
                    self._loaded = -1
                else:
                    self._take(name, module)

    def _take(self, name: str, module: ModuleType) -> None:
        self._flat = None
        self._modules.add(name)
        self._entries[name] = module
        own = name.partition(".")[0] == _OWN
        data = name.partition(".")[0] in WATCHED  # not numpy's globals: they move lawfully
        free = frozenset(n.rpartition(".")[2] for n in REBOUND if n.rpartition(".")[0] == name)
        home = name if data or name.startswith(SUITE_CODE) else None
        watched = _Watched(vars(module), module=True, data=data, free=free, home=home)
        self._watched[module] = (name, watched)
        for entry, value in zip(watched.names, watched.values, strict=True):
            if not data:
                continue
            if isinstance(value, type) and value.__module__ == name:
                self._take_class(value, data=own, home=name)
            elif not own and _instance(entry, value):
                self._take_instance(f"{name}.{entry}", value)
        if own:
            self._take_named(vars(module))

    def _take_instance(self, where: str, value: object) -> None:
        """Watch every attribute and the class of an object a watched module of the standard
        library keeps and calls (``json._default_decoder``, which ``json.loads`` decodes with:
        an agent that set its ``decode`` to one of its own changed what the store hashed, and
        every later record's hash in the process with it)."""
        self._typed.append((where, value, type(value)))
        self._watched[value] = (where, _Watched(vars(value), module=False, data=True))

    def _take_named(self, namespace: dict[str, object]) -> None:
        """Watch what a module of the harness's names from elsewhere, as it is now (before any
        agent has run: the harness's modules are imported first): each module it binds
        (``os``, ``uuid``, ``scipy.special``) or takes a function or class from, without
        their submodules, and the classes it takes with those they inherit from (``Path``,
        pydantic's ``BaseModel``). An agent that set ``os.pread`` to a function of its own
        hid its write behind the gateway from the probe that reads the database's change
        counter (``success``); one that set ``unicodedata.normalize`` hid a forbidden text
        from a message constraint. (Not :data:`NAMED_NOT_WATCHED`.)"""
        for value in list(namespace.values()):
            if isinstance(value, ModuleType):
                found = value.__name__
            elif _code(value) and isinstance(getattr(value, "__module__", None), str):
                found = value.__module__
                if isinstance(value, type) and found.partition(".")[0] != _OWN:
                    for cls in value.__mro__[:-1]:  # not ``object``
                        self._take_class(cls)
            else:
                continue
            module = sys.modules.get(found)
            if found in self._modules or found in NAMED_NOT_WATCHED:
                continue
            if found.partition(".")[0] == _OWN or not isinstance(module, ModuleType):
                continue
            self._modules.add(found)
            self._entries[found] = module
            self._watched[module] = (found, _Watched(vars(module), module=True))
            if found in WATCHED_CLASSES:
                for cls in [v for v in list(vars(module).values()) if isinstance(v, type)]:
                    for base in cls.__mro__[:-1]:  # not ``object``
                        self._take_class(base)

    def _take_class(self, cls: type, *, data: bool = False, home: str | None = None) -> None:
        """Watch *cls*'s own dict (``vars`` gives a read-only proxy, slower to read), unless a
        type whose attributes cannot be set (``str``, ``datetime``); with *data* (the
        harness's own classes) every attribute, not only code (see :class:`_Watched`); with
        *home*, its methods' code and defaults too."""
        if cls in self._watched or cls.__flags__ & _IMMUTABLE_TYPE:
            return
        where = f"{cls.__module__}.{cls.__qualname__}"
        watched = _Watched(_dict_of(cls), module=False, data=data, home=home)
        self._watched[cls] = (where, watched)

    def forget(self, name: str) -> None:
        """Stop watching the module *name*, which the harness itself takes out of
        ``sys.modules`` (a suite file imported anew for one validation check): its entry
        gone is then no agent's doing."""
        with self._lock:
            module = self._entries.pop(name, None)
            self._modules.discard(name)
            if module is not None:  # else never taken in: the row holds nothing of it
                self._watched.pop(module, None)
                self._flat = None
            self._loaded = -1

    def rebase(self) -> None:
        """Take the watched bindings as they are now as the harness's own: for code that
        instruments the harness on purpose (a profiler, a benchmark, a test's
        ``monkeypatch``), after it changes them and after it puts them back."""
        with self._lock:
            self._watched.clear()
            self._typed.clear()
            self._modules.clear()
            self._entries.clear()
            self._loaded = 0
            self._flat = None
        self.refresh()

    def replace(
        self, swap: dict[int, tuple[object, object]], within: Iterable[object] | None = None
    ) -> None:
        """Take *new* as first seen for each watched name first seen bound to *old* and bound
        to *new* now (*swap* maps ``id(old)`` to both): the harness's own instrumentation,
        as :mod:`groundstate.exitcause` wraps ``os._exit`` for a batch and unwraps it after,
        without taking as the harness's whatever else is bound now (:meth:`rebase`). Given
        *within*, the namespaces (dicts) the caller rebound names in, only those are looked
        into (validation's skewed gradings swap a few names, and the watch holds some 600
        namespaces)."""
        wanted = None if within is None else set(map(id, within))
        with self._lock:
            changed = False
            for _, watched in self._watched.values():
                if wanted is not None and id(watched.namespace) not in wanted:
                    continue
                if swap.keys().isdisjoint(map(id, watched.values)):
                    continue
                values = list(watched.values)
                for i, (name, value) in enumerate(zip(watched.names, values, strict=True)):
                    old, new = swap.get(id(value), (None, None))
                    if old is value and watched.namespace.get(name, _MISSING) is new:
                        values[i] = new
                if any(map(is_not, values, watched.values)):  # else the tuple sealed is kept
                    watched.values = tuple(values)
                    changed = True
            if changed and self._flat is not None:
                # The row is what it would be built again as: the same namespaces, names and
                # functions, with the values taken now; what was sealed or seen with the old
                # values is taken again (as for a row built anew).
                flat = self._flat
                flat.values = tuple(
                    list(chain.from_iterable([w.values for _, w in self._watched.values()]))
                )
                flat.seen = flat.sealed = flat.own = None

    def rebound(self) -> list[str]:
        """The watched names bound to something else now, removed, or added over a name
        first seen without (a method set on a class over one it inherits), as
        ``module.name`` or ``module.Class.name``."""
        return self._compare(put_back=False)

    def put_back(self, *, read_code: bool = True) -> list[str]:
        """Bind every watched name as first seen again; return those that were changed.
        *read_code* False: the functions' code and defaults are read only if the audit hook
        noted a set since the last look (see :data:`_NOTED`); one made through C (a
        ``ctypes`` call of ``PyFunction_SetDefaults``, a raw write), which it does not note,
        is found by the next look that reads them (an attempt's last one does)."""
        return self._compare(put_back=True, read_code=read_code)

    def mark(self) -> Mark | None:
        """The watched namespaces now, for :meth:`written_back`; None where the interpreter
        keeps no dict versions (see :func:`_versions`)."""
        with self._lock:
            flat = self._row()
            if flat.versions is None:
                return None
            seen = flat.versions()  # before the copies: a write meanwhile moves it again
            copies = flat.copies(seen)
            cache = (flat, flat.marked, flat.marks)
            return Mark(flat.wheres, flat.spaces, copies, flat.versions, tuple(seen), cache)

    def seal(self) -> Seal:
        """The watch itself as it is now, for :meth:`unsealed` once an agent has run: a plain
        tuple (no list, no dict, no class of its own: nothing in it can be edited or
        retyped), which the caller keeps in a local variable of its own.

        The watch is objects an in-process agent reaches as it reaches the harness's code
        (``groundstate.bindings.HARNESS``): one that rebound ``episode.classify`` and then
        called ``HARNESS.rebase()``, or set the watch's held values to the lie
        (``_Watched.values``), a method of it to one finding nothing, or its row's versions
        as just looked at (``_Flat.seen``), passed: the watch compared the lie with itself.

        What the watch holds is taken once per row (:class:`_Flat`, built again when the
        watched set changes), and the row is made of tuples: a seal is then a few reads.
        :meth:`unsealed` compares what the watch holds only when its dicts were written
        since; the look that finds a namespace changed compares it too (:meth:`_compare`),
        before it believes the watch."""
        with self._lock:
            flat = self._row()
            if flat.sealed is None:
                flat.sealed, flat.own = self._held(), _versions([self._watched, self._entries])
            return (
                type(self),
                tuple([(k, v) for k, v in vars(self).items() if k not in _MOVING]),
                flat,
                tuple([(k, v) for k, v in vars(flat).items() if k not in _FLAT_MOVING]),
                _closure(flat.versions),
                _closure(flat.own),
                () if flat.own is None else tuple(flat.own()),
                flat.seen,
            )

    def _held(self) -> tuple[object, ...]:
        """What the watch holds now, by identity (see :meth:`seal`)."""
        watched = self._watched
        held = tuple(list(map(itemgetter(1), watched.values())))
        return (
            tuple(list(watched)),
            tuple(list(watched.values())),
            tuple(list(chain.from_iterable(map(_WATCH_FIELDS, held)))),
            sum(map(len, map(vars, held))),
            tuple(self._typed),
            tuple(list(self._entries.items())),
            frozenset(self._modules),
        )

    def unsealed(self, seal: Seal) -> list[str]:
        """What of the watch itself was changed since *seal* (see :meth:`seal`), each part put
        back as sealed, so that :meth:`put_back` then finds the code the agent rebound. What
        the watch's own code changes as it looks (a row built again, a size grown lawfully,
        a module taken in) is not a change."""
        cls, attrs, flat, flat_attrs, versions, own, then, seen = seal
        row: _Flat = flat
        found: list[str] = []
        if type(self) is not cls:
            object.__setattr__(self, "__class__", cls)
            found.append("__class__")
        with dict(attrs)["_lock"]:
            found += _set_back(vars(self), attrs, _MOVING)
            if (
                type(row) is not _Flat
                or _set_back(vars(row), flat_attrs, _FLAT_MOVING)
                or _closure(row.versions) != versions
                or _closure(row.own) != own
            ):
                object.__setattr__(row, "__class__", _Flat)
                _set_back_cells(row.versions, versions)
                _set_back_cells(row.own, own)
                found.append("_flat")
            # The watch's dicts written (``rebase``), or its row dropped or replaced: what
            # it holds is compared with the seal's.
            if row.own is None or tuple(row.own()) != then or self._flat is not row:
                found += self._put_back_held(dict(flat_attrs)["sealed"])
            if found or self._flat is not row:
                self._flat = None  # built again from the watch as sealed
            elif row.seen is not seen:
                # Versions taken as seen since (the agent's, those of now, after its writes):
                # the next look would not look at the names. Looked at again.
                row.seen = None
        return [f"groundstate.bindings.HARNESS.{part} (the watch itself)" for part in found]

    def _put_back_held(self, sealed: tuple[Any, ...]) -> list[str]:
        """Put back what the watch held as :meth:`_held` took it; name what differed."""
        owners, entries, fields, size, typed, named, modules = sealed
        found = []
        watched = self._watched
        if not all(map(is_, map(watched.get, owners), entries)):
            watched.update(zip(owners, entries, strict=True))
            found.append("_watched")
        held = tuple(list(map(itemgetter(1), entries)))
        if not all(map(is_, chain.from_iterable(map(_WATCH_FIELDS, held)), fields)) or (
            sum(map(len, map(vars, held))) != size
        ):
            width = len(_FIELD_NAMES)
            for i, w in enumerate(held):
                first = fields[i * width : (i + 1) * width]
                vars(w).clear()
                vars(w).update(zip(_FIELD_NAMES, first, strict=True), size=-1)
            found.append("_watched (its held names)")
        if tuple(self._typed[: len(typed)]) != typed:
            self._typed[: len(typed)] = typed
            found.append("_typed")
        if not all(self._entries.get(name) is module for name, module in named):
            self._entries.update(named)
            found.append("_entries")
        if not modules <= self._modules:
            self._modules |= modules
            found.append("_modules")
        return found

    def _row(self) -> _Flat:
        """The watched names in one row (built again when the watched set changes); the
        caller holds the lock."""
        if self._flat is None:
            self._flat = _Flat(self._watched.values(), self._entries, self._typed)
        return self._flat

    def written_back(self, mark: Mark | None) -> list[str]:
        """The watched namespaces written since *mark* that hold what they held then, each
        entry the same object: code rebound for a while and put back (a method of the
        environment's, the gateway's or the count's swapped for a call made through it,
        then bound again), which :meth:`put_back`, looking once the agent has run, finds
        unchanged. Read from the dicts' versions, which every write moves and Python code
        cannot set back. A namespace whose entries differ now is not named: a lawful
        change (a lazy global set, ``__annotations__`` made on first read) or one
        :meth:`put_back` names."""
        if mark is None:
            return []
        if type(mark) is not Mark:  # a class of the agent's, its fields its own
            object.__setattr__(mark, "__class__", Mark)
        fields: tuple[Any, ...] = tuple(tuple.__iter__(mark))
        wheres, spaces, copies, versions, seen, kept = fields
        now = versions()
        if not len(wheres) == len(spaces) == len(copies) == len(seen) == len(now):
            raise ValueError("written_back: a mark of another row")
        # Only the namespaces written since are looked into (most are not: the versions
        # compared in C, not some 600 rows in Python).
        found = [
            wheres[i]
            for i in compress(range(len(now)), map(ne, seen, now))
            if _same_items(spaces[i], copies[i])
        ]
        if not kept:  # a mark made without the cache's (by a test)
            return found
        row, cache, count = kept
        if type(row) is not _Flat:
            object.__setattr__(row, "__class__", _Flat)
        marks = vars(row).get("marks")
        if type(marks) is not int:  # the next mark adds to it
            row.marks = count
            found.append("groundstate.bindings.HARNESS._flat.marks (the watch itself)")
        elif vars(row).get("marked") is not cache:  # not as a mark left it: not reused
            if marks == count:  # no mark since (by an attempt beside this one)
                found.append("groundstate.bindings.HARNESS._flat.marked (the watch itself)")
            # Counted as a mark: an attempt beside this one, whose mark left the cache just
            # dropped, does not take the drop for an agent's edit.
            row.marked, row.marks = None, marks + 1
        return found

    def _compare(self, *, put_back: bool, read_code: bool = True) -> list[str]:
        found: list[str] = []
        with self._lock:
            flat = self._row()
            if flat.unchanged(read_code=read_code):
                return found
            if put_back and flat.sealed is not None:  # believed only once found as sealed
                found += (
                    f"groundstate.bindings.HARNESS.{part} (the watch itself)"
                    for part in self._put_back_held(flat.sealed)
                )
            for name, module in self._entries.items():
                if sys.modules.get(name) is not module:
                    found.append(f"sys.modules[{name!r}]")
                    if put_back:
                        sys.modules[name] = module
            for where, value, cls in self._typed:
                if type(value) is not cls:
                    found.append(f"{where}.__class__")
                    if put_back:
                        object.__setattr__(value, "__class__", cls)
            for owner, (where, watched) in list(self._watched.items()):
                changed = watched.changed()
                if changed and put_back:
                    watched.put_back(changed, owner)
                found += (f"{where}.{name}" for name in changed)
                for label, fn, state in watched.altered():
                    found.append(f"{where}.{label}.__code__")
                    if put_back:
                        fn.__code__, fn.__defaults__, fn.__kwdefaults__ = state
                for label, holder, fn in watched.tools:
                    if getattr(holder, "fn", None) is not fn:
                        found.append(f"{where}.{label}")
                        if put_back:
                            object.__setattr__(holder, "fn", fn)
            self._flat = None  # a namespace's size may have moved lawfully
        return found


def _items(space: dict[str, object]) -> tuple[tuple[str, object], ...]:
    """*space*'s items as a tuple, by way of a list: ``tuple(iterable)`` builds its tuple in
    place and resizes it when the iterable's length hint is not its length (a generator's,
    ``map``'s, ``chain``'s), which fails (``SystemError: Objects/tupleobject.c``) when another
    thread took a reference to it meanwhile (an agent's thread calling ``gc.get_objects()``,
    which lists the tuple half built): the attempt raised instead of being recorded. Every
    tuple the watch builds as an attempt runs is built from a list so (``tuple(list)`` is
    made at its size); ``tuple(space.items())`` itself is sized right, unless the dict
    changes as it is read."""
    return tuple(list(space.items()))


class _Flat:
    """Every watched name in one row, so that the usual case (nothing changed) is a few loops
    in C over some 3,000 names rather than Python calls per namespace (a fifth of the time:
    the check runs twice per attempt). Where the interpreter versions its dicts
    (:func:`_versions`), a namespace whose version has not moved since every name in it was
    last found as first seen is not looked into again: one read per namespace instead of a
    lookup per name (inside an attempt, with cold caches, 0.6-1.2 ms a check)."""

    def __init__(
        self,
        watched: Iterable[tuple[str, _Watched]],
        entries: dict[str, ModuleType],
        typed: list[tuple[str, object, type]],
    ) -> None:
        self.entries, self.modules = tuple(list(entries)), tuple(list(entries.values()))
        self.objects = tuple([value for _, value, _ in typed])
        self.classes = tuple([cls for _, _, cls in typed])
        functions: dict[int, tuple[FunctionType, _FunctionState]] = {}
        """Each function held once (most are bound in several namespaces), by identity."""
        tools: list[tuple[object, FunctionType]] = []
        wheres: list[str] = []
        spaces: list[dict[str, object]] = []
        sizes: list[int] = []
        owners: list[dict[str, object]] = []
        names: list[str] = []
        values: list[object] = []
        for where, w in watched:
            wheres.append(where)
            spaces.append(w.namespace)
            sizes.append(w.size)
            owners += [w.namespace] * len(w.names)
            names += w.names
            values += w.values
            functions.update((id(fn), (fn, state)) for _, fn, state in w.functions)
            tools += ((holder, fn) for _, holder, fn in w.tools)
        # Tuples, not lists: what the watch compares with must not be editable in place
        # (see :meth:`Bindings.seal`).
        self.tools, self.sizes, self.owners = tuple(tools), tuple(sizes), tuple(owners)
        self.names, self.values = tuple(names), tuple(values)
        rows = []
        for i, read in enumerate(_STATE_READS):
            held = [(fn, s[i]) for fn, s in functions.values() if i == 0 or s[i] is not None]
            rows.append((read, tuple([fn for fn, _ in held]), tuple([part for _, part in held])))
        self.rows = tuple(rows)
        """Per part of a function's state, the functions and that part as first seen: every
        function's code, and the defaults of those that had some (a default given to a
        function without changes no call the harness makes)."""
        self.states = _state_words(list(functions.values()))
        """Where the interpreter's layout allows, each function's code and defaults as the
        words the function object holds them in, with the words its state as first seen
        gives: read without the attribute lookups the rows make (see :func:`_state_words`)."""
        self.wheres, self.spaces = tuple(wheres), tuple(spaces)
        self.versions = _versions(list(spaces))
        self.registry = sys.modules
        self.noted = _NOTED
        self.looked = _version_words([*spaces, self.noted, self.registry])
        """What reads the versions a look compares (:func:`_read`): the namespaces', the
        audit hook's notes' (:data:`_NOTED`, held as :attr:`noted`) and, last,
        ``sys.modules``'s (held as :attr:`registry`)."""
        self.seen: list[int] | None = None
        """The namespaces', the notes' and ``sys.modules``'s versions when every name, module
        and function's code and defaults were last found as first seen."""
        self.marked: tuple[list[int], tuple[tuple[tuple[str, object], ...], ...]] | None = None
        """The versions and the copies of the last :meth:`copies`."""
        self.marks = 0
        """How many times :meth:`copies` was called."""
        self.sealed: tuple[Any, ...] | None = None
        """What the watch held as this row was first sealed (see :meth:`Bindings.seal`)."""
        self.own: Callable[[], list[int]] | None = None
        """The versions of the watch's own dicts then."""

    def copies(self, now: list[int]) -> tuple[tuple[tuple[str, object], ...], ...]:
        """Each namespace's items as a tuple, whose versions *now* were read just before (for
        :meth:`Bindings.mark`). A namespace whose version has not moved since the last call
        is unwritten since its copy then was taken (after that version was read), so holds
        what that copy holds: the copy is taken again as it is (copies are only read). Most
        namespaces are unwritten from one attempt to the next: one copy of some 14,000
        entries per attempt (about 0.2 ms, and as much again in the garbage collections
        they bring) becomes a few."""
        marked = self.marked
        if marked is None:
            copies = tuple([_items(space) for space in self.spaces])  # see _items
        else:
            was, kept = marked
            fresh = list(kept)
            for i in compress(range(len(now)), map(ne, now, was)):
                fresh[i] = _items(self.spaces[i])
            copies = tuple(fresh)
        self.marked = (now, copies)
        self.marks += 1
        return copies

    def unchanged(self, *, read_code: bool = True) -> bool:
        """Whether no namespace changed size, every name is bound as first seen, and every
        function holds the code and defaults first seen (with *read_code* False, read only if
        the audit hook noted a set since the last look: see :meth:`Bindings.put_back`)."""
        if not all(map(is_, map(type, self.objects), self.classes)):
            return False
        if not all(getattr(holder, "fn", None) is fn for holder, fn in self.tools):
            return False
        now = None if self.looked is None else _read(self.looked).tolist()
        # No namespace, nor ``sys.modules``, was written to since they were all found
        # unchanged (the modules' entries looked up one by one: some 190, a fifth of a look
        # with the caches cold), and the audit hook noted no set of a function's code or
        # defaults since (it notes each before the set is made, with the GIL held until it is:
        # see :data:`_NOTED`).
        quiet = now is not None and now == self.seen and sys.modules is self.registry
        if quiet and not read_code:  # some 2,400 functions' words, a cache miss each, unread
            return True
        # Code and defaults set on a function move no namespace's version.
        if self.states is not None:
            gather, first_words = self.states
            if _read(gather).tobytes() != first_words:
                return False
        elif not all(all(map(is_, map(read, fns), first)) for read, fns, first in self.rows):
            return False
        if quiet:
            return True
        if (
            all(map(is_, map(sys.modules.get, self.entries), self.modules))
            and list(map(len, self.spaces)) == list(self.sizes)
            and all(map(is_, map(dict.get, self.owners, self.names), self.values))
        ):
            # Versions read before the names: a write during the look moves them again.
            self.seen = now
            return True
        return False


def _versions(
    spaces: list[Any], addresses: list[int] | None = None
) -> Callable[[], list[int]] | None:
    """A function giving each dict's version now, where CPython keeps one (3.11 to 3.13, with
    the GIL: ``ma_version_tag``, PEP 509, set from a process-wide counter on every write to the
    dict, so an unmoved version is an unwritten dict); None elsewhere, and wherever a written
    dict is not seen to move (then every name is looked up every time, as before).

    *addresses*, where given, are ``id(space)`` of each of *spaces* (a caller that has them
    already: each ``id`` call runs the process's audit hooks, see :func:`_make_audit_hook`)."""
    if not _version_layout():
        return None
    # The tag follows the object header and ``ma_used``: words of 8 bytes (what
    # :func:`_gather` reads). *spaces* is kept alive by the caller; the gather is a tuple.
    found = addresses if addresses is not None else [id(d) for d in spaces]
    frombuffer, span, word, index, at = _gather([address + 16 + 8 for address in found])
    return lambda: frombuffer(span, word)[frombuffer(index, at)].tolist()


@cache
def _version_layout() -> bool:
    """Whether dict versions can be read here (see :func:`_versions`): asked once per process
    (the layout is the interpreter's; probing it cost a few µs per call, one per guard of a
    Python check's trace copy)."""
    if sys.implementation.name != "cpython" or not (3, 11) <= sys.version_info[:2] <= (3, 13):
        return False
    import ctypes

    # The tag follows the object header (a free-threaded build's is longer) and ``ma_used``.
    header = object.__basicsize__
    if header != 2 * ctypes.sizeof(ctypes.c_void_p) or header != 16:
        return False
    probe: dict[str, object] = {"a": 1}
    before = ctypes.c_uint64.from_address(id(probe) + header + 8)
    first = before.value
    probe["a"] = 2
    # not the layout assumed: look at every name
    return before.value != first and ctypes.c_ssize_t.from_address(id(probe) + header).value == 1


def _version_words(spaces: list[Any]) -> tuple[Any, ...] | None:
    """The :func:`_gather` of each dict's version (see :func:`_versions`), read with
    :func:`_read`; None where :func:`_versions` gives None."""
    if not _version_layout():
        return None
    return _gather([id(d) + 16 + 8 for d in spaces])  # the header, ``ma_used``, the tag


def _read(gather: tuple[Any, ...]) -> Any:
    """The words a :func:`_gather` reads, now, as an array."""
    frombuffer, span, word, index, at = gather
    return frombuffer(span, word)[frombuffer(index, at)]


def _gather(addresses: list[int]) -> tuple[Any, ...]:
    """What reads the 8-byte word at each of *addresses* (8-byte aligned, inside objects the
    caller keeps alive) in one call in C: ``frombuffer(span, word)[frombuffer(index, at)]``,
    an array of the words in the order given.

    The looks read a word of some 2,750 function objects and 600 dicts several times per
    attempt; a ctypes view per word, read one by one (``view.raw``, ``c_uint64.value``),
    cost 0.35-0.7 ms a look, the largest piece of the harness's own CPU per attempt. Here
    *span* is one ctypes array over the memory from the lowest address to the highest (never
    read but at the addresses, which lie in live objects), and numpy's indexing gathers the
    words. The parts are immutable (bytes, a ctypes array whose address cannot be set,
    numpy's builtin ``frombuffer`` and dtypes) and the arrays are made anew at each read, so
    nothing the looks compare through can be edited in place (see :meth:`Bindings.seal`)."""
    base = min(addresses, default=0)
    count = (max(addresses, default=0) - base) // 8 + 1
    kind = _span_type(1 << (count - 1).bit_length())  # a power of two: few classes
    # the metaclass's own method (a C type's, immutable), not one a class attribute may shadow
    span = type(kind).from_address(kind, base) if addresses else kind()
    index = np.array([(address - base) // 8 for address in addresses], dtype=np.intp)
    return np.frombuffer, span, np.dtype(np.uint64), index.tobytes(), np.dtype(np.intp)


@lru_cache(maxsize=64)
def _span_type(count: int) -> Any:
    """The ctypes array type of *count* 8-byte words, made once per process.

    Making one is making a class (about 8 µs; ctypes keeps none), and each gather spans its
    own number of words (a :class:`~groundstate.copies.Guard` per Python check's trace copy,
    the rebinding watch's rows): a class per gather. :func:`_gather` asks for powers of two,
    so few are made; the words past its span are never read (it reads only at its
    addresses). A kept class can be reached and given attributes: :func:`_gather` calls its
    metaclass's ``from_address`` (a C type's, immutable), and numpy reads the array through
    its buffer slot in C, which no attribute replaces."""
    import ctypes

    return ctypes.c_uint64 * count


def _state_words(
    functions: list[tuple[FunctionType, _FunctionState]],
) -> tuple[tuple[Any, ...], bytes] | None:
    """For each function, the three words that hold its code, defaults and keyword
    defaults in the function object (CPython 3.11 to 3.13 with the GIL: ``func_code``,
    ``func_defaults`` and ``func_kwdefaults`` follow one another), read together by one
    :func:`_gather`, with the bytes those words hold for its state as first seen; None
    elsewhere (the rows' attributes are read then).

    Reading ``__code__``, ``__defaults__`` or ``__kwdefaults__`` raises an audit event, and
    this process has an audit hook of Python's (:func:`refuse_audit_hooks`): each read was a
    call of it, 0.35 µs, some 3,000 reads per look. A word compares by identity (the address
    of the object held), and the objects first seen are held by the row, so their addresses
    are not reused. A part first seen None (a function without defaults) is compared with
    what it holds as the row is built: a default given to such a function changes no call the
    harness makes (see :func:`_altered`), but the row is built again after such a change."""
    if sys.implementation.name != "cpython" or not (3, 11) <= sys.version_info[:2] <= (3, 13):
        return None
    import ctypes
    import struct

    header, word = object.__basicsize__, ctypes.sizeof(ctypes.c_void_p)
    if header != 2 * word or word != 8:  # a free-threaded build's header is longer
        return None
    offset = header + 4 * word  # after func_globals, func_builtins, func_name, func_qualname
    view = ctypes.c_char * (3 * word)
    words = struct.Struct("@3P")  # three pointers, native

    def probe(a: object = (), *, b: object = ()) -> object:
        return a, b

    probed = view.from_address(id(probe) + offset)
    held = (probe.__code__, probe.__defaults__, probe.__kwdefaults__)
    if probed.raw != words.pack(*[id(one) for one in held]):  # a list: see _items
        return None  # not the layout assumed: read the attributes
    gather = _gather([id(fn) + offset + i * word for fn, _ in functions for i in range(3)])
    now = _read(gather).tolist()
    first: list[int] = []
    for i, (_, (code, defaults, kwdefaults)) in enumerate(functions):
        _, now_defaults, now_kwdefaults = now[3 * i : 3 * i + 3]
        first += (
            id(code),
            now_defaults if defaults is None else id(defaults),
            now_kwdefaults if kwdefaults is None else id(kwdefaults),
        )
    # The gather and bytes: not editable in place (see :meth:`Bindings.seal`).
    return gather, struct.pack(f"@{len(first)}Q", *first)


def _entries_of(value: object) -> dict[str, object]:
    """*value* as the dict it is (see :class:`Held`)."""
    return value if isinstance(value, dict) else {}


def _dict_of(cls: type) -> dict[str, object]:
    import gc

    (namespace,) = gc.get_referents(vars(cls))
    return namespace  # type: ignore[no-any-return]


_FunctionState = tuple[CodeType, tuple[object, ...] | None, dict[str, object] | None]

Seal = tuple[Any, ...]
"""The watch as :meth:`Bindings.seal` took it."""

_FIELD_NAMES = ("namespace", "shadows", "names", "values", "functions", "tools")
_WATCH_FIELDS = attrgetter(*_FIELD_NAMES)
"""What a :class:`_Watched` holds, each read by identity (its ``size`` moves lawfully and is
set so that its next look reads every name)."""

_MOVING = frozenset({"_flat", "_loaded"})
"""The watch's attributes its own code sets as it looks (a row built, modules counted)."""

_FLAT_MOVING = frozenset({"seen", "marked", "marks"})
"""The row's attributes its own looks set."""


def _set_back(
    space: dict[str, Any], first: tuple[tuple[str, Any], ...], moving: frozenset[str]
) -> list[str]:
    """Bind in *space* each name of *first* as there, and take out names added but *moving*;
    return the names changed."""
    changed = [name for name, value in first if space.get(name, _MISSING) is not value]
    known = {name for name, _ in first} | moving
    changed += [name for name in list(space) if name not in known]
    for name in changed:
        space.pop(name, None)
    space.update((name, value) for name, value in first if name in changed)
    return changed


def _closure(fn: Callable[..., object] | None) -> tuple[object, ...]:
    """*fn*'s code and what its closure's cells hold (a cell's contents can be set)."""
    if fn is None:
        return ()
    cells = getattr(fn, "__closure__", None) or ()
    return (getattr(fn, "__code__", None), *(cell.cell_contents for cell in cells))


def _set_back_cells(fn: Any, first: tuple[object, ...]) -> None:
    """Give *fn* the code and closure's contents of :func:`_closure` again."""
    if fn is None or not first:
        return
    code, *contents = first
    fn.__code__ = code
    for cell, value in zip(fn.__closure__ or (), contents, strict=True):
        cell.cell_contents = value


_STATE_READS = tuple([attrgetter(n) for n in ("__code__", "__defaults__", "__kwdefaults__")])


def _state(fn: FunctionType) -> _FunctionState:
    """What a function runs with that can be set on the function object itself, unseen by
    the namespace holding it: its code and its defaults (compared by identity: code objects
    compare equal by value, a dict of defaults is the one bound)."""
    return fn.__code__, fn.__defaults__, fn.__kwdefaults__


def _altered(now: _FunctionState, first: _FunctionState) -> bool:
    """Whether a function's code, or defaults it had, are no longer those first seen."""
    code, *defaults = now
    first_code, *first_defaults = first
    return code is not first_code or any(
        was is not None and part is not was
        for part, was in zip(defaults, first_defaults, strict=True)
    )


def _functions(name: str, value: object) -> Iterator[tuple[str, FunctionType]]:
    """The Python functions *value*, bound to *name*, runs: itself, a class or static
    method's function, a property's getter, setter and deleter."""
    if isinstance(value, FunctionType):
        yield name, value
    elif isinstance(value, (classmethod, staticmethod)):
        if isinstance(value.__func__, FunctionType):
            yield name, value.__func__
    elif isinstance(value, property):
        for part in ("fget", "fset", "fdel"):
            fn = getattr(value, part)
            if isinstance(fn, FunctionType):
                yield f"{name}.{part}", fn
    elif _tool(value):
        yield f"{name}.fn", value.fn  # type: ignore[attr-defined]


def _tool(value: object) -> bool:
    """Whether *value* is like a suite's ``Tool`` (:class:`groundstate.tools.Tool`, not
    imported here: that module imports this one): a function held as its ``fn``."""
    return type(value).__name__ == "Tool" and isinstance(getattr(value, "fn", None), FunctionType)


def _code(value: object) -> bool:
    return callable(value) or isinstance(value, (property, classmethod, staticmethod))


_IMMUTABLE_TYPE = 1 << 8
"""``Py_TPFLAGS_IMMUTABLETYPE``: a type whose attributes cannot be set (the builtins, most of
the standard library's types written in C)."""


def _instance(name: str, value: object) -> bool:
    """Whether *value*, bound to *name* in a watched module of the standard library, is an
    object of the module's whose attributes are held (see :meth:`Bindings._take_instance`):
    not a module's dunder (its spec sets attributes lazily), with a dict of its own and the
    identity hash (it keys the watch)."""
    cls = type(value)
    return (
        not name.startswith("__")
        and not isinstance(value, ModuleType)
        and not cls.__flags__ & _IMMUTABLE_TYPE
        and cls.__hash__ is object.__hash__
        and type(getattr(value, "__dict__", None)) is dict
    )


HARNESS = Bindings()
"""This process's watched bindings (see the module's docstring)."""


class Held(tuple[Any, ...]):
    """One of an attempt's own objects (its session, gateway, environment) as the harness
    set it up, taken before the agent runs: :meth:`changed` names what an in-process agent
    rebound on the object itself, which :class:`Bindings` (watching modules and classes)
    does not see. An agent that put a copy of its task with a step limit of 100 in the
    session's place (``session._task``) took 11 steps of 6 and passed; one that set a
    method on the environment object (``env.state_hash = ...``) made the harness raise out
    of the attempt.

    Each attribute not in *moving* (the run's own state: a flag, the lock's holder) must
    still be the object first bound, and a plain dict's entries too (the tools by name);
    nothing may be added, removed, nor the object's ``__dict__`` or ``__class__`` replaced.
    With *moving* None (an environment or a user, whose kind keeps state of its own), only
    code added on the object over an attribute of its class (``env.state_hash = ...``), and
    its ``__dict__`` and ``__class__``, count, and the attributes its class says stay bound
    to one object through a run (``held_bound``: an environment's connections, which an
    agent swapped for one to a database of its own, graded in the harness's place).

    A tuple of tuples (no dict, no attribute of its own: nothing in it can be edited), read
    by :meth:`changed` and :meth:`put_back` through ``tuple`` itself after giving it this
    class again, which the caller calls on the class (``Held.changed(held)``). An agent that
    found its session's ``Held`` (``gc.get_objects()``) and set its first-seen ``_task`` to
    the copy with the step limit of 100, shadowed ``changed`` on it, pointed it at another
    object, or swapped its class, took 11 steps of 6 and passed."""

    __slots__ = ()

    def __new__(cls, owner: object, where: str, moving: frozenset[str] | None) -> Held:
        kind = type(owner)
        space: dict[str, object] | None = getattr(owner, "__dict__", None)
        first = tuple(list(dict(space or {}).items()))
        bound: object = getattr(kind, "held_bound", frozenset()) if moving is None else frozenset()
        entries = tuple(
            [
                (name, tuple(list(value.items())))
                for name, value in first
                if type(value) is dict and moving is not None and name not in moving
            ]
        )  # by way of lists (see _items)
        return tuple.__new__(
            cls,
            (
                owner,
                where,
                moving,
                kind,
                space,
                first,
                bound if type(bound) is frozenset else frozenset(),
                entries,
            ),
        )

    def changed(self) -> list[str]:
        """What was rebound, added, removed or emptied since, as ``where.name``."""
        owner, where, moving, cls, space, first_items, bound, entries = _fields(self)
        found = [] if type(owner) is cls else ["__class__"]
        now = getattr(owner, "__dict__", None)
        if now is not space:
            found.append("__dict__")
        if space is None:
            return [f"{where}.{name}" for name in found]
        first = dict(first_items)
        if moving is None:  # code over its class's (a kind may add code of its own lazily)
            found += (
                n for n, v in list(space.items()) if n not in first and _code(v) and hasattr(cls, n)
            )
            found += (n for n in bound if space.get(n, _MISSING) is not first.get(n, _MISSING))
        else:
            found += (n for n in list(space) if n not in first)
            found += (
                n for n, v in first_items if n not in moving and space.get(n, _MISSING) is not v
            )
            found += (
                n
                for n, items in entries
                if space.get(n) is first[n] and not _same_items(_entries_of(first[n]), items)
            )
        return [f"{where}.{name}" for name in found]

    def put_back(self) -> None:
        """The object as first seen: its class, its ``__dict__``, and each entry counted."""
        owner, where, _, cls, space, first_items, _, entries = _fields(self)
        if type(owner) is not cls:
            object.__setattr__(owner, "__class__", cls)
        if space is None:
            return
        if getattr(owner, "__dict__", None) is not space:
            object.__setattr__(owner, "__dict__", space)
        first, held_entries = dict(first_items), dict(entries)
        prefix = len(where) + 1
        for name in [found[prefix:] for found in Held.changed(self)]:
            held = first.get(name, _MISSING)
            if held is _MISSING:
                space.pop(name, None)
                continue
            space[name] = held
            if isinstance(held, dict) and name in held_entries:
                held.clear()
                held.update(held_entries[name])


def _fields(held: Held) -> tuple[Any, ...]:
    """*held*'s fields, read through ``tuple`` after giving it its class back (an agent's
    subclass of it, swapped in, would otherwise answer for it)."""
    if type(held) is not Held:
        object.__setattr__(held, "__class__", Held)
    return tuple(tuple.__iter__(held))


def _same_items(space: dict[str, object], items: tuple[tuple[str, object], ...]) -> bool:
    """Whether *space* holds just the keys of *items*, each bound to the same object."""
    return len(space) == len(items) and all(
        space.get(name, _MISSING) is value for name, value in items
    )


def refuse_audit_hooks() -> None:
    """Refuse every audit hook added from now on in this process (``sys.addaudithook`` drops
    a hook an earlier one refuses with a ``RuntimeError``); called as an in-process agent's
    run starts, and before an agent's file is imported. A hook cannot be taken out again,
    and runs on every thread for every audited event: one an in-process agent added
    (refusing ``sqlite3.connect``, ``os.listdir``, ``pickle.find_class``) made the harness
    raise in its own attempt's record and every later attempt's environment fail to build,
    for the rest of the process; one that only looked saw every connection the harness
    opened, the checks' own. Hooks added before (a tool's, a test runner's) are left alone.

    Whether hooks are refused is held in the harness's hook's own defaults, not in a global
    an agent can set (``bindings._refusing = False`` let its hook in, unnamed), and the
    hook refuses any change to its code or defaults (an audited event) but this one, once."""
    (hook,) = _AUDIT_HOOK
    refusing, _, _ = hook.__defaults__ or (True, None, None)
    if not refusing:  # set once: the hook refuses it from then on
        hook.__defaults__ = (True, hook, _NOTED)


def audit_hooks_refused() -> bool:
    """Whether :func:`refuse_audit_hooks` has run in this process: asked of the harness's hook
    as the interpreter calls it (see :func:`_make_audit_hook`), whose defaults it refuses to
    change once set (so no code can set it back). Also the mark that untrusted Python code
    may have run in this process (see :mod:`groundstate.untrusted`).

    Asked, not read through a name: read from ``_AUDIT_HOOK[0].__defaults__``, an agent that
    bound ``_AUDIT_HOOK`` to a hook of its own saying "not refused" (from a thread left
    running, after its own attempt's watch had put the name back) had the suite's later
    replays in the process run unwatched. Setting a new function's defaults to a tuple
    holding the function itself is an audited event (``object.__setattr__``) that the
    harness's hook refuses once refusing: no name, builtin or global, is looked up between
    here and the hook, nor in the hook before it refuses, so none rebound can change the
    answer (an error of any kind, such as a hook of the program's added before, reads as
    refused)."""

    def probe() -> None: ...

    try:
        probe.__defaults__ = (probe,)
    except:  # noqa: E722 (bare: ``except BaseException`` looks a name up)
        return True
    return False


def _make_audit_hook() -> Callable[..., None]:
    """The harness's audit hook, which refuses hooks added once :func:`refuse_audit_hooks`
    has run, and calls validation's watch of the files a suite's checks read. Its state is
    its defaults: *refusing*, and *me* (itself, to know a change of its own code or
    defaults, which it refuses once refusing: its ``__code__``, ``__defaults__`` or
    ``__kwdefaults__`` set or deleted raise ``object.__setattr__`` or
    ``object.__delattr__`` first). It reads no global of its own to decide (an agent sets
    those freely while it runs); a name of the builtins rebound makes it raise, which
    refuses too. It answers :func:`audit_hooks_refused`'s question (a function's defaults
    set to a tuple holding that function) by raising when refusing."""

    def hook(
        event: str,
        args: tuple[Any, ...],
        refusing: bool = False,
        me: object = None,
        noted: dict[str, object] | None = None,
    ) -> None:
        if event == "object.__setattr__" and args[1] == "__defaults__":
            try:
                head = args[2][:1]
            except:  # noqa: E722 (a class's attribute of that name, set to what no slice takes)
                head = ()
            for first in head:  # by identity: no value's ``__eq__`` is called
                if first is args[0]:  # asked whether refusing (audit_hooks_refused)
                    if refusing:
                        raise RuntimeError("groundstate: untrusted code has run in this process")
                    return
        if event == "sys.addaudithook" and refusing:
            raise RuntimeError("groundstate refuses audit hooks added once an agent has run")
        setattr_event = event in ("object.__setattr__", "object.__delattr__")
        if setattr_event and args[0] is me and (refusing or event == "object.__delattr__"):
            raise RuntimeError("groundstate's audit hook is not to be changed")
        if _READ_WATCHES:  # validation's watch of the files a suite's checks read
            _seen_read(event, args)
        if noted is not None and (setattr_event or event == "ctypes.call_function"):
            # Last, and nothing called after it: a new tuple moves the dict's version, and
            # the thread holds the GIL from here until the set is made (see _NOTED).
            noted["set"] = (event,)

    hook.__defaults__ = (False, hook, _NOTED)
    return hook


_NOTED: dict[str, object] = {}
"""Written by the audit hook at every ``object.__setattr__`` or ``object.__delattr__`` event
(a function's ``__code__``, ``__defaults__`` or ``__kwdefaults__`` set or deleted, an
attribute of a class or an object's ``__class__`` set) and every call of a C function through
``ctypes`` (``ctypes.pythonapi.PyFunction_SetDefaults`` sets defaults unaudited): the looks
read its version with the namespaces' (:attr:`_Flat.looked`), and read the functions' code
and defaults only when it moved. A dict's version only grows and Python code cannot set it
back; an agent that writes or clears the dict moves it too (a full look, no more). The hook
writes it as the last thing it does, before the set is made: the thread holds the GIL from
there until the set is made, so no look runs between the two (unless a hook added after the
harness's, before any agent ran, gives the GIL away: an agent's is refused). A write to raw
memory through a ``ctypes`` view (which could set a dict's version back as well) is beyond
what the watch sees, as before; the harness makes such views each attempt (the trace copies'
guard), so they are not noted."""

_AUDIT_HOOK = (_make_audit_hook(),)
"""The hook, in a tuple: bound as a function, the watch would hold its defaults as first
seen, and name their one lawful change (see :func:`refuse_audit_hooks`)."""
sys.addaudithook(*_AUDIT_HOOK)
