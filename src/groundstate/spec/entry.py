"""An agent entry read from its file's text before any of it runs.

A batch validated its whole suite (minutes for a real one) before importing the agent's file
told it the entry names a number, or a parameter the entry cannot take or of the wrong type:
every attempt would have failed for it. What the text shows for certain is refused as the
system loads (:func:`entry_problem`), in the words importing it says it in
(:func:`groundstate.agents.python.load_agent`); what only running the file can tell (a
factory's result, a decorated function, a class with bases, an annotation naming the file's own
types) is left to the import.
"""

from __future__ import annotations

import ast
import inspect
from pathlib import Path
from typing import Any

from groundstate.errors import one_line
from groundstate.spec.code import top_level_names
from groundstate.spec.strict import did_you_mean, value_problem

ENTRY = "harness.orchestration_loop.entry"
PARAMS = "harness.orchestration_loop.params"

_P = inspect.Parameter
_GIVEN = object()
"""A default the text gives (its value is not read: only that there is one)."""


def entry_problem(
    source: Path, entry: str, name: str, shown: str, params: dict[str, Any]
) -> tuple[str, str] | None:
    """(field, why) when *entry* (its attribute *name*) names nothing its file *source*
    (*shown* so) defines, a value no call can take (``agent = 42``), or an ``async def``, a
    plain factory or a class that cannot take *params* or whose annotations refuse one
    (``max_steps: int`` given ``"ten"``). None when the file may define it otherwise (in
    ways its text does not show, too), or where only importing it can tell."""
    try:
        tree = ast.parse(source.read_bytes(), str(source))
    except SyntaxError as exc:
        at = f" (line {exc.lineno})" if exc.lineno else ""
        return ENTRY, f"cannot import {shown}: {type(exc).__name__}: {one_line(str(exc.msg))}{at}"
    except (OSError, ValueError, MemoryError, RecursionError, SystemError):
        return None  # importing it says why (SystemError: python/cpython#106905)
    defined = top_level_names(tree)
    if defined is not None and name not in defined:
        hint = did_you_mean(name, (n for n in defined if not n.isupper()))  # not a CONSTANT
        return ENTRY, f"{entry!r} names no callable{hint}"
    bound = _bound_once(tree, name)
    if bound is None:
        return None
    if defined is not None and (what := _not_callable(bound)) is not None:
        hint = did_you_mean(name, _defs(tree.body))
        return ENTRY, f"{entry!r} names no callable: {name!r} is {what}{hint}"
    found = _parameters(tree, bound)
    if found is None:
        return None
    signature, skip = found
    try:
        signature.bind(*[None] * skip, **params)
    except TypeError as exc:
        taken = list(signature.parameters)[skip:]
        hints = "".join(did_you_mean(key, taken) for key in params if key not in taken)
        return PARAMS, f"{exc}{hints}"
    return _type_problem(tree, defined, signature, params)


def _bound_once(tree: ast.Module, name: str) -> ast.stmt | None:
    """The statement of the module's own body binding *name*, when no other statement of the
    file may bind it (a name bound twice, or in an ``if``, may be either)."""
    if _bindings(tree, name) != 1:
        return None
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            if node.name == name:
                return node
        elif isinstance(node, ast.Assign) and len(node.targets) == 1:
            if _named(node.targets[0], name):
                return node
        elif isinstance(node, ast.AnnAssign) and _named(node.target, name):
            return node
    return None


def _named(target: ast.expr, name: str) -> bool:
    return isinstance(target, ast.Name) and target.id == name


def _bindings(tree: ast.Module, name: str) -> int:
    """How many statements of *tree* may bind *name* (a def, a class, an import, a store)."""
    count = 0
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            count += node.name == name
        elif isinstance(node, ast.Name) and not isinstance(node.ctx, ast.Load):
            count += node.id == name
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            count += any((a.asname or a.name) in (name, "*") for a in node.names)
        elif isinstance(node, ast.Global):
            count += name in node.names
    return count


_VALUES = (
    ast.Constant,
    ast.List,
    ast.Tuple,
    ast.Dict,
    ast.Set,
    ast.JoinedStr,
    ast.ListComp,
    ast.SetComp,
    ast.DictComp,
    ast.GeneratorExp,
)
"""Expressions whose value no call can take: a literal, a display, a comprehension."""


def _not_callable(node: ast.stmt) -> str | None:
    """What *node* binds its name to, in words, when that can be no callable."""
    if isinstance(node, ast.AnnAssign) and node.value is None:
        return "only annotated, never assigned"
    value = node.value if isinstance(node, (ast.Assign, ast.AnnAssign)) else None
    if not isinstance(value, _VALUES):
        return None
    try:
        text = one_line(ast.unparse(value))
    except (RecursionError, ValueError):
        text = type(value).__name__.lower()
    return text if len(text) <= 60 else text[:57] + "..."


def _defs(body: list[ast.stmt]) -> list[str]:
    """The functions and classes *body* defines: the callables it surely has."""
    kinds = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)
    return [node.name for node in body if isinstance(node, kinds)]


def _parameters(tree: ast.Module, node: ast.stmt) -> tuple[inspect.Signature, int] | None:
    """The parameters the entry *node* is called with, and how many leading arguments the
    harness gives it first (an ``async def``: the session); None where its text cannot
    tell (a decorator, a factory with ``from_system``, a plain ``def`` taking a session,
    which importing it refuses in its own words)."""
    if isinstance(node, ast.ClassDef):
        return _class_parameters(tree, node)
    if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) or node.decorator_list:
        return None
    if isinstance(node, ast.AsyncFunctionDef):
        return _signature(node.args), 1
    positional = [*node.args.posonlyargs, *node.args.args]
    if (positional and positional[0].arg == "session") or _names_from_system(tree):
        return None
    return _signature(node.args), 0


def _names_from_system(tree: ast.AST) -> bool:
    """Whether *tree* mentions ``from_system``: an entry given one is called through it."""
    for part in ast.walk(tree):
        if isinstance(part, ast.Attribute) and part.attr == "from_system":
            return True
        if isinstance(part, ast.Name) and part.id == "from_system":
            return True
        if isinstance(part, (ast.FunctionDef, ast.AsyncFunctionDef)) and part.name == "from_system":
            return True
    return False


_PLAIN_CLASS_BODY = (
    ast.FunctionDef,
    ast.AsyncFunctionDef,
    ast.ClassDef,
    ast.Assign,
    ast.AnnAssign,
    ast.Expr,
    ast.Pass,
)
_MADE_OTHERWISE = frozenset({"from_system", "__new__", "__signature__", "__init_subclass__"})
"""Names in a class body that make calling the class other than calling its ``__init__``."""


def _class_parameters(tree: ast.Module, node: ast.ClassDef) -> tuple[inspect.Signature, int] | None:
    """The parameters a class of no base (``object``'s) is built with: its ``__init__``'s, a
    dataclass's fields, or none. None for any other class (a base, a metaclass, a
    decorator, a body its text does not settle)."""
    plain_bases = all(isinstance(b, ast.Name) and b.id == "object" for b in node.bases)
    plain_body = all(isinstance(s, _PLAIN_CLASS_BODY) for s in node.body)
    if not plain_bases or node.keywords or not plain_body:
        return None
    bound = _class_names(node.body)
    if bound is None or bound & _MADE_OTHERWISE or _names_from_system(node):
        return None
    dataclass = _dataclass(tree, node.decorator_list)
    if node.decorator_list and not dataclass:
        return None
    inits = [s for s in node.body if isinstance(s, ast.FunctionDef) and s.name == "__init__"]
    if "__init__" in bound:
        if len(inits) != 1 or inits[0].decorator_list:
            return None
        return _signature(inits[0].args), 1
    if dataclass:
        return _fields(node.body)
    return inspect.Signature([]), 0


def _class_names(body: list[ast.stmt]) -> set[str] | None:
    """The names a class body binds; None when it may bind one its text does not show."""
    names: set[str] = set()
    for node in body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, ast.Assign):
            if not all(isinstance(t, ast.Name) for t in node.targets):
                return None
            names |= {t.id for t in node.targets if isinstance(t, ast.Name)}
        elif isinstance(node, ast.AnnAssign):
            if not isinstance(node.target, ast.Name):
                return None
            names.add(node.target.id)
    return names


_DATACLASS_OPTIONS = frozenset(
    {"repr", "eq", "order", "unsafe_hash", "frozen", "match_args", "slots", "weakref_slot"}
)
"""``@dataclass(...)`` options that leave ``__init__`` taking the fields, in their order."""


def _dataclass(tree: ast.Module, decorators: list[ast.expr]) -> bool:
    """Whether *decorators* is the standard ``@dataclass`` alone (imported from
    ``dataclasses``, bound nowhere else), given no option that changes ``__init__``."""
    if len(decorators) != 1:
        return False
    found = decorators[0]
    if isinstance(found, ast.Call):
        if found.args or any(k.arg not in _DATACLASS_OPTIONS for k in found.keywords):
            return False
        found = found.func
    if isinstance(found, ast.Attribute) and isinstance(found.value, ast.Name):
        return (found.value.id, found.attr) == ("dataclasses", "dataclass") and _imported(
            tree, "dataclasses", None
        )
    return isinstance(found, ast.Name) and _imported(tree, "dataclasses", found.id)


def _imported(tree: ast.Module, module: str, name: str | None) -> bool:
    """Whether *tree* binds *name* (a module itself: None) only by importing it from
    *module* at its top level."""
    local = name or module
    return _bindings(tree, local) == 1 and any(_imports(node, module, name) for node in tree.body)


def _imports(node: ast.stmt, module: str, name: str | None) -> bool:
    """Whether *node* is ``import module`` (*name* None) or ``from module import name``."""
    if isinstance(node, ast.Import):
        return name is None and any(a.name == module and not a.asname for a in node.names)
    if isinstance(node, ast.ImportFrom) and node.module == module and node.level == 0:
        return name is not None and any(a.name == name and not a.asname for a in node.names)
    return False


def _fields(body: list[ast.stmt]) -> tuple[inspect.Signature, int] | None:
    """A dataclass's ``__init__`` parameters: its annotated names, not ``ClassVar`` ones;
    None where a ``field()`` or ``KW_ONLY`` settles them (read only by running it)."""
    parameters = []
    for node in body:
        if not isinstance(node, ast.AnnAssign) or not isinstance(node.target, ast.Name):
            continue
        said = ast.unparse(node.annotation)
        if "ClassVar" in said:
            continue
        if "KW_ONLY" in said or isinstance(node.value, ast.Call):
            return None
        default = _P.empty if node.value is None else _default(node.value)
        kind = _P.POSITIONAL_OR_KEYWORD
        parameters.append(_P(node.target.id, kind, default=default, annotation=node.annotation))
    try:
        return inspect.Signature(parameters), 0
    except ValueError:  # a field without a default after one with: importing it says so
        return None


def _default(value: ast.expr) -> Any:
    """A parameter's default as binding needs it: ``None`` written so, anything else given."""
    return None if isinstance(value, ast.Constant) and value.value is None else _GIVEN


def _signature(args: ast.arguments) -> inspect.Signature:
    """The signature *args* declares: the names, which have defaults (``None`` kept: a
    parameter defaulting to it takes it whatever its annotation), and each annotation as its
    text (read by :func:`_type_problem`)."""
    positional = [*args.posonlyargs, *args.args]
    missing = [None] * (len(positional) - len(args.defaults))
    defaults: list[ast.expr | None] = [*missing, *args.defaults]
    kinds: list[Any] = [_P.POSITIONAL_ONLY] * len(args.posonlyargs)
    kinds += [_P.POSITIONAL_OR_KEYWORD] * len(args.args)
    parameters = [
        _parameter(a, kind, d) for a, kind, d in zip(positional, kinds, defaults, strict=True)
    ]
    if args.vararg is not None:
        parameters.append(_parameter(args.vararg, _P.VAR_POSITIONAL, None))
    parameters += [
        _parameter(a, _P.KEYWORD_ONLY, d)
        for a, d in zip(args.kwonlyargs, args.kw_defaults, strict=True)
    ]
    if args.kwarg is not None:
        parameters.append(_parameter(args.kwarg, _P.VAR_KEYWORD, None))
    return inspect.Signature(parameters)


def _parameter(arg: ast.arg, kind: Any, default: ast.expr | None) -> inspect.Parameter:
    given = _P.empty if default is None else _default(default)
    annotation = _P.empty if arg.annotation is None else arg.annotation
    return _P(arg.arg, kind, default=given, annotation=annotation)


def _type_problem(
    tree: ast.Module,
    defined: frozenset[str] | None,
    signature: inspect.Signature,
    params: dict[str, Any],
) -> tuple[str, str] | None:
    """(field, why) for the first of *params* its parameter's annotation refuses, where the
    annotation is of the builtin types (``int``, ``list[str] | None``, ``Optional[float]``):
    as importing the file checks them (:func:`~groundstate.spec.strict.value_problem`)."""
    extra = [p for p in signature.parameters.values() if p.kind is p.VAR_KEYWORD]
    for key, value in params.items():
        parameter = signature.parameters.get(key) or extra[0]
        if value is None and parameter.default is None:  # `x: int = None`: None is meant
            continue
        if parameter.annotation is _P.empty:
            continue
        hint = _Annotation(tree, defined).read(parameter.annotation)
        problem = None if hint is _UNREAD else value_problem(hint, value)
        if problem is not None:
            return f"{PARAMS}.{key}", problem
    return None


_UNREAD = object()
"""An annotation read only by running the file (a type of its own, an import's)."""

_BUILTINS = {t.__name__: t for t in (int, float, str, bool, list, dict, tuple, set, frozenset)}
_TYPING = {"List": list, "Dict": dict, "Tuple": tuple, "Set": set, "FrozenSet": frozenset}
_GENERIC = frozenset({*_TYPING, "Optional", "Union"})


class _Annotation:
    """Annotations of builtin types, read from their text: ``int``, ``"int"``, ``list[str]``,
    ``dict[str, int] | None``, ``typing.Optional[int]``, ``Union[int, str]``. A name the file
    binds itself (``int = MyInt``) is read as the file's, and not here."""

    def __init__(self, tree: ast.Module, defined: frozenset[str] | None) -> None:
        self.tree, self.defined = tree, defined

    def read(self, node: ast.expr, depth: int = 0) -> Any:
        """The type *node* names, or :data:`_UNREAD`."""
        if depth > 20:
            return _UNREAD
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and depth == 0:
            try:
                inner = ast.parse(node.value.strip(), mode="eval").body
            except (SyntaxError, ValueError, RecursionError, MemoryError):
                return _UNREAD
            return self.read(inner, depth + 1)
        if isinstance(node, ast.Constant) and node.value in (None, Ellipsis):
            return node.value
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.BitOr):
            left, right = self.read(node.left, depth + 1), self.read(node.right, depth + 1)
            return _UNREAD if _UNREAD in (left, right) else _union([left, right])
        if isinstance(node, ast.Subscript):
            return self._subscript(node, depth)
        return self._named(node)

    def _subscript(self, node: ast.Subscript, depth: int) -> Any:
        outer = self._named(node.value)
        inner = node.slice.elts if isinstance(node.slice, ast.Tuple) else [node.slice]
        args = [self.read(arg, depth + 1) for arg in inner]
        if outer is _UNREAD or _UNREAD in args:
            return _UNREAD
        try:
            if outer == "Optional" and len(args) == 1:
                return _union([args[0], None])
            if outer == "Union":
                return _union(args)
            if outer in _TYPING.values():  # list[str], dict[str, int], tuple[int, ...]
                return outer[tuple(args) if len(args) > 1 else args[0]]
        except TypeError:
            return _UNREAD
        return _UNREAD

    def _named(self, node: ast.expr) -> Any:
        """A builtin type, a ``typing`` alias of one, or ``"Optional"``/``"Union"``."""
        if isinstance(node, ast.Name):
            if node.id in _BUILTINS and self.defined is not None and node.id not in self.defined:
                return _BUILTINS[node.id]
            if node.id in _GENERIC and _imported(self.tree, "typing", node.id):
                return _TYPING.get(node.id, node.id)
        elif isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name):
            typing = node.value.id == "typing" and _imported(self.tree, "typing", None)
            if typing and node.attr in _GENERIC:
                return _TYPING.get(node.attr, node.attr)
        return _UNREAD


def _union(types: list[Any]) -> Any:
    """``a | b | ...`` of types read (``None`` among them); :data:`_UNREAD` for no type."""
    found = type(None) if types[0] is None else types[0]
    try:
        for other in types[1:]:
            found = found | (type(None) if other is None else other)
    except TypeError:  # `...`, or `Optional` unsubscripted
        return _UNREAD
    return found
